// Draws a TimelineLayout as SVG, back to front like src/timeline/svg.rs: the legend, windows and blackouts, the
// axis, the holds, the rows, the restore walk, and the now and estimated-end lines. Every row, step and band has a
// tooltip (<title>) with its times.
import * as React from 'react';
import { useTranslation } from 'react-i18next';
import type { Step } from '../types';
import {
  BLACKOUT_COLOUR,
  FAILED_COLOUR,
  HOLD_COLOUR,
  LINE_COLOUR,
  NODE_STEPS,
  PROJECTED_OPACITY,
  STEP_COLOURS,
  stepNames,
  UPGRADE_PARTS,
  WINDOW_COLOUR,
} from './colours';
import { outcomeWords, type TimelineBand, type TimelineLayout, type TimelineRow } from './layout';
import type { Translate } from '../i18n';
import { groupTestId } from '../topology';
import { shownTime } from '../time';

const LEGEND_CHAR_PX = 5.6;

type Key = { label: string; fill: string; opacity?: number; dashed?: boolean };

/** A key for every step's colour, the upgrade's parts (drain, reboot) only where `parts` (a node's are drawn: numo
 * saw its drain end), as src/timeline/svg.rs keys them. */
const legendKeys = (parts: boolean, t: Translate): Key[] => [
  ...[...NODE_STEPS, ...(parts ? UPGRADE_PARTS : []), 'Restore' as Step].map((step) => ({
    label: stepNames(t)[step],
    fill: STEP_COLOURS[step],
  })),
  { label: t('held'), fill: HOLD_COLOUR },
  { label: t('maintenance window'), fill: WINDOW_COLOUR },
  { label: t('blackout'), fill: BLACKOUT_COLOUR, opacity: 0.3 },
  { label: t('failed or ungated'), fill: FAILED_COLOUR },
  { label: t('projected'), fill: '#888888', opacity: PROJECTED_OPACITY, dashed: true },
];

const Legend: React.FC<{ layout: TimelineLayout }> = ({ layout }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const parts = layout.rows.some((r) => r.segments.some((s) => (UPGRADE_PARTS as readonly Step[]).includes(s.step)));
  const keys = legendKeys(parts, t);
  // Each key starts where the one before it ends.
  const starts = keys.reduce<number[]>(
    (at, _key, i) => [...at, i ? at[i - 1] + 28 + LEGEND_CHAR_PX * keys[i - 1].label.length : 8],
    [],
  );
  return (
    <g data-test="timeline-legend">
      {keys.map((key, i) => {
        const at = starts[i];
        return (
          <g key={key.label}>
            <rect
              x={at}
              y={32}
              width={12}
              height={12}
              fill={key.fill}
              fillOpacity={key.opacity}
              stroke={key.dashed ? key.fill : undefined}
              strokeDasharray={key.dashed ? '3,2' : undefined}
            />
            <text x={at + 16} y={42}>
              {key.label}
            </text>
          </g>
        );
      })}
    </g>
  );
};

const Background: React.FC<{ band: TimelineBand; layout: TimelineLayout }> = ({ band, layout }) => (
  <rect
    data-test={`timeline-${band.kind}`}
    x={band.x}
    y={layout.top - 6}
    width={band.width}
    height={layout.chartBottom - layout.top + 6}
    fill={band.kind === 'window' ? WINDOW_COLOUR : BLACKOUT_COLOUR}
    fillOpacity={band.kind === 'window' ? 1 : 0.3}
  >
    <title>{band.title}</title>
  </rect>
);

