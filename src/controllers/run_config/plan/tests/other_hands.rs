//! Other hands on what numo holds: a pool unpaused or re-steered by someone else, a GitOps controller that keeps
//! changing it back, rule labels stripped from held nodes, numo's claim removed, and a node the MCO started while
//! numo held it.

use super::*;
use crate::controllers::run_config::snapshot::Writer;

fn by(manager: &str) -> Option<Writer> {
    Some(Writer { manager: manager.into(), operation: "Update".into(), time: None })
}

/// Someone sets `spec.paused` of `pool` as the console's "Resume all updates" does.
fn unpause(f: &mut Fixture, pool: &str, manager: &str) {
    let view = f.s.pools.get_mut(pool).unwrap();
    view.paused = false;
    view.writers.paused = by(manager);
}

fn warnings<'a>(p: &'a Plan, reason: &str) -> Vec<&'a Notice> {
    p.notices.iter().filter(|n| n.warning && n.reason == reason).collect()
}

fn put_backs(p: &Plan) -> Vec<(&str, &PutBack)> {
    p.intents
        .iter()
        .filter_map(|i| match i {
            Intent::PutBackPool { pool, put_back, .. } => Some((pool.as_str(), put_back)),
            _ => None,
        })
        .collect()
}

fn started(p: &Plan) -> usize {
    jobs_created(p).iter().filter(|(_, phase, _)| phase == "gate").count()
}

#[test]
fn a_target_pool_unpaused_while_numo_pauses_it_is_paused_again_first_and_reported() {
    let mut f = Fixture::new(2);
    f.step(); // claims and pauses the pools
    assert_eq!(f.s.run_config.status.phase, Some(RunPhase::Pausing));
    unpause(&mut f, "worker", "kubectl-patch");
    let p = f.step();
    assert!(
        matches!(p.intents.first(), Some(Intent::PutBackPool { pool, put_back, .. })
        if pool == "worker" && put_back.paused == Some(true)),
        "{:?}",
        p.intents
    );
    let events = warnings(&p, "ForeignChange");
    assert_eq!(events.len(), 1, "{:?}", p.notices);
    assert!(events[0].note.contains("MachineConfigPool/worker spec.paused"), "{}", events[0].note);
    assert!(events[0].note.contains("kubectl-patch"), "{}", events[0].note);
    let contested = condition(&p, condition::CONTESTED);
    assert_eq!(contested.status, "True");
    assert!(contested.message.contains("kubectl-patch"), "{}", contested.message);
    let record = &p.status.foreign_changes[0];
    assert_eq!(
        (record.object.as_str(), record.field.as_str(), record.changes),
        ("MachineConfigPool/worker", "spec.paused", 1)
    );
    assert!(f.s.pools["worker"].paused, "the put-back paused it");
    // Seen back as numo wrote it: resolved, no second Event, the condition clears.
    let p = f.step();
    assert!(warnings(&p, "ForeignChange").is_empty());
    assert_eq!(condition(&p, condition::CONTESTED).status, "False");
    assert!(!p.status.foreign_changes[0].unresolved);
}

#[test]
fn an_unpause_mid_rollout_holds_the_next_node_until_it_is_put_back() {
    let mut f = Fixture::new(3);
    // worker-0 is released and upgrades; worker-1 would start when it is done.
    f.through_worker_0();
    unpause(&mut f, "worker", "Mozilla");
    let p = f.plan();
    assert!(matches!(p.intents.first(), Some(Intent::PutBackPool { .. })), "{:?}", p.intents);
    assert_eq!(started(&p), 0, "no node starts while a foreign change is unresolved: {:?}", p.intents);
    let ready = condition(&p, condition::READY_FOR_NEXT_NODE);
    assert_eq!(ready.status, "False", "{ready:?}");
    assert!(p.status.blocked_by.iter().any(|b| b.check == "ForeignChange" && b.message.contains("Mozilla")));
}

