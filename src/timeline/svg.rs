//! The SVG of a [`Timeline`].

use std::fmt::Write;

use chrono::{DateTime, Duration, Utc};

use super::axis::ticks;
use super::{colour, Row, RowOutcome, Segment, Timeline, BLACKOUT_COLOUR, HOLD_COLOUR, MAX_ROWS, WINDOW_COLOUR};
use crate::api::Step;

/// Where things are drawn, for tests that read the rendered picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The picture's width.
    pub width: u32,
    /// The x of the chart's left edge (node names to its left).
    pub chart_left: u32,
    /// The x of the chart's right edge.
    pub chart_right: u32,
    /// The y of the first row.
    pub top: u32,
    /// A row's height.
    pub row_height: u32,
    /// From one row to the next (the height and the gap).
    pub row_pitch: u32,
    /// The x where each drawn row's marker starts, and its width.
    pub marker_x: u32,
    /// The marker's width.
    pub marker_width: u32,
    /// The marker's colour: a square at the left of every drawn row, in no other use.
    pub marker_colour: &'static str,
}

/// The layout of every picture.
pub const LAYOUT: Layout = Layout {
    width: 1200,
    chart_left: 240,
    chart_right: 1180,
    top: 92,
    row_height: 12,
    row_pitch: 16,
    marker_x: 2,
    marker_width: 6,
    marker_colour: "#5A2D82",
};

fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

