// Draws the timeline numo laid out (src/timeline/drawing.rs, GET /api/timeline/<namespace>/<name>), back to front
// like src/timeline/svg.rs: the legend, windows and blackouts, the axis, the holds, the domain headers, the rows, the
// restore walk, and the now and estimated-end lines. numo sends every place and colour; the plugin only words what
// it draws (./words.ts). Every row, step and band has a tooltip (<title>) with its times.
import * as React from 'react';
import { Alert } from '@patternfly/react-core';
import { useTranslation } from 'react-i18next';
import type { MutexRunConfig, Step } from '../types';
import type { TimelineBackground, TimelineDrawing, TimelineRow, TimelineSegment } from '../timeline-types';
import type { Translate } from '../i18n';
import { groupTestId } from '../topology';
import { shownTime } from '../time';
import { NODE_STEPS, stepNames, UPGRADE_PARTS } from './colours';
import { useTimeline, type TimelineError } from './useTimeline';
import {
  at,
  backgroundTitle,
  domainHeader,
  holdLabel,
  holdTitle,
  markerLabel,
  markerTitle,
  outcomeWords,
  restoreLabel,
  restoreTitle,
  rowName,
  rowTitle,
  segmentTitle,
  title,
} from './words';

const LEGEND_CHAR_PX = 5.6;

type Key = { label: string; fill: string; opacity?: number; dashed?: boolean };

/** The colour numo sent for `step`. */
const colourOf = (d: TimelineDrawing, step: Step): string =>
  d.colours.steps.find((c) => c.step === step)?.colour ?? '#888888';

/** A key for every step's colour, the upgrade's parts (drain, reboot) only where a row draws them, as
 * src/timeline/svg.rs keys them. */
const legendKeys = (d: TimelineDrawing, t: Translate): Key[] => [
  ...[...NODE_STEPS, ...(d.upgradeParts ? UPGRADE_PARTS : []), 'Restore' as Step].map((step) => ({
    label: stepNames(t)[step],
    fill: colourOf(d, step),
  })),
  { label: t('held'), fill: d.colours.hold },
  { label: t('maintenance window'), fill: d.colours.window },
  { label: t('blackout'), fill: d.colours.blackout, opacity: d.colours.blackoutOpacity },
  { label: t('failed or ungated'), fill: d.colours.failed },
  { label: t('projected'), fill: '#888888', opacity: d.colours.projectedOpacity, dashed: true },
];

const Legend: React.FC<{ drawing: TimelineDrawing }> = ({ drawing }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const keys = legendKeys(drawing, t);
  // Each key starts where the one before it ends.
  const starts = keys.reduce<number[]>(
    (from, _key, i) => [...from, i ? from[i - 1] + 28 + LEGEND_CHAR_PX * keys[i - 1].label.length : 8],
    [],
  );
  return (
    <g data-test="timeline-legend">
      {keys.map((key, i) => (
        <g key={key.label}>
          <rect
            x={starts[i]}
            y={32}
            width={12}
            height={12}
            fill={key.fill}
            fillOpacity={key.opacity}
            stroke={key.dashed ? key.fill : undefined}
            strokeDasharray={key.dashed ? '3,2' : undefined}
          />
          <text x={starts[i] + 16} y={42}>
            {key.label}
          </text>
        </g>
      ))}
    </g>
  );
};

const Background: React.FC<{ band: TimelineBackground; kind: 'window' | 'blackout'; drawing: TimelineDrawing }> = ({
  band,
  kind,
  drawing,
}) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  return (
    <rect
      data-test={`timeline-${kind}`}
      x={band.x}
      y={drawing.top - 6}
      width={band.width}
      height={drawing.chartBottom - drawing.top + 6}
      fill={kind === 'window' ? drawing.colours.window : drawing.colours.blackout}
      fillOpacity={kind === 'window' ? 1 : drawing.colours.blackoutOpacity}
    >
      <title>{backgroundTitle(band, kind, t)}</title>
    </rect>
  );
};

const Segment: React.FC<{ s: TimelineSegment; y: number; who: string; drawing: TimelineDrawing }> = ({
  s,
  y,
  who,
  drawing,
}) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const fill = colourOf(drawing, s.step);
  return (
    <rect
      data-test="timeline-step"
      data-step={s.step}
      data-projected={s.projected ? 'true' : 'false'}
      x={s.x}
      y={y}
      width={s.width}
      height={drawing.rowHeight}
      fill={fill}
      fillOpacity={s.projected ? drawing.colours.projectedOpacity : undefined}
      stroke={s.projected ? fill : undefined}
      strokeDasharray={s.projected ? '3,2' : undefined}
    >
      <title>{segmentTitle(who, s, t)}</title>
    </rect>
  );
};

