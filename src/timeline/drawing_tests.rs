//! The timeline as served to the console plugin: where everything is, and what is sent for the plugin to word.

use chrono::{DateTime, Duration, Utc};

use super::drawing::{draw, ProjectionSource, TimelineDrawing};
use super::tests::at;
use super::*;

fn start() -> DateTime<Utc> {
    at("2026-11-23T12:00:00Z")
}

/// A node's row: each node step two minutes, from `from` minutes on.
fn node(name: &str, from: i64, projected: bool, outcome: RowOutcome, group: Option<&str>) -> Row {
    let row = super::tests::node(name, start() + Duration::minutes(from), projected, outcome);
    Row { group: group.map(str::to_string), ..row }
}

fn timeline(rows: Vec<Row>) -> Timeline {
    Timeline {
        title: "ops/gated — 4.16.5".into(),
        start: start(),
        end: start() + Duration::hours(1),
        now: start() + Duration::minutes(20),
        rows,
        windows: Vec::new(),
        blackouts: Vec::new(),
        holds: Vec::new(),
        restore: None,
        estimated_end: Some(start() + Duration::minutes(55)),
        markers: Vec::new(),
        domains: Vec::new(),
    }
}

fn drawn(t: &Timeline) -> TimelineDrawing {
    draw(t, "ops/gated", Some("4.16.5"))
}

#[test]
fn rows_are_laid_top_down_and_steps_across_the_chart_by_time() {
    let t = timeline(vec![
        node("worker-0", 0, false, RowOutcome::Done, None),
        node("worker-1", 10, true, RowOutcome::Projected, None),
    ]);
    let d = drawn(&t);
    assert_eq!((d.width, d.chart_left, d.chart_right, d.top, d.row_height), (1200, 240, 1180, 92, 12));
    let ys: Vec<u32> = d.rows.iter().map(|r| r.y).collect();
    assert_eq!(ys, [92, 108], "a row pitch of 16");
    assert_eq!(d.chart_bottom, 92 + 2 * 16);
    assert_eq!(d.height, d.chart_bottom + 40);
    assert_eq!(d.rows[0].node.as_deref(), Some("worker-0"));
    assert_eq!(d.rows[0].key, "node-worker-0");
    // An hour across 940 pixels: the gate of worker-0 from 240, two minutes wide; worker-1's starts ten minutes on.
    let gate = &d.rows[0].segments[0];
    assert_eq!((gate.step, gate.x), (Step::Gate, 240.0));
    assert!((gate.width - 940.0 * 2.0 / 60.0).abs() < 1e-9, "{}", gate.width);
    assert!((d.rows[1].segments[0].x - (240.0 + 940.0 / 6.0)).abs() < 1e-9);
    assert!(d.rows[1].segments.iter().all(|s| s.projected));
    // The outcome is drawn after the last step.
    let last = d.rows[0].segments.last().map(|s| s.x + s.width).unwrap_or_default();
    assert_eq!(d.rows[0].after, last);
    assert!((d.now_x - (240.0 + 940.0 / 3.0)).abs() < 1e-9);
    assert!(d.estimated_end_x.is_some_and(|x| (x - (240.0 + 940.0 * 55.0 / 60.0)).abs() < 1e-9));
    assert_eq!(d.projection, ProjectionSource::None, "the caller says where the projection comes from");
}

#[test]
fn the_colours_are_those_of_numo_timeline() {
    let d = drawn(&timeline(Vec::new()));
    for step in Step::NODE.into_iter().chain(Step::UPGRADE_PARTS).chain([Step::Restore]) {
        let sent = d.colours.steps.iter().find(|c| c.step == step).map(|c| c.colour.as_str());
        assert_eq!(sent, Some(colour(step)), "{step:?}");
    }
    assert_eq!(d.colours.hold, HOLD_COLOUR);
    assert_eq!(d.colours.window, WINDOW_COLOUR);
    assert_eq!(d.colours.blackout, BLACKOUT_COLOUR);
    assert_eq!(d.colours.failed, FAILED_COLOUR);
    assert_eq!(d.colours.line, LINE_COLOUR);
    assert!(!d.upgrade_parts);
}

#[test]
fn failure_domains_get_a_header_each_in_wave_order_with_their_rows_under_it() {
    let mut t = timeline(vec![
        node("worker-1", 0, false, RowOutcome::Done, Some("(nodes without the zone label)")),
        node("worker-0", 10, false, RowOutcome::InFlight, Some("zone-a")),
    ]);
    let domain = |name: &str, shown: &str, state, done| Domain {
        domain: name.into(),
        key: "zone".into(),
        shown: shown.into(),
        state,
        done,
        nodes: 1,
    };
    t.domains = vec![
        domain("zone-a", "zone-a", WaveState::InProgress, 0),
        domain("", "(nodes without the zone label)", WaveState::Done, 1),
    ];
    let d = drawn(&t);
    let headers: Vec<(&str, WaveState, u32)> = d.domains.iter().map(|h| (h.domain.as_str(), h.state, h.y)).collect();
    assert_eq!(headers, [("zone-a", WaveState::InProgress, 92), ("", WaveState::Done, 124)]);
    let rows: Vec<(Option<&str>, Option<&str>, u32)> =
        d.rows.iter().map(|r| (r.node.as_deref(), r.domain.as_deref(), r.y)).collect();
    assert_eq!(rows, [(Some("worker-0"), Some("zone-a"), 108), (Some("worker-1"), Some(""), 140)]);
    assert_eq!(d.domains[0].key, "zone");
    assert_eq!(d.chart_bottom, 92 + 4 * 16);
}

