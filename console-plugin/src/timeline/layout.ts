// The picture of a rollout as `numo timeline` draws it (src/timeline/, src/controllers/run_config/preview/
// timeline.rs), worked out as a pure function so that the React component only draws what it is given: one row
// per node in the order they went (the finished nodes from the rollout record, then the nodes in the status), each
// step in its colour, the projected remainder lighter, holds, the next maintenance window and blackouts as bands,
// the restore walk, now and the estimated end.
import type { ConfigMap, MutexRunConfig, NodeProgress, Step, WholeStep } from '../types';
import { readRecord, type RolloutRecord } from '../record';
import { lasting, ms, parseDuration, shownTime } from '../time';
import { DEFAULT_SECONDS, NODE_STEPS, PROJECTED_OPACITY, STEP_COLOURS, stepNames, UPGRADE_PARTS } from './colours';
import type { Translate } from '../i18n';
import { type DomainGroup, groupByDomain, type WaveState, waveStateWords } from '../topology';
import { drawnRecordedSteps, drawnSteps, type Measured } from './measured';

/** Where things are drawn (the same layout as src/timeline/layout.rs). */
export const LAYOUT = {
  width: 1200,
  chartLeft: 240,
  chartRight: 1180,
  top: 92,
  rowHeight: 12,
  rowPitch: 16,
};

/** Beyond this many rows, consecutive nodes share a summary row. */
export const MAX_ROWS = 300;

/** Holds, windows and blackouts closer than this many pixels are drawn as one band. */
const MIN_GAP_PX = 2;

export type RowOutcome = 'Done' | 'InFlight' | 'Failed' | 'Skipped' | 'Ungated' | 'Projected';

/** The word of each outcome, as a row's title and the chart (after a failed or skipped row) say it. */
export const outcomeWords = (t: Translate): Record<RowOutcome, string> => ({
  Done: t('done'),
  InFlight: t('under way'),
  Failed: t('failed'),
  Skipped: t('skipped'),
  Ungated: t('ungated'),
  Projected: t('to go'),
});

export type TimelineSegment = {
  step: Step;
  start: number;
  end: number;
  projected: boolean;
  colour: string;
  /** 1, or PROJECTED_OPACITY for a projection. */
  opacity: number;
  x: number;
  width: number;
  title: string;
};

export type TimelineRow = {
  key: string;
  label: string;
  /** The node, for a node's row. */
  node?: string;
  outcome: RowOutcome;
  y: number;
  segments: TimelineSegment[];
  /** Where the steps end: the failed marker and the outcome are drawn after it. */
  after: number;
  title: string;
};

export type TimelineBand = {
  kind: 'hold' | 'window' | 'blackout';
  start: number;
  end: number;
  x: number;
  width: number;
  /** What held (the checks), or the band's label. */
  label: string;
  title: string;
};

/** The header of a failure domain's rows: its name, how far its wave is. */
export type TimelineDomain = {
  domain: string;
  state: WaveState;
  y: number;
  /** The domain, its wave's nodes done of all, and where the wave is. */
  label: string;
};

export type TimelineLayout = {
  title: string;
  width: number;
  height: number;
  chartLeft: number;
  chartRight: number;
  top: number;
  rowHeight: number;
  /** Below the last row (and the restore walk). */
  chartBottom: number;
  start: number;
  end: number;
  now: number;
  nowX: number;
  estimatedEnd?: number;
  estimatedEndX?: number;
  rows: TimelineRow[];
  restore?: TimelineRow;
  /** Under a rollout by failure domain: a header above each domain's rows, in wave order. */
  domains: TimelineDomain[];
  holds: TimelineBand[];
  windows: TimelineBand[];
  blackouts: TimelineBand[];
  /** Moments marked across the rows: a new release asked for mid-rollout. */
  markers: TimelineMarker[];
  ticks: { x: number; label: string }[];
};

/** A moment marked across the rows, as src/timeline's `Marker`. */
export type TimelineMarker = { at: number; x: number; label: string; title: string };

const median = (values: number[]): number | undefined => {
  if (!values.length) return undefined;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)];
};

