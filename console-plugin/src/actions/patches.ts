// What each action does to a run config: the JSON patch (RFC 6902) it sends as the logged-in user, and the
// sentence its confirmation says. Pure, so that the patch and the words are tested together.
import type { Patch } from '@openshift-console/dynamic-plugin-sdk';
import type { MutexRunConfig, NodeProgress } from '../types';
import { RETRY_ANNOTATION, SKIP_ANNOTATION } from '../models';
import type { Translate } from '../i18n';

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
export const nothingToSkip = (rc: MutexRunConfig, t: Translate): string | undefined => {
  const phase = rc.status?.phase;
  if (phase === 'Completed') return t('The rollout is over: no node is left to skip.');
  if (phase === 'Restoring') return t('Every node is done: numo is restoring the pools.');
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
export const actionText = (kind: ActionKind, rc: MutexRunConfig, t: Translate, node?: string): ActionText => {
  const name = ref(rc);
  switch (kind) {
    case 'pause':
      return {
        title: t('Pause the rollout'),
        effect: t(
          'numo will start no further node of {{name}}: nodes already in flight finish their gate, upgrade and cleanup, and the target pools stay paused until you resume.',
          { name },
        ),
        change: t('This sets spec.paused to true.'),
        confirm: t('Pause'),
      };
    case 'resume':
      return {
        title: t('Resume the rollout'),
        effect: t(
          'numo will go on with the rollout of {{name}}: the next node starts its gate Jobs as soon as nothing else holds it.',
          { name },
        ),
        change: t('This sets spec.paused to false.'),
        confirm: t('Resume'),
      };
    case 'retry': {
      const entry = rc.status?.nodes?.find((n) => n.name === node);
      const failedJob = [...(entry?.jobs ?? [])].reverse().find((j) => j.result === 'Failed');
      let effect: string;
      if (entry?.phase === 'Ungated') {
        effect = t(
          'numo will let the rollout of {{name}} go on past node {{node}}: it stays Ungated, and its gate Jobs are not run after the fact.',
          { name, node },
        );
      } else if (failedJob) {
        const values = { node, job: failedJob.name, attempt: (failedJob.attempt ?? 1) + 1 };
        effect =
          failedJob.phase === 'cleanup'
            ? t(
                "numo will run node {{node}}'s cleanup Jobs again: the failed Job {{job}} runs again as attempt {{attempt}} (a new Job; the failed one stays for you to inspect).",
                values,
              )
            : t(
                "numo will run node {{node}}'s gate Jobs again: the failed Job {{job}} runs again as attempt {{attempt}} (a new Job; the failed one stays for you to inspect).",
                values,
              );
      } else {
        effect = t("numo will run node {{node}}'s failed step again and give it a fresh nodeTimeout.", { node });
      }
      return {
        title: t('Retry node {{name}}', { name: node }),
        effect,
        change: t(
          'This sets the annotation {{annotation}}={{node}} on {{name}}; numo removes it once it acted on it.',
          {
            annotation: RETRY_ANNOTATION,
            node,
            name,
          },
        ),
        confirm: t('Retry'),
      };
    }
    case 'skip':
    default:
      return {
        title: node ? t('Skip node {{name}}', { name: node }) : t('Skip a node'),
        effect: t(
          "numo will skip node {{node}}: this rollout does not gate it and counts it as finished. numo keeps it held in its own paused pool and goes on with the next node; once the rollout restored the pools, the node's own pool upgrades it without a gate.",
          { node },
        ),
        change: t(
          'This sets the annotation {{annotation}}={{value}} on {{name}}; it stays in force, for later upgrades too, until you remove it.',
          { annotation: SKIP_ANNOTATION, value: node ? skipValue(rc, node) : '…', name },
        ),
        confirm: t('Skip'),
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