#[test]
fn beyond_max_rows_nodes_share_summary_rows_that_count_their_outcomes() {
    let rows = (0..MAX_ROWS + 2)
        .map(|i| {
            let outcome = if i == 1 { RowOutcome::Failed } else { RowOutcome::Done };
            node(&format!("worker-{i:03}"), 0, false, outcome, None)
        })
        .collect();
    let d = drawn(&timeline(rows));
    assert_eq!(d.rows.len(), (MAX_ROWS + 2).div_ceil(2), "two nodes to a row");
    let first = &d.rows[0];
    assert_eq!(first.node, None);
    let group = first.group.as_ref().expect("a group's row");
    assert_eq!((group.first.as_str(), group.last.as_str(), group.nodes), ("worker-000", "worker-001", 2));
    assert_eq!(first.outcome, RowOutcome::Failed, "the outcome that most needs attention");
    let counted: Vec<(RowOutcome, u32)> = first.outcomes.iter().map(|c| (c.outcome, c.count)).collect();
    assert_eq!(counted, [(RowOutcome::Failed, 1), (RowOutcome::Done, 1)]);
    assert!(d.rows.iter().map(|r| r.key.as_str()).collect::<std::collections::HashSet<_>>().len() == d.rows.len());
}

#[test]
fn holds_close_together_are_one_band_labelled_with_their_checks() {
    let mut t = timeline(Vec::new());
    let hold = |from: i64, to: i64, check: &str| Hold {
        start: start() + Duration::minutes(from),
        end: start() + Duration::minutes(to),
        check: check.into(),
        message: format!("{check} said no"),
    };
    t.holds =
        vec![hold(10, 12, "ClusterOperators"), hold(12, 15, "Alerts,PodDisruptionBudgets"), hold(40, 41, "Alerts")];
    let d = drawn(&t);
    assert_eq!(d.holds.len(), 2);
    let merged = &d.holds[0];
    assert_eq!(merged.count, 2);
    assert_eq!(merged.checks, ["ClusterOperators", "Alerts", "PodDisruptionBudgets"]);
    assert_eq!(merged.more_checks, 0);
    assert_eq!(merged.longest.checks, ["Alerts", "PodDisruptionBudgets"], "the longest of the two");
    assert_eq!(merged.longest.message, "Alerts,PodDisruptionBudgets said no");
    assert!(merged.labelled && d.holds[1].labelled, "far enough apart to label both");
    assert_eq!((merged.start, merged.end), (start() + Duration::minutes(10), start() + Duration::minutes(15)));
}

#[test]
fn blackouts_send_their_reasons_and_windows_none() {
    let mut t = timeline(Vec::new());
    let band = |from: i64, to: i64, label: &str| Band {
        start: start() + Duration::minutes(from),
        end: start() + Duration::minutes(to),
        label: label.into(),
    };
    t.windows = vec![band(0, 45, "maintenance window")];
    t.blackouts = vec![band(30, 35, "freeze"), band(50, 52, "blackout")];
    let d = drawn(&t);
    assert_eq!(d.windows.len(), 1);
    assert!(d.windows[0].reasons.is_empty());
    let reasons: Vec<&[String]> = d.blackouts.iter().map(|b| b.reasons.as_slice()).collect();
    assert_eq!(reasons, [&["freeze".to_string()][..], &[][..]]);
}

#[test]
fn the_restore_walk_is_a_row_of_its_own_happened_before_now_and_projected_after() {
    let mut t = timeline(vec![node("worker-0", 0, false, RowOutcome::Done, None)]);
    t.restore = Some(Band {
        start: start() + Duration::minutes(15),
        end: start() + Duration::minutes(25),
        label: "restore walk (projected)".into(),
    });
    let d = drawn(&t);
    let restore = d.restore.as_ref().expect("the restore walk");
    assert_eq!(restore.y, 108, "below the rows");
    assert!(restore.projected);
    let parts: Vec<(bool, DateTime<Utc>, DateTime<Utc>)> =
        restore.segments.iter().map(|s| (s.projected, s.start, s.end)).collect();
    assert_eq!(
        parts,
        [(false, start() + Duration::minutes(15), t.now), (true, t.now, start() + Duration::minutes(25))]
    );
    assert_eq!(d.chart_bottom, 92 + 2 * 16);
}

#[test]
fn markers_and_ticks_are_sent_as_data_and_the_json_is_camel_case_with_rfc_3339_times() {
    let mut t = timeline(Vec::new());
    t.markers.push(Marker {
        at: start() + Duration::minutes(15),
        label: "target 4.18.0".into(),
        note: "target changed".into(),
        from: "4.17.0".into(),
        to: "4.18.0".into(),
        in_flight: vec!["worker-1".into()],
    });
    let d = drawn(&t);
    assert_eq!(d.markers.len(), 1);
    assert!((d.markers[0].x - (240.0 + 940.0 / 4.0)).abs() < 1e-9);
    assert!(!d.ticks.is_empty() && d.ticks.iter().all(|tick| (240.0..=1180.0).contains(&tick.x)));
    let json = serde_json::to_value(&d).unwrap_or_default();
    assert_eq!(json["runConfig"], "ops/gated");
    assert_eq!(json["rollout"], "4.16.5");
    assert_eq!(json["start"], "2026-11-23T12:00:00Z");
    assert_eq!(json["markers"][0]["inFlight"][0], "worker-1");
    assert_eq!(json["projection"], "None");
    assert!(json["chartBottom"].is_u64() && json["estimatedEndX"].is_f64(), "{json}");
}

#[test]
fn an_empty_rollout_is_an_empty_chart_a_row_high() {
    let d = drawn(&timeline(Vec::new()));
    assert!(d.rows.is_empty() && d.domains.is_empty() && d.restore.is_none());
    assert_eq!(d.chart_bottom, 92 + 16);
}
