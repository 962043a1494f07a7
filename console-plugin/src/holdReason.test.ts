import { holdOfNextNode, nodeHoldReason } from './holdReason';
import { nodes, runConfig } from './__fixtures__';
import type { MutexRunConfig, Node, NodePhase, NodeProgress } from './types';
import { t } from './__fixtures__/i18n';

const node = (name: string, labels: Record<string, string> = {}): Node => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name, labels },
});
const LABEL = { 'mutexrule.openshift-optional.skrzypek.io/storage-healthy.upgrade-ops': '' };

/** The fixture with one more status entry for worker-7. */
const withEntry = (entry: Partial<NodeProgress> & { phase: NodePhase }, change?: (rc: MutexRunConfig) => void) => {
  const rc = runConfig();
  rc.status?.nodes?.push({ name: 'worker-7', ...entry });
  change?.(rc);
  return [rc];
};

describe('nodeHoldReason', () => {
  it.each<[NodePhase, Partial<NodeProgress>, string, string]>([
    [
      'Gating',
      {
        jobs: [
          {
            name: 'storage-healthy-1a',
            namespace: 'upgrade-ops',
            rule: 'upgrade-ops/storage-healthy',
            phase: 'gate',
            result: 'Running',
          },
        ],
      },
      'gating',
      'waiting for its gate Jobs (storage-healthy-1a)',
    ],
    ['Gating', {}, 'gating', 'waiting for its gate Jobs'],
    ['Released', {}, 'released', 'released to the canary pool: waiting for the Machine Config Operator to start on it'],
    ['Upgrading', {}, 'upgrading', 'upgrading to 4.16.5'],
    [
      'Upgrading',
      { drainedAt: '2026-11-25T09:40:00Z' },
      'upgrading',
      'upgrading to 4.16.5 (drained 2026-11-25 09:40 UTC)',
    ],
    ['CleaningUp', {}, 'cleaning-up', 'upgraded; waiting for its cleanup Jobs'],
    ['Soaking', {}, 'soaking', 'soaking: it must stay healthy before the next node starts'],
    ['Done', {}, 'done', 'done: upgraded to 4.16.5'],
    ['Skipped', {}, 'skipped', 'skipped by an admin: not gated by this rollout'],
    [
      'Failed',
      { message: 'node worker-7 did not finish its gate Jobs within 90m.' },
      'failed',
      'failed: node worker-7 did not finish its gate Jobs within 90m',
    ],
    [
      'Failed',
      {
        jobs: [
          {
            name: 'j',
            namespace: 'ns',
            rule: 'ns/r',
            phase: 'gate',
            result: 'Failed',
            message: 'the Job was deleted before it finished',
          },
        ],
      },
      'failed',
      'failed: the Job was deleted before it finished',
    ],
    [
      'Ungated',
      {},
      'ungated',
      'Ungated: the Machine Config Operator took it before its gate Jobs ran; the rollout holds until it is retried or skipped',
    ],
    [
      'Ungated',
      { acceptedAt: '2026-11-25T09:50:00Z' },
      'ungated',
      'Ungated: the Machine Config Operator took it before its gate Jobs ran; an admin let the rollout go on past it',
    ],
  ])('says a %s node is %s: "%s"', (phase, entry, state, text) => {
    const reason = nodeHoldReason(node('worker-7'), withEntry({ phase, ...entry }), t);
    expect(reason).toMatchObject({ state, text, phase });
    expect(reason.runConfig?.metadata?.name).toBe('gated-workers');
  });

  it('says until when a node soaks', () => {
    const reason = nodeHoldReason(
      node('worker-7'),
      withEntry({ phase: 'Soaking', soakStartedAt: '2026-11-25T09:50:00Z' }, (rc) => {
        rc.spec.soakTime = '15m';
      }),
      t,
    );
    expect(reason.text).toBe('soaking until 2026-11-25 10:05 UTC: it must stay healthy before the next node starts');
  });

  it('says what holds a node that waits for its turn: the degraded ClusterOperator', () => {
    const reason = nodeHoldReason(node('worker-4', LABEL), [runConfig()], t);
    expect(reason).toMatchObject({
      state: 'held',
      text: 'held: ClusterOperator storage is Degraded (StorageDegraded: 1 of 3 OSDs down)',
    });
    expect(reason.phase).toBeUndefined();
  });

  it('the fixture nodes: upgrading, failed, held, done, not gated', () => {
    const rcs = [runConfig()];
    expect(nodes().map((n) => [n.metadata?.name, nodeHoldReason(n, rcs, t).state])).toEqual([
      ['worker-0', 'done'],
      ['worker-2', 'upgrading'],
      ['worker-3', 'failed'],
      ['worker-4', 'held'],
      ['master-0', 'not-gated'],
    ]);
  });

  it('says a node outside the maintenance window waits for it', () => {
    const rc = runConfig();
    if (rc.status) {
      rc.status.blockedBy = [
        { check: 'MaintenanceWindow', message: 'outside the maintenance window; the next opens 2026-11-26T08:00:00Z' },
      ];
    }
    expect(nodeHoldReason(node('worker-4', LABEL), [rc], t).text).toBe(
      'outside the maintenance window; the next opens 2026-11-26T08:00:00Z',
    );
  });

  it('says every hold at once, the windows first', () => {
    const rc = runConfig();
    if (rc.status) {
      rc.status.blockedBy = [
        { check: 'ClusterOperators', message: 'ClusterOperator storage is Degraded' },
        {
          check: 'BlackoutWindow',
          message:
            'in a blackout window (year-end freeze) until 2027-01-02T00:00:00Z; the next opens 2027-01-02T08:00:00Z',
        },
        { check: 'Nodes', message: 'node worker-9 is cordoned.' },
      ];
    }
    expect(holdOfNextNode(rc, t)).toBe(
      'in a blackout window (year-end freeze) until 2027-01-02T00:00:00Z; the next opens 2027-01-02T08:00:00Z; held: ClusterOperator storage is Degraded; node worker-9 is cordoned',
    );
  });

  it('falls back to the ReadyForNextNode condition when blockedBy is empty', () => {
    const rc = runConfig();
    if (rc.status) rc.status.blockedBy = [];
    expect(nodeHoldReason(node('worker-4', LABEL), [rc], t).text).toBe(
      'held: ClusterOperator storage is Degraded (StorageDegraded: 1 of 3 OSDs down)',
    );
  });

  it('says a paused run config holds it', () => {
    const rc = runConfig();
    rc.spec.paused = true;
    expect(nodeHoldReason(node('worker-4', LABEL), [rc], t).text).toBe(
      'held: the run config upgrade-ops/gated-workers is paused',
    );
  });

  it('says a failed node holds it under onFailure: Hold', () => {
    const rc = runConfig();
    rc.spec.onFailure = 'Hold';
    if (rc.status) rc.status.phase = 'Failed';
    expect(nodeHoldReason(node('worker-4', LABEL), [rc], t).text).toBe(
      'held: node worker-3 failed; the rollout waits until it is retried or skipped',
    );
  });

  it('says an invalid run config holds it', () => {
    const rc = runConfig();
    if (rc.status) {
      rc.status.phase = 'Invalid';
      rc.status.conditions = [
        {
          type: 'ConfigValidated',
          status: 'False',
          reason: 'InvalidConfig',
          message: 'canary MachineConfigPool canary not found.',
          lastTransitionTime: '2026-11-25T09:00:00Z',
        },
      ];
    }
    expect(nodeHoldReason(node('worker-4', LABEL), [rc], t).text).toBe(
      'held: the run config upgrade-ops/gated-workers is invalid: canary MachineConfigPool canary not found',
    );
  });

  it('says it waits for another run config, for the control plane, or for its turn', () => {
    const clear = (change: (rc: MutexRunConfig) => void) => {
      const rc = runConfig();
      if (rc.status) {
        rc.status.blockedBy = [];
        rc.status.conditions = [];
        rc.status.nodes = [];
      }
      change(rc);
      return nodeHoldReason(node('worker-4', LABEL), [rc], t).text;
    };
    expect(
      clear((rc) =>
        rc.status?.conditions?.push({
          type: 'Conflict',
          status: 'True',
          reason: 'PoolInUse',
          message: 'upgrade-ops/other drives pool worker.',
          lastTransitionTime: '',
        }),
      ),
    ).toBe('held: waiting for another run config (upgrade-ops/other drives pool worker)');
    expect(
      clear((rc) =>
        rc.status?.conditions?.push({
          type: 'UpgradeReady',
          status: 'False',
          reason: 'ControlPlaneUpgrading',
          message: '',
          lastTransitionTime: '',
        }),
      ),
    ).toBe('waiting for the control plane to finish its upgrade');
    expect(clear(() => undefined)).toBe('waiting for its turn (2/6 done)');
    expect(
      clear((rc) => {
        if (rc.status) rc.status.phase = 'Restoring';
      }),
    ).toBe('the rollout is over: numo is restoring the pools');
  });

  it('says a node the status lists as completed or skipped is done or skipped', () => {
    const rc = runConfig();
    rc.status?.skippedNodes?.push('worker-5');
    expect(nodeHoldReason(node('worker-1'), [rc], t)).toMatchObject({
      state: 'done',
      text: 'done: upgraded to 4.16.5',
    });
    // A skipped node stays labelled (numo keeps it held in its pool): skipped, not waiting.
    expect(nodeHoldReason(node('worker-5', LABEL), [rc], t)).toMatchObject({ state: 'skipped' });
  });

  it('says numo does not gate a node no run config holds', () => {
    expect(nodeHoldReason(node('infra-0'), [runConfig()], t)).toEqual({
      state: 'not-gated',
      text: 'not gated: no numo run config holds this node',
    });
    expect(nodeHoldReason(node('infra-0'), [], t)).toMatchObject({ state: 'not-gated' });
    const idle = runConfig();
    if (idle.status) idle.status.phase = 'Idle';
    expect(nodeHoldReason(node('worker-4', LABEL), [idle], t)).toMatchObject({ state: 'held' });
  });

  it('prefers the run config with a rollout under way', () => {
    const old = runConfig();
    if (old.metadata) old.metadata.name = 'old';
    if (old.status) {
      old.status.phase = 'Completed';
      old.status.nodes = [{ name: 'worker-2', phase: 'Done' }];
    }
    const reason = nodeHoldReason(node('worker-2'), [old, runConfig()], t);
    expect(reason.runConfig?.metadata?.name).toBe('gated-workers');
    expect(reason.state).toBe('upgrading');
  });
});