#[test]
fn a_foreign_selector_on_the_canary_is_put_back_and_the_built_in_pools_is_left_to_the_mco() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    let steered_canary = f.s.pools["canary"].node_selector.clone();
    for (pool, original, writer) in [
        ("worker", selector("node-role.kubernetes.io/worker-by-hand"), "machine-config-operator"),
        ("canary", canary_selector(), "argocd-controller"),
    ] {
        let view = f.s.pools.get_mut(pool).unwrap();
        view.node_selector = Some(original);
        view.writers.node_selector = by(writer);
    }
    let p = f.step();
    let backs = put_backs(&p);
    assert_eq!(backs.len(), 1, "{:?}", p.intents);
    assert_eq!(f.s.pools["worker"].node_selector, Some(selector("node-role.kubernetes.io/worker-by-hand")));
    assert_eq!(f.s.pools["canary"].node_selector, steered_canary);
    let warned = warnings(&p, "ForeignChange");
    assert_eq!(warned.len(), 1, "{warned:?}");
    assert!(warned.iter().all(|w| !w.note.contains("machine-config-operator")), "{warned:?}");
}

/// A GitOps self-heal: puts the canary's selector back as git has it, every 2 s.
fn revert_canary(f: &mut Fixture) {
    let view = f.s.pools.get_mut("canary").unwrap();
    view.node_selector = Some(canary_selector());
    view.writers.node_selector = by("argocd-controller");
}

#[test]
fn a_field_changed_back_again_and_again_is_conceded_until_the_changes_stop() {
    let mut f = Fixture::new(3);
    f.advance_to_gating();
    let steered = f.s.pools["canary"].node_selector.clone();
    let mut last = None;
    for _ in 0..foreign::FIGHT_CHANGES {
        revert_canary(&mut f);
        last = Some(f.step());
        f.step(); // numo's write seen
    }
    let p = last.unwrap();
    assert!(put_backs(&p).is_empty(), "numo stopped writing the canary's selector: {:?}", p.intents);
    assert!(!p.intents.iter().any(|i| matches!(i, Intent::SteerPool { pool, .. } if pool == "canary")));
    let conceded = warnings(&p, "ForeignChangeConceded");
    assert_eq!(conceded.len(), 1, "{:?}", p.notices);
    assert!(conceded[0].note.contains("ignoreDifferences"), "{}", conceded[0].note);
    assert_eq!(condition(&p, condition::CONTESTED).reason, "ChangedBackRepeatedly");
    assert_eq!(f.s.pools["canary"].node_selector, Some(canary_selector()), "left as the other writer wants it");
    // Held, and no fight goes on: plans in the quiet time write nothing to the canary and start no node.
    f.finish_jobs(JobResult::Succeeded);
    let p = f.step();
    assert!(put_backs(&p).is_empty() && started(&p) == 0, "{:?}", p.intents);
    assert!(p.requeue_after.is_some_and(|d| d <= foreign::QUIET));
    // Quiet for long enough: numo steers it again, and the rollout goes on.
    f.s.now += foreign::QUIET;
    let p = f.step();
    assert_eq!(put_backs(&p).len(), 1, "{:?}", p.intents);
    assert_eq!(f.s.pools["canary"].node_selector, steered);
    let p = f.step();
    assert_eq!(condition(&p, condition::CONTESTED).status, "False", "{:?}", p.status.foreign_changes);
}

#[test]
fn a_target_pools_paused_flag_is_never_conceded() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    for round in 0..5 {
        unpause(&mut f, "worker", "argocd-controller");
        let p = f.step();
        assert!(
            put_backs(&p).iter().any(|(pool, b)| *pool == "worker" && b.paused == Some(true)),
            "round {round}: {:?}",
            p.intents
        );
        assert!(warnings(&p, "ForeignChangeConceded").is_empty());
        f.step();
    }
    let record = f.s.run_config.status.foreign_changes.iter().find(|r| r.field == "spec.paused").unwrap();
    assert_eq!(record.changes, 5);
    assert!(record.action.contains("keeps putting this field back"), "{}", record.action);
}