const Row: React.FC<{ row: TimelineRow; layout: TimelineLayout }> = ({ row, layout }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const words = outcomeWords(t);
  const textY = row.y + layout.rowHeight - 2;
  return (
    <g data-test={`timeline-row-${row.node ?? row.key}`} data-outcome={row.outcome}>
      <title>{row.title}</title>
      <text x={8} y={textY}>
        {row.label.length > 34 ? `${row.label.slice(0, 33)}…` : row.label}
      </text>
      {row.segments.map((s, i) => (
        <rect
          key={`${s.step}-${i}`}
          data-test="timeline-step"
          data-step={s.step}
          data-projected={s.projected ? 'true' : 'false'}
          x={s.x}
          y={row.y}
          width={s.width}
          height={layout.rowHeight}
          fill={s.colour}
          fillOpacity={s.projected ? s.opacity : undefined}
          stroke={s.projected ? s.colour : undefined}
          strokeDasharray={s.projected ? '3,2' : undefined}
        >
          <title>{s.title}</title>
        </rect>
      ))}
      {(row.outcome === 'Failed' || row.outcome === 'Ungated') && (
        <>
          <rect
            data-test="timeline-failed-marker"
            x={row.after + 3}
            y={row.y}
            width={layout.rowHeight / 2}
            height={layout.rowHeight}
            fill={FAILED_COLOUR}
          />
          <text x={row.after + 6 + layout.rowHeight / 2} y={textY} fill={FAILED_COLOUR} fontWeight="bold">
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

/** The SVG of a rollout's timeline. */
export const TimelineChart: React.FC<{ layout: TimelineLayout }> = ({ layout }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const rows = layout.rows.length + (layout.restore ? 1 : 0);
  const bottom = layout.chartBottom;
  // A hold's label is drawn where the one before it left room (labels of holds close together would overlap).
  const labelled = layout.holds.reduce<{ shown: boolean[]; from: number }>(
    ({ shown, from }, h) =>
      h.x >= from
        ? { shown: [...shown, true], from: h.x + 2 + 5.5 * h.label.length + 4 }
        : { shown: [...shown, false], from },
    { shown: [], from: 0 },
  ).shown;
  return (
    <svg
      data-test="timeline"
      role="img"
      aria-label={t('Timeline of {{title}}: {{rows}} rows from {{from}} to {{to}}', {
        title: layout.title,
        rows,
        from: shownTime(layout.start),
        to: shownTime(layout.end),
      })}
      xmlns="http://www.w3.org/2000/svg"
      viewBox={`0 0 ${layout.width} ${layout.height}`}
      width="100%"
      style={{ maxWidth: layout.width, fontFamily: 'sans-serif', fontSize: 11 }}
      shapeRendering="crispEdges"
    >
      <rect x={0} y={0} width={layout.width} height={layout.height} fill="#FFFFFF" />
      <text x={8} y={20} fontSize={15} fontWeight="bold">
        {layout.title}
      </text>
      <Legend layout={layout} />
      {layout.windows.map((b) => (
        <Background key={`w-${b.start}`} band={b} layout={layout} />
      ))}
      {layout.blackouts.map((b) => (
        <Background key={`b-${b.start}`} band={b} layout={layout} />
      ))}
      <g data-test="timeline-axis">
        <text x={layout.chartLeft - 24} y={layout.top - 18} textAnchor="end" fill="#444444">
          {t('UTC')}
        </text>
        {layout.ticks.map((tick) => (
          <g key={tick.x}>
            <line x1={tick.x} y1={layout.top - 14} x2={tick.x} y2={bottom} stroke="#DDDDDD" />
            <text x={tick.x} y={layout.top - 18} textAnchor="middle" fill="#444444">
              {tick.label}
            </text>
          </g>
        ))}
      </g>
      {layout.holds.map((h, i) => {
        const showLabel = labelled[i];
        return (
          <g key={`h-${h.start}`} data-test="timeline-hold">
            <title>{h.title}</title>
            <rect x={h.x} y={layout.top - 12} width={h.width} height={5} fill={HOLD_COLOUR} />
            <rect
              x={h.x}
              y={layout.top}
              width={h.width}
              height={bottom - layout.top}
              fill={HOLD_COLOUR}
              fillOpacity={0.08}
            />
            {showLabel && (
              <text x={h.x + 2} y={layout.top - 28} fill={HOLD_COLOUR} fontSize={9}>
                {h.label}
              </text>
            )}
          </g>
        );
      })}
      {layout.domains.map((d) => (
        <text
          key={`domain-${d.domain}`}
          data-test={`timeline-domain-${groupTestId(d.domain)}`}
          data-state={d.state}
          x={8}
          y={d.y + layout.rowHeight - 2}
          fontWeight="bold"
        >
          {d.label}
        </text>
      ))}
      {layout.rows.map((row) => (
        <Row key={row.key} row={row} layout={layout} />
      ))}
      {layout.restore && <Row row={layout.restore} layout={layout} />}
      {rows === 0 && (
        <text x={layout.chartLeft} y={layout.top + 11} fill="#444444">
          {t('No node in this rollout yet.')}
        </text>
      )}
      {layout.markers.map((m) => (
        <g key={`marker-${m.at}`} data-test="timeline-marker">
          <title>{m.title}</title>
          {/* The label sits above the time axis and the holds' labels, as src/timeline/svg.rs draws it. */}
          <line x1={m.x} y1={layout.top - 36} x2={m.x} y2={bottom} stroke={LINE_COLOUR} strokeDasharray="8,3,2,3" />
          <text x={m.x + 3} y={layout.top - 38} textAnchor="start" fontSize={11}>
            {m.label}
          </text>
        </g>
      ))}
      <g data-test="timeline-now">
        <line
          x1={layout.nowX}
          y1={layout.top - 10}
          x2={layout.nowX}
          y2={bottom}
          stroke={LINE_COLOUR}
          strokeDasharray="4,3"
        />
        <text x={layout.nowX} y={bottom + 14} textAnchor="middle">
          {t('now')}
        </text>
      </g>
      {layout.estimatedEndX !== undefined && (
        <g data-test="timeline-estimated-end">
          <line
            x1={layout.estimatedEndX}
            y1={layout.top - 10}
            x2={layout.estimatedEndX}
            y2={bottom}
            stroke={LINE_COLOUR}
            strokeWidth={2}
          />
          <text x={layout.estimatedEndX} y={bottom + 28} textAnchor="end" fill={LINE_COLOUR}>
            {t('estimated end {{time}}', { time: shownTime(layout.estimatedEnd) })}
          </text>
        </g>
      )}
      <line x1={layout.chartLeft} y1={bottom} x2={layout.chartRight} y2={bottom} stroke="#888888" />
    </svg>
  );
};
