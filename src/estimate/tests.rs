use std::collections::BTreeMap;

use chrono::{DateTime, Duration, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::*;
use crate::api::{BlackoutWindow, MaintenanceWindow};
use crate::windows::Schedule;

fn at(text: &str) -> DateTime<Utc> {
    DateTime::parse_from_rfc3339(text).unwrap_or_else(|e| panic!("{text}: {e}")).with_timezone(&Utc)
}

fn schedule(windows: &[(&str, &str, Option<&str>)], blackouts: &[(&str, &str)]) -> Schedule {
    let windows: Vec<MaintenanceWindow> = windows
        .iter()
        .map(|(s, d, z)| MaintenanceWindow {
            schedule: s.to_string(),
            duration: d.to_string(),
            time_zone: z.map(String::from),
        })
        .collect();
    let blackouts: Vec<BlackoutWindow> =
        blackouts.iter().map(|(s, e)| BlackoutWindow { start: time(s), end: time(e), reason: None }).collect();
    Schedule::parse(&windows, &blackouts).unwrap_or_else(|e| panic!("{e:?}"))
}

fn time(text: &str) -> Time {
    Time(text.parse().unwrap_or_else(|e| panic!("{text}: {e}")))
}

/// Durations of gate 60 s, wait 0, upgrade 600 s, cleanup 60 s, soak as given, restore 30 s per round.
fn durations(soak: u32) -> Durations {
    let seconds = BTreeMap::from([
        (Step::Gate, 60),
        (Step::WaitForMco, 0),
        (Step::Upgrade, 600),
        (Step::Cleanup, 60),
        (Step::Soak, soak),
        (Step::Restore, 30),
    ]);
    Durations { seconds, basis: EstimateBasis::ThisRollout, defaulted: Vec::new() }
}

fn pending(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("worker-{i}")).collect()
}

fn projection<'a>(now: &str, schedule: &'a Schedule, durations: &'a Durations, n: usize, c: u32) -> Projection<'a> {
    Projection {
        now: at(now),
        schedule,
        concurrency: c,
        durations,
        in_flight: Vec::new(),
        pending: pending(n),
        restore: RestoreWalk { nodes: n as u32, at_once: 1 },
        waves: None,
    }
}

fn starts(projected: &Projected) -> Vec<String> {
    projected.nodes.iter().filter_map(|p| p.start().map(|s| s.format("%m-%dT%H:%M").to_string())).collect()
}

#[test]
fn nodes_go_one_after_another_and_the_restore_walk_comes_last() {
    let (open, d) = (Schedule::default(), durations(0));
    let projected = project(&projection("2026-11-23T12:00:00Z", &open, &d, 3, 1));
    assert_eq!(starts(&projected), vec!["11-23T12:00", "11-23T12:12", "11-23T12:24"]);
    assert_eq!(projected.nodes_done, at("2026-11-23T12:36:00Z"));
    assert_eq!(projected.end, at("2026-11-23T12:37:30Z"), "3 rounds of 30 s to move the nodes back");
}

#[test]
fn concurrency_runs_nodes_side_by_side_and_the_restore_walk_follows_max_unavailable() {
    let (open, d) = (Schedule::default(), durations(0));
    let mut input = projection("2026-11-23T12:00:00Z", &open, &d, 5, 2);
    input.restore.at_once = 2;
    let projected = project(&input);
    assert_eq!(starts(&projected), vec!["11-23T12:00", "11-23T12:00", "11-23T12:12", "11-23T12:12", "11-23T12:24"]);
    assert_eq!(projected.nodes_done, at("2026-11-23T12:36:00Z"));
    assert_eq!(projected.end, at("2026-11-23T12:37:30Z"), "5 nodes 2 at a time: 3 rounds");
}

#[test]
fn the_soak_keeps_a_slot_taken() {
    let (open, d) = (Schedule::default(), durations(300));
    let projected = project(&projection("2026-11-23T12:00:00Z", &open, &d, 2, 1));
    assert_eq!(starts(&projected), vec!["11-23T12:00", "11-23T12:17"]);
    let steps: Vec<Step> = projected.nodes[0].steps.iter().map(|s| s.0).collect();
    assert_eq!(steps, vec![Step::Gate, Step::Upgrade, Step::Cleanup, Step::Soak], "a step of no length is left out");
}

#[test]
fn nodes_start_only_inside_windows_even_across_midnight_and_run_past_the_close() {
    // 23:30–00:30 daily: a 12-minute node starts while the window is open, and may finish after it closes.
    let (s, d) = (schedule(&[("30 23 * * *", "1h", None)], &[]), durations(0));
    let projected = project(&projection("2026-11-23T12:00:00Z", &s, &d, 6, 1));
    assert_eq!(
        starts(&projected),
        vec!["11-23T23:30", "11-23T23:42", "11-23T23:54", "11-24T00:06", "11-24T00:18", "11-24T23:30"]
    );
    assert_eq!(projected.nodes_done, at("2026-11-24T23:42:00Z"));
}

