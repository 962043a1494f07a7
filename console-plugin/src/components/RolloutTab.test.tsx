import { render, screen, within, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import RolloutTab from './RolloutTab';
import { drainedRunConfig, record, runConfig } from '../__fixtures__';
import { topologyRunConfig, workersTarget, zonedNodes } from '../__fixtures__/topology';
import { mocked, setWorld, type World } from '../__fixtures__/sdk';
import { MutexRunConfigModel } from '../models';
import type { MutexRunConfig } from '../types';

jest.mock('@openshift-console/dynamic-plugin-sdk', () => ({
  useK8sWatchResource: jest.fn(),
  useAccessReview: jest.fn(),
  k8sPatch: jest.fn(),
  k8sListItems: jest.fn(),
  // The timeline is numo's (src/timeline/TimelineChart.test.tsx): here it never comes.
  consoleFetchJSON: jest.fn(() => new Promise(() => undefined)),
}));

const NOW = new Date('2026-11-25T10:00:00Z');

const show = (world: World = {}, obj: MutexRunConfig = world.runConfigs?.[0] ?? runConfig()) => {
  setWorld({ runConfigs: [obj], record: record(), ...world });
  return render(<RolloutTab obj={obj} />);
};

const testId = (id: string) => document.querySelector(`[data-test="${id}"]`) as HTMLElement;

beforeEach(() => {
  jest.useFakeTimers({ now: NOW, doNotFake: ['queueMicrotask', 'nextTick', 'setImmediate'] });
  jest.clearAllMocks();
  window.history.replaceState(
    null,
    '',
    '/k8s/ns/upgrade-ops/openshift-optional.skrzypek.io~v1alpha1~MutexRunConfig/gated-workers/rollout',
  );
});
afterEach(() => jest.useRealTimers());

const user = () => userEvent.setup({ advanceTimers: jest.advanceTimersByTime });

describe('the Rollout tab', () => {
  it('shows where the rollout is, when it should end and what holds the next node', () => {
    show();
    expect(testId('phase')).toHaveTextContent('Upgrading');
    expect(testId('phase')).toHaveAttribute('data-phase', 'Upgrading');
    expect(testId('progress')).toHaveTextContent('2/6 nodes');
    expect(testId('progress')).toHaveAttribute('data-done', '2');
    expect(testId('target-version')).toHaveTextContent('4.16.5');
    expect(testId('eta')).toHaveTextContent('2026-11-25 12:30 UTC');
    expect(testId('eta')).toHaveTextContent("From this rollout's nodes.");
    expect(testId('eta')).toHaveTextContent('node worker-3 is retried or skipped');
    expect(testId('hold-reason')).toHaveTextContent(
      'held: ClusterOperator storage is Degraded (StorageDegraded: 1 of 3 OSDs down)',
    );
    expect(testId('hold')).toHaveTextContent('The next node is held since 2026-11-25 09:40 UTC');
    expect(testId('blocked-by-ClusterOperators')).toBeInTheDocument();
    expect(testId('next-window')).toHaveTextContent('2026-11-25 08:00 UTC – 2026-11-25 14:00 UTC');
    expect(testId('foreign-changes')).toHaveTextContent('MachineConfigPool/worker spec.paused: changed by Mozilla');
    expect(testId('paused-alert')).toBeNull();
  });

  it('shows when the Machine Config Operator drained a node, where numo saw it', () => {
    const { unmount } = show();
    expect(testId('node-drained')).toBeNull();
    unmount();
    show({}, drainedRunConfig());
    // The node table: the upgrade whole, and when the drain ended.
    const row = testId('node-row-worker-2');
    expect(row.querySelector('[data-test="step-Upgrade"]')).toHaveTextContent('28m 30s (so far)');
    expect(row.querySelector('[data-test="node-drained"]')).toHaveTextContent('Drained 2026-11-25 09:40 UTC');
    expect(row.querySelector('[data-test="node-message"]')).toHaveTextContent(/^Rebooting: /);
    expect(testId('node-row-worker-3').querySelector('[data-test="node-drained"]')).toBeNull();
  });

  it('lists the nodes with phase, steps, Jobs and links to their pods', () => {
    show();
    const rows = [...document.querySelectorAll('[data-test^="node-row-"]')];
    expect(rows.map((r) => [r.getAttribute('data-test'), r.getAttribute('data-phase')])).toEqual([
      ['node-row-worker-2', 'Upgrading'],
      ['node-row-worker-3', 'Failed'],
      ['node-row-worker-0', 'Done'],
      ['node-row-worker-1', 'Done'],
    ]);
    const worker3 = testId('node-row-worker-3');
    expect(within(worker3).getByText('Failed')).toBeInTheDocument();
    expect(worker3.querySelector('[data-test="step-Gate"]')).toHaveTextContent('2m 00s');
    expect(worker3.querySelector('[data-test="node-message"]')).toHaveTextContent('BackoffLimitExceeded');
    const job = worker3.querySelector('[data-test="job-storage-healthy-8b02e4f7aa"]') as HTMLElement;
    expect(job).toHaveAttribute('data-result', 'Failed');
    expect(within(job).getByRole('link', { name: 'storage-healthy-8b02e4f7aa' })).toHaveAttribute(
      'href',
      '/k8s/ns/upgrade-ops/jobs/storage-healthy-8b02e4f7aa',
    );
    expect(within(job).getByRole('link', { name: 'Pods and logs of Job storage-healthy-8b02e4f7aa' })).toHaveAttribute(
      'href',
      '/k8s/ns/upgrade-ops/jobs/storage-healthy-8b02e4f7aa/pods',
    );
    expect(testId('node-row-worker-2').querySelector('[data-test="step-Upgrade"]')).toHaveTextContent(
      '28m 30s (so far)',
    );
    // numo writes no message for a node in flight whose phase says it all: the table says it in words.
    expect(testId('node-row-worker-2').querySelector('[data-test="node-message"]')).toHaveTextContent(
      'Waiting for the node to run 4.16.5 and be Ready.',
    );
    expect(testId('node-row-worker-0').querySelector('[data-test="step-Upgrade"]')).toHaveTextContent('15m 00s');
  });

  it('lists the target nodes still to go as Pending, in the order numo releases them', async () => {
    const target = (namespace: string, nodes: string[]) => ({
      apiVersion: 'openshift-optional.skrzypek.io/v1alpha1',
      kind: 'MutexTarget',
      metadata: { name: 'workers', namespace },
      spec: { machineConfigPools: ['worker'] },
      status: { nodes },
    });
    show({
      targets: [
        target('elsewhere', ['worker-9']),
        target('upgrade-ops', ['worker-5', 'worker-0', 'worker-4', 'worker-1', 'worker-2', 'worker-3']),
      ],
    });
    await waitFor(() => expect(testId('node-row-worker-5')).not.toBeNull());
    const rows = [...document.querySelectorAll('[data-test^="node-row-"]')];
    expect(rows.map((r) => [r.getAttribute('data-test'), r.getAttribute('data-phase')])).toEqual([
      ['node-row-worker-2', 'Upgrading'],
      ['node-row-worker-3', 'Failed'],
      ['node-row-worker-0', 'Done'],
      ['node-row-worker-1', 'Done'],
      ['node-row-worker-4', 'Pending'],
      ['node-row-worker-5', 'Pending'],
    ]);
    expect(screen.getByRole('button', { name: 'Pending (2)' })).toBeInTheDocument();
  });

  it('groups the nodes by failure domain, in wave order, under a rollout by domain', async () => {
    show({ runConfigs: [topologyRunConfig()], nodes: zonedNodes(), targets: [workersTarget()] });
    await waitFor(() => expect(testId('node-row-worker-5')).not.toBeNull());
    const groups = [
      ...document.querySelectorAll('[data-test^="domain-group-"]:not([data-test="domain-group-header"])'),
    ];
    expect(
      groups.map((g) => [
        g.getAttribute('data-test'),
        g.getAttribute('data-state'),
        g.querySelector('[data-test="domain-group-header"]')?.textContent,
        [...g.querySelectorAll('[data-test^="node-row-"]')].map((r) => r.getAttribute('data-test')),
      ]),
    ).toEqual([
      ['domain-group-zone-a', 'done', 'zone-a 2 of 2 nodes done done', ['node-row-worker-0', 'node-row-worker-1']],
      [
        'domain-group-zone-b',
        'in-progress',
        'zone-b 0 of 2 nodes done in progress',
        ['node-row-worker-2', 'node-row-worker-3'],
      ],
      ['domain-group-zone-c', 'pending', 'zone-c 0 of 1 node done pending', ['node-row-worker-4']],
      [
        'domain-group-none',
        'pending',
        '(no topology.kubernetes.io/zone label) 0 of 1 node done pending',
        ['node-row-worker-5'],
      ],
    ]);
    // The phase filter keeps the groups that have a node in that phase.
    await user().click(screen.getByRole('button', { name: 'Failed (1)' }));
    expect(
      [...document.querySelectorAll('[data-test^="domain-group-"]:not([data-test="domain-group-header"])')].map((g) =>
        g.getAttribute('data-test'),
      ),
    ).toEqual(['domain-group-zone-b']);
  });

  it('shows the nodes ungrouped without a topology in the status', () => {
    show({ nodes: zonedNodes() });
    expect(document.querySelector('[data-test^="domain-group-"]')).toBeNull();
    expect(document.querySelector('[data-test^="timeline-domain-"]')).toBeNull();
    expect(mocked.useK8sWatchResource).not.toHaveBeenCalledWith(
      expect.objectContaining({ groupVersionKind: { version: 'v1', kind: 'Node' } }),
    );
  });

  it('lists no node as Pending once the rollout is over', async () => {
    const rc = runConfig();
    if (rc.status) rc.status.phase = 'Completed';
    show({
      runConfigs: [rc],
      targets: [
        {
          metadata: { name: 'workers', namespace: 'upgrade-ops' },
          spec: { machineConfigPools: ['worker'] },
          status: { nodes: ['worker-4'] },
        },
      ],
    });
    await waitFor(() => expect(mocked.k8sListItems).toHaveBeenCalled());
    expect(testId('node-row-worker-4')).toBeNull();
  });

  it('filters the nodes by phase', async () => {
    show();
    await user().click(screen.getByRole('button', { name: 'Failed (1)' }));
    expect([...document.querySelectorAll('[data-test^="node-row-"]')].map((r) => r.getAttribute('data-test'))).toEqual([
      'node-row-worker-3',
    ]);
    await user().click(screen.getByRole('button', { name: 'Done (2)' }));
    expect(document.querySelectorAll('[data-test^="node-row-"]')).toHaveLength(2);
    await user().click(screen.getByRole('button', { name: 'All (4)' }));
    expect(document.querySelectorAll('[data-test^="node-row-"]')).toHaveLength(4);
  });

  it('pauses: the confirmation says what happens, then spec.paused is patched', async () => {
    const rc = runConfig();
    show({ runConfigs: [rc] });
    await user().click(testId('action-pause'));
    const modal = await screen.findByRole('dialog');
    expect(within(modal).getByText('Pause the rollout')).toBeInTheDocument();
    expect(testId('action-description')).toHaveTextContent(
      'numo will start no further node of upgrade-ops/gated-workers: nodes already in flight finish their gate, upgrade and cleanup, and the target pools stay paused until you resume.',
    );
    expect(mocked.k8sPatch).not.toHaveBeenCalled();
    await user().click(testId('confirm'));
    expect(mocked.k8sPatch).toHaveBeenCalledTimes(1);
    expect(mocked.k8sPatch).toHaveBeenCalledWith({
      model: MutexRunConfigModel,
      resource: rc,
      data: [{ op: 'add', path: '/spec/paused', value: true }],
    });
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
  });

  it('works from the keyboard alone: Tab to an action, Enter to open it, Tab to confirm, Enter to send', async () => {
    const rc = runConfig();
    show({ runConfigs: [rc] });
    const u = user();
    let tabs = 0;
    while (document.activeElement !== testId('action-pause') && tabs < 50) {
      await u.tab();
      tabs += 1;
    }
    expect(document.activeElement).toBe(testId('action-pause'));
    await u.keyboard('{Enter}');
    const modal = await screen.findByRole('dialog');
    expect(within(modal).getByText('Pause the rollout')).toBeInTheDocument();
    tabs = 0;
    while (document.activeElement !== testId('confirm') && tabs < 20) {
      await u.tab();
      tabs += 1;
    }
    expect(document.activeElement).toBe(testId('confirm'));
    await u.keyboard('{Enter}');
    expect(mocked.k8sPatch).toHaveBeenCalledWith({
      model: MutexRunConfigModel,
      resource: rc,
      data: [{ op: 'add', path: '/spec/paused', value: true }],
    });
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
  });

  it('closes a confirmation with Escape and sends nothing', async () => {
    show();
    const u = user();
    await u.click(testId('action-skip'));
    await screen.findByRole('dialog');
    await u.keyboard('{Escape}');
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
    expect(mocked.k8sPatch).not.toHaveBeenCalled();
  });

  it('resumes a paused run config', async () => {
    const rc = runConfig();
    rc.spec.paused = true;
    show({ runConfigs: [rc] });
    expect(testId('paused-alert')).toBeInTheDocument();
    expect(testId('action-pause')).toBeNull();
    await user().click(testId('action-resume'));
    expect(testId('action-description')).toHaveTextContent(
      'numo will go on with the rollout of upgrade-ops/gated-workers',
    );
    await user().click(testId('confirm'));
    expect(mocked.k8sPatch.mock.calls[0][0].data).toEqual([{ op: 'add', path: '/spec/paused', value: false }]);
  });

  it('retries the failed node: its gate Jobs run again, through the retry annotation', async () => {
    show();
    await user().click(testId('action-retry'));
    expect(testId('action-description')).toHaveTextContent("numo will run node worker-3's gate Jobs again");
    expect(testId('action-change')).toHaveTextContent('openshift-optional.skrzypek.io/retry=worker-3');
    await user().click(testId('confirm'));
    expect(mocked.k8sPatch.mock.calls[0][0].data).toEqual([
      { op: 'add', path: '/metadata/annotations/openshift-optional.skrzypek.io~1retry', value: 'worker-3' },
    ]);
  });

  it("skips a node from its row: added to the skip annotation's list", async () => {
    show();
    await user().click(within(testId('node-row-worker-3')).getByRole('button', { name: 'Skip node worker-3' }));
    expect(testId('action-description')).toHaveTextContent(
      'numo will skip node worker-3: this rollout does not gate it',
    );
    await user().click(testId('confirm'));
    expect(mocked.k8sPatch.mock.calls[0][0].data).toEqual([
      { op: 'test', path: '/metadata/annotations/openshift-optional.skrzypek.io~1skip', value: 'worker-9' },
      { op: 'replace', path: '/metadata/annotations/openshift-optional.skrzypek.io~1skip', value: 'worker-9,worker-3' },
    ]);
  });

  it('skips a node the user picks or names', async () => {
    show();
    await user().click(testId('action-skip'));
    expect(testId('node-choice-worker-3')).toBeChecked();
    await user().click(testId('node-choice-worker-2'));
    expect(testId('action-description')).toHaveTextContent('numo will skip node worker-2');
    await user().click(testId('node-choice-other'));
    expect(testId('confirm')).toBeDisabled();
    await user().type(testId('node-input'), 'worker-5');
    expect(testId('action-change')).toHaveTextContent('openshift-optional.skrzypek.io/skip=worker-9,worker-5');
    await user().click(testId('confirm'));
    expect(mocked.k8sPatch.mock.calls[0][0].data[1]).toEqual({
      op: 'replace',
      path: '/metadata/annotations/openshift-optional.skrzypek.io~1skip',
      value: 'worker-9,worker-5',
    });
  });

  it('keeps the confirmation open and says why when the patch is refused', async () => {
    show();
    mocked.k8sPatch.mockRejectedValueOnce(new Error('mutexrunconfigs "gated-workers" is forbidden'));
    await user().click(testId('action-pause'));
    await user().click(testId('confirm'));
    expect(await screen.findByText('mutexrunconfigs "gated-workers" is forbidden')).toBeInTheDocument();
    expect(screen.getByRole('dialog')).toBeInTheDocument();
    await user().click(testId('cancel'));
    await waitFor(() => expect(screen.queryByRole('dialog')).toBeNull());
  });

  it('disables every action for a user who may not patch the run config', async () => {
    show({ allowed: false });
    expect(mocked.useAccessReview).toHaveBeenCalledWith({
      group: 'openshift-optional.skrzypek.io',
      resource: 'mutexrunconfigs',
      verb: 'patch',
      name: 'gated-workers',
      namespace: 'upgrade-ops',
    });
    for (const id of ['action-pause', 'action-retry', 'action-skip']) {
      expect(testId(id)).toHaveAttribute('aria-disabled', 'true');
    }
    const rowButtons = testId('node-row-worker-3').querySelectorAll('button');
    rowButtons.forEach((b) => expect(b).toHaveAttribute('aria-disabled', 'true'));
    await user().click(testId('action-pause'));
    await user().click(rowButtons[0]);
    expect(screen.queryByRole('dialog')).toBeNull();
    expect(mocked.k8sPatch).not.toHaveBeenCalled();
  });

  it('opens the confirmation the console action menu asked for', async () => {
    window.history.replaceState(null, '', '?numo-action=retry&numo-node=worker-3');
    show();
    expect(await screen.findByRole('dialog')).toBeInTheDocument();
    expect(testId('action-description')).toHaveTextContent("numo will run node worker-3's gate Jobs again");
    await user().click(testId('cancel'));
    expect(window.location.search).toBe('');
  });

  it('says when numo has not reported yet', () => {
    const rc = runConfig();
    delete rc.status;
    show({ runConfigs: [rc] });
    expect(screen.getByText('numo has not reported on this run config yet')).toBeInTheDocument();
    expect(testId('progress')).toHaveTextContent('0/0 nodes');
    expect(screen.getByText('No node has started yet.')).toBeInTheDocument();
  });
});
