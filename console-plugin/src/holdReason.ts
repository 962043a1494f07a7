// Why numo holds a node, in words: the one place the plugin's node status is worded (the Node details item, the
// node gates page and the node table say what this returns).
import type { K8sResourceCommon } from '@openshift-console/dynamic-plugin-sdk';
import type { Blocker, MutexRunConfig, NodePhase, NodeProgress } from './types';
import { RULE_LABEL_PREFIX } from './models';
import { ms, parseDuration, shownTime } from './time';

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
  /** What numo does with the node, or why it holds it, as a sentence fragment. */
  text: string;
  state: HoldState;
  /** The run config that gates the node, if one does. */
  runConfig?: MutexRunConfig;
  /** The node's phase in that run config's status, if it has an entry. */
  phase?: NodePhase;
};

const ACTIVE = ['Waiting', 'Pausing', 'Upgrading', 'Failed', 'Restoring', 'Invalid'];
const isActive = (rc: MutexRunConfig) => ACTIVE.includes(rc.status?.phase ?? '');
const WINDOW_CHECKS = ['MaintenanceWindow', 'BlackoutWindow'];

const condition = (rc: MutexRunConfig, type: string) => rc.status?.conditions?.find((c) => c.type === type);

const withoutFullStop = (text: string) => text.trim().replace(/\.$/, '');

/** What holds the next node of `rc`, from `blockedBy` or else the ReadyForNextNode condition; undefined if nothing. */
export const holdOfNextNode = (rc: MutexRunConfig): string | undefined => {
  const blockers: Blocker[] = rc.status?.blockedBy ?? [];
  if (blockers.length) {
    const windows = blockers.filter((b) => WINDOW_CHECKS.includes(b.check)).map((b) => withoutFullStop(b.message));
    const others = blockers.filter((b) => !WINDOW_CHECKS.includes(b.check)).map((b) => withoutFullStop(b.message));
    return [...windows, ...(others.length ? [`held: ${others.join('; ')}`] : [])].join('; ');
  }
  const ready = condition(rc, 'ReadyForNextNode');
  if (ready?.status === 'False' && ready.message) return `held: ${withoutFullStop(ready.message)}`;
  return undefined;
};

/** The words for a node that has an entry in the run config's status. */
const entryReason = (rc: MutexRunConfig, entry: NodeProgress): HoldReason => {
  const base = { runConfig: rc, phase: entry.phase };
  const target = rc.status?.targetVersion;
  switch (entry.phase) {
    case 'Gating': {
      const running = (entry.jobs ?? []).filter((j) => j.phase === 'gate' && j.result === 'Running').map((j) => j.name);
      return {
        ...base,
        state: 'gating',
        text: running.length ? `waiting for its gate Jobs (${running.join(', ')})` : 'waiting for its gate Jobs',
      };
    }
    case 'Released':
      return {
        ...base,
        state: 'released',
        text: 'released to the canary pool: waiting for the Machine Config Operator to start on it',
      };
    case 'Upgrading': {
      // Where numo saw the drain end (MachineConfigNodes, OpenShift 4.20 and later), when.
      const drained = ms(entry.drainedAt);
      const upgrading = target ? `upgrading to ${target}` : 'upgrading';
      return {
        ...base,
        state: 'upgrading',
        text: drained !== undefined ? `${upgrading} (drained ${shownTime(drained)})` : upgrading,
      };
    }
    case 'CleaningUp':
      return { ...base, state: 'cleaning-up', text: 'upgraded; waiting for its cleanup Jobs' };
    case 'Soaking': {
      const started = ms(entry.soakStartedAt);
      const soak = parseDuration(rc.spec?.soakTime);
      return {
        ...base,
        state: 'soaking',
        text:
          started !== undefined && soak !== undefined
            ? `soaking until ${shownTime(started + soak)}: it must stay healthy before the next node starts`
            : 'soaking: it must stay healthy before the next node starts',
      };
    }
    case 'Done':
      return { ...base, state: 'done', text: target ? `done: upgraded to ${target}` : 'done' };
    case 'Skipped':
      return { ...base, state: 'skipped', text: 'skipped by an admin: not gated by this rollout' };
    case 'Failed': {
      const failedJob = (entry.jobs ?? []).find((j) => j.result === 'Failed');
      const why = entry.message ?? failedJob?.message ?? 'see the run config';
      return { ...base, state: 'failed', text: `failed: ${withoutFullStop(why)}` };
    }
    case 'Ungated':
      return {
        ...base,
        state: 'ungated',
        text: entry.acceptedAt
          ? 'Ungated: the Machine Config Operator took it before its gate Jobs ran; an admin let the rollout go on past it'
          : 'Ungated: the Machine Config Operator took it before its gate Jobs ran; the rollout holds until it is retried or skipped',
      };
    case 'Pending':
    default:
      return pendingReason(rc, entry.phase);
  }
};

