//! OpenShift's EUS-to-EUS procedure as an admin runs it: the worker pool paused by the admin before the update,
//! two control-plane hops, then the admin's go-ahead. numo releases no node from a pool the admin held, says so,
//! and after the go-ahead gates the workers straight to the final release and leaves the pool unpaused at the end.

use super::*;
use crate::api::check;

const EUS: &str = "4.18.0";

/// `workers` workers at 4.16.4 whose worker pool the admin paused before numo held anything.
fn admin_paused(workers: usize) -> Fixture {
    let mut f = Fixture::new(workers);
    f.s.pools.get_mut("worker").unwrap().paused = true;
    f
}

fn held_by(p: &Plan) -> Option<&str> {
    p.status.blocked_by.first().map(|b| b.check.as_str())
}

#[test]
fn a_pool_the_admin_paused_releases_no_node_until_the_go_ahead_then_goes_straight_to_the_final_release() {
    let mut f = admin_paused(2);
    // First hop: nothing is released from the admin's pool, and the status says why and what to do.
    let mut p = f.step();
    for _ in 0..6 {
        p = f.step();
    }
    assert!(jobs_created(&p).is_empty() && f.s.jobs.is_empty(), "no gate Job for a pool the admin holds");
    assert_eq!(held_by(&p), Some(check::ADMIN_HOLD), "{:?}", p.status.blocked_by);
    let message = &p.status.blocked_by[0].message;
    assert!(message.contains("MachineConfigPool worker was paused before numo held it"), "{message}");
    assert!(
        message.contains("oc annotate mutexrunconfig -n ops example openshift-optional.skrzypek.io/go-ahead=worker")
    );
    assert!(f.s.pools["worker"].paused);

    // Second hop.
    f.s.cluster.as_mut().unwrap().target_version = Some(EUS.into());
    f.step();
    assert!(f.s.jobs.is_empty());

    // The go-ahead: the pool stays paused while numo gates its nodes, and is recorded unpaused for the restore.
    f.s.run_config.go_ahead.insert("worker".into());
    let p = f.step();
    assert!(p.intents.iter().any(|i| matches!(i, Intent::TakeOverHold { pool, original, .. }
        if pool == "worker" && !original.paused)));
    assert!(p.intents.contains(&Intent::ClearGoAhead));
    assert!(p.notices.iter().any(|n| n.reason == "AdminGoAhead"), "{:?}", p.notices);
    assert!(f.s.pools["worker"].paused);
    let mut done = None;
    for _ in 0..100 {
        let p = f.step();
        if p.status.phase == Some(RunPhase::Completed) {
            done = Some(p);
            break;
        }
        if p.status.phase == Some(RunPhase::Restoring) {
            f.s.pools.values_mut().for_each(|pool| pool.updated = true);
        }
        f.finish_jobs(JobResult::Succeeded);
        for entry in p.status.nodes.iter().filter(|e| e.phase == NodePhase::Upgrading) {
            f.s.nodes_mut().get_mut(&entry.name).map(Arc::make_mut).unwrap().version = Some(EUS.into());
        }
    }
    let done = done.expect("the rollout completes");
    assert_eq!(done.status.target_version.as_deref(), Some(EUS));
    assert!(f.s.jobs.iter().all(|j| j.target_version == EUS), "every worker gated once, to the final release");
    assert_eq!(f.s.jobs.iter().filter(|j| j.phase == JobPhase::Gate).count(), 2);
    assert!(!f.s.pools["worker"].paused, "the admin's last step, unpausing, is kept");
}

#[test]
fn where_no_policy_refuses_it_the_admins_unpause_is_their_go_ahead_not_another_hand() {
    let mut f = admin_paused(1);
    for _ in 0..6 {
        f.step();
    }
    assert!(f.s.jobs.is_empty());
    // The admin unpauses the pool (the API server let it through: no admission policy).
    f.s.pools.get_mut("worker").unwrap().paused = false;
    let p = f.step();
    assert!(p.intents.iter().any(|i| matches!(i, Intent::TakeOverHold { pool, .. } if pool == "worker")));
    assert!(!p.intents.iter().any(|i| matches!(i, Intent::PutBackPool { .. })), "no contest: {:?}", p.intents);
    assert!(p.status.foreign_changes.is_empty(), "{:?}", p.status.foreign_changes);
    assert!(f.s.pools["worker"].paused, "numo pauses it again at once");
    let p = f.step();
    assert_ne!(held_by(&p), Some(check::ADMIN_HOLD));
}

#[test]
fn a_go_ahead_for_a_pool_no_admin_held_is_ignored_and_said() {
    let mut f = Fixture::new(1);
    f.s.run_config.go_ahead.insert("infra".into());
    let p = f.step();
    assert!(p.notices.iter().any(|n| n.reason == "NothingToGoAhead" && n.note.contains("infra")), "{:?}", p.notices);
    assert!(p.intents.contains(&Intent::ClearGoAhead));
}
