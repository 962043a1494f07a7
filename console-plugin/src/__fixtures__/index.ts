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