/** The words for a node that waits for its turn in `rc`'s rollout. */
const pendingReason = (rc: MutexRunConfig, phase?: NodePhase): HoldReason => {
  const base = { runConfig: rc, phase };
  const name = `${rc.metadata?.namespace}/${rc.metadata?.name}`;
  if (rc.spec?.paused) return { ...base, state: 'held', text: `held: the run config ${name} is paused` };
  const status = rc.status ?? {};
  if (status.phase === 'Restoring') {
    return { ...base, state: 'waiting', text: 'the rollout is over: numo is restoring the pools' };
  }
  if (status.phase === 'Invalid') {
    const why = condition(rc, 'ConfigValidated')?.message;
    return { ...base, state: 'held', text: `held: the run config ${name} is invalid${why ? `: ${withoutFullStop(why)}` : ''}` };
  }
  const failed = (status.nodes ?? []).filter((n) => n.phase === 'Failed' || (n.phase === 'Ungated' && !n.acceptedAt));
  if (failed.length && (rc.spec?.onFailure ?? 'Hold') === 'Hold') {
    const names = failed.map((n) => n.name).join(', ');
    return {
      ...base,
      state: 'held',
      text: `held: node ${names} ${failed.length === 1 ? 'failed' : 'failed or were ungated'}; the rollout waits until ${
        failed.length === 1 ? 'it is' : 'they are'
      } retried or skipped`,
    };
  }
  const hold = holdOfNextNode(rc);
  if (hold) return { ...base, state: 'held', text: hold };
  const conflict = condition(rc, 'Conflict');
  if (conflict?.status === 'True') {
    return { ...base, state: 'held', text: `held: waiting for another run config (${withoutFullStop(conflict.message)})` };
  }
  if (condition(rc, 'UpgradeReady')?.status === 'False') {
    return { ...base, state: 'waiting', text: 'waiting for the control plane to finish its upgrade' };
  }
  return {
    ...base,
    state: 'waiting',
    text: status.progress ? `waiting for its turn (${status.progress} done)` : 'waiting for its turn',
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
export const nodeHoldReason = (node: K8sResourceCommon, runConfigs: MutexRunConfig[]): HoldReason => {
  const name = node.metadata?.name;
  const rcs = [...(runConfigs ?? [])].sort(order);
  for (const rc of rcs) {
    const entry = rc.status?.nodes?.find((n) => n.name === name);
    if (entry) return entryReason(rc, entry);
  }
  for (const rc of rcs) {
    if (name && rc.status?.skippedNodes?.includes(name)) {
      return { runConfig: rc, state: 'skipped', text: 'skipped by an admin: not gated by this rollout' };
    }
    if (name && rc.status?.completedNodes?.includes(name)) {
      const target = rc.status?.targetVersion;
      return { runConfig: rc, state: 'done', text: target ? `done: upgraded to ${target}` : 'done' };
    }
  }
  const labels = ruleLabels(node);
  if (labels.length) {
    const holding = rcs.find((rc) => isActive(rc) && usesRuleOf(rc, labels)) ?? rcs.find((rc) => usesRuleOf(rc, labels));
    if (holding && isActive(holding)) return pendingReason(holding);
  }
  if (labels.length) {
    return { state: 'held', text: 'held by numo rule labels, but no run config you can see drives a rollout now' };
  }
  return { state: 'not-gated', text: 'not gated: no numo run config holds this node' };
};
