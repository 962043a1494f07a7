// A rollout by failure domain: the mid-rollout run config with `status.topology` (zones, one domain at a time), and
// its nodes with their zone labels. zone-a (worker-0, worker-1) is done, zone-b (worker-2 upgrading, worker-3
// failed) is under way, zone-c (worker-4) and the node without a zone label (worker-5) are to go.
import type { MutexRunConfig, MutexTarget, Node } from '../types';
import { runConfig } from '.';

export const ZONE = 'topology.kubernetes.io/zone';

export const topologyRunConfig = (): MutexRunConfig => {
  const rc = runConfig();
  if (rc.status) {
    rc.status.topology = {
      key: ZONE,
      keySource: 'Default',
      mode: 'DomainAtATime',
      current: 'zone-b',
      done: ['zone-a'],
      waves: [
        {
          domain: 'zone-a',
          nodes: 2,
          done: 2,
          startedAt: '2026-11-25T08:00:00Z',
          finishedAt: '2026-11-25T09:00:00Z',
        },
        { domain: 'zone-b', nodes: 2, done: 0, startedAt: '2026-11-25T09:00:00Z' },
        { domain: 'zone-c', nodes: 1, done: 0 },
        { domain: '', nodes: 1, done: 0 },
      ],
    };
  }
  return rc;
};

const node = (name: string, zone?: string): Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels: { 'node-role.kubernetes.io/worker': '', ...(zone ? { [ZONE]: zone } : {}) } },
});

export const zonedNodes = (): Node[] => [
  node('worker-0', 'zone-a'),
  node('worker-1', 'zone-a'),
  node('worker-2', 'zone-b'),
  node('worker-3', 'zone-b'),
  node('worker-4', 'zone-c'),
  node('worker-5'),
];

/** node name → zone, as useNodeDomains reads it from the nodes. */
export const zoneOf: Record<string, string> = {
  'worker-0': 'zone-a',
  'worker-1': 'zone-a',
  'worker-2': 'zone-b',
  'worker-3': 'zone-b',
  'worker-4': 'zone-c',
  'worker-5': '',
};

/** The run config's target, whose nodes are still to go in release order. */
export const workersTarget = (): MutexTarget => ({
  apiVersion: 'openshift-optional.skrzypek.io/v1alpha1',
  kind: 'MutexTarget',
  metadata: { name: 'workers', namespace: 'upgrade-ops' },
  spec: { machineConfigPools: ['worker'] },
  status: { nodes: ['worker-0', 'worker-1', 'worker-2', 'worker-3', 'worker-4', 'worker-5'] },
});
