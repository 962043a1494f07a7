//! The cases of the planner made total: deleted Jobs, canaries that hold target nodes, restore order, pools that
//! catch up, concurrency, changed specs and total conditions.

use super::*;

fn all_condition_types() -> Vec<&'static str> {
    let mut all = condition::ALL.to_vec();
    all.sort();
    all
}

fn position(p: &Plan, wanted: impl Fn(&Intent) -> bool) -> Option<usize> {
    p.intents.iter().position(wanted)
}

#[test]
fn a_finished_job_deleted_by_its_ttl_is_never_run_again() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    f.finish_jobs(JobResult::Succeeded);
    // The TTL controller deletes the Job as soon as it finished: numo's finalizer keeps it readable.
    Arc::make_mut(&mut f.s.jobs[0]).deleting = true;
    let p = f.step();
    // The status records the gate's outcome as the node's release; the released node's entry lists no gate Job.
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Released));
    assert!(p.status.nodes[0].released_at.is_some());
    assert!(p.status.nodes[0].jobs.iter().all(|j| j.phase != "gate"), "{:?}", p.status.nodes[0].jobs);
    assert!(p.finished_jobs.iter().any(|j| j.result == JobResult::Succeeded && j.phase == "gate"), "counted");
    assert_eq!(p.after_status.len(), 1, "the Job is let go once its outcome is in the status: {:?}", p.after_status);
    assert!(f.s.jobs.is_empty(), "gone after the finalizer went");
    for _ in 0..3 {
        let p = f.step();
        assert!(jobs_created(&p).iter().all(|(node, _, _)| node != "worker-0"), "{:?}", jobs_created(&p));
    }
}

#[test]
fn a_job_that_vanishes_or_is_deleted_while_running_fails_its_node_instead_of_running_again() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    f.step(); // the running Job is recorded
    f.s.jobs.clear();
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Failed));
    assert!(jobs_created(&p).is_empty(), "{:?}", jobs_created(&p));
    assert!(p.status.message.as_deref().unwrap_or_default().contains("deleted"), "{:?}", p.status.message);

    let mut f = Fixture::new(2);
    f.advance_to_gating();
    Arc::make_mut(&mut f.s.jobs[0]).deleting = true;
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Failed));
    assert!(jobs_created(&p).is_empty());
    f.s.run_config.retry = Some("worker-0".into());
    let p = f.step();
    assert_eq!(jobs_created(&p), vec![("worker-0".to_string(), "gate".to_string(), 2)], "a retry runs it again");
}

#[test]
fn a_retry_annotation_is_cleared_only_after_the_retrys_job() {
    let mut f = Fixture::new(1);
    f.advance_to_gating();
    f.finish_jobs(JobResult::Failed);
    f.step();
    f.s.run_config.retry = Some("worker-0".into());
    let p = f.plan();
    let create = position(&p, |i| matches!(i, Intent::CreateJob(_)));
    let clear = position(&p, |i| *i == Intent::ClearRetry);
    assert!(create.is_some() && create < clear, "{:?}", p.intents);
}

#[test]
fn a_canary_that_holds_the_target_nodes_is_refused() {
    let mut f = Fixture::new(3);
    // The reference's canary without its isCanary expression: it selects every worker.
    f.s.pools.get_mut("canary").unwrap().node_selector = Some(selector("node-role.kubernetes.io/worker"));
    let p = f.plan();
    assert!(only_finalizer_or_nothing(&p), "{:?}", p.intents);
    assert_eq!(p.status.phase, Some(RunPhase::Invalid));
    let c = condition(&p, condition::CONFIG_VALIDATED);
    assert_eq!(c.status, "False");
    assert!(c.message.contains("canary") && c.message.contains("worker-0"), "{}", c.message);
    assert!(p.notices.iter().any(|n| n.warning && n.reason == "InvalidConfig"));
}

#[test]
fn target_nodes_another_pool_owns_are_named_not_silently_ignored() {
    let mut f = Fixture::new(3);
    f.s.pools.insert("infra".into(), pool("infra", selector("node-role.kubernetes.io/infra")));
    f.s.nodes_mut()
        .get_mut("worker-2")
        .map(Arc::make_mut)
        .unwrap()
        .labels
        .insert("node-role.kubernetes.io/infra".into(), String::new());
    let p = f.plan();
    let c = condition(&p, condition::CONFIG_VALIDATED);
    assert_eq!(c.status, "True");
    assert!(c.message.contains("pool infra") && c.message.contains("worker-2"), "{}", c.message);
    assert_eq!(p.status.total_nodes, 2);
}

