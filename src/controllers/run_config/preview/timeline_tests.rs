//! The timeline of a rollout from what numo stored, on the console plugin's fixtures (a run config mid-rollout,
//! valid against `config/crd`, and its rollout record): the rows, the steps measured and projected, the holds, the
//! failure domains.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

use super::*;
use crate::controllers::run_config::preview::{PreviewNode, PreviewStep};

const RUN_CONFIG: &str = include_str!("../../../../console-plugin/src/__fixtures__/run-config-mid-rollout.json");
const RECORD: &str = include_str!("../../../../console-plugin/src/__fixtures__/timeline-configmap.json");
const ZONE: &str = "topology.kubernetes.io/zone";

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}")).with_timezone(&Utc)
}

fn run_config() -> MutexRunConfig {
    serde_json::from_str(RUN_CONFIG).unwrap_or_else(|e| panic!("the fixture run config: {e}"))
}

fn record() -> BTreeMap<String, String> {
    let config_map: k8s_openapi::api::core::v1::ConfigMap =
        serde_json::from_str(RECORD).unwrap_or_else(|e| panic!("the fixture record: {e}"));
    config_map.data.unwrap_or_default()
}

fn now() -> DateTime<Utc> {
    at("2026-11-25T10:00:00Z")
}

/// A node as the planner projects it: `steps` from their start, each ten minutes.
fn projected(node: &str, started: bool, from: &str, steps: &[Step]) -> PreviewNode {
    let mut t = at(from);
    let steps: Vec<PreviewStep> = steps
        .iter()
        .map(|step| {
            let s = PreviewStep { step: *step, start: t, end: t + chrono::Duration::minutes(10) };
            t += chrono::Duration::minutes(10);
            s
        })
        .collect();
    PreviewNode {
        order: 0,
        domain: None,
        node: node.into(),
        started,
        start: steps.first().map(|s| s.start),
        end: steps.last().map(|s| s.end),
        steps,
    }
}

fn projection() -> Vec<PreviewNode> {
    vec![
        projected("worker-2", true, "2026-11-25T09:55:00Z", &[Step::Upgrade, Step::Cleanup]),
        projected("worker-4", false, "2026-11-25T10:30:00Z", &Step::NODE),
        projected("worker-5", false, "2026-11-25T11:20:00Z", &Step::NODE),
    ]
}

fn steps(row: &Row) -> Vec<(Step, bool)> {
    row.segments.iter().map(|s| (s.step, s.projected)).collect()
}

#[test]
fn a_row_per_node_the_finished_ones_from_the_record_then_those_in_the_status_then_those_to_go() {
    let t = timeline(&run_config(), &record(), &projection(), Some(&BTreeMap::new()), now());
    let rows: Vec<(&str, RowOutcome)> = t.rows.iter().map(|r| (r.node.as_str(), r.outcome)).collect();
    assert_eq!(
        rows,
        [
            ("worker-0", RowOutcome::Done),
            ("worker-1", RowOutcome::Done),
            ("worker-2", RowOutcome::InFlight),
            ("worker-3", RowOutcome::Failed),
            ("worker-4", RowOutcome::Projected),
            ("worker-5", RowOutcome::Projected),
        ]
    );
    assert!(t.rows[4].segments.iter().all(|s| s.projected));
    // The rollout from its start to its estimated end, now and the hold that ended and the one going on.
    assert_eq!((t.start, t.now), (at("2026-11-25T08:00:00Z"), now()));
    assert_eq!(t.estimated_end, Some(at("2026-11-25T12:30:00Z")));
    assert!(t.end >= at("2026-11-25T12:30:00Z"));
    let holds: Vec<(&str, DateTime<Utc>)> = t.holds.iter().map(|h| (h.check.as_str(), h.start)).collect();
    assert_eq!(
        holds,
        [("ClusterOperators", at("2026-11-25T08:30:00Z")), ("ClusterOperators", at("2026-11-25T09:40:00Z"))]
    );
    assert_eq!(t.holds[1].end, now(), "the hold going on, to now");
    // The restore walk as numo expects it, from when the last node should be done.
    let restore = t.restore.as_ref().unwrap_or_else(|| panic!("no restore walk"));
    assert_eq!((restore.start, restore.end), (at("2026-11-25T12:20:00Z"), at("2026-11-25T12:30:00Z")));
}

