//! The timeline picture as a real browser (Debian's headless Chromium) renders it: one row per node, every step in
//! its colour where the steps are, projected steps lighter, the failed node's marker, the hold, the window and the
//! blackout, and the grouping of a thousand nodes. The screenshots (and the SVGs) are kept in `target/test-output`.
//!
//! Chromium comes from `hack/install-prerequisites.sh`; without it these tests fail and say so, unless
//! `NUMO_SKIP_BROWSER=1`.

use chrono::{DateTime, Duration, Utc};
use numo::api::Step;
use numo::timeline::{
    colour, render, Band, Hold, Row, RowOutcome, Segment, Timeline, BLACKOUT_COLOUR, FAILED_COLOUR, HOLD_COLOUR,
    LAYOUT, WINDOW_COLOUR,
};
use numo_testkit::browser::{self, rgb, Picture};

/// The chart spans 100 minutes from here.
fn start() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-11-23T12:00:00Z").unwrap_or_else(|e| panic!("{e}")).with_timezone(&Utc)
}

const SPAN_MINUTES: f64 = 100.0;

fn minutes(m: f64) -> DateTime<Utc> {
    start() + Duration::seconds((m * 60.0) as i64)
}

/// A node whose five steps take three minutes each from `from` (minutes); those from `projected_from` on projected.
fn row(name: &str, from: f64, projected_from: usize, outcome: RowOutcome) -> Row {
    let segments = Step::NODE
        .into_iter()
        .enumerate()
        .map(|(i, step)| Segment {
            step,
            start: minutes(from + 3.0 * i as f64),
            end: minutes(from + 3.0 * (i + 1) as f64),
            projected: i >= projected_from,
        })
        .collect();
    Row { node: name.into(), outcome, segments, group: None }
}

fn timeline(rows: Vec<Row>) -> Timeline {
    Timeline {
        title: "ops/example — 4.16.5".into(),
        start: start(),
        end: minutes(SPAN_MINUTES),
        now: minutes(40.0),
        rows,
        windows: vec![Band { start: minutes(0.0), end: minutes(80.0), label: "maintenance window".into() }],
        blackouts: vec![Band { start: minutes(52.0), end: minutes(57.0), label: "freeze".into() }],
        holds: vec![Hold {
            start: minutes(20.0),
            end: minutes(25.0),
            check: "ClusterOperators".into(),
            message: "ClusterOperator storage is Degraded".into(),
        }],
        restore: Some(Band { start: minutes(91.0), end: minutes(95.0), label: "restore walk (projected)".into() }),
        estimated_end: Some(minutes(95.0)),
        markers: Vec::new(),
        domains: Vec::new(),
    }
}

/// Renders `timeline` in Chromium and reads the screenshot back.
fn shot(timeline: &Timeline, name: &str) -> Picture {
    let picture = browser::shoot(&render(timeline), name).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(picture.width, LAYOUT.width);
    picture
}

/// How many rows the picture shows: runs of the row marker's colour down its column.
fn rows_seen(picture: &Picture) -> usize {
    picture.runs_down(LAYOUT.marker_x + LAYOUT.marker_width / 2, rgb(LAYOUT.marker_colour), 12)
}

/// How many pixels of `colour` the chart (below the legend, right of the names) has in rows `y`.
fn in_chart(picture: &Picture, y: std::ops::Range<u32>, colour: &str) -> usize {
    let y = y.start.max(LAYOUT.chart_top)..y.end;
    picture.count_in(LAYOUT.chart_left..LAYOUT.chart_right + 1, y, rgb(colour), 8)
}

/// The pixel rows of drawn row `i`.
fn row_band(i: u32) -> std::ops::Range<u32> {
    let top = LAYOUT.top + i * LAYOUT.row_pitch;
    top..top + LAYOUT.row_height
}

/// The x of `m` minutes.
fn pixel_x(m: f64) -> u32 {
    let across = f64::from(LAYOUT.chart_right - LAYOUT.chart_left);
    (f64::from(LAYOUT.chart_left) + m / SPAN_MINUTES * across).round() as u32
}

/// The pixel at `m` minutes in the middle of drawn row `i`.
fn pixel_at(picture: &Picture, i: u32, m: f64) -> [u8; 3] {
    picture.pixel(pixel_x(m), LAYOUT.top + i * LAYOUT.row_pitch + LAYOUT.row_height / 2)
}

/// `fill` at `opacity` over `under`, as the browser composes it.
fn over(fill: [u8; 3], opacity: f64, under: [u8; 3]) -> [u8; 3] {
    [0, 1, 2].map(|c| (f64::from(fill[c]) * opacity + f64::from(under[c]) * (1.0 - opacity)).round() as u8)
}

fn near(a: [u8; 3], b: [u8; 3], tolerance: u8) -> bool {
    a.iter().zip(b).all(|(x, y)| x.abs_diff(y) <= tolerance)
}