#[test]
fn rule_labels_stripped_from_held_nodes_are_put_back_and_reported() {
    let mut f = Fixture::new(3);
    f.advance_to_gating();
    let label = format!("{RULE_LABEL_PREFIX}/first.ops");
    for node in ["worker-1", "worker-2"] {
        f.s.nodes_mut().get_mut(node).map(Arc::make_mut).unwrap().labels.remove(&label);
    }
    let p = f.step();
    let relabelled: Vec<&str> = p
        .intents
        .iter()
        .filter_map(|i| match i {
            Intent::LabelNode { node, .. } => Some(node.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(relabelled, ["worker-1", "worker-2"]);
    let events = warnings(&p, "ForeignChange");
    assert_eq!(events.len(), 2, "{:?}", p.notices);
    assert!(events[0].note.contains("Node/worker-1 metadata.labels"), "{}", events[0].note);
    assert_eq!(started(&p), 0, "nothing starts until every held node carries its labels again");
}

#[test]
fn a_claim_someone_removed_is_taken_again_with_the_original_it_recorded() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    let original = f.s.pools["worker"].claim.claim().unwrap().original.clone().unwrap();
    let worker = f.s.pools.get_mut("worker").unwrap();
    worker.claim = ClaimAnnotations::Leftover {
        keys: vec![crate::labels::POOL_ORIGINAL, crate::labels::POOL_WRITTEN],
        original: Some(original.clone()),
    };
    let p = f.step();
    let claimed = p.intents.iter().find_map(|i| match i {
        Intent::ClaimPool { pool, original, .. } if pool == "worker" => Some(original.clone()),
        _ => None,
    });
    assert_eq!(claimed, Some(original));
    assert!(warnings(&p, "ForeignChange")
        .iter()
        .any(|n| n.note.contains("MachineConfigPool/worker metadata.annotations")));
}

/// The MCO sets a new desiredConfig on `node`, bringing NEW, as it does for a node of an unpaused pool.
fn mco_starts(f: &mut Fixture, node: &str) {
    let view = f.s.nodes_mut().get_mut(node).map(Arc::make_mut).unwrap();
    view.current_config = Some("rendered-worker-aaa".into());
    view.desired_config = Some("rendered-worker-bbb".into());
    view.desired_version = Some(NEW.into());
}

#[test]
fn a_held_node_the_mco_started_is_ungated_holds_the_rollout_and_never_counts_as_done() {
    let mut f = Fixture::new(3);
    f.advance_to_gating();
    mco_starts(&mut f, "worker-2");
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-2"), Some(NodePhase::Ungated));
    let ungated = warnings(&p, "NodeUngated");
    assert_eq!(ungated.len(), 1, "{:?}", p.notices);
    assert!(ungated[0].note.contains("before its gate Jobs ran"), "{}", ungated[0].note);
    assert_eq!(p.status.phase, Some(RunPhase::Failed), "onFailure Hold: {:?}", p.status.message);
    assert!(!jobs_created(&p).iter().any(|(node, _, _)| node == "worker-2"), "no gate Job after the fact");
    // It reaches the version by itself: still Ungated, never Done, and nothing else starts.
    f.upgrade("worker-2");
    f.finish_jobs(JobResult::Succeeded);
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-2"), Some(NodePhase::Ungated));
    assert!(!p.status.completed_nodes.contains(&"worker-2".to_string()));
    // The retry annotation lets the rollout go on past it.
    f.s.run_config.retry = Some("worker-2".into());
    let p = f.step();
    assert!(warnings(&p, "UngatedNodeAccepted").len() == 1, "{:?}", p.notices);
    let end = run_to_end(&mut f);
    assert!(!end.status.completed_nodes.contains(&"worker-2".to_string()), "{:?}", end.status.completed_nodes);
    assert_eq!(node_phase(&end, "worker-2"), Some(NodePhase::Ungated));
    assert!(end.status.nodes.iter().any(|e| e.name == "worker-2" && e.accepted_at.is_some()));
}

#[test]
fn a_node_the_mco_started_before_numo_held_its_pool_is_ungated_and_the_rollout_goes_on() {
    // The MCO started worker-1 before the rollout began (the run config was not valid yet, the pools unpaused).
    let mut f = Fixture::new(3);
    mco_starts(&mut f, "worker-1");
    let first = f.step();
    assert_eq!(node_phase(&first, "worker-1"), None, "nothing is judged before the pools are held");
    f.advance_to_gating();
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-1"), Some(NodePhase::Ungated));
    let entry = p.status.nodes.iter().find(|e| e.name == "worker-1").unwrap();
    assert!(entry.message.as_deref().unwrap_or_default().contains("before numo held its pool"), "{entry:?}");
    assert_ne!(p.status.phase, Some(RunPhase::Failed), "not a hold: {:?}", p.status.message);
    // It stays so, and the other nodes are gated.
    f.upgrade("worker-1");
    let end = run_to_end(&mut f);
    assert_eq!(node_phase(&end, "worker-1"), Some(NodePhase::Ungated));
    assert!(!end.status.completed_nodes.contains(&"worker-1".to_string()));
    let message = end.status.nodes.iter().find(|e| e.name == "worker-1").and_then(|e| e.message.clone());
    assert!(message.unwrap_or_default().contains("before numo held its pool"));
}

#[test]
fn a_node_released_by_numo_is_not_ungated_when_the_mco_starts_it() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    f.finish_jobs(JobResult::Succeeded);
    f.step(); // worker-0 released
    mco_starts(&mut f, "worker-0");
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Upgrading));
    assert!(warnings(&p, "NodeUngated").is_empty());
}

