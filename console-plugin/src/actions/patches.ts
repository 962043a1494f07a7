// What each action does to a run config: the JSON patch (RFC 6902) it sends as the logged-in user, and the
// sentence its confirmation says. Pure, so that the patch and the words are tested together.
import type { Patch } from '@openshift-console/dynamic-plugin-sdk';
import type { MutexRunConfig, NodeProgress } from '../types';
import { RETRY_ANNOTATION, SKIP_ANNOTATION } from '../models';

export type ActionKind = 'pause' | 'resume' | 'retry' | 'skip';

/** A JSON pointer segment (RFC 6901): `~` and `/` escaped. */
export const pointer = (segment: string) => segment.replace(/~/g, '~0').replace(/\//g, '~1');

const annotationPath = (key: string) => `/metadata/annotations/${pointer(key)}`;

/** Sets annotation `key` to `value`, creating the annotations map when the object has none; when the annotation
 * exists, the patch first tests that it still has the value the user saw, so that a change made by someone else in
 * the meantime fails the patch instead of being overwritten. */
const setAnnotation = (rc: MutexRunConfig, key: string, value: string): Patch[] => {
  const annotations = rc.metadata?.annotations;
  if (!annotations) return [{ op: 'add', path: '/metadata/annotations', value: { [key]: value } }];
  const current = annotations[key];
  if (current === undefined) return [{ op: 'add', path: annotationPath(key), value }];
  return [
    { op: 'test', path: annotationPath(key), value: current },
    { op: 'replace', path: annotationPath(key), value },
  ];
};

export const pausePatch = (paused: boolean): Patch[] => [{ op: 'add', path: '/spec/paused', value: paused }];

export const retryPatch = (rc: MutexRunConfig, node: string): Patch[] => setAnnotation(rc, RETRY_ANNOTATION, node);

/** The nodes the skip annotation names now. */
export const skippedByAnnotation = (rc: MutexRunConfig): string[] =>
  (rc.metadata?.annotations?.[SKIP_ANNOTATION] ?? '')
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);

/** The skip annotation's value once `node` is added to it. */
export const skipValue = (rc: MutexRunConfig, node: string): string => {
  const names = skippedByAnnotation(rc);
  return (names.includes(node) ? names : [...names, node]).join(',');
};

export const skipPatch = (rc: MutexRunConfig, node: string): Patch[] =>
  setAnnotation(rc, SKIP_ANNOTATION, skipValue(rc, node));

/** The nodes a retry applies to: Failed nodes, and Ungated ones not accepted yet. */
export const retryableNodes = (rc: MutexRunConfig): NodeProgress[] =>
  (rc.status?.nodes ?? []).filter((n) => n.phase === 'Failed' || (n.phase === 'Ungated' && !n.acceptedAt));

/** Why no node can be skipped now (the rollout is restoring the pools or over), or undefined when one can. */
export const nothingToSkip = (rc: MutexRunConfig): string | undefined => {
  const phase = rc.status?.phase;
  if (phase === 'Completed') return 'The rollout is over: no node is left to skip.';
  if (phase === 'Restoring') return 'Every node is done: numo is restoring the pools.';
  return undefined;
};

/** The nodes worth offering to skip first: failed or ungated ones, then those in flight. */
export const skippableNodes = (rc: MutexRunConfig): string[] => {
  const skipped = new Set([...skippedByAnnotation(rc), ...(rc.status?.skippedNodes ?? [])]);
  const nodes = rc.status?.nodes ?? [];
  const rank = (n: NodeProgress) => (n.phase === 'Failed' || n.phase === 'Ungated' ? 0 : 1);
  return nodes
    .filter((n) => !['Done', 'Skipped'].includes(n.phase) && !skipped.has(n.name))
    .sort((a, b) => rank(a) - rank(b))
    .map((n) => n.name);
};

const ref = (rc: MutexRunConfig) => `${rc.metadata?.namespace}/${rc.metadata?.name}`;

export type ActionText = {
  title: string;
  /** What numo will do, in one or two sentences. */
  effect: string;
  /** What the patch changes on the run config. */
  change: string;
  confirm: string;
};

/** The words of an action's confirmation for `node` (retry and skip). */
export const actionText = (kind: ActionKind, rc: MutexRunConfig, node?: string): ActionText => {
  const name = ref(rc);
  switch (kind) {
    case 'pause':
      return {
        title: 'Pause the rollout',
        effect: `numo will start no further node of ${name}: nodes already in flight finish their gate, upgrade and cleanup, and the target pools stay paused until you resume.`,
        change: 'This sets spec.paused to true.',
        confirm: 'Pause',
      };
    case 'resume':
      return {
        title: 'Resume the rollout',
        effect: `numo will go on with the rollout of ${name}: the next node starts its gate Jobs as soon as nothing else holds it.`,
        change: 'This sets spec.paused to false.',
        confirm: 'Resume',
      };
    case 'retry': {
      const entry = rc.status?.nodes?.find((n) => n.name === node);
      const failedJob = [...(entry?.jobs ?? [])].reverse().find((j) => j.result === 'Failed');
      let effect: string;
      if (entry?.phase === 'Ungated') {
        effect = `numo will let the rollout of ${name} go on past node ${node}: it stays Ungated, and its gate Jobs are not run after the fact.`;
      } else if (failedJob) {
        const step = failedJob.phase === 'cleanup' ? 'cleanup' : 'gate';
        effect = `numo will run node ${node}'s ${step} Jobs again: the failed Job ${failedJob.name} runs again as attempt ${
          (failedJob.attempt ?? 1) + 1
        } (a new Job; the failed one stays for you to inspect).`;
      } else {
        effect = `numo will run node ${node}'s failed step again and give it a fresh nodeTimeout.`;
      }
      return {
        title: `Retry node ${node}`,
        effect,
        change: `This sets the annotation ${RETRY_ANNOTATION}=${node} on ${name}; numo removes it once it acted on it.`,
        confirm: 'Retry',
      };
    }
    case 'skip':
    default:
      return {
        title: `Skip node ${node ?? ''}`.trim(),
        effect: `numo will skip node ${node}: this rollout does not gate it and counts it as finished. numo keeps it held in its own paused pool and goes on with the next node; once the rollout restored the pools, the node's own pool upgrades it without a gate.`,
        change: `This sets the annotation ${SKIP_ANNOTATION}=${node ? skipValue(rc, node) : '…'} on ${name}; it stays in force, for later upgrades too, until you remove it.`,
        confirm: 'Skip',
      };
  }
};

/** The patch an action sends. */
export const actionPatch = (kind: ActionKind, rc: MutexRunConfig, node?: string): Patch[] => {
  switch (kind) {
    case 'pause':
      return pausePatch(true);
    case 'resume':
      return pausePatch(false);
    case 'retry':
      return retryPatch(rc, node as string);
    case 'skip':
    default:
      return skipPatch(rc, node as string);
  }
};