#[test]
fn a_browser_draws_one_row_per_node_every_step_the_hold_and_the_bands() {
    if browser::skipped("a_browser_draws_one_row_per_node_every_step_the_hold_and_the_bands") {
        return;
    }
    let rows = vec![
        row("worker-0", 0.0, 5, RowOutcome::Done),
        // Markup in a name: the document must stay well-formed for the browser to draw the rows after it.
        row("worker-1 <b>&\"x\"</b>", 15.0, 5, RowOutcome::Done),
        row("worker-2", 30.0, 3, RowOutcome::InFlight),
        row("worker-3", 45.0, 5, RowOutcome::Failed),
        row("worker-4", 60.0, 0, RowOutcome::Projected),
        row("worker-5", 75.0, 0, RowOutcome::Projected),
    ];
    let nodes = rows.len();
    let picture = shot(&timeline(rows), "timeline-six-nodes");
    let chart = LAYOUT.chart_top..picture.height;

    assert_eq!(rows_seen(&picture), nodes + 1, "one row per node, and the restore walk's");
    for step in Step::NODE {
        let seen = in_chart(&picture, chart.clone(), colour(step));
        assert!(seen >= 100, "{step:?} ({}) is drawn in {seen} pixels of the chart", colour(step));
    }
    // Each step where it is: worker-0's gate (0–3 min) and upgrade (6–9 min), worker-5's soak (87–90 min).
    assert!(near(pixel_at(&picture, 0, 1.5), rgb(colour(Step::Gate)), 8));
    assert!(near(pixel_at(&picture, 0, 7.5), rgb(colour(Step::Upgrade)), 8));
    assert!(near(pixel_at(&picture, 3, 52.5), rgb(colour(Step::Upgrade)), 30), "under the blackout, still upgrade");

    // Projected steps are lighter: worker-2's cleanup (39–42 min) and worker-5's gate (75–78 min) over the window,
    // and the restore walk to come (91–95 min) over the white after it.
    let window = rgb(WINDOW_COLOUR);
    for (row, m, step, under) in
        [(2, 40.5, Step::Cleanup, window), (5, 76.5, Step::Gate, window), (6, 93.0, Step::Restore, [255; 3])]
    {
        let expected = over(rgb(colour(step)), 0.35, under);
        let seen = pixel_at(&picture, row, m);
        assert!(near(seen, expected, 6), "projected {step:?} of row {row}: {seen:?}, expected {expected:?}");
    }

    // The failed node's marker right after its last step (60 min), and red in its row and no other.
    let marker = picture.pixel(pixel_x(60.0) + 3 + LAYOUT.row_height / 4, row_band(3).start + LAYOUT.row_height / 2);
    assert!(near(marker, rgb(FAILED_COLOUR), 8), "worker-3's failed marker: {marker:?}");
    for i in 0..nodes as u32 {
        let red = in_chart(&picture, row_band(i), FAILED_COLOUR);
        if i == 3 {
            assert!(red >= 40, "worker-3 failed: {red} red pixels in its row");
        } else {
            assert_eq!(red, 0, "row {i} did not fail");
        }
    }

    // The hold's strip above the rows, the window and the blackout behind them.
    let strip = LAYOUT.chart_top..LAYOUT.top;
    let hold = in_chart(&picture, strip, HOLD_COLOUR);
    assert!(hold >= 100, "the hold is drawn in {hold} pixels above the rows");
    assert!(in_chart(&picture, chart.clone(), WINDOW_COLOUR) >= 1000, "the window is drawn");
    let blackout = over(rgb(BLACKOUT_COLOUR), 0.3, window);
    let between_rows = picture.pixel(pixel_x(54.5), LAYOUT.top + LAYOUT.row_height + 1);
    assert!(near(between_rows, blackout, 4), "the blackout over the window: {between_rows:?}, expected {blackout:?}");
}

#[test]
fn a_browser_draws_a_thousand_nodes_as_summary_rows() {
    if browser::skipped("a_browser_draws_a_thousand_nodes_as_summary_rows") {
        return;
    }
    let rows: Vec<Row> =
        (0..1000).map(|i| row(&format!("worker-{i}"), f64::from(i) * 0.07, 5, RowOutcome::Done)).collect();
    let picture = shot(&timeline(rows), "timeline-thousand-nodes");
    // Beyond MAX_ROWS (300) nodes, ceil(1000 / 300) = 4 nodes to a row; and the restore walk's row.
    assert_eq!(rows_seen(&picture), 250 + 1, "a row per four nodes, and the restore walk's");
    for step in Step::NODE {
        let seen = in_chart(&picture, LAYOUT.chart_top..picture.height, colour(step));
        assert!(seen >= 1000, "{step:?} ({}) is drawn in {seen} pixels of the chart", colour(step));
    }
}
