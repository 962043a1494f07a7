//! What a rollout learns of its own pace and what it expects: step durations, the estimate and when it is worked
//! out again, the history a completed rollout leaves, and `Slow`.

use super::*;
use crate::api::{EstimateBasis, Step};

/// Moves the fixture's clock on by `seconds`.
fn tick(f: &mut Fixture, seconds: i64) {
    f.s.now = f.s.now.checked_add(k8s_openapi::jiff::SignedDuration::from_secs(seconds)).unwrap();
}

/// Steps the rollout with the clock moving `seconds` before each step: Jobs succeed and released nodes upgrade a
/// step after they are seen, until `until` holds of the plan.
fn run(f: &mut Fixture, seconds: i64, until: impl Fn(&Plan) -> bool) -> Plan {
    for _ in 0..300 {
        tick(f, seconds);
        let p = f.step();
        if until(&p) {
            return p;
        }
        if p.status.phase == Some(RunPhase::Restoring) {
            f.s.pools.values_mut().for_each(|pool| pool.updated = true);
        }
        f.answer();
    }
    panic!("not reached: {:?}", f.s.run_config.status);
}

#[test]
fn a_rollout_starts_a_fresh_record_and_a_hold_that_ends_goes_into_it() {
    let mut f = Fixture::new(2);
    tick(&mut f, 10);
    let start = f.step();
    let fresh = start
        .after_status
        .iter()
        .any(|i| matches!(i, Intent::RecordRollout { fresh: true, rollout, .. } if rollout == NEW));
    assert!(fresh, "{:?}", start.after_status);
    // A blackout holds the next node for a while.
    let now = crate::windows::utc(&f.s.now);
    let blackout = |from: i64, to: i64| crate::api::BlackoutWindow {
        start: Time(crate::windows::to_api(&(now + chrono::Duration::seconds(from)))),
        end: Time(crate::windows::to_api(&(now + chrono::Duration::seconds(to)))),
        reason: Some("freeze".into()),
    };
    f.s.run_config.spec.blackout_windows = vec![blackout(0, 60)];
    let held = run(&mut f, 10, |p| !p.status.blocked_by.is_empty());
    assert!(held.status.held_since.is_some());
    let resumed = run(&mut f, 10, |p| p.status.blocked_by.is_empty());
    assert_eq!(resumed.status.held_since, None);
    let hold = resumed.after_status.iter().any(|i| {
        matches!(i, Intent::RecordRollout { entries, .. }
            if entries.iter().any(|(k, v)| k.starts_with("hold.") && v.contains("BlackoutWindow")))
    });
    assert!(hold, "{:?}", resumed.after_status);
}

#[test]
fn before_any_node_finishes_the_estimate_rests_on_the_defaults_and_says_so() {
    let mut f = Fixture::new(3);
    let p = run(&mut f, 10, |p| p.status.nodes.iter().any(|e| e.phase == NodePhase::Gating));
    let estimate = p.status.estimate.clone().unwrap_or_else(|| panic!("no estimate: {:?}", p.status));
    assert_eq!(estimate.basis, EstimateBasis::Defaults);
    assert_eq!(estimate.remaining_nodes, 3);
    assert!(estimate.assumes.contains("no node has finished yet"), "{}", estimate.assumes);
    let per_node: u32 = Step::NODE.iter().map(|s| s.default_seconds()).sum::<u32>() - Step::Soak.default_seconds();
    let end = estimate.end.0.as_second() - f.s.now.as_second();
    assert!(end >= i64::from(3 * per_node) - 60, "3 nodes of {per_node}s and the restore walk: {end}s");
}

#[test]
fn a_finished_node_gives_its_step_durations_and_the_estimate_follows_them() {
    let mut f = Fixture::new(3);
    let p = run(&mut f, 10, |p| p.status.completed_nodes.len() == 1);
    let steps: Vec<(Step, u32)> = p.status.step_durations.iter().map(|s| (s.step, s.count)).collect();
    assert!(steps.contains(&(Step::Gate, 1)) && steps.iter().any(|(s, _)| *s == Step::Cleanup), "{steps:?}");
    assert!(
        p.status.step_durations.iter().all(|s| s.seconds.iter().all(|d| *d <= 60)),
        "{:?}",
        p.status.step_durations
    );
    let estimate = p.status.estimate.clone().unwrap_or_else(|| panic!("no estimate"));
    assert_eq!((estimate.basis, estimate.remaining_nodes), (EstimateBasis::ThisRollout, 2));
    // The node's step times go to the rollout record, after the status.
    let done = &p.status.completed_nodes[0];
    let recorded = p.after_status.iter().any(|i| {
        matches!(i, Intent::RecordRollout { entries, fresh: false, .. }
            if entries.iter().any(|(k, v)| *k == format!("node.{done}") && v.starts_with("Done ")))
    });
    assert!(recorded, "{:?}", p.after_status);
    let age = f.s.now.as_second() - estimate.computed_at.0.as_second();
    assert!(age < 10, "worked out again in the step at which the node finished: {age}s ago");
    // The next reconcile with nothing finished keeps it as it is, and gives no projection...
    tick(&mut f, 10);
    let again = f.step();
    assert_eq!(again.projection, None);
    let kept = again.status.estimate.unwrap_or_else(|| panic!("no estimate"));
    assert_eq!(kept, estimate);
    // ...unless numo holds none (it just started): then it gives one for the console's timeline, the estimate kept.
    f.s.project = true;
    let asked = f.step();
    let projected = asked.projection.unwrap_or_else(|| panic!("no projection"));
    assert_eq!(projected.nodes.len(), 2, "the two nodes not done: {projected:?}");
    assert_eq!(asked.status.estimate.unwrap_or_else(|| panic!("no estimate")), estimate);
    // A quick rollout's estimate is minutes, not the defaults' quarter hours per node.
    let left = estimate.end.0.as_second() - estimate.computed_at.0.as_second();
    assert!(left < 600, "2 nodes of well under a minute each and the restore walk: {left}s");
}