#[test]
fn a_blackout_in_the_middle_moves_the_next_starts_past_it() {
    let (s, d) = (schedule(&[], &[("2026-11-23T12:20:00Z", "2026-11-23T13:00:00Z")]), durations(0));
    let projected = project(&projection("2026-11-23T12:00:00Z", &s, &d, 3, 1));
    assert_eq!(starts(&projected), vec!["11-23T12:00", "11-23T12:12", "11-23T13:00"]);
}

#[test]
fn a_window_in_a_zone_with_daylight_saving_opens_at_local_time() {
    // 02:30 in Warsaw on the night clocks go forward (2027-03-28, 02:00 → 03:00): the window opens right after the
    // gap, at 03:00 CEST (01:00 UTC); the next night at 02:30 CEST (00:30 UTC).
    let (s, d) = (schedule(&[("30 2 * * *", "20m", Some("Europe/Warsaw"))], &[]), durations(0));
    let projected = project(&projection("2027-03-27T12:00:00Z", &s, &d, 3, 1));
    assert_eq!(starts(&projected), vec!["03-28T01:00", "03-28T01:12", "03-29T00:30"]);
}

#[test]
fn a_node_in_flight_keeps_its_slot_for_the_rest_of_its_steps_and_a_slow_one_ends_now() {
    let (open, d) = (Schedule::default(), durations(0));
    let mut input = projection("2026-11-23T12:00:00Z", &open, &d, 1, 1);
    input.in_flight = vec![InFlight {
        node: "worker-0".into(),
        step: Step::Upgrade,
        since: at("2026-11-23T11:55:00Z"),
        drained: None,
    }];
    let projected = project(&input);
    assert_eq!(projected.nodes[0].end(), Some(at("2026-11-23T12:06:00Z")), "5 of 10 minutes left, then cleanup");
    assert_eq!(starts(&projected)[1], "11-23T12:06");
    input.in_flight[0].since = at("2026-11-23T10:00:00Z");
    let slow = project(&input);
    assert_eq!(slow.nodes[0].steps[0], (Step::Upgrade, at("2026-11-23T12:00:00Z"), at("2026-11-23T12:00:00Z")));
    assert_eq!(slow.nodes[0].end(), Some(at("2026-11-23T12:01:00Z")));
}

#[test]
fn a_drained_node_has_its_measured_reboot_left_and_the_estimate_tells_the_parts() {
    let open = Schedule::default();
    let mut d = durations(0);
    d.seconds.extend([(Step::Drain, 120), (Step::Reboot, 480)]);
    let mut input = projection("2026-11-23T12:00:00Z", &open, &d, 0, 1);
    // Drained after 9 of its upgrade's 10 minutes (a slow drain): 8 minutes of reboot are left, not 1.
    input.in_flight = vec![InFlight {
        node: "worker-0".into(),
        step: Step::Upgrade,
        since: at("2026-11-23T11:51:00Z"),
        drained: Some(at("2026-11-23T12:00:00Z")),
    }];
    let projected = project(&input);
    assert_eq!(projected.nodes[0].steps[0].2, at("2026-11-23T12:08:00Z"), "the reboot's 480 s from the drain");
    input.in_flight[0].drained = None;
    assert_eq!(project(&input).nodes[0].steps[0].2, at("2026-11-23T12:01:00Z"), "without it, the upgrade's rest");
    let estimate = estimate(&projected, &d, 1, &[], 0, at("2026-11-23T12:00:00Z"));
    assert!(estimate.assumes.contains("upgrade 600s (drain 120s, reboot 480s)"), "{}", estimate.assumes);
    let parts: Vec<(Step, u32)> = estimate
        .step_seconds
        .iter()
        .filter(|s| Step::UPGRADE_PARTS.contains(&s.step))
        .map(|s| (s.step, s.seconds))
        .collect();
    assert_eq!(parts, vec![(Step::Drain, 120), (Step::Reboot, 480)]);
    let without = estimate_without_parts(&projected);
    assert!(!without.step_seconds.iter().any(|s| Step::UPGRADE_PARTS.contains(&s.step)), "told only where measured");
}

fn estimate_without_parts(projected: &Projected) -> Estimate {
    estimate(projected, &durations(0), 1, &[], 0, at("2026-11-23T12:00:00Z"))
}

#[test]
fn a_blackout_over_a_yearly_window_moves_the_start_a_year_on() {
    let s = schedule(&[("0 0 1 1 *", "1h", None)], &[("2026-12-31T00:00:00Z", "2027-01-02T00:00:00Z")]);
    let d = durations(0);
    let projected = project(&projection("2026-12-31T12:00:00Z", &s, &d, 2, 1));
    assert_eq!(projected.never_start, Vec::<String>::new());
    let years: Vec<String> =
        projected.nodes.iter().filter_map(|p| p.start().map(|s| s.format("%Y-%m-%dT%H:%M").to_string())).collect();
    assert_eq!(years, vec!["2028-01-01T00:00", "2028-01-01T00:12"]);
}

