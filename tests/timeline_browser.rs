//! The timeline picture as a real browser (Debian's headless Chromium) renders it: one row per node, every step's
//! colour, the hold, and the grouping of thousands of nodes. The screenshots are kept in `target/test-output`.

use chrono::{DateTime, Duration, Utc};
use numo::api::Step;
use numo::timeline::{colour, render, Band, Hold, Row, RowOutcome, Segment, Timeline, HOLD_COLOUR, LAYOUT, MAX_ROWS};
use numo_testkit::browser::{self, rgb, Picture};

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}")).with_timezone(&Utc)
}

fn row(name: &str, start: DateTime<Utc>, projected: bool, outcome: RowOutcome) -> Row {
    let mut t = start;
    let segments = Step::NODE
        .into_iter()
        .map(|step| {
            let segment = Segment { step, start: t, end: t + Duration::minutes(3), projected };
            t += Duration::minutes(3);
            segment
        })
        .collect();
    Row { node: name.into(), outcome, segments }
}

fn picture(rows: Vec<Row>) -> Timeline {
    let start = at("2026-11-23T12:00:00Z");
    Timeline {
        title: "ops/example — 4.16.5".into(),
        start,
        end: start + Duration::minutes(100),
        now: start + Duration::minutes(40),
        rows,
        windows: vec![Band { start, end: start + Duration::minutes(80), label: "maintenance window".into() }],
        blackouts: vec![Band {
            start: start + Duration::minutes(60),
            end: start + Duration::minutes(65),
            label: "freeze".into(),
        }],
        holds: vec![Hold {
            start: start + Duration::minutes(20),
            end: start + Duration::minutes(25),
            check: "ClusterOperators".into(),
            message: "ClusterOperator storage is Degraded".into(),
        }],
        restore: None,
        estimated_end: Some(start + Duration::minutes(95)),
    }
}

/// Renders `timeline` in Chromium and reads the screenshot back.
fn shot(timeline: &Timeline, name: &str) -> Picture {
    browser::shoot(&render(timeline), name).unwrap_or_else(|e| panic!("{e}"))
}

fn rows_seen(picture: &Picture) -> usize {
    picture.runs_down(LAYOUT.marker_x + LAYOUT.marker_width / 2, rgb(LAYOUT.marker_colour), 12)
}

#[test]
fn a_browser_draws_one_row_per_node_every_step_and_the_hold() {
    let start = at("2026-11-23T12:00:00Z");
    let rows = vec![
        row("worker-0", start, false, RowOutcome::Done),
        row("worker-1", start + Duration::minutes(15), false, RowOutcome::Done),
        row("worker-2", start + Duration::minutes(30), false, RowOutcome::InFlight),
        row("worker-3", start + Duration::minutes(45), false, RowOutcome::Failed),
        row("worker-4", start + Duration::minutes(60), true, RowOutcome::Projected),
        row("worker-5", start + Duration::minutes(75), true, RowOutcome::Projected),
    ];
    let picture = shot(&picture(rows), "timeline-six-nodes");
    assert_eq!(rows_seen(&picture), 6, "one row per node");
    for step in Step::NODE {
        assert!(picture.contains(rgb(colour(step)), 8), "{step:?} ({}) is not in the picture", colour(step));
    }
    assert!(picture.contains(rgb(HOLD_COLOUR), 8), "the hold is not in the picture");
}

#[test]
fn a_browser_draws_thousands_of_nodes_as_summary_rows() {
    let start = at("2026-11-23T12:00:00Z");
    let rows: Vec<Row> = (0..1000)
        .map(|i| row(&format!("worker-{i}"), start + Duration::seconds(5 * i), false, RowOutcome::Done))
        .collect();
    let drawn = 1000usize.div_ceil(1000usize.div_ceil(MAX_ROWS));
    let picture = shot(&picture(rows), "timeline-thousand-nodes");
    assert_eq!(rows_seen(&picture), drawn, "one row per group of nodes");
}