/// Drives the one-worker rollout of `f` until a plan says `Restoring`, and returns that plan, not yet absorbed.
fn until_restoring(f: &mut Fixture) -> Plan {
    for _ in 0..50 {
        let p = f.plan();
        if p.status.phase == Some(RunPhase::Restoring) {
            return p;
        }
        f.absorb(&p);
        f.finish_jobs(JobResult::Succeeded);
        f.upgrade("worker-0");
    }
    panic!("the rollout did not reach Restoring: {:?}", f.s.run_config.status);
}

#[test]
fn the_target_pools_are_restored_before_the_canary_and_completion_waits_for_them() {
    let mut f = Fixture::new(1);
    let p = until_restoring(&mut f);
    f.absorb(&p);
    let worker = position(&p, |i| matches!(i, Intent::RestorePool { pool, .. } if pool == "worker"));
    let canary = position(&p, |i| matches!(i, Intent::RestorePool { pool, .. } if pool == "canary"));
    assert!(worker.is_some() && worker < canary, "{:?}", p.intents);

    // The pools are back; the worker pool still moves its nodes to its own rendered config.
    let p = f.step();
    assert_eq!(p.status.phase, Some(RunPhase::Restoring), "{:?}", p.status.message);
    assert!(p.status.message.as_deref().unwrap_or_default().contains("worker"));
    assert_eq!(condition(&p, condition::MUTEX_RULES_APPLIED).status, "False");
    f.s.pools.get_mut("worker").unwrap().updated = true;
    let p = f.step();
    assert_eq!(p.status.phase, Some(RunPhase::Completed));
    assert_eq!(condition(&p, condition::MUTEX_RULES_APPLIED).status, "False");
    assert_eq!(condition(&p, condition::TARGET_POOLS_PAUSED).status, "False");
}

#[test]
fn a_plan_that_sees_the_targets_restored_before_the_canary_restores_again_and_claims_nothing() {
    let mut f = Fixture::new(1);
    let mut p = until_restoring(&mut f);
    // numo's cache shows the worker pool restored and not yet the canary, which is restored last.
    p.intents.retain(|i| !matches!(i, Intent::RestorePool { pool, .. } if pool == "canary"));
    f.absorb(&p);
    let next = f.plan();
    assert!(!next.intents.iter().any(|i| matches!(i, Intent::ClaimPool { .. })), "{:?}", next.intents);
    assert_eq!(next.status.phase, Some(RunPhase::Restoring), "{:?}", next.status.message);
    assert!(next.status.foreign_changes.is_empty(), "{:?}", next.status.foreign_changes);
    assert!(next.status.held_pools.is_empty(), "{:?}", next.status.held_pools);
    let canary = |p: &Plan| p.intents.iter().any(|i| matches!(i, Intent::RestorePool { pool, .. } if pool == "canary"));
    assert!(canary(&next), "the canary is restored again: {:?}", next.intents);
    f.absorb(&next);
    let p = f.step();
    assert_eq!(p.status.phase, Some(RunPhase::Restoring), "{:?}", p.status.message);
    assert!(p.intents.iter().all(|i| !matches!(i, Intent::ClaimPool { .. } | Intent::RestorePool { .. })));
    f.s.pools.get_mut("worker").unwrap().updated = true;
    assert_eq!(f.step().status.phase, Some(RunPhase::Completed));
}

#[test]
fn once_the_pools_are_paused_the_phase_never_falls_back_to_pausing() {
    let mut f = Fixture::new(2);
    f.s.cluster.as_mut().unwrap().control_plane_completed = false;
    assert_eq!(f.step().status.phase, Some(RunPhase::Pausing));
    assert_eq!(f.step().status.phase, Some(RunPhase::Waiting));
    f.s.cluster.as_mut().unwrap().control_plane_completed = true;
    for _ in 0..4 {
        let p = f.step();
        assert_ne!(p.status.phase, Some(RunPhase::Pausing), "{:?}", p.status.message);
    }
}

#[test]
fn concurrency_above_the_canarys_max_unavailable_raises_it_for_the_rollout_only() {
    let mut f = Fixture::new(4);
    f.s.run_config.spec.concurrency = 3;
    f.advance_to_gating();
    assert_eq!(f.s.pools["canary"].max_unavailable, Some(IntOrString::Int(3)));
    assert_eq!(f.s.pools["worker"].max_unavailable, None, "only the canary");
    assert_eq!(f.s.jobs.len(), 3, "three nodes in flight");
    run_to_end(&mut f);
    assert_eq!(f.s.pools["canary"].max_unavailable, None, "put back as it was");
}