#[test]
fn the_estimate_says_its_basis_and_what_it_leaves_out() {
    let (open, d) = (Schedule::default(), durations(0));
    let projected = project(&projection("2026-11-23T12:00:00Z", &open, &d, 2, 1));
    let held = [crate::api::Blocker { check: "ClusterOperators".into(), message: "storage is Degraded".into() }];
    let estimate = estimate(&projected, &d, 2, &held, 1, at("2026-11-23T12:00:00Z"));
    assert_eq!(estimate.remaining_nodes, 2);
    assert_eq!(estimate.end.0.to_string(), "2026-11-23T12:25:00Z");
    assert!(estimate.assumes.starts_with("Each node takes gate 60s"), "{}", estimate.assumes);
    assert!(estimate.assumes.contains("medians of this rollout's nodes"), "{}", estimate.assumes);
    assert!(estimate.assumes.contains("the hold by ClusterOperators now"), "{}", estimate.assumes);
    assert!(estimate.assumes.contains("1 failed node"), "{}", estimate.assumes);
    let seconds: Vec<(Step, u32)> = estimate.step_seconds.iter().map(|s| (s.step, s.seconds)).collect();
    let expected: Vec<(Step, u32)> = Step::NODE.into_iter().chain([Step::Restore]).map(|s| (s, d.of(s))).collect();
    assert_eq!(seconds, expected, "the seconds the estimate used, step by step, for the console's timeline");
    let defaults = figures::durations(&[], &[], None, true);
    let estimate = super::estimate(&projected, &defaults, 2, &[], 0, at("2026-11-23T12:00:00Z"));
    assert_eq!(estimate.basis, EstimateBasis::Defaults);
    assert!(estimate.assumes.contains("no node has finished yet"), "{}", estimate.assumes);
    assert!(estimate.assumes.contains("holds beyond the maintenance windows"), "{}", estimate.assumes);
}

#[test]
fn a_rollout_is_slow_a_quarter_past_its_estimate_and_at_least_ten_minutes() {
    let start = at("2026-11-23T12:00:00Z");
    assert_eq!(slow_after(start, start + Duration::hours(4)), start + Duration::hours(5));
    assert_eq!(slow_after(start, start + Duration::minutes(8)), start + Duration::minutes(18));
}

/// Workers 1–6 in racks a, a, a, b, b, c.
fn racks(mode: crate::api::TopologyMode, per_domain: usize, soak_minutes: i64) -> super::Waves {
    let domain_of = ["a", "a", "a", "b", "b", "c"]
        .iter()
        .enumerate()
        .map(|(i, d)| (format!("worker-{}", i + 1), d.to_string()))
        .collect();
    super::Waves { mode, per_domain, soak: chrono::Duration::minutes(soak_minutes), domain_of, last_finished: None }
}

#[test]
fn one_domain_at_a_time_waits_for_the_whole_domain_and_its_soak() {
    let (open, d) = (Schedule::default(), durations(0));
    let waves = racks(crate::api::TopologyMode::DomainAtATime, 3, 5);
    // Release order: rack c, b, a (as the planner orders them); each node takes 12 minutes.
    let mut input = projection("2026-11-23T12:00:00Z", &open, &d, 6, 3);
    input.pending = ["worker-6", "worker-4", "worker-5", "worker-1", "worker-2", "worker-3"].map(String::from).to_vec();
    input.waves = Some(&waves);
    let projected = project(&input);
    // c at 12:00 (ends 12:12) + 5m soak; b at 12:17 (both, end 12:29) + 5m; a at 12:34 (all three).
    assert_eq!(
        starts(&projected),
        ["11-23T12:00", "11-23T12:17", "11-23T12:17", "11-23T12:34", "11-23T12:34", "11-23T12:34"]
    );
    assert_eq!(projected.nodes_done, at("2026-11-23T12:46:00Z"));
}

#[test]
fn spread_never_starts_a_node_of_a_domain_that_is_down() {
    let (open, d) = (Schedule::default(), durations(0));
    let waves = racks(crate::api::TopologyMode::Spread, 1, 0);
    let mut input = projection("2026-11-23T12:00:00Z", &open, &d, 6, 3);
    // Round robin: a, b, c, a, b, a.
    input.pending = ["worker-1", "worker-4", "worker-6", "worker-2", "worker-5", "worker-3"].map(String::from).to_vec();
    input.waves = Some(&waves);
    let projected = project(&input);
    assert_eq!(
        starts(&projected),
        ["11-23T12:00", "11-23T12:00", "11-23T12:00", "11-23T12:12", "11-23T12:12", "11-23T12:24"]
    );
}

#[test]
fn a_domain_soak_under_way_delays_the_next_domain() {
    let (open, d) = (Schedule::default(), durations(0));
    let mut waves = racks(crate::api::TopologyMode::DomainAtATime, 3, 10);
    waves.last_finished = Some(("c".into(), at("2026-11-23T11:55:00Z")));
    let mut input = projection("2026-11-23T12:00:00Z", &open, &d, 2, 3);
    input.pending = ["worker-4", "worker-5"].map(String::from).to_vec();
    input.waves = Some(&waves);
    assert_eq!(starts(&project(&input)), ["11-23T12:05", "11-23T12:05"]);
}
