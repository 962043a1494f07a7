import { act, render, waitFor, within } from '@testing-library/react';
import * as sdk from '@openshift-console/dynamic-plugin-sdk';
import { RolloutTimeline, TimelineChart } from './TimelineChart';
import { REFRESH_MS, timelineURL } from './useTimeline';
import { drawing } from '../__fixtures__/timeline';
import { runConfig } from '../__fixtures__';
import type { MutexRunConfig } from '../types';

jest.mock('@openshift-console/dynamic-plugin-sdk', () => ({ consoleFetchJSON: jest.fn() }));

const fetchJSON = (sdk as unknown as { consoleFetchJSON: jest.Mock }).consoleFetchJSON;
const testId = (id: string) => document.querySelector(`[data-test="${id}"]`) as HTMLElement;
const steps = (row: string) =>
  [...testId(`timeline-row-${row}`).querySelectorAll('[data-test="timeline-step"]')].map((s) => [
    s.getAttribute('data-step'),
    s.getAttribute('fill'),
    s.getAttribute('data-projected'),
  ]);

beforeEach(() => jest.clearAllMocks());

describe('the timeline chart', () => {
  it("draws numo's rows where numo placed them, in numo's colours, the projection lighter", () => {
    render(<TimelineChart drawing={drawing()} />);
    expect(testId('timeline')).toHaveAttribute('viewBox', '0 0 1200 244');
    expect(testId('timeline-row-worker-0')).toHaveAttribute('data-outcome', 'Done');
    expect(steps('worker-2')).toEqual([
      ['Drain', '#F0E442', 'false'],
      ['Reboot', '#A86400', 'false'],
      ['Cleanup', '#009E73', 'true'],
    ]);
    const cleanup = testId('timeline-row-worker-2').querySelector('[data-step="Cleanup"]');
    expect(cleanup).toHaveAttribute('fill-opacity', '0.35');
    expect(cleanup).toHaveAttribute('stroke-dasharray', '3,2');
    expect(cleanup).toHaveAttribute('x', '508.6');
    expect(testId('timeline-row-worker-0').querySelector('[data-step="Gate"]')).toHaveAttribute('y', '108');
  });

  it('words what numo sent: steps, outcomes, holds, domains, markers and times', () => {
    render(<TimelineChart drawing={drawing()} />);
    expect(testId('timeline')).toHaveTextContent('upgrade-ops/gated-workers — 4.16.5');
    expect(within(testId('timeline-row-worker-3')).getByText('failed')).toBeInTheDocument();
    expect(testId('timeline-failed-marker')).toHaveAttribute('fill', '#B00000');
    const drain = testId('timeline-row-worker-2').querySelector('[data-step="Drain"] title');
    expect(drain).toHaveTextContent('worker-2: drain, 2026-11-25 09:31 UTC – 2026-11-25 09:39 UTC (8m 30s)');
    const cleanup = testId('timeline-row-worker-2').querySelector('[data-step="Cleanup"] title');
    expect(cleanup).toHaveTextContent('worker-2: cleanup (projected)');
    expect(testId('timeline-hold')).toHaveTextContent('ClusterOperators');
    expect(testId('timeline-hold').querySelector('title')).toHaveTextContent(
      'held by ClusterOperators: ClusterOperator storage is Degraded',
    );
    expect(testId('timeline-blackout').querySelector('title')).toHaveTextContent(
      'blackout: freeze: 2026-11-25 11:00 UTC',
    );
    expect(testId('timeline-domain-zone-b')).toHaveTextContent('zone-b (in progress): 0 of 2 nodes done');
    expect(testId('timeline-domain-zone-b')).toHaveAttribute('data-state', 'in-progress');
    expect(testId('timeline-domain-none')).toHaveTextContent(
      '(no topology.kubernetes.io/zone label) (pending): 0 of 1 node done',
    );
    expect(testId('timeline-marker')).toHaveTextContent('target 4.16.5');
    expect(testId('timeline-marker').querySelector('title')).toHaveTextContent(
      'target changed from 4.16.4 to 4.16.5; worker-2 went on to 4.16.5 inside their gated turn',
    );
    expect(testId('timeline-row-restore')).toHaveTextContent('restore walk (projected)');
    expect(testId('timeline-estimated-end')).toHaveTextContent('estimated end 2026-11-25 12:30 UTC');
    expect(testId('timeline-now')).toHaveTextContent('now');
  });

  it('keys the drain and the reboot in the legend only where a row draws them', () => {
    const legend = () => [...testId('timeline-legend').querySelectorAll('text')].map((t) => t.textContent);
    const { unmount } = render(<TimelineChart drawing={drawing()} />);
    expect(legend().slice(0, 8)).toEqual([
      'gate',
      'waiting for the MCO',
      'upgrade',
      'cleanup',
      'soak',
      'drain',
      'reboot',
      'restore',
    ]);
    unmount();
    render(<TimelineChart drawing={{ ...drawing(), upgradeParts: false }} />);
    expect(legend()).not.toContain('drain');
  });

  it("names a group's row by its first and last node and counts its outcomes", () => {
    const d = drawing();
    d.rows = [
      {
        ...d.rows[0],
        key: 'group-0',
        node: null,
        group: { first: 'worker-000', last: 'worker-001', nodes: 2 },
        outcome: 'Failed',
        outcomes: [
          { outcome: 'Failed', count: 1 },
          { outcome: 'Done', count: 1 },
        ],
      },
    ];
    render(<TimelineChart drawing={d} />);
    const row = testId('timeline-row-group-0');
    expect(row).toHaveTextContent('worker-000 … worker-001 (2 nodes)');
    expect(row.querySelector('title')).toHaveTextContent('worker-000 … worker-001 (2 nodes): 1 failed, 1 done');
  });
});

