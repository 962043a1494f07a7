// The node table's rows: the nodes in the status (in flight, soaking, failed, ungated), then the finished nodes of
// the rollout record, then the names the status lists as completed or skipped that the record does not have, and,
// while a rollout is under way, the target nodes still to go, in the order numo releases them.
import type { ConfigMap, JobRecord, MutexRunConfig, NodePhase, NodeProgress, RunPhase, Step } from '../types';
import type { Translate } from '../i18n';
import { readRecord } from '../record';
import { ms } from '../time';
import { measured, recordedSteps } from './nodeSteps';

export type StepTime = { millis: number; running: boolean };

export type NodeRow = {
  name: string;
  phase: NodePhase;
  started?: number;
  steps: Partial<Record<Step, StepTime>>;
  /** When the Machine Config Operator had drained the node (`drainedAt`), where numo saw it. */
  drained?: number;
  jobs: JobRecord[];
  message?: string;
  entry?: NodeProgress;
};

const UNDER_WAY: NodePhase[] = ['Gating', 'Released', 'Upgrading', 'CleaningUp', 'Soaking'];

/** What a node in flight does, for the entries numo writes without a message (the phase says it all). */
export const phaseSays = (phase: NodePhase, t: Translate, target?: string | null): string | undefined => {
  switch (phase) {
    case 'Gating':
      return t('Running gate Jobs.');
    case 'Released':
      return t('Gate Jobs succeeded; releasing the node to the canary pool.');
    case 'Upgrading':
      return target
        ? t('Waiting for the node to run {{target}} and be Ready.', { target })
        : t('Waiting for the node to run the target and be Ready.');
    case 'CleaningUp':
      return t('Running cleanup Jobs.');
    default:
      return undefined;
  }
};

/** Phases of a run config whose target nodes not yet started are still to go. */
const UNDER_WAY_ROLLOUT: RunPhase[] = ['Waiting', 'Pausing', 'Upgrading', 'Failed'];

export const nodeRows = (
  rc: MutexRunConfig,
  record: ConfigMap | null | undefined,
  now: number,
  t: Translate,
  targetNodes: string[] = [],
): NodeRow[] => {
  const status = rc.status ?? {};
  const rows: NodeRow[] = [];
  const seen = new Set<string>();
  (status.nodes ?? []).forEach((entry) => {
    const steps: NodeRow['steps'] = {};
    const measuredSteps = measured(entry, now);
    measuredSteps.forEach((s, i) => {
      const running = UNDER_WAY.includes(entry.phase) && i === measuredSteps.length - 1;
      const prior = steps[s.step]?.millis ?? 0;
      steps[s.step] = { millis: prior + (s.end - s.start), running };
    });
    rows.push({
      name: entry.name,
      phase: entry.phase,
      started: ms(entry.startedAt),
      steps,
      drained: ms(entry.drainedAt),
      jobs: entry.jobs ?? [],
      message: entry.message ?? phaseSays(entry.phase, t, status.targetVersion),
      entry,
    });
    seen.add(entry.name);
  });
  const recorded = readRecord(record?.data);
  const rollout = status.targetConfig?.rollout ?? status.targetVersion;
  if (recorded.rollout !== undefined && recorded.rollout === rollout) {
    recorded.nodes
      .filter((n) => !seen.has(n.name))
      .forEach((n) => {
        const steps: NodeRow['steps'] = {};
        recordedSteps(n).forEach((s) => {
          steps[s.step] = { millis: (steps[s.step]?.millis ?? 0) + (s.end - s.start), running: false };
        });
        rows.push({ name: n.name, phase: n.phase, started: n.times[0], steps, drained: n.times[6], jobs: [] });
        seen.add(n.name);
      });
  }
  const listed = (names: string[] | undefined, phase: NodePhase) =>
    (names ?? [])
      .filter((n) => !seen.has(n))
      .forEach((n) => {
        rows.push({ name: n, phase, steps: {}, jobs: [] });
        seen.add(n);
      });
  listed(status.completedNodes, 'Done');
  listed(status.skippedNodes, 'Skipped');
  if (status.phase && UNDER_WAY_ROLLOUT.includes(status.phase)) listed(targetNodes, 'Pending');
  return rows;
};
