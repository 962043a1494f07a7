import { render, screen } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import NodeGateStatus from './NodeGateStatus';
import NodeGateTab from './NodeGateTab';
import NodeGatesPage from './NodeGatesPage';
import { drainedRunConfig, nodes, runConfig } from '../__fixtures__';
import { mocked, setWorld } from '../__fixtures__/sdk';
import type { Node } from '../types';

jest.mock('@openshift-console/dynamic-plugin-sdk', () => ({
  useK8sWatchResource: jest.fn(),
  useAccessReview: jest.fn(),
  k8sPatch: jest.fn(),
}));

const node = (name: string): Node => nodes().find((n) => n.metadata?.name === name) as Node;
const testId = (id: string) => document.querySelector(`[data-test="${id}"]`) as HTMLElement;

beforeEach(() => setWorld({ runConfigs: [runConfig()], nodes: nodes() }));

describe("a Node's upgrade gate", () => {
  it('says why numo holds it, watching run configs in every namespace', () => {
    render(<NodeGateStatus obj={node('worker-4')} />);
    expect(mocked.useK8sWatchResource).toHaveBeenCalledWith({
      groupVersionKind: { group: 'openshift-optional.skrzypek.io', version: 'v1alpha1', kind: 'MutexRunConfig' },
      isList: true,
      namespaced: true,
    });
    expect(testId('node-status')).toHaveAttribute('data-state', 'held');
    // The label says "held"; the words do not say it twice.
    expect(testId('node-status')).toHaveTextContent(
      /^held ClusterOperator storage is Degraded \(StorageDegraded: 1 of 3 OSDs down\)/,
    );
    expect(testId('node-hold-text')).toHaveTextContent(
      /^ClusterOperator storage is Degraded \(StorageDegraded: 1 of 3 OSDs down\)$/,
    );
    expect(screen.getByRole('link', { name: 'upgrade-ops/gated-workers' })).toHaveAttribute(
      'href',
      '/k8s/ns/upgrade-ops/openshift-optional.skrzypek.io~v1alpha1~MutexRunConfig/gated-workers/rollout',
    );
  });

  it('says when an upgrading node was drained, where numo saw it', () => {
    const { unmount } = render(<NodeGateStatus obj={node('worker-2')} />);
    expect(testId('node-status')).toHaveAttribute('data-state', 'upgrading');
    expect(testId('node-hold-text')).toHaveTextContent(/^upgrading to 4\.16\.5$/);
    unmount();
    setWorld({ runConfigs: [drainedRunConfig()], nodes: nodes() });
    render(<NodeGateStatus obj={node('worker-2')} />);
    expect(testId('node-hold-text')).toHaveTextContent(/^upgrading to 4\.16\.5 \(drained 2026-11-25 09:40 UTC\)$/);
  });

  it('says a failed node failed, and why', () => {
    render(<NodeGateStatus obj={node('worker-3')} />);
    expect(testId('node-status')).toHaveAttribute('data-state', 'failed');
    expect(testId('node-status')).toHaveTextContent(/^Failed gate Job upgrade-ops\/storage-healthy-8b02e4f7aa/);
  });

  it("the Node's tab shows its entry: steps and Jobs", () => {
    render(<NodeGateTab obj={node('worker-3')} />);
    expect(testId('node-gate-tab')).toBeInTheDocument();
    expect(testId('node-row-worker-3')).toHaveAttribute('data-phase', 'Failed');
    expect(screen.queryByRole('button', { name: /Retry/ })).toBeNull();
  });

  it('the node gates page lists the nodes numo knows, all of them on request', async () => {
    render(<NodeGatesPage />);
    const rows = () =>
      [...document.querySelectorAll('[data-test^="node-gate-row-"]')].map((r) => [
        r.getAttribute('data-test'),
        r.getAttribute('data-state'),
      ]);
    expect(rows()).toEqual([
      ['node-gate-row-worker-0', 'done'],
      ['node-gate-row-worker-2', 'upgrading'],
      ['node-gate-row-worker-3', 'failed'],
      ['node-gate-row-worker-4', 'held'],
    ]);
    await userEvent.click(screen.getByRole('button', { name: 'All nodes' }));
    expect(await screen.findByText('not gated: no numo run config holds this node')).toBeInTheDocument();
    expect(rows()).toHaveLength(5);
  });

  it('the node gates page says when the user may not read nodes', () => {
    const watch = mocked.useK8sWatchResource.getMockImplementation() as (r: {
      groupVersionKind?: { kind: string };
    }) => unknown;
    mocked.useK8sWatchResource.mockImplementation((r: { groupVersionKind?: { kind: string } }) =>
      r?.groupVersionKind?.kind === 'Node' ? [[], false, { message: 'nodes is forbidden' }] : watch(r),
    );
    render(<NodeGatesPage />);
    expect(testId('node-gates-error')).toHaveTextContent('nodes is forbidden');
  });
});