#[test]
fn a_canary_changed_mid_rollout_gives_the_old_one_back() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    f.s.pools.insert("canary2".into(), pool("canary2", canary_selector()));
    f.s.run_config.spec.canary.name = "canary2".into();
    let p = f.step();
    assert!(
        p.intents.iter().any(|i| matches!(i, Intent::RestorePool { pool, .. } if pool == "canary")),
        "{:?}",
        p.intents
    );
    assert_eq!(f.s.pools["canary"].node_selector, Some(canary_selector()));
    assert!(f.s.pools["canary"].owner().is_none());
}

#[test]
fn a_rule_removed_mid_rollout_takes_its_labels_with_it() {
    let mut f = Fixture::new(2).rules(vec![rule("first", false), rule("second", false)]);
    f.advance_to_gating();
    let second = crate::labels::rule_label("second", "ops");
    assert!(f.s.nodes["worker-1"].labels.contains_key(&second));
    f = f.rules(vec![rule("first", false)]);
    let p = f.step();
    let unlabel = position(&p, |i| matches!(i, Intent::UnlabelNode { labels, .. } if labels.contains(&second)));
    assert!(unlabel.is_some(), "{:?}", p.intents);
    for _ in 0..2 {
        f.step();
    }
    assert!(f.s.nodes.values().all(|n| !n.labels.contains_key(&second)));
    let steered = f.s.pools["worker"].node_selector.clone().unwrap_or_default();
    assert!(steered.match_expressions.iter().flatten().all(|r| r.key != second));
}

#[test]
fn an_unreadable_original_is_restored_as_far_as_it_can_be_and_said() {
    let mut f = Fixture::new(1);
    f.advance_to_gating();
    let worker = f.s.pools.get_mut("worker").unwrap();
    worker.claim = ClaimAnnotations::Claimed(PoolClaim {
        owner: ME.into(),
        original: Err(crate::pool_claim::Unreadable::Garbled("expected value".into())),
        written: None,
        written_present: false,
    });
    f.s.run_config.deleting = true;
    let p = f.step();
    let restored = p.intents.iter().find_map(|i| match i {
        Intent::RestorePool { pool, spec, .. } if pool == "worker" => Some(spec.clone()),
        _ => None,
    });
    let restored = restored.expect("the worker pool is restored");
    assert!(!restored.paused, "unpaused");
    assert_eq!(restored.node_selector, None, "the built-in worker pool's selector is the MCO's, never numo's");
    assert!(f.s.pools["worker"].node_selector.iter().all(|s| !crate::selector::is_steered(Some(s))));
}

#[test]
fn every_reconcile_states_every_condition_and_a_conflict_that_ended_is_false() {
    let mut f = Fixture::new(1);
    f.s.run_configs.insert("team/other".into());
    let original =
        PoolOriginal { paused: false, node_selector: f.s.pools["worker"].node_selector.clone(), ..Default::default() };
    f.s.pools.get_mut("worker").unwrap().claim = ClaimAnnotations::Claimed(PoolClaim {
        owner: "team/other".into(),
        original: Ok(original),
        written: None,
        written_present: false,
    });
    let p = f.step();
    assert_eq!(condition(&p, condition::CONFLICT).status, "True");
    f.s.run_configs.remove("team/other");
    for _ in 0..100 {
        let p = f.step();
        let mut types: Vec<&str> = p.status.conditions.iter().map(|c| c.type_.as_str()).collect();
        types.sort();
        assert_eq!(types, all_condition_types(), "{:?}", p.status.phase);
        assert_eq!(condition(&p, condition::CONFLICT).status, "False", "{:?}", p.status.phase);
        if p.status.phase == Some(RunPhase::Completed) {
            assert_eq!(condition(&p, condition::MUTEX_RULES_APPLIED).status, "False");
            return;
        }
        if p.status.phase == Some(RunPhase::Restoring) {
            f.s.pools.values_mut().for_each(|pool| pool.updated = true);
        }
        f.finish_jobs(JobResult::Succeeded);
        f.upgrade("worker-0");
    }
    panic!("the rollout did not complete");
}

