// The timeline's words: numo sends what things are (steps, outcomes, checks, times), the plugin says them in the
// console's language. Pure, given a `t`.
import type { Translate } from '../i18n';
import { lasting, shownTime } from '../time';
import { domainLabel, waveStateWords } from '../topology';
import type {
  TimelineBackground,
  TimelineDomain,
  TimelineDrawing,
  TimelineHold,
  TimelineMarker,
  TimelineRestore,
  TimelineRow,
  TimelineSegment,
} from '../timeline-types';
import { stepNames } from './colours';

/** How a row ended. */
export type RowOutcome = TimelineRow['outcome'];

/** Milliseconds of an RFC 3339 time numo sent. */
export const at = (time: string): number => Date.parse(time);

/** The word of each outcome, as a row's title and the chart (after a failed or skipped row) say it. */
export const outcomeWords = (t: Translate): Record<RowOutcome, string> => ({
  Done: t('done'),
  InFlight: t('under way'),
  Failed: t('failed'),
  Skipped: t('skipped'),
  Ungated: t('ungated'),
  Projected: t('to go'),
});

/** The heading: the run config and its rollout. */
export const title = (d: TimelineDrawing, t: Translate): string => {
  const rollout = d.rollout ?? t('no rollout');
  return t('{{runConfig}} — {{rollout}}', { runConfig: d.runConfig, rollout });
};

/** Who a row is: its node, or a group's first and last node and how many. */
export const rowName = (row: TimelineRow, t: Translate): string =>
  row.group
    ? t('{{first}} … {{last}} ({{nodes}} nodes)', {
        first: row.group.first,
        last: row.group.last,
        nodes: row.group.nodes,
      })
    : (row.node ?? '');

/** A row's tooltip: who it is and how it ended, with its times; a group's outcomes counted. */
export const rowTitle = (row: TimelineRow, t: Translate): string => {
  const words = outcomeWords(t);
  const name = rowName(row, t);
  if (row.group) {
    const outcomes = row.outcomes
      .map((o) => t('{{n}} {{outcome}}', { n: o.count, outcome: words[o.outcome] }))
      .join(', ');
    return t('{{row}}: {{outcomes}}', { row: name, outcomes });
  }
  if (!row.segments.length) return t('{{row}}: {{outcome}}', { row: name, outcome: words[row.outcome] });
  return t('{{row}}: {{outcome}}, {{from}} – {{to}}', {
    row: name,
    outcome: words[row.outcome],
    from: shownTime(Math.min(...row.segments.map((s) => at(s.start)))),
    to: shownTime(Math.max(...row.segments.map((s) => at(s.end)))),
  });
};

/** A step's tooltip: whose, which, when and how long. */
export const segmentTitle = (who: string, s: TimelineSegment, t: Translate): string => {
  const values = {
    who,
    step: stepNames(t)[s.step],
    from: shownTime(at(s.start)),
    to: shownTime(at(s.end)),
    lasting: lasting(at(s.end) - at(s.start)),
  };
  return s.projected
    ? t('{{who}}: {{step}} (projected), {{from}} – {{to}} ({{lasting}})', values)
    : t('{{who}}: {{step}}, {{from}} – {{to}} ({{lasting}})', values);
};

/** The restore walk's label: as it happened, or as numo expects it. */
export const restoreLabel = (r: TimelineRestore, t: Translate): string =>
  r.projected ? t('restore walk (projected)') : t('restore walk');

/** The restore walk's tooltip. */
export const restoreTitle = (r: TimelineRestore, t: Translate): string =>
  t('{{row}}: {{from}} – {{to}} ({{lasting}})', {
    row: restoreLabel(r, t),
    from: shownTime(at(r.start)),
    to: shownTime(at(r.end)),
    lasting: lasting(at(r.end) - at(r.start)),
  });

/** What held, as the label above a hold says it: its checks, and how many more. */
export const holdLabel = (h: TimelineHold, t: Translate): string => {
  const checks = h.checks.join(', ');
  return h.moreChecks ? t('{{checks}} and {{more}} more', { checks, more: h.moreChecks }) : checks;
};

/** A hold's tooltip: what held and what it said; for holds too close to draw apart, how many and the longest. */
export const holdTitle = (h: TimelineHold, t: Translate): string => {
  const said = t('held by {{checks}}: {{message}} ({{from}} – {{to}})', {
    checks: h.longest.checks.join(', '),
    message: h.longest.message,
    from: shownTime(at(h.longest.start)),
    to: shownTime(at(h.longest.end)),
  });
  if (h.count <= 1) return said;
  return t('held {{times}} times, too close to draw apart, by {{checks}}: {{from}} – {{to}}; the longest: {{said}}', {
    times: h.count,
    checks: holdLabel(h, t),
    from: shownTime(at(h.start)),
    to: shownTime(at(h.end)),
    said,
  });
};

/** A maintenance window's or blackout's tooltip, with the blackouts' reasons. */
export const backgroundTitle = (b: TimelineBackground, kind: 'window' | 'blackout', t: Translate): string => {
  const what = kind === 'window' ? t('maintenance window') : t('blackout');
  const from = shownTime(at(b.start));
  const to = shownTime(at(b.end));
  if (b.count > 1) {
    return t('{{n}} windows ({{what}}), too close to draw apart: {{from}} – {{to}}', {
      n: b.count,
      what,
      from,
      to,
    });
  }
  return b.reasons.length
    ? t('{{what}}: {{labels}}: {{from}} – {{to}}', { what, labels: b.reasons.join(', '), from, to })
    : t('{{what}}: {{from}} – {{to}}', { what, from, to });
};

/** A marker's label above the chart. */
export const markerLabel = (m: TimelineMarker, t: Translate): string => t('target {{version}}', { version: m.to });

/** A marker's tooltip: the change, and the nodes that went on to the new release inside their gated turn. */
export const markerTitle = (m: TimelineMarker, t: Translate): string =>
  m.inFlight.length
    ? t('target changed from {{from}} to {{to}}; {{nodes}} went on to {{to}} inside their gated turn ({{at}})', {
        from: m.from,
        to: m.to,
        nodes: m.inFlight.join(', '),
        at: shownTime(at(m.at)),
      })
    : t('target changed from {{from}} to {{to}} ({{at}})', { from: m.from, to: m.to, at: shownTime(at(m.at)) });

/** A failure domain's header: the domain, where its wave is, and how many of its nodes are done. */
export const domainHeader = (d: TimelineDomain, t: Translate): string =>
  t('{{domain}} ({{state}}): {{done}} of {{count}} nodes done', {
    domain: domainLabel(d.domain, d.key, t),
    done: d.done,
    count: d.nodes,
    defaultValue_one: '{{domain}} ({{state}}): {{done}} of {{count}} node done',
    state: waveStateWords(t)[d.state],
  });
