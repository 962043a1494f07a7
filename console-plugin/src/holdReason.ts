// Why numo holds a node, in words: the one place the plugin's node status is worded (the Node details item, the
// node gates page and the node table say what this returns).
import type { K8sResourceCommon } from '@openshift-console/dynamic-plugin-sdk';
import type { Blocker, Check, ConditionType, MutexRunConfig, NodePhase, NodeProgress, RunPhase } from './types';
import type { Translate } from './i18n';
import { RULE_LABEL_PREFIX } from './models';
import { ms, parseDuration, shownTime } from './time';

/** What numo does with a node, as its label says it. */
export type HoldState =
  | 'gating'
  | 'released'
  | 'upgrading'
  | 'cleaning-up'
  | 'soaking'
  | 'done'
  | 'skipped'
  | 'failed'
  | 'ungated'
  | 'waiting'
  | 'held'
  | 'not-gated';

export type HoldReason = {
  /** What numo does with the node, or why it holds it, as a sentence fragment (translated). */
  text: string;
  state: HoldState;
  /** The run config that gates the node, if one does. */
  runConfig?: MutexRunConfig;
  /** The node's phase in that run config's status, if it has an entry. */
  phase?: NodePhase;
};

const ACTIVE: RunPhase[] = ['Waiting', 'Pausing', 'Upgrading', 'Failed', 'Restoring', 'Invalid'];
const isActive = (rc: MutexRunConfig) => !!rc.status?.phase && ACTIVE.includes(rc.status.phase);
const WINDOW_CHECKS: string[] = ['MaintenanceWindow', 'BlackoutWindow'] satisfies Check[];

const condition = (rc: MutexRunConfig, type: ConditionType) => rc.status?.conditions?.find((c) => c.type === type);

const withoutFullStop = (text: string) => text.trim().replace(/\.$/, '');

/** What holds the next node of `rc`, from `blockedBy` or else the ReadyForNextNode condition; undefined if nothing. */
export const holdOfNextNode = (rc: MutexRunConfig, t: Translate): string | undefined => {
  const blockers: Blocker[] = rc.status?.blockedBy ?? [];
  if (blockers.length) {
    const windows = blockers.filter((b) => WINDOW_CHECKS.includes(b.check)).map((b) => withoutFullStop(b.message));
    const others = blockers.filter((b) => !WINDOW_CHECKS.includes(b.check)).map((b) => withoutFullStop(b.message));
    return [...windows, ...(others.length ? [t('held: {{why}}', { why: others.join('; ') })] : [])].join('; ');
  }
  const ready = condition(rc, 'ReadyForNextNode');
  if (ready?.status === 'False' && ready.message) return t('held: {{why}}', { why: withoutFullStop(ready.message) });
  return undefined;
};

/** The words for a node that has an entry in the run config's status. */
const entryReason = (rc: MutexRunConfig, entry: NodeProgress, t: Translate): HoldReason => {
  const base = { runConfig: rc, phase: entry.phase };
  const target = rc.status?.targetVersion;
  switch (entry.phase) {
    case 'Gating': {
      const running = (entry.jobs ?? []).filter((j) => j.phase === 'gate' && j.result === 'Running').map((j) => j.name);
      return {
        ...base,
        state: 'gating',
        text: running.length
          ? t('waiting for its gate Jobs ({{jobs}})', { jobs: running.join(', ') })
          : t('waiting for its gate Jobs'),
      };
    }
    case 'Released':
      return {
        ...base,
        state: 'released',
        text: t('released to the canary pool: waiting for the Machine Config Operator to start on it'),
      };
    case 'Upgrading': {
      // Where numo saw the drain end (MachineConfigNodes, OpenShift 4.20 and later), when.
      const drained = ms(entry.drainedAt);
      const upgrading = target ? t('upgrading to {{target}}', { target }) : t('upgrading');
      return {
        ...base,
        state: 'upgrading',
        text:
          drained !== undefined
            ? t('{{upgrading}} (drained {{time}})', { upgrading, time: shownTime(drained) })
            : upgrading,
      };
    }
    case 'CleaningUp':
      return { ...base, state: 'cleaning-up', text: t('upgraded; waiting for its cleanup Jobs') };
    case 'Soaking': {
      const started = ms(entry.soakStartedAt);
      const soak = parseDuration(rc.spec?.soakTime);
      return {
        ...base,
        state: 'soaking',
        text:
          started !== undefined && soak !== undefined
            ? t('soaking until {{time}}: it must stay healthy before the next node starts', {
                time: shownTime(started + soak),
              })
            : t('soaking: it must stay healthy before the next node starts'),
      };
    }
    case 'Done':
      return { ...base, state: 'done', text: doneText(target, t) };
    case 'Skipped':
      return { ...base, state: 'skipped', text: t('skipped by an admin: not gated by this rollout') };
    case 'Failed': {
      const failedJob = (entry.jobs ?? []).find((j) => j.result === 'Failed');
      const why = entry.message ?? failedJob?.message ?? t('see the run config');
      return { ...base, state: 'failed', text: t('failed: {{why}}', { why: withoutFullStop(why) }) };
    }
    case 'Ungated':
      return {
        ...base,
        state: 'ungated',
        text: entry.acceptedAt
          ? t(
              'Ungated: the Machine Config Operator took it before its gate Jobs ran; an admin let the rollout go on past it',
            )
          : t(
              'Ungated: the Machine Config Operator took it before its gate Jobs ran; the rollout holds until it is retried or skipped',
            ),
      };
    case 'Pending':
    default:
      return pendingReason(rc, t, entry.phase);
  }
};

