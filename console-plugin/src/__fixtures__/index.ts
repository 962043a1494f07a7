// The fixtures, typed, and fresh copies (tests may change them).
import runConfigJson from './run-config-mid-rollout.json';
import recordJson from './timeline-configmap.json';
import nodesJson from './nodes.json';
import type { ConfigMap, MutexRunConfig, Node } from '../types';

/** A mid-rollout run config: worker-0 and worker-1 done, worker-2 upgrading, worker-3 failed (gate Job), two nodes to
 * go, the next node held by a degraded ClusterOperator. */
export const runConfig = (): MutexRunConfig => JSON.parse(JSON.stringify(runConfigJson)) as MutexRunConfig;
/** Its rollout record: worker-0 and worker-1 done, a hold that ended. */
export const record = (): ConfigMap => JSON.parse(JSON.stringify(recordJson)) as ConfigMap;
export const nodes = (): Node[] => JSON.parse(JSON.stringify(nodesJson)) as Node[];

/** The time the fixtures are seen at. */
export const NOW = Date.parse('2026-11-25T10:00:00Z');

/** When worker-2's drain ended in `drainedRunConfig` (a MachineConfigNode's `Drained` condition, OpenShift 4.20+). */
export const DRAINED_AT = '2026-11-25T09:40:00Z';
/** The mid-rollout run config where numo saw worker-2's drain end: it is rebooting. */
export const drainedRunConfig = (): MutexRunConfig => {
  const rc = runConfig();
  const worker2 = rc.status?.nodes?.find((n) => n.name === 'worker-2');
  if (worker2) {
    worker2.drainedAt = DRAINED_AT;
    worker2.message = 'Rebooting: the Machine Config Operator drained the node and reboots it into 4.16.5.';
  }
  return rc;
};