describe("the Rollout tab's timeline", () => {
  const rc = (resourceVersion = '1', phase = 'Upgrading'): MutexRunConfig => {
    const base = runConfig();
    return {
      ...base,
      metadata: { ...base.metadata, resourceVersion },
      status: { ...base.status, phase } as MutexRunConfig['status'],
    };
  };

  it("fetches numo's timeline through the console's plugin proxy, again when the status changes", async () => {
    fetchJSON.mockResolvedValue(drawing());
    const { rerender } = render(<RolloutTimeline rc={rc('1')} />);
    await waitFor(() => expect(testId('timeline')).not.toBeNull());
    expect(fetchJSON).toHaveBeenCalledWith(
      '/api/proxy/plugin/numo-console-plugin/numo/api/timeline/upgrade-ops/gated-workers',
      'GET',
    );
    expect(timelineURL('a b', 'c')).toBe('/api/proxy/plugin/numo-console-plugin/numo/api/timeline/a%20b/c');
    rerender(<RolloutTimeline rc={rc('1')} />);
    expect(fetchJSON).toHaveBeenCalledTimes(1);
    rerender(<RolloutTimeline rc={rc('2')} />);
    await waitFor(() => expect(fetchJSON).toHaveBeenCalledTimes(2));
  });

  it('fetches it again on an interval while a rollout is under way, not once it is over', async () => {
    jest.useFakeTimers();
    try {
      fetchJSON.mockResolvedValue(drawing());
      const { unmount } = render(<RolloutTimeline rc={rc('1', 'Upgrading')} />);
      await act(async () => jest.advanceTimersByTime(REFRESH_MS));
      expect(fetchJSON).toHaveBeenCalledTimes(2);
      unmount();
      fetchJSON.mockClear();
      render(<RolloutTimeline rc={rc('1', 'Completed')} />);
      await act(async () => jest.advanceTimersByTime(REFRESH_MS * 2));
      expect(fetchJSON).toHaveBeenCalledTimes(1);
    } finally {
      jest.useRealTimers();
    }
  });

  it('says so when the user may not read the run config, and draws nothing of it', async () => {
    fetchJSON.mockRejectedValue(
      Object.assign(new Error('cannot read MutexRunConfig upgrade-ops/gated-workers: forbidden'), {
        response: { status: 403 },
      }),
    );
    render(<RolloutTimeline rc={rc()} />);
    await waitFor(() => expect(testId('timeline-error')).not.toBeNull());
    expect(testId('timeline-error')).toHaveTextContent(
      'You may not read this run config, so numo shows you no timeline of it: cannot read MutexRunConfig',
    );
    expect(testId('timeline')).toBeNull();
  });

  it('says what numo could not read as the user', async () => {
    fetchJSON.mockResolvedValue({ ...drawing(), unread: ['RolloutRecord', 'Nodes'] });
    render(<RolloutTimeline rc={rc()} />);
    await waitFor(() => expect(testId('timeline')).not.toBeNull());
    expect(testId('timeline-unread-record')).toHaveTextContent('The rollout record could not be read');
    expect(testId('timeline-unread-nodes')).toHaveTextContent('not grouped by failure domain');
  });
});
