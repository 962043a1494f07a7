import { runConfigActions } from './useRunConfigActions';
import { runConfig } from '../__fixtures__';
import { t } from '../__fixtures__/i18n';

const tab = '/k8s/ns/upgrade-ops/openshift-optional.skrzypek.io~v1alpha1~MutexRunConfig/gated-workers/rollout';
const review = {
  group: 'openshift-optional.skrzypek.io',
  resource: 'mutexrunconfigs',
  verb: 'patch',
  name: 'gated-workers',
  namespace: 'upgrade-ops',
};

describe("the run config's actions in the console's menus", () => {
  it('open the Rollout tab with the confirmation, each checked for patch access', () => {
    const actions = runConfigActions(runConfig(), t);
    expect(actions.map((a) => [a.id, a.label, a.cta, a.disabled ?? false])).toEqual([
      ['numo-pause', 'Pause rollout', { href: `${tab}?numo-action=pause` }, false],
      ['numo-retry-worker-3', 'Retry node worker-3', { href: `${tab}?numo-action=retry&numo-node=worker-3` }, false],
      ['numo-skip', 'Skip a node', { href: `${tab}?numo-action=skip` }, false],
    ]);
    actions.forEach((a) => expect(a.accessReview).toEqual(review));
  });

  it('offer Resume on a paused run config and a disabled Retry without a failed node', () => {
    const rc = runConfig();
    rc.spec.paused = true;
    if (rc.status) rc.status.nodes = [];
    const actions = runConfigActions(rc, t);
    expect(actions.map((a) => [a.id, a.disabled ?? false, a.disabledTooltip])).toEqual([
      ['numo-resume', false, undefined],
      ['numo-retry', true, 'No node has failed.'],
      ['numo-skip', false, undefined],
    ]);
  });

  it('offer no Skip once every node is done (Restoring) or the rollout is over (Completed), but still Pause', () => {
    for (const [phase, why] of [
      ['Restoring', 'Every node is done: numo is restoring the pools.'],
      ['Completed', 'The rollout is over: no node is left to skip.'],
    ] as const) {
      const rc = runConfig();
      if (rc.status) {
        rc.status.phase = phase;
        rc.status.nodes = [];
      }
      expect(runConfigActions(rc, t).map((a) => [a.id, a.disabled ?? false, a.disabledTooltip])).toEqual([
        ['numo-pause', false, undefined],
        ['numo-retry', true, 'No node has failed.'],
        ['numo-skip', true, why],
      ]);
    }
  });

  it('are none without a run config', () => {
    expect(runConfigActions(undefined, t)).toEqual([]);
  });
});
