//! The edges of a node's turn: it cleans up at home, out of the canary's reach; a new release asked for while it
//! cleans up gives it a gated turn of its own; a failed update fails it at once; `Completed` waits for every target
//! pool, skipped nodes included; and numo's own writes are never reported as someone else's.

use super::*;

const NEWER: &str = "4.16.6";

fn marked(f: &Fixture, node: &str) -> bool {
    f.s.nodes[node].labels.get(crate::labels::RELEASED).is_some()
}

fn jobs_of(f: &Fixture, node: &str, phase: JobPhase) -> Vec<String> {
    f.s.jobs.iter().filter(|j| j.node == node && j.phase == phase).map(|j| j.target_version.clone()).collect()
}

#[test]
fn a_node_goes_home_to_its_paused_pool_before_its_cleanup_jobs_start() {
    let mut f = Fixture::new(2);
    let p = f.until(NEW, |_, p| node_phase(p, "worker-0") == Some(NodePhase::CleaningUp));
    // At its target, still in the canary: numo takes its mark off and creates no cleanup Job yet.
    assert!(
        p.intents.iter().any(|i| matches!(i, Intent::UnlabelNode { node, labels }
            if node == "worker-0" && labels == &[crate::labels::RELEASED.to_string()])),
        "{:?}",
        p.intents
    );
    assert!(jobs_of(&f, "worker-0", JobPhase::Cleanup).is_empty(), "no cleanup Job while in the canary");
    assert!(!marked(&f, "worker-0"));
    // Seen home, its cleanup Job starts.
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::CleaningUp));
    assert_eq!(jobs_of(&f, "worker-0", JobPhase::Cleanup), vec![NEW.to_string()]);
    assert!(!marked(&f, "worker-0"), "it cleans up out of the canary's reach");
    let done = f.until(NEW, |_, p| p.status.phase == Some(RunPhase::Completed));
    assert_eq!(done.status.progress.as_deref(), Some("2/2"));
}

#[test]
fn a_new_release_asked_for_during_a_cleanup_gives_the_node_a_gated_turn_of_its_own() {
    let mut f = Fixture::new(2);
    f.until(NEW, |f, _| !jobs_of(f, "worker-0", JobPhase::Cleanup).is_empty());
    // The cleanup Job runs (the reference's runs `sleep 30`) when the admin asks for a z-stream fix.
    f.s.cluster.as_mut().unwrap().target_version = Some(NEWER.into());
    let p = f.step();
    assert_eq!(p.status.target_version.as_deref(), Some(NEWER));
    let change = p.status.target_changes.last().expect("the change is recorded");
    assert!(change.in_flight.is_empty(), "a node past its reboot does not go on inside its turn: {change:?}");
    assert_ne!(node_phase(&p, "worker-0"), Some(NodePhase::Upgrading), "never taken on ungated");
    assert!(!marked(&f, "worker-0"));
    // Its cleanup Job for the release it reached still runs: its new turn waits for it, and the status says so.
    let p = f.step();
    assert!(jobs_of(&f, "worker-0", JobPhase::Gate) == vec![NEW.to_string()], "no gate Job while it cleans up");
    let held = p.status.blocked_by.iter().find(|b| b.check == crate::api::check::EARLIER_TURN);
    assert!(
        held.is_some_and(|b| b.message.contains("worker-0") && b.message.contains(NEW)),
        "{:?}",
        p.status.blocked_by
    );

    // Until its gate Jobs for the new release succeeded, worker-0 is never released into the canary again.
    for _ in 0..200 {
        let gated_again = f.s.jobs.iter().any(|j| {
            j.node == "worker-0"
                && j.phase == JobPhase::Gate
                && j.target_version == NEWER
                && j.result == JobResult::Succeeded
        });
        if gated_again {
            break;
        }
        assert!(!marked(&f, "worker-0"), "released before its gate Jobs for {NEWER}: {:?}", f.s.run_config.status);
        let p = f.step();
        assert_no_foreign_change(&p);
        f.finish_jobs(JobResult::Succeeded);
        for entry in p.status.nodes.iter().filter(|e| e.phase == NodePhase::Upgrading) {
            f.s.nodes_mut().get_mut(&entry.name).map(Arc::make_mut).unwrap().version = Some(NEWER.into());
        }
    }
    let done = f.until(NEWER, |_, p| p.status.phase == Some(RunPhase::Completed));
    assert_eq!(done.status.progress.as_deref(), Some("2/2"));
    // Two turns for worker-0, each gated and cleaned up; its final cleanup at the release it runs.
    assert_eq!(jobs_of(&f, "worker-0", JobPhase::Gate), vec![NEW.to_string(), NEWER.to_string()]);
    assert_eq!(jobs_of(&f, "worker-0", JobPhase::Cleanup), vec![NEW.to_string(), NEWER.to_string()]);
    assert_eq!(jobs_of(&f, "worker-1", JobPhase::Cleanup), vec![NEWER.to_string()]);
}

#[test]
fn a_node_held_again_after_its_turn_is_not_told_as_someone_elses_change() {
    let mut f = Fixture::new(3);
    f.until(NEW, |_, p| node_phase(p, "worker-0") == Some(NodePhase::Done));
    // The Jobs' TTL ran out: nothing says any more that the finished node was released, and numo holds it again.
    f.s.jobs.retain(|j| j.node != "worker-0");
    let p = f.step();
    assert!(p.intents.iter().any(|i| matches!(i, Intent::LabelNode { node, .. } if node == "worker-0")));
    assert_no_foreign_change(&p);
    assert_no_foreign_change(&f.step());
    // Someone else removes a rule label of a node numo holds and never released: that is told.
    let label = f.s.rules[0].label();
    Arc::make_mut(f.s.nodes_mut().get_mut("worker-2").unwrap()).labels.remove(&label);
    let p = f.step();
    assert!(p.notices.iter().any(|n| n.reason == "ForeignChange" && n.note.contains("worker-2")), "{:?}", p.notices);
}

