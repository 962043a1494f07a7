// The run config's timeline, as numo lays it out: fetched from numo's backend through the console's plugin proxy,
// which forwards the logged-in user's token (numo reads the run config as that user), again whenever the run
// config's status changes (its resourceVersion) and every REFRESH_MS while a rollout is under way.
import * as React from 'react';
import type { MutexRunConfig } from '../types';
import type { TimelineDrawing } from '../timeline-types';
import { consoleFetchJSON } from '../sdk';

/** The plugin's name and the alias of numo's backend in the ConsolePlugin's `spec.proxy`
 * (src/console_plugin/object.rs). */
export const PROXY = '/api/proxy/plugin/numo-console-plugin/numo';

/** How often the timeline is fetched again while a rollout is under way, besides on every change of the status. */
export const REFRESH_MS = 30_000;

/** The phases in which the picture moves with time. */
const UNDER_WAY = ['Waiting', 'Pausing', 'Upgrading', 'Failed', 'Restoring'];

/** Where numo serves the timeline of `namespace/name`, through the console's proxy. */
export const timelineURL = (namespace: string, name: string): string =>
  `${PROXY}/api/timeline/${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`;

/** Why the timeline could not be fetched: the HTTP status when there was one, and what numo or the proxy said. */
export type TimelineError = { status?: number; message: string };

const failure = (e: unknown): TimelineError => {
  const error = e as { message?: string; code?: number; status?: number; response?: { status?: number } };
  return { status: error?.response?.status ?? error?.code ?? error?.status, message: error?.message ?? String(e) };
};

/** The timeline of `rc` as numo lays it out: [drawing, error]; the last good drawing stays while a refresh fails. */
export const useTimeline = (rc?: MutexRunConfig): [TimelineDrawing | undefined, TimelineError | undefined] => {
  const namespace = rc?.metadata?.namespace;
  const name = rc?.metadata?.name;
  const version = rc?.metadata?.resourceVersion;
  const underWay = UNDER_WAY.includes(rc?.status?.phase ?? '');
  const [drawing, setDrawing] = React.useState<TimelineDrawing>();
  const [error, setError] = React.useState<TimelineError>();
  const [tick, setTick] = React.useState(0);
  React.useEffect(() => {
    if (!underWay) return undefined;
    const timer = setInterval(() => setTick((n) => n + 1), REFRESH_MS);
    return () => clearInterval(timer);
  }, [underWay]);
  React.useEffect(() => {
    if (!namespace || !name) return undefined;
    let current = true;
    consoleFetchJSON(timelineURL(namespace, name))
      .then((fetched) => {
        if (!current) return;
        setDrawing(fetched as TimelineDrawing);
        setError(undefined);
      })
      .catch((e) => current && setError(failure(e)));
    return () => {
      current = false;
    };
  }, [namespace, name, version, tick]);
  return [drawing, error];
};