const doneText = (target: string | null | undefined, t: Translate) =>
  target ? t('done: upgraded to {{target}}', { target }) : t('done');

/** The words for a node that waits for its turn in `rc`'s rollout. */
const pendingReason = (rc: MutexRunConfig, t: Translate, phase?: NodePhase): HoldReason => {
  const base = { runConfig: rc, phase };
  const name = `${rc.metadata?.namespace}/${rc.metadata?.name}`;
  if (rc.spec?.paused) return { ...base, state: 'held', text: t('held: the run config {{name}} is paused', { name }) };
  const status = rc.status ?? {};
  if (status.phase === 'Restoring') {
    return { ...base, state: 'waiting', text: t('the rollout is over: numo is restoring the pools') };
  }
  if (status.phase === 'Invalid') {
    const why = condition(rc, 'ConfigValidated')?.message;
    return {
      ...base,
      state: 'held',
      text: why
        ? t('held: the run config {{name}} is invalid: {{why}}', { name, why: withoutFullStop(why) })
        : t('held: the run config {{name}} is invalid', { name }),
    };
  }
  const failed = (status.nodes ?? []).filter((n) => n.phase === 'Failed' || (n.phase === 'Ungated' && !n.acceptedAt));
  if (failed.length && (rc.spec?.onFailure ?? 'Hold') === 'Hold') {
    const names = failed.map((n) => n.name).join(', ');
    return {
      ...base,
      state: 'held',
      text:
        failed.length === 1
          ? t('held: node {{names}} failed; the rollout waits until it is retried or skipped', { names })
          : t('held: node {{names}} failed or were ungated; the rollout waits until they are retried or skipped', {
              names,
            }),
    };
  }
  const hold = holdOfNextNode(rc, t);
  if (hold) return { ...base, state: 'held', text: hold };
  const conflict = condition(rc, 'Conflict');
  if (conflict?.status === 'True') {
    return {
      ...base,
      state: 'held',
      text: t('held: waiting for another run config ({{why}})', { why: withoutFullStop(conflict.message) }),
    };
  }
  if (condition(rc, 'UpgradeReady')?.status === 'False') {
    return { ...base, state: 'waiting', text: t('waiting for the control plane to finish its upgrade') };
  }
  return {
    ...base,
    state: 'waiting',
    text: status.progress
      ? t('waiting for its turn ({{progress}} done)', { progress: status.progress })
      : t('waiting for its turn'),
  };
};

/** The name parts of numo's rule labels on a node (`<rule>.<namespace>`, or its shortened form). */
const ruleLabels = (node: K8sResourceCommon): string[] =>
  Object.keys(node.metadata?.labels ?? {})
    .filter((k) => k.startsWith(RULE_LABEL_PREFIX))
    .map((k) => k.slice(RULE_LABEL_PREFIX.length));

/** Whether `rc` uses a rule whose label is one of `labels` (long names are shortened with a hash: the readable
 * head must match). */
const usesRuleOf = (rc: MutexRunConfig, labels: string[]): boolean =>
  (rc.spec?.mutexRules ?? []).some((rule) => {
    const full = `${rule.name}.${rule.namespace ?? rc.metadata?.namespace}`;
    return labels.some((l) => l === full || (full.length > 63 && l.length === 63 && full.startsWith(l.slice(0, 40))));
  });

const order = (a: MutexRunConfig, b: MutexRunConfig) => Number(isActive(b)) - Number(isActive(a));

/**
 * Why numo holds `node`, given every MutexRunConfig the user can see: its phase in the run config whose status has
 * it, else whether a run config completed or skipped it, else (a node numo labelled) what holds the next node of
 * the run config that holds it, else that numo does not gate it.
 */
export const nodeHoldReason = (node: K8sResourceCommon, runConfigs: MutexRunConfig[], t: Translate): HoldReason => {
  const name = node.metadata?.name;
  const rcs = [...(runConfigs ?? [])].sort(order);
  for (const rc of rcs) {
    const entry = rc.status?.nodes?.find((n) => n.name === name);
    if (entry) return entryReason(rc, entry, t);
  }
  for (const rc of rcs) {
    if (name && rc.status?.skippedNodes?.includes(name)) {
      return { runConfig: rc, state: 'skipped', text: t('skipped by an admin: not gated by this rollout') };
    }
    if (name && rc.status?.completedNodes?.includes(name)) {
      return { runConfig: rc, state: 'done', text: doneText(rc.status?.targetVersion, t) };
    }
  }
  const labels = ruleLabels(node);
  if (labels.length) {
    const holding =
      rcs.find((rc) => isActive(rc) && usesRuleOf(rc, labels)) ?? rcs.find((rc) => usesRuleOf(rc, labels));
    if (holding && isActive(holding)) return pendingReason(holding, t);
  }
  if (labels.length) {
    return { state: 'held', text: t('held by numo rule labels, but no run config you can see drives a rollout now') };
  }
  return { state: 'not-gated', text: t('not gated: no numo run config holds this node') };
};

/** The word of each state, as its label shows it. */
export const holdStateWords = (t: Translate): Record<HoldState, string> => ({
  gating: t('gating'),
  released: t('released'),
  upgrading: t('upgrading'),
  'cleaning-up': t('cleaning up'),
  soaking: t('soaking'),
  done: t('done'),
  skipped: t('skipped'),
  failed: t('failed'),
  ungated: t('Ungated'),
  waiting: t('waiting'),
  held: t('held'),
  'not-gated': t('not gated'),
});