/** A row's name left of the chart, shortened to what fits. */
const shortened = (label: string, chars: number) => (label.length > chars ? `${label.slice(0, chars - 1)}…` : label);

const Row: React.FC<{ row: TimelineRow; drawing: TimelineDrawing }> = ({ row, drawing }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const words = outcomeWords(t);
  const name = rowName(row, t);
  const textY = row.y + drawing.rowHeight - 2;
  return (
    <g data-test={`timeline-row-${row.node ?? row.key}`} data-outcome={row.outcome}>
      <title>{rowTitle(row, t)}</title>
      <text x={8} y={textY}>
        {shortened(name, drawing.labelChars)}
      </text>
      {row.segments.map((s, i) => (
        <Segment key={`${s.step}-${i}`} s={s} y={row.y} who={name} drawing={drawing} />
      ))}
      {(row.outcome === 'Failed' || row.outcome === 'Ungated') && (
        <>
          <rect
            data-test="timeline-failed-marker"
            x={row.after + 3}
            y={row.y}
            width={drawing.rowHeight / 2}
            height={drawing.rowHeight}
            fill={drawing.colours.failed}
          />
          <text x={row.after + 6 + drawing.rowHeight / 2} y={textY} fill={drawing.colours.failed} fontWeight="bold">
            {words[row.outcome]}
          </text>
        </>
      )}
      {row.outcome === 'Skipped' && (
        <text x={row.after + 3} y={textY} fill="#444444" fontStyle="italic">
          {words[row.outcome]}
        </text>
      )}
    </g>
  );
};