/** How long each step should take, in milliseconds: the seconds numo's estimate takes (`estimate.stepSeconds`,
 * which know what this page cannot, such as rules without cleanup Jobs); without them this rollout's figures, else
 * the last rollout's, else numo's defaults, and the soak the spec's soakTime. Whole steps only: the figures of
 * `Upgrade`'s parts (`Drain`, `Reboot`) are in `Upgrade`'s already, and are not added to it. */
export const stepMillis = (rc: MutexRunConfig): Record<WholeStep, number> => {
  const status = rc.status ?? {};
  const numo = status.estimate?.stepSeconds ?? [];
  if (numo.length) {
    const out = {} as Record<WholeStep, number>;
    (Object.keys(DEFAULT_SECONDS) as WholeStep[]).forEach((step) => {
      out[step] = (numo.find((s) => s.step === step)?.seconds ?? DEFAULT_SECONDS[step]) * 1000;
    });
    return out;
  }
  const last = status.history?.[status.history.length - 1];
  const out = {} as Record<WholeStep, number>;
  (Object.keys(DEFAULT_SECONDS) as WholeStep[]).forEach((step) => {
    const samples = status.stepDurations?.find((s) => s.step === step);
    const seconds =
      median(samples?.seconds ?? []) ??
      last?.steps?.find((s) => s.step === step)?.medianSeconds ??
      DEFAULT_SECONDS[step];
    out[step] = seconds * 1000;
  });
  out.Soak = parseDuration(rc.spec?.soakTime) ?? 0;
  return out;
};

const isUpgradePart = (step: Step) => (UPGRADE_PARTS as readonly Step[]).includes(step);

const CURRENT_STEP: Partial<Record<NodeProgress['phase'], WholeStep>> = {
  Gating: 'Gate',
  Released: 'WaitForMco',
  Upgrading: 'Upgrade',
  CleaningUp: 'Cleanup',
  Soaking: 'Soak',
};

type Plain = { step: Step; start: number; end: number; projected: boolean };

/** A node's steps from `from` on, each its expected length (a step of no length left out). */
const projectSteps = (steps: readonly WholeStep[], from: number, lengths: Record<WholeStep, number>): Plain[] => {
  const out: Plain[] = [];
  let at = from;
  steps.forEach((step) => {
    if (lengths[step] <= 0) return;
    out.push({ step, start: at, end: at + lengths[step], projected: true });
    at += lengths[step];
  });
  return out;
};

/** An in-flight node's steps: those seen, the current one to now, and the rest of the node projected. */
const inFlight = (entry: NodeProgress, now: number, lengths: Record<WholeStep, number>): Plain[] => {
  const seen: Plain[] = drawnSteps(entry, now).map((m: Measured) => ({ ...m, projected: false }));
  const current = CURRENT_STEP[entry.phase];
  if (!current) return seen;
  const index = NODE_STEPS.indexOf(current);
  const last = seen[seen.length - 1];
  // The projection knows the upgrade whole (from its drain's start): its rest continues the part under way, the
  // reboot (src/controllers/run_config/preview/timeline.rs).
  const isCurrent = (s: Plain) => s.step === current || (current === 'Upgrade' && isUpgradePart(s.step));
  const currentStart = last && isCurrent(last) ? seen.find(isCurrent)?.start : undefined;
  let from = now;
  if (last && currentStart !== undefined) {
    // The current step's expected rest, if it should not be over yet.
    const expectedEnd = currentStart + lengths[current];
    if (expectedEnd > now) {
      seen.push({ step: last.step, start: now, end: expectedEnd, projected: true });
      from = expectedEnd;
    }
  }
  return [...seen, ...projectSteps(NODE_STEPS.slice(index + 1), from, lengths)];
};

/** When a node's projected steps end (now for a node with none to go). */
const endOf = (steps: Plain[], now: number) => steps.reduce((end, s) => Math.max(end, s.end), now);

/** The nodes that have not started: `pending` of them, `concurrency` at a time in the slots the in-flight nodes
 * free, from `from` on; one summary row whose steps span from the first node's start to the last one's end (as
 * the picture groups nodes), scaled to end at the estimate's `nodesDone`. */