fn shown(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

fn lasting(d: Duration) -> String {
    let s = d.num_seconds().max(0);
    match s {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// Maps times to x.
struct Scale {
    start: DateTime<Utc>,
    seconds: f64,
}

impl Scale {
    fn x(&self, t: DateTime<Utc>) -> f64 {
        let span = f64::from(LAYOUT.chart_right - LAYOUT.chart_left);
        let offset = (t - self.start).num_milliseconds() as f64 / 1000.0;
        f64::from(LAYOUT.chart_left) + (offset / self.seconds).clamp(0.0, 1.0) * span
    }

    fn width(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> f64 {
        (self.x(to) - self.x(from)).max(1.0)
    }
}

/// The rows as drawn: every node, or beyond [`MAX_ROWS`] one summary row per group of consecutive nodes.
pub fn drawn_rows(rows: &[Row]) -> Vec<Row> {
    if rows.len() <= MAX_ROWS {
        return rows.to_vec();
    }
    let size = rows.len().div_ceil(MAX_ROWS);
    rows.chunks(size).map(summary).collect()
}

fn summary(group: &[Row]) -> Row {
    let (first, last) = (&group[0].node, &group[group.len() - 1].node);
    let node = format!("{first} … {last} ({} nodes)", group.len());
    let worst =
        [RowOutcome::Failed, RowOutcome::Ungated, RowOutcome::InFlight, RowOutcome::Skipped, RowOutcome::Projected]
            .into_iter()
            .find(|o| group.iter().any(|r| r.outcome == *o))
            .unwrap_or(RowOutcome::Done);
    let mut segments: Vec<Segment> = Vec::new();
    for step in Step::NODE {
        let of_step: Vec<&Segment> = group.iter().flat_map(|r| &r.segments).filter(|s| s.step == step).collect();
        let (Some(start), Some(end)) = (of_step.iter().map(|s| s.start).min(), of_step.iter().map(|s| s.end).max())
        else {
            continue;
        };
        segments.push(Segment { step, start, end, projected: of_step.iter().all(|s| s.projected) });
    }
    Row { node, outcome: worst, segments }
}

/// The picture.
pub fn render(timeline: &Timeline) -> String {
    let rows = drawn_rows(&timeline.rows);
    let end = timeline.end.max(timeline.start + Duration::minutes(1));
    let scale = Scale { start: timeline.start, seconds: (end - timeline.start).num_milliseconds() as f64 / 1000.0 };
    let restore_row = u32::from(timeline.restore.is_some());
    let rows_height = (rows.len() as u32 + restore_row).max(1) * LAYOUT.row_pitch;
    let height = LAYOUT.top + rows_height + 40;
    let chart_bottom = LAYOUT.top + rows_height;
    let (left, right) = (LAYOUT.chart_left, LAYOUT.chart_right);
    let mut svg = String::new();
    let _ = write!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{height}" viewBox="0 0 {w} {height}" font-family="sans-serif" font-size="11" shape-rendering="crispEdges">"#,
        w = LAYOUT.width
    );
    let _ = write!(svg, r##"<rect x="0" y="0" width="{}" height="{height}" fill="#FFFFFF"/>"##, LAYOUT.width);
    let _ = write!(svg, r#"<text x="8" y="20" font-size="15" font-weight="bold">{}</text>"#, escape(&timeline.title));
    // The legend.
    let mut x = 8;
    let mut key = |svg: &mut String, fill: &str, label: &str, opacity: f64| {
        let _ = write!(
            svg,
            r#"<rect x="{x}" y="32" width="12" height="12" fill="{fill}" fill-opacity="{opacity}"/><text x="{}" y="42">{}</text>"#,
            x + 16,
            escape(label)
        );
        x += 22 + 7 * label.len() as u32;
    };
    for step in Step::NODE.into_iter().chain([Step::Restore]) {
        key(&mut svg, colour(step), crate::estimate::name(step), 1.0);
    }
    key(&mut svg, HOLD_COLOUR, "held", 1.0);
    key(&mut svg, WINDOW_COLOUR, "maintenance window", 1.0);
    key(&mut svg, BLACKOUT_COLOUR, "blackout", 0.3);
    let _ = write!(svg, r#"<text x="{x}" y="42">lighter, dashed: projected</text>"#);
    // Bands behind the rows.
    for band in &timeline.windows {
        let _ = write!(
            svg,
            r#"<rect x="{:.1}" y="{}" width="{:.1}" height="{}" fill="{WINDOW_COLOUR}"><title>{}: {} – {}</title></rect>"#,
            scale.x(band.start),
            LAYOUT.top - 6,
            scale.width(band.start, band.end),
            rows_height + 6,
            escape(&band.label),
            shown(band.start),
            shown(band.end)
        );
    }
    for band in &timeline.blackouts {
        let _ = write!(
            svg,
            r#"<rect x="{:.1}" y="{}" width="{:.1}" height="{}" fill="{BLACKOUT_COLOUR}" fill-opacity="0.3"><title>blackout: {}: {} – {}</title></rect>"#,
            scale.x(band.start),
            LAYOUT.top - 6,
            scale.width(band.start, band.end),
            rows_height + 6,
            escape(&band.label),
            shown(band.start),
            shown(band.end)
        );
    }
    // The axis: ticks in UTC, and a caption that says so.
    let _ =
        write!(svg, r##"<text x="{}" y="{}" text-anchor="end" fill="#444444">UTC</text>"##, left - 8, LAYOUT.top - 18);
    for (tick, label) in ticks(timeline.start, end) {
        let x = scale.x(tick);
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{chart_bottom}" stroke="#DDDDDD"/><text x="{x:.1}" y="{}" text-anchor="middle" fill="#444444">{label}</text>"##,
            LAYOUT.top - 14,
            LAYOUT.top - 18,
        );
    }
    // Holds: a strip above the rows, and a faint band across them.
    for hold in &timeline.holds {
        let (x, w) = (scale.x(hold.start), scale.width(hold.start, hold.end));
        let tip = format!("held by {}: {} ({} – {})", hold.check, hold.message, shown(hold.start), shown(hold.end));
        let _ = write!(
            svg,
            r#"<g><title>{tip}</title><rect x="{x:.1}" y="{}" width="{w:.1}" height="5" fill="{HOLD_COLOUR}"/><rect x="{x:.1}" y="{}" width="{w:.1}" height="{rows_height}" fill="{HOLD_COLOUR}" fill-opacity="0.08"/><text x="{:.1}" y="{}" fill="{HOLD_COLOUR}" font-size="9">{}</text></g>"#,
            LAYOUT.top - 12,
            LAYOUT.top,
            x + 2.0,
            LAYOUT.top - 28,
            escape(&hold.check),
            tip = escape(&tip)
        );
    }
    // The rows.
    for (i, row) in rows.iter().enumerate() {
        let y = LAYOUT.top + i as u32 * LAYOUT.row_pitch;
        let _ = write!(
            svg,
            r#"<g class="row"><title>{}: {}</title><rect x="{}" y="{y}" width="{}" height="{}" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            escape(&row.node),
            row.outcome.word(),
            LAYOUT.marker_x,
            LAYOUT.marker_width,
            LAYOUT.row_height,
            LAYOUT.marker_colour,
            LAYOUT.marker_x + LAYOUT.marker_width + 4,
            y + LAYOUT.row_height - 2,
            escape(&shorten(&row.node, 34))
        );
        for segment in &row.segments {
            let (x, w) = (scale.x(segment.start), scale.width(segment.start, segment.end));
            let fill = colour(segment.step);
            let style = if segment.projected {
                format!(r#"fill="{fill}" fill-opacity="0.35" stroke="{fill}" stroke-dasharray="3,2""#)
            } else {
                format!(r#"fill="{fill}""#)
            };
            let _ = write!(
                svg,
                r#"<rect x="{x:.1}" y="{y}" width="{w:.1}" height="{}" {style}><title>{} {}{}: {} – {} ({})</title></rect>"#,
                LAYOUT.row_height,
                escape(&row.node),
                crate::estimate::name(segment.step),
                if segment.projected { " (projected)" } else { "" },
                shown(segment.start),
                shown(segment.end),
                lasting(segment.end - segment.start)
            );
        }
        if matches!(row.outcome, RowOutcome::Failed | RowOutcome::Ungated | RowOutcome::Skipped) {
            let x = row.segments.iter().map(|s| scale.x(s.end)).fold(f64::from(left), f64::max) + 3.0;
            let _ = write!(
                svg,
                r##"<text x="{x:.1}" y="{}" fill="#B00000" font-weight="bold">{}</text>"##,
                y + LAYOUT.row_height - 2,
                row.outcome.word()
            );
        }
        svg.push_str("</g>");
    }
    if let Some(band) = &timeline.restore {
        let y = LAYOUT.top + rows.len() as u32 * LAYOUT.row_pitch;
        let _ = write!(
            svg,
            r#"<g class="row"><rect x="{}" y="{y}" width="{}" height="{}" fill="{}"/><text x="{}" y="{}">{}</text><rect x="{:.1}" y="{y}" width="{:.1}" height="{}" fill="{}"><title>{}: {} – {}</title></rect></g>"#,
            LAYOUT.marker_x,
            LAYOUT.marker_width,
            LAYOUT.row_height,
            LAYOUT.marker_colour,
            LAYOUT.marker_x + LAYOUT.marker_width + 4,
            y + LAYOUT.row_height - 2,
            escape(&band.label),
            scale.x(band.start),
            scale.width(band.start, band.end),
            LAYOUT.row_height,
            colour(Step::Restore),
            escape(&band.label),
            shown(band.start),
            shown(band.end)
        );
    }
    if rows.is_empty() && timeline.restore.is_none() {
        let _ = write!(
            svg,
            r##"<text x="{left}" y="{}" fill="#444444">No node in this rollout yet.</text>"##,
            LAYOUT.top + 11
        );
    }
    // Now and the estimated end.
    let now = scale.x(timeline.now);
    let _ = write!(
        svg,
        r##"<line x1="{now:.1}" y1="{}" x2="{now:.1}" y2="{chart_bottom}" stroke="#000000" stroke-dasharray="4,3"/><text x="{now:.1}" y="{}" text-anchor="middle">now</text>"##,
        LAYOUT.top - 10,
        chart_bottom + 14
    );
    if let Some(eta) = timeline.estimated_end {
        let x = scale.x(eta);
        let _ = write!(
            svg,
            r##"<line x1="{x:.1}" y1="{}" x2="{x:.1}" y2="{chart_bottom}" stroke="#0072B2" stroke-width="2"/><text x="{x:.1}" y="{}" text-anchor="end" fill="#0072B2">estimated end {}</text>"##,
            LAYOUT.top - 10,
            chart_bottom + 28,
            shown(eta)
        );
    }
    let _ =
        write!(svg, r##"<line x1="{left}" y1="{chart_bottom}" x2="{right}" y2="{chart_bottom}" stroke="#888888"/>"##);
    svg.push_str("</svg>\n");
    svg
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut short: String = text.chars().take(max - 1).collect();
    short.push('…');
    short
}
