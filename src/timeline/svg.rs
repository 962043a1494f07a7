//! The SVG of a [`Timeline`].

use std::fmt::Write;

use chrono::Duration;

use super::axis::ticks;
use super::bands::{longest, merged, Merged};
use super::group::drawn_rows;
use super::layout::{Scale, LAYOUT};
use super::text::{distinct, escape, lasting, shown};
use super::{colour, Band, Hold, RowOutcome, Timeline, BLACKOUT_COLOUR, HOLD_COLOUR, WINDOW_COLOUR};
use crate::api::Step;

/// About how wide a character of a hold's label is, in pixels (9 px sans-serif), to keep labels apart.
const HOLD_LABEL_CHAR_PX: f64 = 5.5;

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
    let background = |svg: &mut String, band: &Merged<'_, Band>, fill: &str, opacity: &str, kind: &str| {
        let tip = match band.items.as_slice() {
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
            svg,
            r#"<rect x="{:.1}" y="{}" width="{:.1}" height="{}" fill="{fill}" fill-opacity="{opacity}"><title>{}</title></rect>"#,
            scale.x(band.start),
            LAYOUT.top - 6,
            scale.width(band.start, band.end),
            rows_height + 6,
            escape(&tip)
        );
    };
    let band_times = |b: &Band| (b.start, b.end);
    for band in merged(&timeline.windows, timeline.start, end, band_times) {
        background(&mut svg, &band, WINDOW_COLOUR, "1", "maintenance window");
    }
    for band in merged(&timeline.blackouts, timeline.start, end, band_times) {
        background(&mut svg, &band, BLACKOUT_COLOUR, "0.3", "blackout");
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
    // Holds: a strip above the rows, a faint band across them, and what held them where there is room to say it.
    let hold_times = |h: &Hold| (h.start, h.end);
    let mut free_from = 0.0;
    for band in merged(&timeline.holds, timeline.start, end, hold_times) {
        let (x, w) = (scale.x(band.start), scale.width(band.start, band.end));
        let checks = distinct(band.items.iter().map(|h| h.check.as_str()), 3);
        let said = |h: &Hold| format!("held by {}: {} ({} – {})", h.check, h.message, shown(h.start), shown(h.end));
        let tip = match band.items.as_slice() {
            [one] => said(one),
            many => format!(
                "held {} times, too close to draw apart, by {checks}: {} – {}; the longest: {}",
                many.len(),
                shown(band.start),
                shown(band.end),
                longest(many, hold_times).map(said).unwrap_or_default()
            ),
        };
        let _ = write!(
            svg,
            r#"<g class="hold"><title>{}</title><rect x="{x:.1}" y="{}" width="{w:.1}" height="5" fill="{HOLD_COLOUR}"/><rect x="{x:.1}" y="{}" width="{w:.1}" height="{rows_height}" fill="{HOLD_COLOUR}" fill-opacity="0.08"/>"#,
            escape(&tip),
            LAYOUT.top - 12,
            LAYOUT.top,
        );
        if x >= free_from {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{}" fill="{HOLD_COLOUR}" font-size="9">{}</text>"#,
                x + 2.0,
                LAYOUT.top - 28,
                escape(&checks)
            );
            free_from = x + 2.0 + HOLD_LABEL_CHAR_PX * checks.chars().count() as f64 + 4.0;
        }
        svg.push_str("</g>");
    }
    // The rows.
    for (i, row) in rows.iter().enumerate() {
        let y = LAYOUT.top + i as u32 * LAYOUT.row_pitch;
        let _ = write!(
            svg,
            r#"<g class="row"><title>{}</title><rect x="{}" y="{y}" width="{}" height="{}" fill="{}"/><text x="{}" y="{}">{}</text>"#,
            escape(&row.title),
            LAYOUT.marker_x,
            LAYOUT.marker_width,
            LAYOUT.row_height,
            LAYOUT.marker_colour,
            LAYOUT.marker_x + LAYOUT.marker_width + 4,
            y + LAYOUT.row_height - 2,
            escape(&row.label)
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
                escape(&row.name),
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