const pendingSteps = (
  pending: number,
  concurrency: number,
  slotsFree: number[],
  from: number,
  lengths: Record<WholeStep, number>,
  nodesDone?: number,
): Plain[] => {
  const slots = [...slotsFree];
  while (slots.length < concurrency) slots.push(from);
  slots.sort((a, b) => a - b);
  const spans = new Map<Step, { start: number; end: number }>();
  for (let i = 0; i < pending; i += 1) {
    slots.sort((a, b) => a - b);
    const at = Math.max(slots[0], from);
    const steps = projectSteps(NODE_STEPS, at, lengths);
    steps.forEach((s) => {
      const span = spans.get(s.step);
      spans.set(s.step, span ? { start: Math.min(span.start, s.start), end: Math.max(span.end, s.end) } : s);
    });
    slots[0] = endOf(steps, at);
  }
  const out: Plain[] = NODE_STEPS.filter((s) => spans.has(s)).map((step) => {
    const span = spans.get(step) as { start: number; end: number };
    return { step, start: span.start, end: span.end, projected: true };
  });
  const blockStart = out.reduce((m, s) => Math.min(m, s.start), Infinity);
  const blockEnd = endOf(out, blockStart);
  // numo's estimate knows what this page cannot (which rules have cleanup Jobs, the windows ahead): the block ends
  // where the estimate says the last node is done, earlier or later than these figures give.
  if (nodesDone !== undefined && nodesDone > blockStart && blockEnd > blockStart) {
    const k = (nodesDone - blockStart) / (blockEnd - blockStart);
    out.forEach((s) => {
      s.start = blockStart + (s.start - blockStart) * k;
      s.end = blockStart + (s.end - blockStart) * k;
    });
  }
  return out;
};

type PlainRow = { key: string; label: string; node?: string; outcome: RowOutcome; steps: Plain[]; title?: string };

/** Rows beyond MAX_ROWS grouped: `ceil(n / MAX_ROWS)` consecutive nodes to a row, each step spanning from the
 * group's earliest start to its latest end, a group's upgrade over its nodes' upgrades drawn whole or in their
 * parts (src/timeline/group.rs). */
const grouped = (rows: PlainRow[], t: Translate): PlainRow[] => {
  if (rows.length <= MAX_ROWS) return rows;
  const size = Math.ceil(rows.length / MAX_ROWS);
  const words = outcomeWords(t);
  const out: PlainRow[] = [];
  const severity: RowOutcome[] = ['Failed', 'Ungated', 'InFlight', 'Skipped', 'Done', 'Projected'];
  for (let i = 0; i < rows.length; i += size) {
    const group = rows.slice(i, i + size);
    const spans = new Map<string, Plain>();
    group.forEach((r) =>
      r.steps.forEach((s) => {
        const step: Step = isUpgradePart(s.step) ? 'Upgrade' : s.step;
        const key = `${step}${s.projected ? '~' : ''}`;
        const span = spans.get(key);
        spans.set(
          key,
          span ? { ...span, start: Math.min(span.start, s.start), end: Math.max(span.end, s.end) } : { ...s, step },
        );
      }),
    );
    const counts = new Map<RowOutcome, number>();
    group.forEach((r) => counts.set(r.outcome, (counts.get(r.outcome) ?? 0) + 1));
    const outcome = severity.find((o) => counts.has(o)) ?? 'Done';
    const outcomes = [...counts.entries()].map(([o, n]) => t('{{n}} {{outcome}}', { n, outcome: words[o] })).join(', ');
    const first = group[0].label;
    const last = group[group.length - 1].label;
    out.push({
      key: `group-${i}`,
      label:
        group.length > 1 ? t('{{first}} … {{last}} ({{nodes}} nodes)', { first, last, nodes: group.length }) : first,
      outcome,
      steps: [...spans.values()].sort((a, b) => a.start - b.start),
      title: t('{{count}} nodes: {{outcomes}}', {
        count: group.length,
        defaultValue_one: '{{count}} node: {{outcomes}}',
        outcomes,
      }),
    });
  }
  return out;
};