#[test]
fn a_completed_rollout_leaves_its_figures_for_the_next_one_and_no_estimate() {
    let mut f = Fixture::new(2);
    let p = run(&mut f, 10, |p| p.status.phase == Some(RunPhase::Completed));
    assert_eq!(p.status.estimate, None, "nothing left to estimate");
    let history = &p.status.history;
    assert_eq!(history.len(), 1, "{history:?}");
    assert_eq!((history[0].rollout.as_str(), history[0].nodes), (NEW, 2));
    let steps: Vec<Step> = history[0].steps.iter().map(|s| s.step).collect();
    assert!(steps.contains(&Step::Gate) && steps.contains(&Step::Restore), "{steps:?}");
    assert!(p.status.restore_started_at.is_some());
    // The next rollout starts from them.
    f.s.cluster = Some(ClusterView { target_version: Some("4.16.6".into()), control_plane_completed: true });
    let next = run(&mut f, 10, |p| p.status.nodes.iter().any(|e| e.phase == NodePhase::Gating));
    assert_eq!(next.status.history, p.status.history, "kept across rollouts");
    assert_eq!(next.status.step_durations, Vec::new(), "this rollout's own samples start empty");
    let estimate = next.status.estimate.unwrap_or_else(|| panic!("no estimate"));
    assert_eq!(estimate.basis, EstimateBasis::EarlierRollouts);
}

#[test]
fn a_rollout_past_its_estimate_by_the_margin_says_slow_and_numo_wakes_for_it() {
    let mut f = Fixture::new(2);
    let p = run(&mut f, 10, |p| p.status.nodes.iter().any(|e| e.phase == NodePhase::Upgrading));
    assert!(!p.status.message.clone().unwrap_or_default().contains("Slow"));
    assert!(p.requeue_after.is_some(), "numo wakes when the rollout would be slow");
    // The node never upgrades: hours pass.
    tick(&mut f, 6 * 3600);
    let slow = f.step();
    let message = slow.status.message.unwrap_or_default();
    assert!(message.contains("Slow: the rollout runs past its estimated end"), "{message}");
}

#[test]
fn a_paused_run_config_with_an_upgrade_pending_shows_the_estimate_as_if_resumed_and_again_once_resumed() {
    let mut f = Fixture::new(2);
    f.s.run_config.spec.paused = true;
    let p = run(&mut f, 10, |p| p.status.estimate.is_some());
    let estimate = p.status.estimate.clone().unwrap_or_else(|| panic!("no estimate"));
    assert!(estimate.assumes.starts_with(super::super::eta::PAUSED), "{}", estimate.assumes);
    assert_eq!(estimate.remaining_nodes, 2);
    assert!(p.status.nodes.is_empty(), "nothing starts while paused");
    f.s.run_config.spec.paused = false;
    tick(&mut f, 10);
    let resumed = f.step();
    let again = resumed.status.estimate.unwrap_or_else(|| panic!("no estimate"));
    assert!(!again.assumes.contains("paused"), "{}", again.assumes);
    assert_ne!(again.computed_at, estimate.computed_at, "worked out again once resumed");
}

#[test]
fn during_a_hold_the_estimate_is_counted_from_now_and_never_falls_behind_it() {
    let mut f = Fixture::new(2);
    f.s.run_config.spec.health_checks = Some(Default::default());
    f.s.health.cluster_operators = Ok(vec![("storage".into(), "is Degraded (ODF is rebalancing)".into())]);
    f.advance_to_gating();
    let p = f.step();
    assert_eq!(p.status.blocked_by.first().map(|b| b.check.as_str()), Some(check::CLUSTER_OPERATORS));
    let since = p.status.held_since.clone().expect("heldSince while held");
    let first = p.status.estimate.clone().expect("an estimate while held");
    let wake = p.requeue_after.expect("numo wakes to refresh the estimate while held");
    assert!(wake <= crate::controllers::run_config::plan::eta::DURING_A_HOLD + Duration::from_secs(1), "{wake:?}");
    // Hours of hold, numo waking as it asked: the end is never before now, and moves with it.
    let mut last_end = first.end.0;
    let began = f.s.now;
    for _ in 0..(3 * 60) {
        tick(&mut f, 60);
        let p = f.step();
        let estimate = p.status.estimate.clone().expect("an estimate");
        assert!(estimate.end.0 > f.s.now, "the ETA {} is behind now {}", estimate.end.0, f.s.now);
        assert!(estimate.end.0 >= last_end);
        last_end = estimate.end.0;
        assert_eq!(p.status.held_since, Some(since.clone()), "heldSince stays when the hold began");
    }
    let (moved, held_for) = (last_end.duration_since(first.end.0).as_secs(), f.s.now.duration_since(began).as_secs());
    assert!((held_for - 61..=held_for + 5).contains(&moved), "the end moved {moved}s in a hold of {held_for}s");
}