#[test]
fn a_claim_of_numo_0_1_without_a_record_is_paused_again_and_gets_its_record() {
    let mut f = Fixture::new(2);
    f.step();
    // As numo 0.1 claimed it: no record of what numo wrote.
    for pool in f.s.pools.values_mut() {
        if let ClaimAnnotations::Claimed(claim) = &mut pool.claim {
            (claim.written, claim.written_present) = (None, false);
        }
    }
    unpause(&mut f, "worker", "Mozilla");
    let p = f.step();
    assert!(
        p.intents.iter().any(|i| matches!(i, Intent::SteerPool { pool, spec, .. } if pool == "worker" && spec.paused)),
        "{:?}",
        p.intents
    );
    assert!(f.s.pools["worker"].paused);
    f.advance_to_gating();
    for pool in ["worker", "canary"] {
        assert!(f.s.pools[pool].claim.claim().is_some_and(|c| c.written.is_some()), "{pool} has its record");
    }
}

#[test]
fn labels_stripped_from_many_nodes_keep_the_status_and_the_events_bounded() {
    let mut f = Fixture::new(60);
    f.advance_to_gating();
    let label = format!("{RULE_LABEL_PREFIX}/first.ops");
    for node in
        f.s.nodes_mut()
            .values_mut()
            .map(Arc::make_mut)
            .filter(|n| n.name != "worker-0" && n.name.starts_with("worker-"))
    {
        node.labels.remove(&label);
    }
    let p = f.step();
    let relabelled = p.intents.iter().filter(|i| matches!(i, Intent::LabelNode { .. })).count();
    assert_eq!(relabelled, 59, "every node is labelled again");
    let events = warnings(&p, "ForeignChange");
    assert_eq!(events.len(), foreign::MAX_EVENTS + 1, "{events:?}");
    assert!(events.last().is_some_and(|e| e.note.starts_with("49 more changes")), "{:?}", events.last());
    assert_eq!(p.status.foreign_changes.len(), foreign::MAX_RECORDS);
    let held = p.status.blocked_by.iter().find(|b| b.check == "ForeignChange").unwrap();
    assert!(held.message.contains("and 54 more"), "{}", held.message);
}

/// A Job someone made with numo's labels and annotations for `node`'s first gate step, already Succeeded.
fn forged(f: &mut Fixture, node: &str, name: &str, uid: &str) {
    let view = JobView { uid: uid.into(), creator: "kubectl-create".into(), ..job_view(name, node, JobPhase::Gate) };
    f.s.jobs.push(Arc::new(view));
}

#[test]
fn jobs_numo_did_not_create_never_count_never_release_and_are_reported_once() {
    let mut f = Fixture::new(3);
    f.advance_to_gating();
    assert_eq!(node_phase(&f.plan(), "worker-0"), Some(NodePhase::Gating));
    // Someone with the `edit` role forges a succeeded gate Job for every worker, numo's labels and all.
    for i in 0..3 {
        forged(&mut f, &format!("worker-{i}"), &format!("first-forged-{i}"), &format!("forged-{i}"));
    }
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Gating), "its own Job still runs");
    assert!(!p.intents.iter().any(|i| matches!(i, Intent::ReleaseNode { .. })), "{:?}", p.intents);
    assert_eq!(started(&p), 0, "the forgeries take no slot and start no node");
    assert_eq!(node_phase(&p, "worker-1"), None, "still pending");
    let told = warnings(&p, "ForeignJob");
    assert_eq!(told.len(), 3, "{:?}", p.notices);
    assert!(told.iter().all(|n| n.note.contains("kubectl-create") && n.note.contains("did not create")), "{told:?}");
    let records: Vec<&str> =
        p.status.foreign_changes.iter().filter(|c| c.field == "metadata.uid").map(|c| c.object.as_str()).collect();
    assert_eq!(records, ["Job/ops/first-forged-0", "Job/ops/first-forged-1", "Job/ops/first-forged-2"]);
    assert!(!p.status.blocked_by.iter().any(|b| b.check == crate::api::check::FOREIGN_CHANGE), "nothing held up");
    // Told once: the next reconcile says nothing new.
    let again = f.step();
    assert!(warnings(&again, "ForeignJob").is_empty(), "{:?}", again.notices);
    // numo's own Job succeeds: only then is worker-0 released.
    f.finish_jobs(JobResult::Succeeded);
    let released = f.step();
    assert!(released.intents.iter().any(|i| matches!(i, Intent::ReleaseNode { node, .. } if node == "worker-0")));
}