/** Bands of one kind, those less than MIN_GAP_PX apart merged, those outside the chart left out. */
const mergedBands = <T extends { start: number; end: number }>(
  items: T[],
  start: number,
  end: number,
): { start: number; end: number; items: T[] }[] => {
  const gap = ((end - start) * MIN_GAP_PX) / (LAYOUT.chartRight - LAYOUT.chartLeft);
  const shown = items.filter((b) => b.end >= start && b.start < end).sort((a, b) => a.start - b.start);
  const out: { start: number; end: number; items: T[] }[] = [];
  shown.forEach((item) => {
    const last = out[out.length - 1];
    if (last && item.start < last.end + gap) {
      last.end = Math.max(last.end, item.end);
      last.items.push(item);
    } else {
      out.push({ start: item.start, end: Math.max(item.end, item.start), items: [item] });
    }
  });
  return out;
};

const TICK_STEPS = [1, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080].map((m) => m * 60000);

/** Axis ticks in UTC, at most about eight. */
const ticks = (start: number, end: number, x: (t: number) => number) => {
  const span = end - start;
  const step = TICK_STEPS.find((s) => span / s <= 8) ?? TICK_STEPS[TICK_STEPS.length - 1];
  const out: { x: number; label: string }[] = [];
  for (let t = Math.ceil(start / step) * step; t <= end; t += step) {
    const iso = new Date(t).toISOString();
    const label = step >= 86400000 || iso.slice(11, 16) === '00:00' ? iso.slice(5, 10) : iso.slice(11, 16);
    out.push({ x: x(t), label });
  }
  return out;
};

/**
 * The timeline of `rc`'s current (or last) rollout at `now` (milliseconds): `record` is its rollout record
 * ConfigMap (`numo-timeline-<name>`), if it could be read; `t` words it; `domains` (node name to failure domain,
 * under `status.topology`) groups the node rows by domain in wave order.
 */
