//! A new release asked for mid-rollout: the node in its gated turn goes on to the new release inside it (never
//! `Ungated`, its gate Jobs not run again, its cleanup Jobs for the release it reached), the nodes done at the old
//! release get a gated turn of their own for the new one, the rest go straight to it, and the status and an Event
//! say what happened; none of numo's own writes is reported as someone else's (`Fixture::until` asserts it).

use super::*;

const NEWER: &str = "4.16.6";

fn gate_jobs(f: &Fixture, node: &str) -> Vec<String> {
    f.s.jobs.iter().filter(|j| j.node == node && j.phase == JobPhase::Gate).map(|j| j.target_version.clone()).collect()
}

#[test]
fn a_new_release_mid_rollout_takes_the_node_in_flight_on_inside_its_turn_and_the_rest_straight_to_it() {
    let mut f = Fixture::new(3);
    f.until(NEW, |_, p| node_phase(p, "worker-1") == Some(NodePhase::Upgrading));
    assert_eq!(node_phase(&f.plan(), "worker-0"), Some(NodePhase::Done));

    // A z-stream fix is asked for while worker-1 is released.
    f.s.cluster.as_mut().unwrap().target_version = Some(NEWER.into());
    let p = f.step();
    assert_eq!(p.status.target_version.as_deref(), Some(NEWER));
    let change = p.status.target_changes.last().expect("the change is recorded");
    assert_eq!((change.from.as_str(), change.to.as_str()), (NEW, NEWER));
    assert_eq!(change.in_flight, vec!["worker-1".to_string()]);
    let told: Vec<&str> = p.notices.iter().filter(|n| n.reason == "TargetChanged").map(|n| n.note.as_str()).collect();
    assert_eq!(told.len(), 1, "{:?}", p.notices);
    assert!(told[0].contains(&format!("from {NEW} to {NEWER}")) && told[0].contains("worker-1"), "{}", told[0]);
    assert_eq!(node_phase(&p, "worker-1"), Some(NodePhase::Upgrading), "in its gated turn, never Ungated");
    let assumes = &p.status.estimate.as_ref().expect("estimated again for the new target").assumes;
    assert!(assumes.contains(&format!("The target changed from {NEW} to {NEWER}")), "{assumes}");
    assert_eq!(p.status.phase, Some(RunPhase::Upgrading), "{:?}", p.status.message);

    let done = f.until(NEWER, |_, p| p.status.phase == Some(RunPhase::Completed));
    assert_eq!(done.status.target_version.as_deref(), Some(NEWER));
    assert_eq!(done.status.progress.as_deref(), Some("3/3"));
    assert_eq!(done.status.target_changes.len(), 1);
    // worker-0 finished at the old release: a gated turn of its own for the new one. worker-1's gate Jobs ran once;
    // its cleanup Jobs ran for the release it reached. worker-2 went straight to the new release.
    assert_eq!(gate_jobs(&f, "worker-0"), vec![NEW.to_string(), NEWER.to_string()]);
    assert_eq!(gate_jobs(&f, "worker-1"), vec![NEW.to_string()]);
    assert_eq!(gate_jobs(&f, "worker-2"), vec![NEWER.to_string()]);
    let cleanup: Vec<&str> =
        f.s.jobs
            .iter()
            .filter(|j| j.node == "worker-1" && j.phase == JobPhase::Cleanup)
            .map(|j| j.target_version.as_str())
            .collect();
    assert_eq!(cleanup, vec![NEWER]);
    assert!(f.s.nodes.values().filter(|n| n.name.starts_with("worker")).all(|n| n.version.as_deref() == Some(NEWER)));
}

#[test]
fn a_new_release_while_the_rollout_waits_for_the_control_plane_is_recorded_with_no_node_in_flight() {
    let mut f = Fixture::new(2);
    f.s.cluster.as_mut().unwrap().control_plane_completed = false;
    f.step();
    assert_eq!(f.step().status.phase, Some(RunPhase::Waiting));
    f.s.cluster.as_mut().unwrap().target_version = Some(NEWER.into());
    let p = f.step();
    let change = p.status.target_changes.last().expect("recorded");
    assert!(change.in_flight.is_empty());
    let told = p.notices.iter().find(|n| n.reason == "TargetChanged").expect("told");
    assert!(told.note.ends_with(&format!("the other nodes go straight to {NEWER}.")), "{}", told.note);
    // An idle run config's next rollout is no change of target.
    let mut f = Fixture::new(1);
    f.s.nodes_mut().get_mut("worker-0").map(Arc::make_mut).unwrap().version = Some(NEW.into());
    f.step();
    f.s.cluster.as_mut().unwrap().target_version = Some(NEWER.into());
    assert!(f.step().status.target_changes.is_empty());
}