#[test]
fn a_job_deleted_and_created_again_under_numos_name_is_not_numos() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    f.step(); // numo sees its Job and records its uid
    let own = f.s.jobs.iter().position(|j| j.node == "worker-0").unwrap();
    let name = f.s.jobs[own].name.clone();
    // Deleted while it ran, then created again under the same name, succeeded at once.
    f.s.jobs.remove(own);
    forged(&mut f, "worker-0", &name, "another-uid");
    let p = f.step();
    let told = warnings(&p, "ForeignJob");
    assert_eq!(told.len(), 1, "{:?}", p.notices);
    assert!(told[0].note.contains("replaced the Job numo created"), "{}", told[0].note);
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Failed), "its own Job is gone before it finished");
    assert!(!p.intents.iter().any(|i| matches!(i, Intent::ReleaseNode { .. })));
}

/// `pool` as a replace (PUT of its manifest from before the rollout) leaves it: numo's annotations gone, unpaused,
/// its spec the manifest's; `uid` as given (another one: deleted and created again).
fn replace(f: &mut Fixture, pool: &str, uid: &str) {
    let view = f.s.pools.get_mut(pool).unwrap();
    view.claim = ClaimAnnotations::None;
    view.paused = false;
    view.max_unavailable = None;
    view.uid = uid.into();
    view.writers.paused = by("kubectl-replace");
}