export const layoutTimeline = (
  rc: MutexRunConfig,
  record: ConfigMap | null | undefined,
  nowMs: number,
  t: Translate,
  domains?: Record<string, string>,
): TimelineLayout => {
  const steps = stepNames(t);
  const words = outcomeWords(t);
  const status = rc.status ?? {};
  const rollout = status.targetConfig?.rollout ?? status.targetVersion;
  const recorded: RolloutRecord = readRecord(record?.data);
  const same = recorded.rollout !== undefined && recorded.rollout === rollout;
  const lengths = stepMillis(rc);
  const inStatus = new Set((status.nodes ?? []).map((n) => n.name));

  const finishedAt = ms(status.finishedAt);
  const completed = status.phase === 'Completed' && finishedAt !== undefined;

  const rows: PlainRow[] = [];
  if (same) {
    recorded.nodes
      .filter((n) => !inStatus.has(n.name))
      .forEach((n) =>
        rows.push({
          key: `node-${n.name}`,
          label: n.name,
          node: n.name,
          outcome: n.phase === 'Done' ? 'Done' : n.phase,
          steps: drawnRecordedSteps(n).map((s) => ({ ...s, projected: false })),
        }),
      );
  }
  const slotsFree: number[] = [];
  (status.nodes ?? []).forEach((entry) => {
    let outcome: RowOutcome;
    let steps: Plain[];
    if (entry.phase === 'Failed' || entry.phase === 'Ungated') {
      outcome = entry.phase;
      steps = drawnSteps(entry, nowMs).map((m) => ({ ...m, projected: false }));
    } else if (entry.phase === 'Done' || entry.phase === 'Skipped') {
      outcome = entry.phase;
      steps = drawnSteps(entry, ms(entry.finishedAt) ?? nowMs).map((m) => ({ ...m, projected: false }));
    } else {
      outcome = 'InFlight';
      steps = completed
        ? drawnSteps(entry, nowMs).map((m) => ({ ...m, projected: false }))
        : inFlight(entry, nowMs, lengths);
      slotsFree.push(endOf(steps, nowMs));
    }
    rows.push({ key: `node-${entry.name}`, label: entry.name, node: entry.name, outcome, steps });
  });

  const active = ['Waiting', 'Pausing', 'Upgrading', 'Failed'].includes(status.phase ?? '');
  const pending = status.pendingNodes ?? 0;
  if (active && pending > 0) {
    const nextWindow = ms(status.nextWindow?.start);
    const heldByWindow = (status.blockedBy ?? []).some(
      (b) => b.check === 'MaintenanceWindow' || b.check === 'BlackoutWindow',
    );
    const from = heldByWindow && nextWindow !== undefined && nextWindow > nowMs ? nextWindow : nowMs;
    rows.push({
      key: 'pending',
      label: t('{{count}} nodes to go', { count: pending, defaultValue_one: '{{count}} node to go' }),
      outcome: 'Projected',
      steps: pendingSteps(
        pending,
        Math.max(1, rc.spec?.concurrency ?? 1),
        slotsFree,
        from,
        lengths,
        ms(status.estimate?.nodesDone),
      ),
    });
  }

  const drawn = grouped(rows, t);
  const estimatedEnd = ms(status.estimate?.end);
  const allSteps = drawn.flatMap((r) => r.steps);
  const lastSegment = allSteps.length ? Math.max(...allSteps.map((s) => s.end)) : undefined;
  const start = ms(status.startedAt) ?? (allSteps.length ? Math.min(...allSteps.map((s) => s.start)) : nowMs);
  // A finished rollout is drawn to its end, with "now" there; one under way to now or its projection.
  const now = completed ? Math.max(finishedAt as number, lastSegment ?? (finishedAt as number)) : nowMs;

  // The restore walk: as it happened, or as numo expects it.
  const restoreStarted = ms(status.restoreStartedAt);
  let restore: { start: number; end: number; label: string } | undefined;
  if (restoreStarted !== undefined && finishedAt !== undefined) {
    restore = { start: restoreStarted, end: finishedAt, label: t('restore walk') };
  } else if (restoreStarted !== undefined) {
    restore = { start: restoreStarted, end: Math.max(estimatedEnd ?? now, now), label: t('restore walk (projected)') };
  } else if (status.estimate?.nodesDone && estimatedEnd !== undefined && !completed) {
    restore = {
      start: ms(status.estimate.nodesDone) as number,
      end: estimatedEnd,
      label: t('restore walk (projected)'),
    };
  }

  const end = Math.max(
    start + 60000,
    ...[now, finishedAt, estimatedEnd, lastSegment, restore?.end].filter((t): t is number => t !== undefined),
  );
  const span = end - start;
  const x = (t: number) =>
    LAYOUT.chartLeft + Math.min(1, Math.max(0, (t - start) / span)) * (LAYOUT.chartRight - LAYOUT.chartLeft);
  const width = (from: number, to: number) => Math.max(1, x(to) - x(from));
  const stepTimes = (who: string, s: Plain) => ({
    who,
    step: steps[s.step],
    from: shownTime(s.start),
    to: shownTime(s.end),
    lasting: lasting(s.end - s.start),
  });
  const segment = (who: string, s: Plain): TimelineSegment => ({
    ...s,
    colour: STEP_COLOURS[s.step],
    opacity: s.projected ? PROJECTED_OPACITY : 1,
    x: x(s.start),
    width: width(s.start, s.end),
    title: s.projected
      ? t('{{who}}: {{step}} (projected), {{from}} – {{to}} ({{lasting}})', stepTimes(who, s))
      : t('{{who}}: {{step}}, {{from}} – {{to}} ({{lasting}})', stepTimes(who, s)),
  });
  const laidRow = (r: PlainRow, y: number): TimelineRow => {
    const segments = r.steps.map((s) => segment(r.label, s));
    const first = r.steps.length ? Math.min(...r.steps.map((s) => s.start)) : undefined;
    const last = r.steps.length ? Math.max(...r.steps.map((s) => s.end)) : undefined;
    return {
      key: r.key,
      label: r.label,
      node: r.node,
      outcome: r.outcome,
      y,
      segments,
      after: segments.reduce((m, s) => Math.max(m, s.x + s.width), LAYOUT.chartLeft),
      title:
        r.title ??
        (first !== undefined
          ? t('{{row}}: {{outcome}}, {{from}} – {{to}}', {
              row: r.label,
              outcome: words[r.outcome],
              from: shownTime(first),
              to: shownTime(last),
            })
          : t('{{row}}: {{outcome}}', { row: r.label, outcome: words[r.outcome] })),
    };
  };
  // Under a rollout by failure domain (and the nodes' domains known), the node rows go by domain in wave order, each
  // domain under a header; the rows not of a node (the nodes to go) stay last.
  const topology = status.topology;
  const byDomain =
    topology && domains && drawn === rows
      ? groupByDomain(
          drawn.filter((r) => r.node !== undefined),
          (r) => r.node as string,
          topology,
          domains,
          t,
        )
      : undefined;
  const stateWords = waveStateWords(t);
  const slots: ({ row: PlainRow } | { group: DomainGroup<PlainRow> })[] = byDomain
    ? [
        ...byDomain.flatMap((group) => [{ group }, ...group.rows.map((row) => ({ row }))]),
        ...drawn.filter((r) => r.node === undefined).map((row) => ({ row })),
      ]
    : drawn.map((row) => ({ row }));
  const slotY = (i: number) => LAYOUT.top + i * LAYOUT.rowPitch;
  const laidRows: TimelineRow[] = [];
  const laidDomains: TimelineDomain[] = [];
  slots.forEach((slot, i) => {
    if ('row' in slot) {
      laidRows.push(laidRow(slot.row, slotY(i)));
    } else {
      const { group } = slot;
      laidDomains.push({
        domain: group.domain,
        state: group.state,
        y: slotY(i),
        label: t('{{domain}} ({{state}}): {{done}} of {{count}} nodes done', {
          domain: group.label,
          done: group.done,
          count: group.nodes,
          defaultValue_one: '{{domain}} ({{state}}): {{done}} of {{count}} node done',
          state: stateWords[group.state],
        }),
      });
    }
  });
  let restoreRow: TimelineRow | undefined;
  if (restore) {
    const y = slotY(slots.length);
    const restoreSteps: Plain[] = [];
    if (restore.start < now)
      restoreSteps.push({ step: 'Restore', start: restore.start, end: Math.min(restore.end, now), projected: false });
    if (restore.end > now)
      restoreSteps.push({ step: 'Restore', start: Math.max(restore.start, now), end: restore.end, projected: true });
    const segments = restoreSteps.map((s) => segment(restore?.label ?? t('restore walk'), s));
    restoreRow = {
      key: 'restore',
      label: restore.label,
      outcome: restore.end > now ? 'Projected' : 'Done',
      y,
      segments,
      after: segments.reduce((m, s) => Math.max(m, s.x + s.width), LAYOUT.chartLeft),
      title: t('{{row}}: {{from}} – {{to}} ({{lasting}})', {
        row: restore.label,
        from: shownTime(restore.start),
        to: shownTime(restore.end),
        lasting: lasting(restore.end - restore.start),
      }),
    };
  }
  const rowCount = slots.length + (restoreRow ? 1 : 0);
  const chartBottom = LAYOUT.top + Math.max(1, rowCount) * LAYOUT.rowPitch;

  // Holds: those that ended (from the record) and the one going on.
  const holdItems: { start: number; end: number; checks: string; message: string }[] = same
    ? recorded.holds.map((h) => ({ ...h }))
    : [];
  const heldSince = ms(status.heldSince);
  if (heldSince !== undefined && (status.blockedBy ?? []).length) {
    holdItems.push({
      start: heldSince,
      end: now,
      checks: (status.blockedBy ?? []).map((b) => b.check).join(','),
      message: (status.blockedBy ?? []).map((b) => b.message).join('; '),
    });
  }
  const said = (h: (typeof holdItems)[number]) =>
    t('held by {{checks}}: {{message}} ({{from}} – {{to}})', {
      checks: h.checks,
      message: h.message,
      from: shownTime(h.start),
      to: shownTime(h.end),
    });
  const holds: TimelineBand[] = mergedBands(holdItems, start, end).map((b) => {
    const checks = [...new Set(b.items.flatMap((h) => h.checks.split(',')))].slice(0, 3).join(', ');
    return {
      kind: 'hold',
      start: b.start,
      end: b.end,
      x: x(b.start),
      width: width(b.start, b.end),
      label: checks,
      title:
        b.items.length === 1
          ? said(b.items[0])
          : t('held {{times}} times, too close to draw apart, by {{checks}}: {{from}} – {{to}}', {
              times: b.items.length,
              checks,
              from: shownTime(b.start),
              to: shownTime(b.end),
            }),
    };
  });

  const windowItems: { start: number; end: number; label: string }[] = [];
  const windowStart = ms(status.nextWindow?.start);
  if (windowStart !== undefined) {
    windowItems.push({ start: windowStart, end: ms(status.nextWindow?.end) ?? end, label: t('maintenance window') });
  }
  const blackoutItems = (rc.spec?.blackoutWindows ?? [])
    .map((b) => ({ start: ms(b.start), end: ms(b.end), label: b.reason || t('blackout') }))
    .filter((b): b is { start: number; end: number; label: string } => b.start !== undefined && b.end !== undefined);
  const bands = (items: { start: number; end: number; label: string }[], kind: 'window' | 'blackout') =>
    mergedBands(items, start, end).map((b) => {
      const what = kind === 'window' ? t('maintenance window') : t('blackout');
      const labels = [...new Set(b.items.map((i) => i.label))].join(', ');
      return {
        kind,
        start: b.start,
        end: b.end,
        x: x(b.start),
        width: width(b.start, b.end),
        label: labels,
        title:
          labels === what
            ? t('{{what}}: {{from}} – {{to}}', { what, from: shownTime(b.start), to: shownTime(b.end) })
            : t('{{what}}: {{labels}}: {{from}} – {{to}}', {
                what,
                labels,
                from: shownTime(b.start),
                to: shownTime(b.end),
              }),
      };
    });

  const markers: TimelineMarker[] = (status.targetChanges ?? [])
    .map((change) => ({ change, at: ms(change.at) }))
    .filter((m): m is { change: NonNullable<typeof status.targetChanges>[number]; at: number } => m.at !== undefined)
    .filter(({ at }) => at <= end)
    .map(({ change, at }) => ({
      at,
      x: x(at),
      label: t('target {{version}}', { version: change.to }),
      title: change.inFlight?.length
        ? t('target changed from {{from}} to {{to}}; {{nodes}} went on to {{to}} inside their gated turn ({{at}})', {
            from: change.from,
            to: change.to,
            nodes: change.inFlight.join(', '),
            at: shownTime(at),
          })
        : t('target changed from {{from}} to {{to}} ({{at}})', {
            from: change.from,
            to: change.to,
            at: shownTime(at),
          }),
    }));

  const name = rc.metadata?.name ?? '';
  const noRollout = t('no rollout');
  const ns = rc.metadata?.namespace ?? '';
  return {
    title: t('{{runConfig}} — {{rollout}}', { runConfig: `${ns}/${name}`, rollout: rollout ?? noRollout }),
    width: LAYOUT.width,
    height: chartBottom + 40,
    chartLeft: LAYOUT.chartLeft,
    chartRight: LAYOUT.chartRight,
    top: LAYOUT.top,
    rowHeight: LAYOUT.rowHeight,
    chartBottom,
    start,
    end,
    now,
    nowX: x(now),
    estimatedEnd,
    estimatedEndX: estimatedEnd !== undefined ? x(estimatedEnd) : undefined,
    rows: laidRows,
    domains: laidDomains,
    restore: restoreRow,
    holds,
    windows: bands(windowItems, 'window'),
    blackouts: bands(blackoutItems, 'blackout'),
    markers,
    ticks: ticks(start, end, x),
  };
};
