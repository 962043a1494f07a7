import * as fs from 'fs';
import * as path from 'path';
import { layoutTimeline, LAYOUT, MAX_ROWS, stepMillis } from './layout';
import {
  BLACKOUT_COLOUR,
  FAILED_COLOUR,
  HOLD_COLOUR,
  LINE_COLOUR,
  PROJECTED_OPACITY,
  STEP_COLOURS,
  WINDOW_COLOUR,
} from './colours';
import { drainedRunConfig, NOW, record, runConfig } from '../__fixtures__';
import type { ConfigMap, MutexRunConfig } from '../types';
import { t } from '../__fixtures__/i18n';

const at = (t: string) => Date.parse(t);
const steps = (row: { segments: { step: string; start: number; end: number; projected: boolean }[] }) =>
  row.segments.map((s) => [s.step, new Date(s.start).toISOString(), new Date(s.end).toISOString(), s.projected]);

describe('layoutTimeline', () => {
  it('uses the colours of `numo timeline` (src/timeline/mod.rs), step by step', () => {
    const rust = fs.readFileSync(path.resolve(__dirname, '../../../src/timeline/mod.rs'), 'utf8');
    const stepColour = (step: string) => new RegExp(`Step::${step} => "(#[0-9A-F]{6})"`).exec(rust)?.[1];
    const constant = (name: string) => new RegExp(`pub const ${name}: &str = "(#[0-9A-F]{6})"`).exec(rust)?.[1];
    Object.entries(STEP_COLOURS).forEach(([step, colour]) => expect([step, colour]).toEqual([step, stepColour(step)]));
    expect(HOLD_COLOUR).toBe(constant('HOLD_COLOUR'));
    expect(WINDOW_COLOUR).toBe(constant('WINDOW_COLOUR'));
    expect(BLACKOUT_COLOUR).toBe(constant('BLACKOUT_COLOUR'));
    expect(FAILED_COLOUR).toBe(constant('FAILED_COLOUR'));
    expect(LINE_COLOUR).toBe(constant('LINE_COLOUR'));
    expect(STEP_COLOURS).toEqual({
      Gate: '#0072B2',
      WaitForMco: '#56B4E9',
      Upgrade: '#E69F00',
      Cleanup: '#009E73',
      Soak: '#CC79A7',
      Restore: '#999999',
      Drain: '#F0E442',
      Reboot: '#A86400',
    });
  });

  it('expects each step to take its median of this rollout, else numo defaults', () => {
    const lengths = stepMillis(runConfig());
    expect(lengths).toEqual({
      Gate: 60000,
      WaitForMco: 30000,
      Upgrade: 900000,
      Cleanup: 60000,
      Soak: 0,
      Restore: 30000,
    });
    const rc = runConfig();
    rc.spec.soakTime = '10m';
    delete rc.status?.stepDurations;
    expect(stepMillis(rc)).toEqual({
      Gate: 65000,
      WaitForMco: 30000,
      Upgrade: 910000,
      Cleanup: 60000,
      Soak: 600000,
      Restore: 30000,
    });
  });

  it("takes the seconds numo's estimate used when the status has them (no cleanup Job: no cleanup)", () => {
    const rc = runConfig();
    if (rc.status?.estimate) {
      rc.status.estimate.stepSeconds = [
        { step: 'Gate', seconds: 7 },
        { step: 'WaitForMco', seconds: 1 },
        { step: 'Upgrade', seconds: 2 },
        { step: 'Cleanup', seconds: 0 },
        { step: 'Soak', seconds: 0 },
        { step: 'Restore', seconds: 2 },
      ];
    }
    expect(stepMillis(rc)).toEqual({ Gate: 7000, WaitForMco: 1000, Upgrade: 2000, Cleanup: 0, Soak: 0, Restore: 2000 });
    const pending = layoutTimeline(rc, record(), NOW, t).rows[4];
    expect(pending.segments.map((s) => s.step)).toEqual(['Gate', 'WaitForMco', 'Upgrade']);
  });

  it('draws a row per node: the finished ones from the record, then those in the status, then those to go', () => {
    const layout = layoutTimeline(runConfig(), record(), NOW, t);
    expect(layout.title).toBe('upgrade-ops/gated-workers — 4.16.5');
    expect(layout.rows.map((r) => [r.label, r.outcome])).toEqual([
      ['worker-0', 'Done'],
      ['worker-1', 'Done'],
      ['worker-2', 'InFlight'],
      ['worker-3', 'Failed'],
      ['2 nodes to go', 'Projected'],
    ]);
    expect(layout.rows.map((r) => r.y)).toEqual([0, 1, 2, 3, 4].map((i) => LAYOUT.top + i * LAYOUT.rowPitch));
    expect(steps(layout.rows[0])).toEqual([
      ['Gate', '2026-11-25T08:00:00.000Z', '2026-11-25T08:01:00.000Z', false],
      ['WaitForMco', '2026-11-25T08:01:00.000Z', '2026-11-25T08:01:30.000Z', false],
      ['Upgrade', '2026-11-25T08:01:30.000Z', '2026-11-25T08:16:30.000Z', false],
      ['Cleanup', '2026-11-25T08:16:30.000Z', '2026-11-25T08:17:30.000Z', false],
    ]);
  });

  it('draws the step under way to now and the rest of the node projected, lighter', () => {
    const layout = layoutTimeline(runConfig(), record(), NOW, t);
    const worker2 = layout.rows[2];
    expect(steps(worker2)).toEqual([
      ['Gate', '2026-11-25T09:30:00.000Z', '2026-11-25T09:31:00.000Z', false],
      ['WaitForMco', '2026-11-25T09:31:00.000Z', '2026-11-25T09:31:30.000Z', false],
      ['Upgrade', '2026-11-25T09:31:30.000Z', '2026-11-25T10:00:00.000Z', false],
      ['Cleanup', '2026-11-25T10:00:00.000Z', '2026-11-25T10:01:00.000Z', true],
    ]);
    worker2.segments.forEach((s) => {
      expect(s.colour).toBe(STEP_COLOURS[s.step]);
      expect(s.opacity).toBe(s.projected ? PROJECTED_OPACITY : 1);
    });
    // A step under way that should take longer than it has so far is drawn to now, and its expected rest projected.
    const rc = runConfig();
    const entry = rc.status?.nodes?.[0];
    if (entry) entry.upgradingAt = '2026-11-25T09:55:00Z';
    const later = layoutTimeline(rc, record(), NOW, t).rows[2];
    expect(steps(later).slice(2)).toEqual([
      ['Upgrade', '2026-11-25T09:55:00.000Z', '2026-11-25T10:00:00.000Z', false],
      ['Upgrade', '2026-11-25T10:00:00.000Z', '2026-11-25T10:10:00.000Z', true],
      ['Cleanup', '2026-11-25T10:10:00.000Z', '2026-11-25T10:11:00.000Z', true],
    ]);
  });

  it("splits a node's measured upgrade into its drain and its reboot where numo saw the drain end", () => {
    const layout = layoutTimeline(drainedRunConfig(), record(), NOW, t);
    const worker2 = layout.rows[2];
    expect(steps(worker2)).toEqual([
      ['Gate', '2026-11-25T09:30:00.000Z', '2026-11-25T09:31:00.000Z', false],
      ['WaitForMco', '2026-11-25T09:31:00.000Z', '2026-11-25T09:31:30.000Z', false],
      ['Drain', '2026-11-25T09:31:30.000Z', '2026-11-25T09:40:00.000Z', false],
      ['Reboot', '2026-11-25T09:40:00.000Z', '2026-11-25T10:00:00.000Z', false],
      ['Cleanup', '2026-11-25T10:00:00.000Z', '2026-11-25T10:01:00.000Z', true],
    ]);
    expect(worker2.segments.slice(2, 4).map((s) => [s.colour, s.opacity])).toEqual([
      ['#F0E442', 1],
      ['#A86400', 1],
    ]);
    expect(worker2.segments[2].title).toBe('worker-2: drain, 2026-11-25 09:31 UTC – 2026-11-25 09:40 UTC (8m 30s)');
    // The rest of an upgrade that should not be over yet (the upgrade's figure, from where the drain started)
    // continues the part under way, as `numo timeline` draws it; the node's next steps are projected as ever.
    const rc = drainedRunConfig();
    const entry = rc.status?.nodes?.[0];
    if (entry) {
      entry.upgradingAt = '2026-11-25T09:55:00Z';
      entry.drainedAt = '2026-11-25T09:57:00Z';
    }
    expect(steps(layoutTimeline(rc, record(), NOW, t).rows[2]).slice(2)).toEqual([
      ['Drain', '2026-11-25T09:55:00.000Z', '2026-11-25T09:57:00.000Z', false],
      ['Reboot', '2026-11-25T09:57:00.000Z', '2026-11-25T10:00:00.000Z', false],
      ['Reboot', '2026-11-25T10:00:00.000Z', '2026-11-25T10:10:00.000Z', true],
      ['Cleanup', '2026-11-25T10:10:00.000Z', '2026-11-25T10:11:00.000Z', true],
    ]);
  });

  it('ends the reboot where the upgrade ended, for a done node and for one that failed', () => {
    const rc = drainedRunConfig();
    rc.status?.nodes?.push(
      {
        name: 'worker-5',
        phase: 'Done',
        startedAt: '2026-11-25T08:40:00Z',
        releasedAt: '2026-11-25T08:41:00Z',
        upgradingAt: '2026-11-25T08:42:00Z',
        drainedAt: '2026-11-25T08:45:00Z',
        upgradedAt: '2026-11-25T08:55:00Z',
        finishedAt: '2026-11-25T08:56:00Z',
      },
      {
        name: 'worker-6',
        phase: 'Failed',
        startedAt: '2026-11-25T08:40:00Z',
        releasedAt: '2026-11-25T08:41:00Z',
        upgradingAt: '2026-11-25T08:42:00Z',
        drainedAt: '2026-11-25T08:45:00Z',
        finishedAt: '2026-11-25T09:12:00Z',
      },
    );
    const rows = layoutTimeline(rc, record(), NOW, t).rows;
    const row = (name: string) => rows.find((r) => r.node === name) as (typeof rows)[number];
    expect(steps(row('worker-5')).slice(2)).toEqual([
      ['Drain', '2026-11-25T08:42:00.000Z', '2026-11-25T08:45:00.000Z', false],
      ['Reboot', '2026-11-25T08:45:00.000Z', '2026-11-25T08:55:00.000Z', false],
      ['Cleanup', '2026-11-25T08:55:00.000Z', '2026-11-25T08:56:00.000Z', false],
    ]);
    expect(steps(row('worker-6')).slice(2)).toEqual([
      ['Drain', '2026-11-25T08:42:00.000Z', '2026-11-25T08:45:00.000Z', false],
      ['Reboot', '2026-11-25T08:45:00.000Z', '2026-11-25T09:12:00.000Z', false],
    ]);
  });

  it('keeps one upgrade for a node whose drain numo did not see (before OpenShift 4.20)', () => {
    const layout = layoutTimeline(runConfig(), record(), NOW, t);
    const drawn = layout.rows.flatMap((r) => r.segments.map((s) => s.step));
    expect(drawn).toContain('Upgrade');
    expect(drawn).not.toContain('Drain');
    expect(drawn).not.toContain('Reboot');
    expect(steps(layout.rows[2])[2]).toEqual([
      'Upgrade',
      '2026-11-25T09:31:30.000Z',
      '2026-11-25T10:00:00.000Z',
      false,
    ]);
    // A record written before numo read MachineConfigNodes, or a node drained without it: one upgrade.
    expect(layout.rows[0].segments.map((s) => s.step)).toEqual(['Gate', 'WaitForMco', 'Upgrade', 'Cleanup']);
  });

  it("projects with the whole upgrade: the drain's and the reboot's figures are not added to it", () => {
    const figures = (withParts: boolean) => {
      const rc = drainedRunConfig();
      if (rc.status?.estimate) {
        rc.status.estimate.stepSeconds = [
          { step: 'Gate', seconds: 60 },
          { step: 'WaitForMco', seconds: 30 },
          { step: 'Upgrade', seconds: 900 },
          ...(withParts
            ? [
                { step: 'Drain' as const, seconds: 300 },
                { step: 'Reboot' as const, seconds: 600 },
              ]
            : []),
          { step: 'Cleanup', seconds: 60 },
          { step: 'Soak', seconds: 0 },
          { step: 'Restore', seconds: 30 },
        ];
      }
      return rc;
    };
    expect(stepMillis(figures(true))).toEqual(stepMillis(figures(false)));
    expect(stepMillis(figures(true))).toEqual({
      Gate: 60000,
      WaitForMco: 30000,
      Upgrade: 900000,
      Cleanup: 60000,
      Soak: 0,
      Restore: 30000,
    });
    // Nor are the parts' samples of this rollout, or of the last one, when numo's estimate has no figures.
    const samples = runConfig();
    delete samples.status?.estimate?.stepSeconds;
    samples.status?.stepDurations?.push({ step: 'Drain', count: 2, seconds: [300, 320] });
    samples.status?.history?.[0].steps?.push({ step: 'Reboot', count: 6, medianSeconds: 600, p90Seconds: 700 });
    expect(stepMillis(samples)).toEqual(stepMillis(runConfig()));
    // The nodes to go, without numo's end to scale to: the same steps, the same times, the same end.
    const pending = (withParts: boolean) => {
      const rc = figures(withParts);
      delete rc.status?.estimate?.nodesDone;
      return layoutTimeline(rc, record(), NOW, t).rows[4];
    };
    expect(pending(true).label).toBe('2 nodes to go');
    expect(steps(pending(true))).toEqual(steps(pending(false)));
    expect(pending(true).segments.map((s) => s.step)).toEqual(['Gate', 'WaitForMco', 'Upgrade', 'Cleanup']);
    const end = Math.max(...pending(true).segments.map((s) => s.end));
    // Two slots, one free now and worker-2's at 10:01: each node takes 1m + 30s + 15m + 1m.
    expect(new Date(end).toISOString()).toBe('2026-11-25T10:18:30.000Z');
  });

  it("draws a finished node's drain and reboot from the rollout record, which keeps when the drain ended", () => {
    const data = { ...record().data };
    // worker-0, as numo records it now: started, released, upgrading, upgraded, soak, finished, drained.
    data['node.worker-0'] = `Done ${at('2026-11-25T08:17:30Z') / 1000} ${[
      '08:00:00',
      '08:01:00',
      '08:01:30',
      '08:16:30',
      '-',
      '08:17:30',
      '08:05:00',
    ]
      .map((t) => (t === '-' ? t : at(`2026-11-25T${t}Z`) / 1000))
      .join(' ')}`;
    const layout = layoutTimeline(runConfig(), { ...record(), data }, NOW, t);
    expect(steps(layout.rows[0])).toEqual([
      ['Gate', '2026-11-25T08:00:00.000Z', '2026-11-25T08:01:00.000Z', false],
      ['WaitForMco', '2026-11-25T08:01:00.000Z', '2026-11-25T08:01:30.000Z', false],
      ['Drain', '2026-11-25T08:01:30.000Z', '2026-11-25T08:05:00.000Z', false],
      ['Reboot', '2026-11-25T08:05:00.000Z', '2026-11-25T08:16:30.000Z', false],
      ['Cleanup', '2026-11-25T08:16:30.000Z', '2026-11-25T08:17:30.000Z', false],
    ]);
    // worker-1's record has no drain time: one upgrade.
    expect(layout.rows[1].segments.map((s) => s.step)).toEqual(['Gate', 'WaitForMco', 'Upgrade', 'Cleanup']);
  });

  it('ends a failed node where it failed, and marks it', () => {
    const layout = layoutTimeline(runConfig(), record(), NOW, t);
    const worker3 = layout.rows[3];
    expect(steps(worker3)).toEqual([['Gate', '2026-11-25T09:30:00.000Z', '2026-11-25T09:32:00.000Z', false]]);
    expect(worker3.after).toBeCloseTo(worker3.segments[0].x + worker3.segments[0].width);
  });

  it('projects the nodes to go in the free slots, up to where numo expects the last node done', () => {
    const layout = layoutTimeline(runConfig(), record(), NOW, t);
    const pending = layout.rows[4];
    expect(pending.segments.every((s) => s.projected && s.opacity === PROJECTED_OPACITY)).toBe(true);
    expect(pending.segments.map((s) => s.step)).toEqual(['Gate', 'WaitForMco', 'Upgrade', 'Cleanup']);
    expect(Math.min(...pending.segments.map((s) => s.start))).toBe(NOW);
    expect(Math.max(...pending.segments.map((s) => s.end))).toBeCloseTo(at('2026-11-25T12:20:00Z'));
  });

  it("ends the nodes to go where numo's estimate does, also when that is sooner than this page's figures give", () => {
    const rc = runConfig();
    const full = layoutTimeline(rc, record(), NOW, t).rows[4];
    const fullEnd = Math.max(...full.segments.map((s) => s.end));
    const sooner = NOW + (fullEnd - NOW) / 2;
    if (rc.status?.estimate) rc.status.estimate.nodesDone = new Date(sooner).toISOString();
    const pending = layoutTimeline(rc, record(), NOW, t).rows[4];
    expect(Math.min(...pending.segments.map((s) => s.start))).toBe(NOW);
    expect(Math.max(...pending.segments.map((s) => s.end))).toBeCloseTo(sooner, -3);
  });

  it('marks a new release asked for mid-rollout across the rows, with the nodes that went on to it', () => {
    const rc = runConfig();
    if (rc.status) {
      rc.status.targetChanges = [
        { from: '4.17.0', to: '4.18.0', at: '2026-11-25T09:00:00Z', inFlight: ['worker-1'] },
        { from: '4.18.0', to: '4.18.1', at: '2026-11-25T09:30:00Z' },
      ];
    }
    const layout = layoutTimeline(rc, record(), NOW, t);
    const x = (when: string) => LAYOUT.chartLeft + ((at(when) - layout.start) / (layout.end - layout.start)) * 940;
    expect(layout.markers.map((m) => [m.label, m.x])).toEqual([
      ['target 4.18.0', x('2026-11-25T09:00:00Z')],
      ['target 4.18.1', x('2026-11-25T09:30:00Z')],
    ]);
    expect(layout.markers[0].title).toContain('target changed from 4.17.0 to 4.18.0; worker-1 went on to 4.18.0');
    expect(layout.markers[1].title).toContain('target changed from 4.18.0 to 4.18.1');
    expect(layoutTimeline(runConfig(), record(), NOW, t).markers).toEqual([]);
  });

  it('spans the rollout from its start to the estimated end, with now, holds, windows, blackouts and the restore walk', () => {
    const layout = layoutTimeline(runConfig(), record(), NOW, t);
    expect(layout.start).toBe(at('2026-11-25T08:00:00Z'));
    expect(layout.end).toBe(at('2026-11-25T12:30:00Z'));
    const x = (t: string) => LAYOUT.chartLeft + ((at(t) - layout.start) / (layout.end - layout.start)) * 940;
    expect(layout.nowX).toBeCloseTo(x('2026-11-25T10:00:00Z'));
    expect(layout.estimatedEndX).toBeCloseTo(LAYOUT.chartRight);
    expect(layout.holds.map((h) => [h.label, new Date(h.start).toISOString(), new Date(h.end).toISOString()])).toEqual([
      ['ClusterOperators', '2026-11-25T08:30:00.000Z', '2026-11-25T08:45:00.000Z'],
      ['ClusterOperators', '2026-11-25T09:40:00.000Z', '2026-11-25T10:00:00.000Z'],
    ]);
    expect(layout.holds[1].title).toContain('held by ClusterOperators: ClusterOperator storage is Degraded');
    expect(layout.windows).toHaveLength(1);
    expect(layout.windows[0].x).toBeCloseTo(LAYOUT.chartLeft);
    expect(layout.blackouts.map((b) => [b.label, b.x])).toEqual([['payroll run', x('2026-11-25T11:00:00Z')]]);
    expect(layout.restore && steps(layout.restore)).toEqual([
      ['Restore', '2026-11-25T12:20:00.000Z', '2026-11-25T12:30:00.000Z', true],
    ]);
    expect(layout.restore?.segments[0].colour).toBe('#999999');
    expect(layout.chartBottom).toBe(LAYOUT.top + 6 * LAYOUT.rowPitch);
    expect(layout.height).toBe(layout.chartBottom + 40);
  });

  it('leaves out a record of another rollout', () => {
    const other: ConfigMap = { ...record(), data: { ...record().data, rollout: '4.16.2' } };
    const layout = layoutTimeline(runConfig(), other, NOW, t);
    expect(layout.rows.map((r) => r.label)).toEqual(['worker-2', 'worker-3', '2 nodes to go']);
    expect(layout.holds).toHaveLength(1);
  });

  it('draws a completed rollout to its end, with now there and the restore walk as it happened', () => {
    const rc: MutexRunConfig = runConfig();
    rc.status = {
      ...rc.status,
      phase: 'Completed',
      nodes: [],
      pendingNodes: 0,
      blockedBy: [],
      heldSince: undefined,
      restoreStartedAt: '2026-11-25T08:20:00Z',
      finishedAt: '2026-11-25T08:25:00Z',
      estimate: undefined,
    };
    const layout = layoutTimeline(rc, record(), at('2026-11-27T00:00:00Z'), t);
    expect(layout.now).toBe(at('2026-11-25T08:25:00Z'));
    expect(layout.end).toBe(at('2026-11-25T08:25:00Z'));
    expect(layout.rows.map((r) => r.outcome)).toEqual(['Done', 'Done']);
    expect(layout.restore && steps(layout.restore)).toEqual([
      ['Restore', '2026-11-25T08:20:00.000Z', '2026-11-25T08:25:00.000Z', false],
    ]);
    expect(layout.estimatedEndX).toBeUndefined();
  });

  it('groups consecutive nodes beyond MAX_ROWS into summary rows', () => {
    const data: Record<string, string> = { rollout: '4.16.5' };
    const base = 1795593600;
    for (let i = 0; i < 700; i += 1) {
      const s = base + i * 60;
      data[`node.n-${String(i).padStart(3, '0')}`] = `Done ${s + 50} ${s} ${s + 10} ${s + 20} ${s + 40} - ${s + 50}`;
    }
    const rc = runConfig();
    rc.status = { ...rc.status, nodes: [], pendingNodes: 0 };
    const layout = layoutTimeline(rc, { ...record(), data }, NOW, t);
    expect(layout.rows.length).toBeLessThanOrEqual(MAX_ROWS);
    expect(layout.rows[0].label).toBe('n-000 … n-002 (3 nodes)');
    expect(layout.rows[0].title).toBe('3 nodes: 3 done');
    expect(layout.rows[0].segments.map((s) => s.step)).toEqual(['Gate', 'WaitForMco', 'Upgrade', 'Cleanup']);
    expect(layout.rows[0].segments[0].start).toBe(base * 1000);
    expect(layout.rows[0].segments[0].end).toBe((base + 120 + 10) * 1000);
    // Nodes whose drain and reboot the record has: a group's upgrade spans them, drawn as the upgrade.
    Object.keys(data)
      .filter((k) => k.startsWith('node.'))
      .forEach((k) => {
        data[k] = `${data[k]} ${Number(data[k].split(' ')[4]) + 5}`;
      });
    const parts = layoutTimeline(rc, { ...record(), data }, NOW, t);
    expect(parts.rows[0].segments.map((s) => s.step)).toEqual(['Gate', 'WaitForMco', 'Upgrade', 'Cleanup']);
    expect(parts.rows[0].segments[2].start).toBe((base + 20) * 1000);
    expect(parts.rows[0].segments[2].end).toBe((base + 120 + 40) * 1000);
  });

  it('draws a run config numo has not reported on as an empty chart', () => {
    const rc = runConfig();
    delete rc.status;
    const layout = layoutTimeline(rc, undefined, NOW, t);
    expect(layout.rows).toEqual([]);
    expect(layout.restore).toBeUndefined();
    expect(layout.title).toBe('upgrade-ops/gated-workers — no rollout');
    expect(layout.start).toBe(NOW);
  });
});
