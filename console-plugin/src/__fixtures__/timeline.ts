// A timeline as numo serves it (src/timeline/drawing.rs): three nodes of ops/gated-workers, one done, one under way
// with its drain and reboot and its cleanup projected, one failed; a hold, a blackout, a new release asked for, the
// restore walk projected, under a rollout by zone.
import type { TimelineDrawing, TimelineSegment } from '../timeline-types';
import type { Step } from '../types';
import { STEP_COLOURS } from '../api-names';

const segment = (step: Step, start: string, end: string, x: number, width: number, projected = false) =>
  ({ step, start, end, x, width, projected }) as TimelineSegment;

export const drawing = (): TimelineDrawing => ({
  runConfig: 'upgrade-ops/gated-workers',
  rollout: '4.16.5',
  width: 1200,
  height: 244,
  chartLeft: 240,
  chartRight: 1180,
  top: 92,
  rowHeight: 12,
  chartBottom: 204,
  labelChars: 34,
  start: '2026-11-25T09:00:00Z',
  end: '2026-11-25T12:30:00Z',
  now: '2026-11-25T10:00:00Z',
  nowX: 508.6,
  estimatedEnd: '2026-11-25T12:30:00Z',
  estimatedEndX: 1180,
  rows: [
    {
      key: 'node-worker-0',
      y: 108,
      node: 'worker-0',
      domain: 'zone-a',
      outcome: 'Done',
      outcomes: [],
      segments: [
        segment('Gate', '2026-11-25T09:00:00Z', '2026-11-25T09:05:00Z', 240, 22.4),
        segment('Upgrade', '2026-11-25T09:05:00Z', '2026-11-25T09:20:00Z', 262.4, 67.1),
      ],
      after: 329.5,
    },
    {
      key: 'node-worker-2',
      y: 140,
      node: 'worker-2',
      domain: 'zone-b',
      outcome: 'InFlight',
      outcomes: [],
      segments: [
        segment('Drain', '2026-11-25T09:31:00Z', '2026-11-25T09:39:30Z', 378.7, 38),
        segment('Reboot', '2026-11-25T09:39:30Z', '2026-11-25T10:00:00Z', 416.7, 91.9),
        segment('Cleanup', '2026-11-25T10:00:00Z', '2026-11-25T10:01:00Z', 508.6, 4.5, true),
      ],
      after: 513.1,
    },
    {
      key: 'node-worker-3',
      y: 156,
      node: 'worker-3',
      domain: 'zone-b',
      outcome: 'Failed',
      outcomes: [],
      segments: [segment('Gate', '2026-11-25T09:40:00Z', '2026-11-25T09:45:00Z', 419.0, 22.4)],
      after: 441.4,
    },
  ],
  domains: [
    { domain: 'zone-a', key: 'topology.kubernetes.io/zone', state: 'done', done: 1, nodes: 1, y: 92 },
    { domain: 'zone-b', key: 'topology.kubernetes.io/zone', state: 'in-progress', done: 0, nodes: 2, y: 124 },
    { domain: '', key: 'topology.kubernetes.io/zone', state: 'pending', done: 0, nodes: 1, y: 172 },
  ],
  restore: {
    y: 188,
    start: '2026-11-25T12:20:00Z',
    end: '2026-11-25T12:30:00Z',
    projected: true,
    segments: [segment('Restore', '2026-11-25T12:20:00Z', '2026-11-25T12:30:00Z', 1135.2, 44.8, true)],
  },
  holds: [
    {
      start: '2026-11-25T09:40:00Z',
      end: '2026-11-25T10:00:00Z',
      x: 419,
      width: 89.5,
      count: 1,
      checks: ['ClusterOperators'],
      moreChecks: 0,
      labelled: true,
      longest: {
        checks: ['ClusterOperators'],
        message: 'ClusterOperator storage is Degraded',
        start: '2026-11-25T09:40:00Z',
        end: '2026-11-25T10:00:00Z',
      },
    },
  ],
  windows: [],
  blackouts: [
    { start: '2026-11-25T11:00:00Z', end: '2026-11-25T11:30:00Z', x: 777, width: 134, count: 1, reasons: ['freeze'] },
  ],
  markers: [{ at: '2026-11-25T09:30:00Z', x: 374, from: '4.16.4', to: '4.16.5', inFlight: ['worker-2'] }],
  ticks: [{ at: '2026-11-25T10:00:00Z', x: 508.6, label: '10:00' }],
  upgradeParts: true,
  colours: {
    steps: (Object.keys(STEP_COLOURS) as Step[]).map((step) => ({ step, colour: STEP_COLOURS[step] })),
    hold: '#D55E00',
    window: '#E8F4E8',
    blackout: '#3A3A3A',
    blackoutOpacity: 0.3,
    failed: '#B00000',
    line: '#000000',
    projectedOpacity: 0.35,
  },
  projection: 'Planner',
  unread: [],
});