/// worker-0 released and upgrading: its daemon's update fails.
fn failing_update(state: &str) -> (Fixture, Plan) {
    let mut f = Fixture::new(2);
    assert!(f.s.run_config.spec.node_timeout.is_none(), "no nodeTimeout: wait as long as it takes");
    f.until(NEW, |_, p| node_phase(p, "worker-0") == Some(NodePhase::Upgrading));
    let node = f.s.nodes_mut().get_mut("worker-0").map(Arc::make_mut).unwrap();
    node.mcd_state = Some(state.into());
    node.mcd_reason = Some("failed to update OS to quay.io/openshift/os@sha256:abc: error pulling image".into());
    let p = f.step();
    (f, p)
}

#[test]
fn a_failed_update_fails_the_node_at_once_with_the_daemons_reason() {
    for state in ["Degraded", "Unreconcilable"] {
        let (mut f, p) = failing_update(state);
        assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Failed), "{state}");
        assert_eq!(p.status.phase, Some(RunPhase::Failed));
        let message = p.status.message.as_deref().unwrap_or_default();
        assert!(message.contains(state) && message.contains("error pulling image"), "{message}");
        let upgrade = condition(&p, condition::NODE_UPGRADE);
        assert_eq!((upgrade.status.as_str(), upgrade.reason.as_str()), ("False", "NodeUpdateFailed"));
        assert_eq!(condition(&p, condition::JOB_RUN).status, "True", "no Job failed");
        assert!(p.notices.iter().any(|n| n.note.contains("error pulling image")), "{:?}", p.notices);
        // Held: the next node does not start.
        f.step();
        assert!(jobs_of(&f, "worker-1", JobPhase::Gate).is_empty());

        // The daemon's retry succeeds (the admin fixed the node): worker-0 goes on by itself.
        let node = f.s.nodes_mut().get_mut("worker-0").map(Arc::make_mut).unwrap();
        (node.mcd_state, node.mcd_reason, node.version) = (Some("Done".into()), Some(String::new()), Some(NEW.into()));
        let done = f.until(NEW, |_, p| p.status.phase == Some(RunPhase::Completed));
        assert_eq!(done.status.completed_nodes, vec!["worker-0".to_string(), "worker-1".to_string()]);
    }
}

#[test]
fn completed_waits_until_every_target_pool_is_updated_after_a_skip() {
    let (mut f, _) = failing_update("Degraded");
    f.s.nodes_mut().get_mut("worker-0").map(Arc::make_mut).unwrap().cordoned = true;
    f.s.run_config.skip = BTreeSet::from(["worker-0".to_string()]);
    // worker-1 goes; then the pools are restored, and worker, with worker-0 Degraded at 4.16.4, is not Updated.
    let restoring = f.until(NEW, |f, p| {
        p.status.phase == Some(RunPhase::Restoring) && f.s.pools.values().all(|pool| pool.owner().is_none())
    });
    assert_eq!(restoring.status.skipped_nodes, vec!["worker-0".to_string()]);
    let mut told = 0;
    for _ in 0..5 {
        f.s.pools.get_mut("worker").unwrap().updated = false;
        let p = f.step();
        assert_eq!(p.status.phase, Some(RunPhase::Restoring), "{:?}", p.status.message);
        let message = p.status.message.as_deref().unwrap_or_default();
        assert!(
            message.contains("worker-0") && message.contains("Degraded") && message.contains("cordoned"),
            "{message}"
        );
        let upgrade = condition(&p, condition::NODE_UPGRADE);
        assert_eq!((upgrade.status.as_str(), upgrade.reason.as_str()), ("False", "SkippedNodeNotUpdated"));
        assert!(upgrade.message.contains("worker-0 (skipped) runs 4.16.4"), "{}", upgrade.message);
        told += p.notices.iter().filter(|n| n.reason == "SkippedNodeNotUpdated").count();
    }
    assert_eq!(told, 1, "told once");
    // The daemon finishes worker-0's update in its restored pool: worker is Updated, the rollout Completed.
    let node = f.s.nodes_mut().get_mut("worker-0").map(Arc::make_mut).unwrap();
    (node.mcd_state, node.version, node.cordoned) = (Some("Done".into()), Some(NEW.into()), false);
    f.s.pools.get_mut("worker").unwrap().updated = true;
    let p = f.step();
    assert_eq!(p.status.phase, Some(RunPhase::Completed), "{:?}", p.status.message);
}

#[test]
fn completed_waits_for_the_pools_in_a_plain_rollout_too() {
    let mut f = Fixture::new(1);
    f.until(NEW, |f, p| {
        p.status.phase == Some(RunPhase::Restoring) && f.s.pools.values().all(|pool| pool.owner().is_none())
    });
    f.s.pools.get_mut("worker").unwrap().updated = false;
    assert_eq!(f.step().status.phase, Some(RunPhase::Restoring));
    f.s.pools.get_mut("worker").unwrap().updated = true;
    assert_eq!(f.step().status.phase, Some(RunPhase::Completed));
}