/** The SVG of a rollout's timeline, as numo laid it out. */
export const TimelineChart: React.FC<{ drawing: TimelineDrawing }> = ({ drawing }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const d = drawing;
  const rows = d.rows.length + (d.restore ? 1 : 0);
  const bottom = d.chartBottom;
  const heading = title(d, t);
  return (
    <svg
      data-test="timeline"
      role="img"
      aria-label={t('Timeline of {{title}}: {{rows}} rows from {{from}} to {{to}}', {
        title: heading,
        rows,
        from: shownTime(at(d.start)),
        to: shownTime(at(d.end)),
      })}
      xmlns="http://www.w3.org/2000/svg"
      viewBox={`0 0 ${d.width} ${d.height}`}
      width="100%"
      style={{ maxWidth: d.width, fontFamily: 'sans-serif', fontSize: 11 }}
      shapeRendering="crispEdges"
    >
      <rect x={0} y={0} width={d.width} height={d.height} fill="#FFFFFF" />
      <text x={8} y={20} fontSize={15} fontWeight="bold">
        {heading}
      </text>
      <Legend drawing={d} />
      {d.windows.map((b) => (
        <Background key={`w-${b.start}`} band={b} kind="window" drawing={d} />
      ))}
      {d.blackouts.map((b) => (
        <Background key={`b-${b.start}`} band={b} kind="blackout" drawing={d} />
      ))}
      <g data-test="timeline-axis">
        <text x={d.chartLeft - 8} y={d.top - 18} textAnchor="end" fill="#444444">
          {t('UTC')}
        </text>
        {d.ticks.map((tick) => (
          <g key={tick.at}>
            <line x1={tick.x} y1={d.top - 14} x2={tick.x} y2={bottom} stroke="#DDDDDD" />
            <text x={tick.x} y={d.top - 18} textAnchor="middle" fill="#444444">
              {tick.label}
            </text>
          </g>
        ))}
      </g>
      {d.holds.map((h) => (
        <g key={`h-${h.start}`} data-test="timeline-hold">
          <title>{holdTitle(h, t)}</title>
          <rect x={h.x} y={d.top - 12} width={h.width} height={5} fill={d.colours.hold} />
          <rect x={h.x} y={d.top} width={h.width} height={bottom - d.top} fill={d.colours.hold} fillOpacity={0.08} />
          {h.labelled && (
            <text x={h.x + 2} y={d.top - 28} fill={d.colours.hold} fontSize={9}>
              {holdLabel(h, t)}
            </text>
          )}
        </g>
      ))}
      {d.domains.map((domain) => (
        <text
          key={`domain-${domain.domain}`}
          data-test={`timeline-domain-${groupTestId(domain.domain)}`}
          data-state={domain.state}
          x={8}
          y={domain.y + d.rowHeight - 2}
          fontWeight="bold"
        >
          {domainHeader(domain, t)}
        </text>
      ))}
      {d.rows.map((row) => (
        <Row key={row.key} row={row} drawing={d} />
      ))}
      {d.restore && (
        <g data-test="timeline-row-restore" data-outcome={d.restore.projected ? 'Projected' : 'Done'}>
          <title>{restoreTitle(d.restore, t)}</title>
          <text x={8} y={d.restore.y + d.rowHeight - 2}>
            {restoreLabel(d.restore, t)}
          </text>
          {d.restore.segments.map((s, i) => (
            <Segment key={`restore-${i}`} s={s} y={d.restore?.y ?? 0} who={restoreLabel(d.restore!, t)} drawing={d} />
          ))}
        </g>
      )}
      {rows === 0 && (
        <text x={d.chartLeft} y={d.top + 11} fill="#444444">
          {t('No node in this rollout yet.')}
        </text>
      )}
      {d.markers.map((m) => (
        <g key={`marker-${m.at}`} data-test="timeline-marker">
          <title>{markerTitle(m, t)}</title>
          {/* The label sits above the time axis and the holds' labels, as src/timeline/svg.rs draws it. */}
          <line x1={m.x} y1={d.top - 36} x2={m.x} y2={bottom} stroke={d.colours.line} strokeDasharray="8,3,2,3" />
          <text x={m.x + 3} y={d.top - 38} textAnchor="start" fontSize={11}>
            {markerLabel(m, t)}
          </text>
        </g>
      ))}
      <g data-test="timeline-now">
        <line x1={d.nowX} y1={d.top - 10} x2={d.nowX} y2={bottom} stroke={d.colours.line} strokeDasharray="4,3" />
        <text x={d.nowX} y={bottom + 14} textAnchor="middle">
          {t('now')}
        </text>
      </g>
      {d.estimatedEnd && d.estimatedEndX !== undefined && d.estimatedEndX !== null && (
        <g data-test="timeline-estimated-end">
          <line
            x1={d.estimatedEndX}
            y1={d.top - 10}
            x2={d.estimatedEndX}
            y2={bottom}
            stroke={d.colours.line}
            strokeWidth={2}
          />
          <text x={d.estimatedEndX} y={bottom + 28} textAnchor="end" fill={d.colours.line}>
            {t('estimated end {{time}}', { time: shownTime(at(d.estimatedEnd)) })}
          </text>
        </g>
      )}
      <line x1={d.chartLeft} y1={bottom} x2={d.chartRight} y2={bottom} stroke="#888888" />
    </svg>
  );
};

/** Why the timeline cannot be shown, in a sentence. */
const whyNot = (error: TimelineError, t: Translate): string => {
  switch (error.status) {
    case 401:
      return t('The console did not send who you are; log in again to see the timeline.');
    case 403:
      return t('You may not read this run config, so numo shows you no timeline of it: {{message}}', {
        message: error.message,
      });
    case 404:
      return t(
        'No timeline: the run config is gone, or the console does not reach numo (its ConsolePlugin lacks the proxy to numo): {{message}}',
        { message: error.message },
      );
    default:
      return t('numo could not give the timeline: {{message}}', { message: error.message });
  }
};

/** The run config's timeline, fetched from numo and drawn, with what numo could not read said above it. */
export const RolloutTimeline: React.FC<{ rc: MutexRunConfig }> = ({ rc }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const [drawing, error] = useTimeline(rc);
  return (
    <>
      {error && <Alert isInline isPlain variant="warning" title={whyNot(error, t)} data-test="timeline-error" />}
      {drawing?.unread.includes('RolloutRecord') && (
        <p data-test="timeline-unread-record">
          {t('The rollout record could not be read: the finished nodes and the holds that ended are not shown.')}
        </p>
      )}
      {drawing?.unread.includes('Nodes') && (
        <p data-test="timeline-unread-nodes">
          {t('The nodes could not be read: the rows are not grouped by failure domain.')}
        </p>
      )}
      {drawing && <TimelineChart drawing={drawing} />}
      {!drawing && !error && <p data-test="timeline-loading">{t('Loading the timeline…')}</p>}
    </>
  );
};