#[test]
fn pools_replaced_mid_rollout_are_held_again_with_the_originals_numo_recorded() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    let recorded: Vec<(String, String)> =
        f.s.run_config.status.held_pools.iter().map(|h| (h.name.clone(), h.original.clone())).collect();
    assert_eq!(recorded.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(), ["canary", "worker"]);
    let originals: BTreeMap<String, crate::pool_claim::PoolOriginal> = ["canary", "worker"]
        .iter()
        .map(|p| (p.to_string(), f.s.pools[*p].claim.claim().unwrap().original.clone().unwrap()))
        .collect();
    // A GitOps tool replaces both pools with what it had: the canary now with a selector of its own.
    replace(&mut f, "worker", "uid-worker");
    replace(&mut f, "canary", "uid-canary");
    let intruder =
        LabelSelector { match_labels: Some(BTreeMap::from([("gitops".into(), "yes".into())])), ..Default::default() };
    f.s.pools.get_mut("canary").unwrap().node_selector = Some(intruder);
    let p = f.step();
    let claimed: BTreeMap<String, crate::pool_claim::PoolOriginal> = p
        .intents
        .iter()
        .filter_map(|i| match i {
            Intent::ClaimPool { pool, original, spec, .. } => {
                assert_eq!(spec.paused, pool == "worker", "the target paused again at once: {pool}");
                Some((pool.clone(), original.clone()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(claimed, originals, "claimed again with the originals recorded before the rollout");
    let told = warnings(&p, "ForeignChange");
    assert_eq!(told.len(), 2, "{:?}", p.notices);
    assert!(told.iter().all(|n| n.note.contains("kubectl-replace") && n.note.contains("replaced")), "{told:?}");
    assert!(p.status.blocked_by.iter().any(|b| b.check == crate::api::check::FOREIGN_CHANGE), "the next node waits");
    assert_eq!(p.status.held_pools.len(), 2, "still held by numo's record");
    // The next plans steer them again, and the rollout goes on to the end with the pools restored as recorded.
    let mut last = p;
    for _ in 0..60 {
        if last.status.phase == Some(RunPhase::Completed) {
            break;
        }
        f.answer();
        // The MCO walks the restored pools' nodes back.
        f.s.pools.values_mut().for_each(|pool| pool.updated = true);
        last = f.step();
    }
    assert_eq!(last.status.phase, Some(RunPhase::Completed), "{:?}", last.status.message);
    assert!(last.status.held_pools.is_empty(), "{:?}", last.status.held_pools);
    assert_eq!(f.s.pools["worker"].paused, originals["worker"].paused);
    assert_eq!(f.s.pools["canary"].node_selector, originals["canary"].node_selector, "the canary as it was before");
}

#[test]
fn claims_that_did_not_land_are_not_recorded_nor_reported_as_replaced() {
    let mut f = Fixture::new(2);
    let mut p = first_claims(&mut f);
    assert_eq!(p.status.held_pools.len(), 2, "a plan whose writes land records the pools it claims");
    // The MCO updated the pools after numo read them: the claims' precondition fails, the status is written alone.
    p.writes_failed(&f.s);
    assert!(p.status.held_pools.is_empty(), "{:?}", p.status.held_pools);
    f.s.run_config.status = p.status.clone();
    let next = f.plan();
    assert!(warnings(&next, "ForeignChange").is_empty(), "{:?}", next.notices);
    assert!(!next.status.blocked_by.iter().any(|b| b.check == crate::api::check::FOREIGN_CHANGE));
    assert_eq!(claims(&next), 2, "the claims are tried again: {:?}", next.intents);
    // The canary's claim lands and worker's fails again: the status records neither (the cluster as read showed
    // neither claimed), and the next plan holds the canary by its claim and claims worker again.
    let mut partial =
        Plan { intents: next.intents.iter().filter(|i| !is_claim_of(i, "worker")).cloned().collect(), ..next };
    partial.writes_failed(&f.s);
    assert!(partial.status.held_pools.is_empty(), "{:?}", partial.status.held_pools);
    f.absorb(&partial);
    let again = f.plan();
    assert!(warnings(&again, "ForeignChange").is_empty(), "{:?}", again.notices);
    let claimed: Vec<&Intent> = again.intents.iter().filter(|i| matches!(i, Intent::ClaimPool { .. })).collect();
    assert!(claimed.len() == 1 && is_claim_of(claimed[0], "worker"), "{claimed:?}");
    let held: Vec<&str> = again.status.held_pools.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(held, ["canary", "worker"]);
}

#[test]
fn claims_the_pool_cache_does_not_show_yet_are_not_reported_as_replaced() {
    let mut f = Fixture::new(2);
    let p = first_claims(&mut f);
    // The claims landed and the status that records them was written, but the pool cache does not show the claims
    // yet when the next plan reads that status.
    f.s.run_config.status = p.status.clone();
    let lagging = f.plan();
    let replaced = |p: &Plan| warnings(p, "ForeignChange").into_iter().filter(|w| w.note.contains("replaced")).count();
    assert_eq!(replaced(&lagging), 2, "read alone, the pools look replaced: {:?}", lagging.notices);
    // numo knows its own claims: the cache is behind them, nobody replaced anything.
    f.s.pools_behind = ["canary", "worker"].map(String::from).into();
    let next = f.plan();
    assert!(warnings(&next, "ForeignChange").is_empty(), "{:?}", next.notices);
    assert!(!next.status.blocked_by.iter().any(|b| b.check == crate::api::check::FOREIGN_CHANGE));
    let held: Vec<&str> = next.status.held_pools.iter().map(|h| h.name.as_str()).collect();
    assert_eq!(held, ["canary", "worker"], "the record keeps holding them");
}

/// How many pools `p` claims.
fn claims(p: &Plan) -> usize {
    p.intents.iter().filter(|i| matches!(i, Intent::ClaimPool { .. })).count()
}

/// The plan of `f` that first claims the pools (the ones before it carried out): it claims the canary and worker.
fn first_claims(f: &mut Fixture) -> Plan {
    let mut p = f.plan();
    for _ in 0..4 {
        if claims(&p) > 0 {
            break;
        }
        f.absorb(&p);
        p = f.plan();
    }
    assert_eq!(claims(&p), 2, "the plan claims the canary and worker: {:?}", p.intents);
    p
}

fn is_claim_of(intent: &Intent, name: &str) -> bool {
    matches!(intent, Intent::ClaimPool { pool, .. } if pool == name)
}

#[test]
fn a_pool_deleted_and_created_again_is_held_again_and_reported() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    let original = f.s.pools["worker"].claim.claim().unwrap().original.clone().unwrap();
    // The machine-config operator creates a missing `worker` pool again, unpaused, under a new uid.
    replace(&mut f, "worker", "uid-worker-2");
    f.s.pools.get_mut("worker").unwrap().writers.paused = by("machine-config-operator");
    let p = f.step();
    let claimed = p.intents.iter().find_map(|i| match i {
        Intent::ClaimPool { pool, original, spec, .. } if pool == "worker" && spec.paused => Some(original.clone()),
        _ => None,
    });
    assert_eq!(claimed, Some(original));
    let told = warnings(&p, "ForeignChange");
    assert!(
        told.iter().any(|n| n.note.contains("MachineConfigPool/worker metadata.uid")
            && n.note.contains("deleted and created again")),
        "{told:?}"
    );
    f.absorb(&p);
    let held = f.plan().status.held_pools;
    assert_eq!(held.iter().find(|h| h.name == "worker").map(|h| h.uid.as_str()), Some("uid-worker-2"));
}

/// The SR-IOV network operator pauses `pool` for its drain (`BeforeDrainNode`): its annotation, then `spec.paused`.
fn sriov_pauses(f: &mut Fixture, pool: &str) {
    let view = f.s.pools.get_mut(pool).unwrap();
    view.sriov_holds = true;
    view.paused = true;
    view.writers.paused = by("sriov-network-operator");
}

/// It unpauses `pool` after its drain (`AfterCompleteDrainNode`): `spec.paused: false`, then `Idle`.
fn sriov_unpauses(f: &mut Fixture, pool: &str) {
    let view = f.s.pools.get_mut(pool).unwrap();
    view.paused = false;
    view.sriov_holds = false;
}

#[test]
fn sriovs_pause_of_the_canary_is_its_turn_numo_waits_and_goes_on_after() {
    let mut f = Fixture::new(3);
    f.through_worker_0();
    sriov_pauses(&mut f, "canary");
    let p = f.step();
    assert!(put_backs(&p).is_empty(), "SR-IOV's pause is not put back: {:?}", p.intents);
    assert!(warnings(&p, "ForeignChange").is_empty(), "{:?}", p.notices);
    assert!(p.status.foreign_changes.is_empty(), "{:?}", p.status.foreign_changes);
    assert_eq!(condition(&p, condition::CONTESTED).status, "False");
    assert_eq!(started(&p), 0, "the next node waits for SR-IOV: {:?}", p.intents);
    let held = p.status.blocked_by.iter().find(|b| b.check == crate::api::check::OTHER_OPERATOR);
    let held = held.unwrap_or_else(|| panic!("{:?}", p.status.blocked_by));
    assert!(held.message.contains("SR-IOV network operator") && held.message.contains("canary"), "{}", held.message);
    assert_eq!(condition(&p, condition::CONFIG_VALIDATED).status, "True", "a canary SR-IOV paused is no bad config");
    assert!(f.s.pools["canary"].paused, "numo left SR-IOV's pause alone");
    // SR-IOV's drain is done: it unpauses and numo goes on.
    sriov_unpauses(&mut f, "canary");
    let p = f.step();
    assert!(!p.status.blocked_by.iter().any(|b| b.check == crate::api::check::OTHER_OPERATOR), "{:?}", p.status);
    assert!(p.status.foreign_changes.is_empty());
}

#[test]
fn a_pause_of_the_canary_without_sriovs_annotation_is_put_back() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    let view = f.s.pools.get_mut("canary").unwrap();
    view.paused = true;
    view.writers.paused = by("kubectl-patch");
    let p = f.step();
    assert!(
        put_backs(&p).iter().any(|(pool, back)| *pool == "canary" && back.paused == Some(false)),
        "{:?}",
        p.intents
    );
    assert!(!p.status.blocked_by.iter().any(|b| b.check == crate::api::check::OTHER_OPERATOR));
}

#[test]
fn sriovs_unpause_of_a_target_pool_numo_holds_is_paused_again_first() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    // SR-IOV's pause of the held pool changes nothing: numo holds it paused already.
    sriov_pauses(&mut f, "worker");
    let p = f.step();
    assert!(put_backs(&p).is_empty(), "{:?}", p.intents);
    assert!(!p.status.blocked_by.iter().any(|b| b.check == crate::api::check::OTHER_OPERATOR));
    // Its unpause (let through by the policy only when it releases no node) is paused again before anything else.
    sriov_unpauses(&mut f, "worker");
    let p = f.step();
    assert!(
        matches!(p.intents.first(), Some(Intent::PutBackPool { pool, put_back, .. })
        if pool == "worker" && put_back.paused == Some(true)),
        "{:?}",
        p.intents
    );
}