#[test]
fn the_step_under_way_is_drawn_to_now_and_its_projected_rest_continues_it() {
    let t = timeline(&run_config(), &record(), &projection(), Some(&BTreeMap::new()), now());
    let in_flight = &t.rows[2];
    assert_eq!(
        steps(in_flight),
        [
            (Step::Gate, false),
            (Step::WaitForMco, false),
            (Step::Upgrade, false),
            (Step::Upgrade, true),
            (Step::Cleanup, true)
        ]
    );
    let upgrade = &in_flight.segments[2];
    assert_eq!((upgrade.start, upgrade.end), (at("2026-11-25T09:31:30Z"), now()));
    assert_eq!(in_flight.segments[3].start, now(), "the projected rest from now");
    // A failed node ends where it failed.
    let failed = &t.rows[3];
    assert_eq!(failed.segments.last().map(|s| s.end), Some(at("2026-11-25T09:32:00Z")));
    // Without a projection, the node is drawn as far as numo saw it, and nothing is drawn to go.
    let t = timeline(&run_config(), &record(), &[], Some(&BTreeMap::new()), now());
    assert_eq!(steps(&t.rows[2]), [(Step::Gate, false), (Step::WaitForMco, false), (Step::Upgrade, false)]);
    assert_eq!(t.rows.len(), 4);
}

#[test]
fn a_record_of_another_rollout_is_left_out() {
    let mut other = record();
    other.insert("rollout".into(), "4.16.4".into());
    let t = timeline(&run_config(), &other, &[], Some(&BTreeMap::new()), now());
    let nodes: Vec<&str> = t.rows.iter().map(|r| r.node.as_str()).collect();
    assert_eq!(nodes, ["worker-2", "worker-3"]);
    assert_eq!(t.holds.len(), 1, "only the hold going on");
}

#[test]
fn under_a_topology_the_rows_go_by_domain_in_wave_order_with_each_waves_state() {
    let mut rc = run_config();
    let topology: crate::api::TopologyStatus = serde_json::from_value(serde_json::json!({
        "key": ZONE, "keySource": "Default", "mode": "DomainAtATime", "current": "zone-b", "done": ["zone-a"],
        "waves": [
            {"domain": "zone-a", "nodes": 2, "done": 2, "startedAt": "2026-11-25T08:00:00Z",
             "finishedAt": "2026-11-25T09:00:00Z"},
            {"domain": "zone-b", "nodes": 2, "done": 0, "startedAt": "2026-11-25T09:00:00Z"},
            {"domain": "zone-c", "nodes": 1, "done": 0},
            {"domain": "", "nodes": 1, "done": 0},
        ],
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    if let Some(status) = rc.status.as_mut() {
        status.topology = Some(topology);
    }
    let zones: BTreeMap<String, String> = [
        ("worker-0", "zone-a"),
        ("worker-1", "zone-a"),
        ("worker-2", "zone-b"),
        ("worker-3", "zone-b"),
        ("worker-4", "zone-c"),
    ]
    .map(|(n, z)| (n.to_string(), z.to_string()))
    .into();
    let t = timeline(&rc, &record(), &projection(), Some(&zones), now());
    let headers: Vec<(&str, WaveState, u32, u32)> =
        t.domains.iter().map(|d| (d.domain.as_str(), d.state, d.done, d.nodes)).collect();
    assert_eq!(
        headers,
        [
            ("zone-a", WaveState::Done, 2, 2),
            ("zone-b", WaveState::InProgress, 0, 2),
            ("zone-c", WaveState::Pending, 0, 1),
            ("", WaveState::Pending, 0, 1),
        ]
    );
    assert_eq!(t.domains[3].shown, format!("(nodes without the {ZONE} label)"));
    assert!(t.domains.iter().all(|d| d.key == ZONE));
    let rows: Vec<(&str, Option<&str>)> = t.rows.iter().map(|r| (r.node.as_str(), r.group.as_deref())).collect();
    assert_eq!(
        rows,
        [
            ("worker-0", Some("zone-a")),
            ("worker-1", Some("zone-a")),
            ("worker-2", Some("zone-b")),
            ("worker-3", Some("zone-b")),
            ("worker-4", Some("zone-c")),
            ("worker-5", Some("(nodes without the topology.kubernetes.io/zone label)")),
        ]
    );
    // The nodes could not be read: no grouping, no headers.
    let t = timeline(&rc, &record(), &projection(), None, now());
    assert!(t.domains.is_empty() && t.rows.iter().all(|r| r.group.is_none()));
}

#[test]
fn a_new_release_asked_for_mid_rollout_is_a_marker_with_its_story() {
    let mut rc = run_config();
    let change: crate::api::TargetChange = serde_json::from_value(serde_json::json!({
        "from": "4.16.5", "to": "4.16.6", "at": "2026-11-25T09:35:00Z", "inFlight": ["worker-2"],
    }))
    .unwrap_or_else(|e| panic!("{e}"));
    if let Some(status) = rc.status.as_mut() {
        status.target_changes = vec![change];
    }
    let t = timeline(&rc, &record(), &[], Some(&BTreeMap::new()), now());
    let marker = &t.markers[0];
    assert_eq!((marker.from.as_str(), marker.to.as_str()), ("4.16.5", "4.16.6"));
    assert_eq!(marker.in_flight, ["worker-2"]);
    assert_eq!(marker.at, at("2026-11-25T09:35:00Z"));
    assert_eq!(marker.label, "target 4.16.6");
}
