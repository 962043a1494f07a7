//! The SVG of a [`Timeline`], drawn back to front: the legend, the windows and blackouts, the axis, the holds, the
//! rows, the restore walk, and the now and estimated-end lines.

use std::fmt::Write;

use chrono::{DateTime, Duration, Utc};

use super::axis::ticks;
use super::bands::{longest, merged};
use super::group::{drawn_rows, DrawnRow};
use super::layout::{Scale, LAYOUT};
use super::text::{distinct, escape, lasting, shown};
use super::{
    colour, Band, Hold, RowOutcome, Timeline, BLACKOUT_COLOUR, FAILED_COLOUR, HOLD_COLOUR, LINE_COLOUR, WINDOW_COLOUR,
};
use crate::api::Step;

/// How far above the first row a marker's label sits: above the time axis (18) and the holds' labels (28).
const MARKER_LABEL_ABOVE: u32 = 38;

/// About how wide a character of a hold's label is, in pixels (9 px sans-serif), to keep labels apart.
const HOLD_LABEL_CHAR_PX: f64 = 5.5;
/// About how wide a character of the legend is, in pixels (11 px sans-serif).
const LEGEND_CHAR_PX: f64 = 5.6;

/// The picture: a standalone SVG document, `LAYOUT.width` wide, as high as its rows need.
pub fn render(timeline: &Timeline) -> String {
    let rows = drawn_rows(&timeline.rows);
    let end = timeline.end.max(timeline.start + Duration::minutes(1));
    let restore_row = u32::from(timeline.restore.is_some());
    let rows_height = (rows.len() as u32 + restore_row).max(1) * LAYOUT.row_pitch;
    let mut canvas = Canvas {
        svg: String::new(),
        scale: Scale { start: timeline.start, seconds: (end - timeline.start).num_milliseconds() as f64 / 1000.0 },
        end,
        rows_height,
        chart_bottom: LAYOUT.top + rows_height,
    };
    let height = canvas.chart_bottom + 40;
    let _ = write!(
        canvas.svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" viewBox="0 0 {w} {height}" font-family="sans-serif" font-size="11" shape-rendering="crispEdges">"#,
        w = LAYOUT.width
    );
    let _ = write!(canvas.svg, r##"<rect x="0" y="0" width="{}" height="{height}" fill="#FFFFFF"/>"##, LAYOUT.width);
    let _ = write!(
        canvas.svg,
        r#"<text x="8" y="20" font-size="15" font-weight="bold">{}</text>"#,
        escape(&timeline.title)
    );
    let parts = rows.iter().flat_map(|r| &r.segments).any(|s| Step::UPGRADE_PARTS.contains(&s.step));
    canvas.legend(parts);
    canvas.backgrounds(&timeline.windows, WINDOW_COLOUR, "1", "maintenance window");
    canvas.backgrounds(&timeline.blackouts, BLACKOUT_COLOUR, "0.3", "blackout");
    canvas.axis();
    canvas.holds(&timeline.holds);
    for (i, row) in rows.iter().enumerate() {
        let y = LAYOUT.top + i as u32 * LAYOUT.row_pitch;
        if i > 0 && row.domain.is_some() && row.domain != rows[i - 1].domain {
            canvas.domain_rule(y, row.domain.as_deref().unwrap_or_default());
        }
        canvas.row(y, row);
    }
    if let Some(band) = &timeline.restore {
        canvas.restore(LAYOUT.top + rows.len() as u32 * LAYOUT.row_pitch, band, timeline.now);
    }
    if rows.is_empty() && timeline.restore.is_none() {
        let _ = write!(
            canvas.svg,
            r##"<text x="{}" y="{}" fill="#444444">No node in this rollout yet.</text>"##,
            LAYOUT.chart_left,
            LAYOUT.top + 11
        );
    }
    canvas.markers(&timeline.markers);
    canvas.now_and_estimate(timeline.now, timeline.estimated_end);
    canvas.svg.push_str("</svg>\n");
    canvas.svg
}

/// The picture being drawn.
struct Canvas {
    svg: String,
    scale: Scale,
    /// The chart's right edge in time.
    end: DateTime<Utc>,
    /// The height of the rows, the restore walk's included.
    rows_height: u32,
    chart_bottom: u32,
}

impl Canvas {
    /// A key for every step's colour (the upgrade's parts only when `parts`: drawn where MachineConfigNodes told
    /// them), the holds, the bands, the failed marker and projected steps.
    fn legend(&mut self, parts: bool) {
        let mut x = 8.0;
        let mut key = |svg: &mut String, style: &str, label: &str| {
            let _ = write!(
                svg,
                r#"<rect x="{x:.0}" y="32" width="12" height="12" {style}/><text x="{:.0}" y="42">{}</text>"#,
                x + 16.0,
                escape(label)
            );
            x += 28.0 + LEGEND_CHAR_PX * label.chars().count() as f64;
        };
        let shown = Step::UPGRADE_PARTS.into_iter().filter(|_| parts);
        for step in Step::NODE.into_iter().chain(shown).chain([Step::Restore]) {
            key(&mut self.svg, &format!(r#"fill="{}""#, colour(step)), crate::estimate::name(step));
        }
        key(&mut self.svg, &format!(r#"fill="{HOLD_COLOUR}""#), "held");
        key(&mut self.svg, &format!(r#"fill="{WINDOW_COLOUR}""#), "maintenance window");
        key(&mut self.svg, &format!(r#"fill="{BLACKOUT_COLOUR}" fill-opacity="0.3""#), "blackout");
        key(&mut self.svg, &format!(r#"fill="{FAILED_COLOUR}""#), "failed or ungated");
        key(
            &mut self.svg,
            r##"fill="#888888" fill-opacity="0.35" stroke="#888888" stroke-dasharray="3,2""##,
            "projected",
        );
    }

    /// A grey rule in the gap above the row at `y`, where the rows of failure domain `domain` begin.
    fn domain_rule(&mut self, y: u32, domain: &str) {
        let gap = f64::from(LAYOUT.row_pitch - LAYOUT.row_height) / 2.0;
        let _ = write!(
            self.svg,
            r##"<line x1="12" x2="{}" y1="{:.1}" y2="{:.1}" stroke="#AAAAAA" stroke-width="1"><title>failure domain {}</title></line>"##,
            LAYOUT.chart_right,
            f64::from(y) - gap,
            f64::from(y) - gap,
            escape(domain)
        );
    }

    /// Bands of one kind behind the rows, those too close to draw apart as one.
    fn backgrounds(&mut self, bands: &[Band], fill: &str, opacity: &str, kind: &str) {
        for band in merged(bands, self.scale.start, self.end, |b| (b.start, b.end)) {
            let tip = match band.items.as_slice() {
                [one] if one.label == kind => format!("{kind}: {} – {}", shown(one.start), shown(one.end)),
                [one] => format!("{kind}: {}: {} – {}", one.label, shown(one.start), shown(one.end)),
                many => format!(
                    "{} {kind}s, too close to draw apart ({}): {} – {}",
                    many.len(),
                    distinct(many.iter().map(|b| b.label.as_str()), 3),
                    shown(band.start),
                    shown(band.end)
                ),
            };
            let _ = write!(
                self.svg,
                r#"<rect x="{:.1}" y="{}" width="{:.1}" height="{}" fill="{fill}" fill-opacity="{opacity}"><title>{}</title></rect>"#,
                self.scale.x(band.start),
                LAYOUT.top - 6,
                self.scale.width(band.start, band.end),
                self.rows_height + 6,
                escape(&tip)
            );
        }
    }

    /// The ticks, in UTC, and a caption that says so.
    fn axis(&mut self) {
        let _ = write!(
            self.svg,
            r##"<text x="{}" y="{}" text-anchor="end" fill="#444444">UTC</text>"##,
            LAYOUT.chart_left - 8,
            LAYOUT.top - 18
        );
        for (tick, label) in ticks(self.scale.start, self.end) {
            let x = self.scale.x(tick);
            let _ = write!(
                self.svg,
                r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{}" stroke="#DDDDDD"/><text x="{x:.1}" y="{}" text-anchor="middle" fill="#444444">{label}</text>"##,
                LAYOUT.top - 14,
                self.chart_bottom,
                LAYOUT.top - 18,
            );
        }
    }

    /// Each hold as a strip above the rows and a faint band across them, with what held it where there is room to
    /// say it.
    fn holds(&mut self, holds: &[Hold]) {
        let times = |h: &Hold| (h.start, h.end);
        let said = |h: &Hold| format!("held by {}: {} ({} – {})", h.check, h.message, shown(h.start), shown(h.end));
        let mut free_from = 0.0;
        for band in merged(holds, self.scale.start, self.end, times) {
            let (x, w) = (self.scale.x(band.start), self.scale.width(band.start, band.end));
            let checks = distinct(band.items.iter().map(|h| h.check.as_str()), 3);
            let tip = match band.items.as_slice() {
                [one] => said(one),
                many => format!(
                    "held {} times, too close to draw apart, by {checks}: {} – {}; the longest: {}",
                    many.len(),
                    shown(band.start),
                    shown(band.end),
                    longest(many, times).map(said).unwrap_or_default()
                ),
            };
            let _ = write!(
                self.svg,
                r#"<g class="hold"><title>{}</title><rect x="{x:.1}" y="{}" width="{w:.1}" height="5" fill="{HOLD_COLOUR}"/><rect x="{x:.1}" y="{}" width="{w:.1}" height="{}" fill="{HOLD_COLOUR}" fill-opacity="0.08"/>"#,
                escape(&tip),
                LAYOUT.top - 12,
                LAYOUT.top,
                self.rows_height,
            );
            if x >= free_from {
                let _ = write!(
                    self.svg,
                    r#"<text x="{:.1}" y="{}" fill="{HOLD_COLOUR}" font-size="9">{}</text>"#,
                    x + 2.0,
                    LAYOUT.top - 28,
                    escape(&checks)
                );
                free_from = x + 2.0 + HOLD_LABEL_CHAR_PX * checks.chars().count() as f64 + 4.0;
            }
            self.svg.push_str("</g>");
        }
    }

    /// The row marker and label of a drawn row at `y`, its group open; `title` is the row's tooltip.
    fn open_row(&mut self, y: u32, title: &str, label: &str) {
        let _ = write!(
            self.svg,
            r#"<g class="row"><title>{}</title><rect x="{}" y="{y}" width="{}" height="{}" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            escape(title),
            LAYOUT.marker_x,
            LAYOUT.marker_width,
            LAYOUT.row_height,
            LAYOUT.marker_colour,
            LAYOUT.marker_x + LAYOUT.marker_width + 4,
            y + LAYOUT.row_height - 2,
            escape(label)
        );
    }

    /// A step from `start` to `end` in the row at `y`; projected steps lighter with a dashed outline.
    fn segment(
        &mut self,
        y: u32,
        step: Step,
        (start, end): (DateTime<Utc>, DateTime<Utc>),
        projected: bool,
        who: &str,
    ) {
        let (x, w) = (self.scale.x(start), self.scale.width(start, end));
        let fill = colour(step);
        let style = if projected {
            format!(r#"fill="{fill}" fill-opacity="0.35" stroke="{fill}" stroke-dasharray="3,2""#)
        } else {
            format!(r#"fill="{fill}""#)
        };
        let _ = write!(
            self.svg,
            r#"<rect x="{x:.1}" y="{y}" width="{w:.1}" height="{}" {style}><title>{}: {}{}, {} – {} ({})</title></rect>"#,
            LAYOUT.row_height,
            escape(who),
            crate::estimate::name(step),
            if projected { " (projected)" } else { "" },
            shown(start),
            shown(end),
            lasting(end - start)
        );
    }

    /// A node's row (or a group's) at `y`: its steps, and after them a red marker and the outcome of a failed or
    /// ungated node, the outcome of a skipped one.
    fn row(&mut self, y: u32, row: &DrawnRow) {
        self.open_row(y, &row.title, &row.label);
        for segment in &row.segments {
            self.segment(y, segment.step, (segment.start, segment.end), segment.projected, &row.name);
        }
        let after = row.segments.iter().map(|s| self.scale.x(s.end)).fold(f64::from(LAYOUT.chart_left), f64::max);
        let text_y = y + LAYOUT.row_height - 2;
        match row.outcome {
            RowOutcome::Failed | RowOutcome::Ungated => {
                let _ = write!(
                    self.svg,
                    r#"<rect x="{:.1}" y="{y}" width="{}" height="{}" fill="{FAILED_COLOUR}"/><text x="{:.1}" y="{text_y}" fill="{FAILED_COLOUR}" font-weight="bold">{}</text>"#,
                    after + 3.0,
                    LAYOUT.row_height / 2,
                    LAYOUT.row_height,
                    after + 6.0 + f64::from(LAYOUT.row_height / 2),
                    row.outcome.word()
                );
            }
            RowOutcome::Skipped => {
                let _ = write!(
                    self.svg,
                    r##"<text x="{:.1}" y="{text_y}" fill="#444444" font-style="italic">{}</text>"##,
                    after + 3.0,
                    row.outcome.word()
                );
            }
            RowOutcome::Done | RowOutcome::InFlight | RowOutcome::Projected => {}
        }
        self.svg.push_str("</g>");
    }

    /// The restore walk's row at `y`: what is before `now` happened, what is after it is a projection.
    fn restore(&mut self, y: u32, band: &Band, now: DateTime<Utc>) {
        let title =
            format!("{}: {} – {} ({})", band.label, shown(band.start), shown(band.end), lasting(band.end - band.start));
        self.open_row(y, &title, &band.label);
        if band.start < now {
            self.segment(y, Step::Restore, (band.start, band.end.min(now)), false, &band.label);
        }
        if band.end > now {
            self.segment(y, Step::Restore, (band.start.max(now), band.end), true, &band.label);
        }
        self.svg.push_str("</g>");
    }

    /// Each marker inside the chart's time: a dash-dot line across the rows from its label, which sits above the
    /// time axis and the holds' labels (clear of both), its note as tooltip.
    fn markers(&mut self, markers: &[super::Marker]) {
        let bottom = self.chart_bottom;
        for marker in markers.iter().filter(|m| m.at <= self.end) {
            let x = self.scale.x(marker.at);
            let _ = write!(
                self.svg,
                r#"<g><title>{}</title><line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{bottom}" stroke="{LINE_COLOUR}" stroke-dasharray="8,3,2,3"/><text x="{:.1}" y="{}" text-anchor="start" font-size="11">{}</text></g>"#,
                escape(&format!("{} ({})", marker.note, shown(marker.at))),
                LAYOUT.top - MARKER_LABEL_ABOVE + 2,
                x + 3.0,
                LAYOUT.top - MARKER_LABEL_ABOVE,
                escape(&marker.label)
            );
        }
    }

    /// The now line, dashed, and the estimated end, solid with its time; both in black, a colour no step has.
    fn now_and_estimate(&mut self, now: DateTime<Utc>, estimated_end: Option<DateTime<Utc>>) {
        let (bottom, x) = (self.chart_bottom, self.scale.x(now));
        let _ = write!(
            self.svg,
            r#"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{bottom}" stroke="{LINE_COLOUR}" stroke-dasharray="4,3"/><text x="{x:.1}" y="{}" text-anchor="middle">now</text>"#,
            LAYOUT.top - 10,
            bottom + 14
        );
        if let Some(eta) = estimated_end {
            let x = self.scale.x(eta);
            let _ = write!(
                self.svg,
                r#"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{bottom}" stroke="{LINE_COLOUR}" stroke-width="2"/><text x="{x:.1}" y="{}" text-anchor="end" fill="{LINE_COLOUR}">estimated end {}</text>"#,
                LAYOUT.top - 10,
                bottom + 28,
                shown(eta)
            );
        }
        let _ = write!(
            self.svg,
            r##"<line x1="{}" y1="{bottom}" x2="{}" y2="{bottom}" stroke="#888888"/>"##,
            LAYOUT.chart_left, LAYOUT.chart_right
        );
    }
}