#[test]
fn a_node_whose_version_cannot_be_read_starts_no_rollout_and_is_named() {
    let mut f = Fixture::new(2);
    f.s.cluster.as_mut().unwrap().target_version = Some(OLD.into());
    f.s.nodes_mut().get_mut("worker-1").map(Arc::make_mut).unwrap().version = None;
    let p = f.step();
    assert_eq!(p.status.phase, Some(RunPhase::Idle), "{:?}", p.status.message);
    assert!(only_finalizer_or_nothing(&p), "{:?}", p.intents);
    let checked = condition(&p, condition::UPGRADE_CHECKED);
    assert!(checked.message.contains("worker-1") && checked.message.contains("cannot be read"), "{}", checked.message);
}

#[test]
fn completion_counts_the_nodes_even_from_a_status_that_lags_behind() {
    let mut f = Fixture::new(2);
    let mut lagging = None;
    for _ in 0..60 {
        let before = f.s.run_config.status.clone();
        let p = f.step();
        if p.status.phase == Some(RunPhase::Restoring) {
            // numo restores the pools only once the status that stops holding them is written: a status that lags
            // in its nodes still does not hold the restored pools.
            lagging = Some(MutexRunConfigStatus { held_pools: p.status.held_pools.clone(), ..before });
            break;
        }
        f.finish_jobs(JobResult::Succeeded);
        for node in ["worker-0", "worker-1"] {
            if p.status.nodes.iter().any(|e| e.name == node && e.phase == NodePhase::Upgrading) {
                f.upgrade(node);
            }
        }
    }
    // The next reconcile reads the status from before the last node finished (a cache that lags).
    f.s.run_config.status = lagging.expect("the rollout reaches Restoring");
    f.s.pools.values_mut().for_each(|pool| pool.updated = true);
    let p = f.step();
    assert_eq!(p.status.phase, Some(RunPhase::Completed));
    assert_eq!(p.status.completed_nodes, ["worker-0", "worker-1"]);
    assert_eq!(p.status.progress.as_deref(), Some("2/2"));
}

/// A rollout numo 0.2 was driving when it was upgraded: it steered the worker pool (`<rule label> Exists`) and the
/// canary (`<rule label> DoesNotExist`), and released worker-0 by removing its labels.
#[test]
fn a_rollout_steered_by_an_earlier_numo_is_handed_over_to_release_by_mark() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    let label = crate::labels::rule_label("first", "ops");
    let old_style = |base: LabelSelector, operator: &str| {
        crate::selector::with_expressions_replaced(Some(&base), &[crate::selector::requirement(&label, operator)])
    };
    let worker = f.s.pools.get_mut("worker").unwrap();
    worker.node_selector = Some(old_style(selector("node-role.kubernetes.io/worker"), "Exists"));
    if let ClaimAnnotations::Claimed(claim) = &mut worker.claim {
        claim.written =
            Some(PoolOriginal { paused: true, node_selector: worker.node_selector.clone(), ..Default::default() });
    }
    let canary = f.s.pools.get_mut("canary").unwrap();
    canary.node_selector = Some(old_style(canary_selector(), "DoesNotExist"));
    if let ClaimAnnotations::Claimed(claim) = &mut canary.claim {
        claim.written =
            Some(PoolOriginal { paused: false, node_selector: canary.node_selector.clone(), ..Default::default() });
    }
    // worker-0 passed its gate and was released the old way: no rule label, no mark.
    f.finish_jobs(JobResult::Succeeded);
    let node = f.s.nodes_mut().get_mut("worker-0").map(Arc::make_mut).unwrap();
    node.labels.remove(&label);
    node.labels.remove(crate::labels::RELEASED);
    let p = f.step();
    let marked = position(&p, |i| matches!(i, Intent::ReleaseNode { node, .. } if node == "worker-0"));
    let canary_steered = position(&p, |i| matches!(i, Intent::SteerPool { pool, .. } if pool == "canary"));
    assert!(marked.is_some() && marked < canary_steered, "the mark before the canary selects by it: {:?}", p.intents);
    assert_eq!(f.s.pools["worker"].node_selector, Some(selector("node-role.kubernetes.io/worker")), "its own back");
    let steered = f.s.pools["canary"].node_selector.clone().unwrap_or_default();
    let keys: Vec<&str> = steered.match_expressions.iter().flatten().map(|r| r.key.as_str()).collect();
    assert_eq!(keys, [crate::labels::RELEASED]);
    assert!(p.notices.iter().all(|n| !n.warning), "a handover is no foreign change: {:?}", p.notices);
    // And the rollout ends as any other.
    let p = run_to_end(&mut f);
    assert_eq!(p.status.completed_nodes.len(), 2);
}
