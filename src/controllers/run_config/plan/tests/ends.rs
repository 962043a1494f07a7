//! Skips, the end of a rollout, deletion, conflicts, restarts and scale.

use super::*;

#[test]
fn a_node_that_does_not_reach_the_version_in_time_fails_and_a_retry_restarts_its_clock() {
    let mut f = Fixture::new(1);
    f.s.run_config.spec.node_timeout = Some("10m".into());
    f.advance_to_gating();
    let p = f.step();
    let requeue = p.requeue_after.expect("a reconcile is due at the timeout");
    assert!(requeue <= Duration::from_secs(600) && requeue > Duration::from_secs(590), "{requeue:?}");
    f.finish_jobs(JobResult::Succeeded);
    f.step();
    f.step();
    f.s.now += Duration::from_secs(601);
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Failed));
    assert_eq!(condition(&p, condition::NODE_UPGRADE).reason, "NodeTimedOut");
    assert!(p.status.nodes[0].message.as_deref().unwrap().contains("did not reach the target version within 10m"));
    assert_eq!(p.status.phase, Some(RunPhase::Failed));

    f.s.run_config.retry = Some("worker-0".into());
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Upgrading));
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Upgrading), "the clock restarted");
}

#[test]
fn skipped_nodes_are_not_gated_and_count_as_finished() {
    let mut f = Fixture::new(2);
    f.s.run_config.skip = BTreeSet::from(["worker-0".to_string()]);
    f.advance_to_gating();
    assert!(f.s.jobs.iter().all(|j| j.node == "worker-1"));
    let p = f.plan();
    assert_eq!(p.status.skipped_nodes, vec!["worker-0".to_string()]);
    assert!(f.s.nodes["worker-0"].labels.keys().any(|k| k.starts_with(RULE_LABEL_PREFIX)), "held in its own pool");
}

#[test]
fn nodes_of_other_pools_the_canary_would_match_are_neither_held_nor_gated_nor_moved() {
    let mut f = Fixture::new(2);
    f.s.pools.insert("infra".into(), pool("infra", selector("node-role.kubernetes.io/infra")));
    f.s.nodes_mut().insert("infra-0".into(), ready_node("infra-0", &["worker", "infra"], OLD));
    f.advance_to_gating();
    let held = |f: &Fixture, node: &str| f.s.nodes[node].labels.keys().any(|k| k.starts_with(RULE_LABEL_PREFIX));
    assert!(!held(&f, "infra-0"), "the steered canary takes only nodes numo released: nothing to hold");
    assert!(!held(&f, "master-0"), "the canary never selects masters");
    let selectors: Vec<crate::membership::PoolSelector<'_>> =
        f.s.pools
            .values()
            .map(|p| crate::membership::PoolSelector { name: &p.name, node_selector: p.node_selector.as_ref() })
            .collect();
    let infra = crate::membership::pool_of(&f.s.nodes["infra-0"].labels, &selectors);
    assert_eq!(infra, Ok(Some("infra")), "it stays in its own pool while the canary is steered");
    assert!(!f.s.pools["infra"].paused, "its own pool is left alone");
    assert!(f.s.pools["infra"].owner().is_none());
    let p = run_to_end(&mut f);
    assert_eq!(p.status.total_nodes, 2, "only target nodes are gated");
    assert!(f.s.jobs.iter().all(|j| j.node != "infra-0"));
    assert!(!held(&f, "infra-0"), "labels removed at the restore");
}

#[test]
fn a_node_skipped_after_its_release_is_held_again_and_the_next_node_goes() {
    let mut f = Fixture::new(2);
    f.s.run_config.spec.node_timeout = Some("10m".into());
    f.advance_to_gating();
    f.step();
    f.finish_jobs(JobResult::Succeeded);
    f.step();
    f.step();
    assert!(!f.s.nodes["worker-0"].labels.keys().any(|k| k.starts_with(RULE_LABEL_PREFIX)), "released");
    f.s.now += Duration::from_secs(601);
    assert_eq!(f.step().status.phase, Some(RunPhase::Failed));

    f.s.run_config.skip = BTreeSet::from(["worker-0".to_string()]);
    let p = f.step();
    assert!(f.s.nodes["worker-0"].labels.keys().any(|k| k.starts_with(RULE_LABEL_PREFIX)), "held again");
    assert_eq!(p.status.skipped_nodes, vec!["worker-0".to_string()]);
    f.step();
    assert!(f.s.jobs.iter().any(|j| j.node == "worker-1"), "the next node started");
    let p = run_to_end(&mut f);
    assert_eq!(p.status.phase, Some(RunPhase::Completed));
    assert!(f.s.nodes.values().all(|n| !n.labels.keys().any(|k| k.starts_with(RULE_LABEL_PREFIX))), "labels gone");
}

#[test]
fn spec_paused_stops_new_nodes_from_starting() {
    let mut f = Fixture::new(2);
    f.s.run_config.spec.paused = true;
    f.advance_to_gating();
    let p = f.step();
    assert!(f.s.jobs.is_empty());
    assert_eq!(p.status.phase, Some(RunPhase::Waiting));
    assert!(p.status.message.as_deref().unwrap().contains("spec.paused"));
}

#[test]
fn nodes_already_at_the_target_version_are_done_without_jobs() {
    let mut f = Fixture::new(2);
    f.upgrade("worker-0");
    f.advance_to_gating();
    assert!(f.s.jobs.iter().all(|j| j.node == "worker-1"));
    let p = f.plan();
    assert!(p.status.completed_nodes.contains(&"worker-0".to_string()));
}

#[test]
fn at_the_end_every_pool_is_restored_exactly_and_every_label_removed() {
    let mut f = Fixture::new(3);
    f.s.pools.get_mut("worker").unwrap().has_annotations = false;
    let before: BTreeMap<_, _> =
        f.s.pools.iter().map(|(n, p)| (n.clone(), (p.paused, p.node_selector.clone()))).collect();
    let p = run_to_end(&mut f);
    let after: BTreeMap<_, _> =
        f.s.pools.iter().map(|(n, p)| (n.clone(), (p.paused, p.node_selector.clone()))).collect();
    assert_eq!(before, after);
    assert!(f.s.pools.values().all(|p| p.owner().is_none()));
    let key = crate::labels::rule_label("first", "ops");
    assert!(f.s.nodes.values().all(|n| !n.labels.contains_key(&key)));
    assert_eq!(p.status.progress.as_deref(), Some("3/3"));
    assert_eq!(condition(&p, condition::UPGRADE_AVAILABLE).status, "False");
    assert!(p.status.finished_at.is_some());
    assert_eq!(f.s.jobs.iter().filter(|j| j.phase == JobPhase::Gate).count(), 3);
    assert_eq!(f.s.jobs.iter().filter(|j| j.phase == JobPhase::Cleanup).count(), 3);
    assert!(f.plan().intents.is_empty(), "a completed rollout is stable");
}

#[test]
fn restoring_takes_the_labels_and_marks_off_before_it_restores_the_pools() {
    let mut f = Fixture::new(1);
    for _ in 0..50 {
        let p = f.plan();
        if p.status.phase == Some(RunPhase::Restoring) {
            // A node leaves the canary for its own pool while that pool is still steered to take it: it never
            // matches two custom pools (its pool restored while the canary still takes it) or none.
            let last_unlabel = p.intents.iter().rposition(|i| matches!(i, Intent::UnlabelNode { .. }));
            let first_restore = p.intents.iter().position(|i| matches!(i, Intent::RestorePool { .. }));
            assert!(last_unlabel.is_some() && last_unlabel < first_restore, "{:?}", p.intents);
            return;
        }
        f.absorb(&p);
        f.finish_jobs(JobResult::Succeeded);
        f.upgrade("worker-0");
    }
    panic!("never restored");
}

#[test]
fn deleting_restores_pools_and_labels_before_the_finalizer_goes() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    f.s.run_config.deleting = true;
    let p = f.step();
    assert!(p.intents.iter().any(|i| matches!(i, Intent::RestorePool { pool, .. } if pool == "worker")));
    assert!(p.intents.iter().any(|i| matches!(i, Intent::RestorePool { pool, .. } if pool == "canary")));
    assert_eq!(p.intents.iter().filter(|i| matches!(i, Intent::UnlabelNode { .. })).count(), 2);
    assert!(!p.intents.contains(&Intent::RemoveFinalizer));
    let p = f.step();
    assert_eq!(p.intents, vec![Intent::RemoveFinalizer]);
    assert_eq!(f.s.pools["worker"].node_selector, Some(selector("node-role.kubernetes.io/worker")));
    assert!(!f.s.pools["worker"].paused);
    assert_eq!(f.s.pools["canary"].node_selector, Some(canary_selector()));
}

#[test]
fn a_pool_driven_by_another_run_config_makes_this_one_wait_naming_it() {
    let mut f = Fixture::new(1);
    f.s.run_configs.insert("team/other".into());
    let worker = f.s.pools.get_mut("worker").unwrap();
    let original = PoolOriginal { paused: false, node_selector: worker.node_selector.clone(), ..Default::default() };
    worker.claim = ClaimAnnotations::Claimed(PoolClaim {
        owner: "team/other".into(),
        original: Ok(original),
        written: None,
        written_present: false,
    });
    let p = f.plan();
    assert!(only_finalizer_or_nothing(&p), "{:?}", p.intents);
    assert_eq!(p.status.phase, Some(RunPhase::Waiting));
    let c = condition(&p, condition::CONFLICT);
    assert_eq!(c.status, "True");
    assert!(c.message.contains("team/other"), "{}", c.message);
}

#[test]
fn a_stale_claim_is_taken_over_keeping_its_recorded_original() {
    let mut f = Fixture::new(1);
    let recorded = PoolOriginal {
        paused: false,
        node_selector: Some(selector("node-role.kubernetes.io/worker")),
        ..Default::default()
    };
    let worker = f.s.pools.get_mut("worker").unwrap();
    worker.claim = ClaimAnnotations::Claimed(PoolClaim {
        owner: "team/deleted".into(),
        original: Ok(recorded.clone()),
        written: None,
        written_present: false,
    });
    worker.paused = true;
    let p = f.plan();
    let record = p.intents.iter().find_map(|i| match i {
        Intent::ClaimPool { pool, original, .. } if pool == "worker" => Some(original.clone()),
        _ => None,
    });
    assert_eq!(record, Some(recorded));
}

#[test]
fn an_invalid_config_mid_rollout_holds_without_restoring() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    f.s.rules[0].found = None;
    let p = f.plan();
    assert_eq!(p.status.phase, Some(RunPhase::Invalid));
    assert!(p.intents.is_empty());
    assert!(p.status.message.as_deref().unwrap().contains("held"));
}

#[test]
fn a_restart_replans_from_the_status_numo_wrote_and_never_asks_for_a_second_job() {
    let names = |p: &Plan| -> Vec<String> {
        p.intents
            .iter()
            .filter_map(|i| match i {
                Intent::CreateJob(job) => job.metadata.name.clone(),
                _ => None,
            })
            .collect()
    };
    let mut f = Fixture::new(2);
    for _ in 0..3 {
        f.step();
    }
    let asked = f.plan();
    assert_eq!(jobs_created(&asked), [("worker-0".to_string(), "gate".to_string(), 1)]);
    let recorded = asked.status.nodes.iter().flat_map(|e| &e.jobs).find(|r| r.requested).cloned();
    assert_eq!(recorded.as_ref().map(|r| r.name.clone()), names(&asked).first().cloned(), "named before it exists");
    // numo stopped after the status was written, before the create: it creates the Job the status names.
    f.s.run_config.status = asked.status.clone();
    let again = f.plan();
    assert_eq!(names(&again), names(&asked), "the same name again: a Job of that name is numo's own");
    f.absorb(&again);
    // Once it exists, a restart asks for nothing: the Job the status names is there.
    let after = f.plan();
    assert!(names(&after).is_empty(), "{:?}", names(&after));
    assert_eq!(node_phase(&after, "worker-0"), Some(NodePhase::Gating));
    let uid = after.status.nodes.iter().flat_map(|e| &e.jobs).find_map(|r| r.uid.clone());
    assert!(uid.is_some_and(|u| u.len() == crate::api::mutex_run_config::UID_KEPT), "its uid recorded once seen");
    assert!(!after.intents.iter().any(|i| matches!(i, Intent::LabelNode { .. })));
}

#[test]
fn conditions_carry_the_generation_and_keep_their_transition_time() {
    let mut f = Fixture::new(1);
    f.s.run_config.generation = Some(7);
    let p = f.step();
    let first = condition(&p, condition::CONFIG_VALIDATED).clone();
    assert_eq!(first.observed_generation, Some(7));
    let p = f.step();
    assert_eq!(condition(&p, condition::CONFIG_VALIDATED).last_transition_time, first.last_transition_time);
    assert_eq!(p.status.observed_generation, Some(7));
    let _ = Time(f.s.now);
}

/// OpenShift supports 2,000 nodes: late in such a rollout (1,990 nodes done, their Jobs kept), the status stays far
/// below etcd's 1.5 MiB object limit, and a reconcile writes only for the nodes in flight.
#[test]
fn at_two_thousand_nodes_the_status_stays_small_and_writes_are_for_the_nodes_in_flight_only() {
    const NODES: usize = 2000;
    const CONCURRENCY: usize = 10;
    let mut f = Fixture::new(NODES);
    f.s.run_config.spec.concurrency = CONCURRENCY as u32;
    f.advance_to_gating();
    let label = f.s.rules[0].label();
    // As a long rollout leaves them: released, upgraded, gate and cleanup Jobs succeeded, counted as done, and home
    // in their paused pool (numo's mark taken off once each was done).
    let mut done = Vec::new();
    for i in 0..NODES - CONCURRENCY {
        let name = format!("worker-{i}");
        let node = f.s.nodes_mut().get_mut(&name).map(Arc::make_mut).unwrap();
        node.labels.remove(&label);
        node.version = Some(NEW.into());
        for phase in [JobPhase::Gate, JobPhase::Cleanup] {
            let job = format!("first-{i}-{}", phase.as_str());
            f.s.jobs.push(Arc::new(job_view(&job, &name, phase)));
        }
        // Real node names are longer (worker-N.<cluster>.<domain>); the status lists the done ones by name.
        done.push(format!("{name}.cluster-with-a-long-name.apps.example.com"));
    }
    f.s.run_config.status.completed_nodes = (0..NODES - CONCURRENCY).map(|i| format!("worker-{i}")).collect();
    // Done, they have no entries left (nor records of the Jobs numo asked for them).
    f.s.run_config.status.nodes.clear();

    let p = f.step();
    assert_eq!(jobs_created(&p).len(), CONCURRENCY, "the last {CONCURRENCY} nodes start together");
    assert_eq!(p.intents.len(), CONCURRENCY, "{:?}", p.intents);
    assert_eq!(p.status.nodes.len(), CONCURRENCY, "full entries only for the nodes in flight");
    assert_eq!(p.status.completed_nodes.len(), NODES - CONCURRENCY);
    assert_eq!(p.status.progress.as_deref(), Some("1990/2000"));

    // With the names real clusters use, the status is a small fraction of the 1.5 MiB limit.
    let mut status = p.status.clone();
    status.completed_nodes = done.into();
    let bytes = serde_json::to_vec(&status).unwrap().len();
    assert!(bytes < 256 * 1024, "the status of a 2,000-node rollout takes {bytes} bytes");

    // Nothing changed: nothing to write.
    let p = f.plan();
    assert!(p.intents.is_empty(), "{:?}", p.intents);
}

#[test]
fn the_status_of_2000_nodes_100_in_flight_stays_under_80_kib_at_every_step() {
    // Two rules with cleanup Jobs, 2,000 workers, 100 at a time, every Job done at once: at the worst moments
    // a hundred nodes are in the same step with two Job records each.
    let mut f = Fixture::new(2000).rules(vec![rule("storage-healthy", true), rule("etcd-backup", true)]);
    f.s.run_config.spec.concurrency = 100;
    let (mut largest, mut in_flight_then) = (0, 0);
    loop {
        let p = f.step();
        // The run config's metadata (its managed fields too) and spec take about 3 KiB besides its status.
        let size = serde_json::to_vec(&p.status).map(|json| json.len()).unwrap_or(usize::MAX) + 3 * 1024;
        if size > largest {
            (largest, in_flight_then) = (size, p.status.nodes.len());
        }
        if p.status.phase == Some(RunPhase::Restoring) {
            break;
        }
        f.answer();
    }
    assert_eq!(in_flight_then, 100, "measured with every slot taken");
    assert!(largest < 80 * 1024, "the run config reached {largest} bytes");
}

#[test]
fn every_finished_job_reaches_the_metrics_though_entries_drop_their_records() {
    let mut f = Fixture::new(3).rules(vec![rule("storage-healthy", true), rule("etcd-backup", true)]);
    let mut reported = BTreeSet::new();
    for _ in 0..200 {
        let p = f.step();
        reported.extend(p.finished_jobs.iter().map(|j| (j.name.clone(), format!("{:?}", j.result))));
        if p.status.phase == Some(RunPhase::Completed) {
            break;
        }
        if p.status.phase == Some(RunPhase::Restoring) {
            f.s.pools.values_mut().for_each(|pool| pool.updated = true);
        }
        f.answer();
    }
    let created: BTreeSet<(String, String)> =
        f.s.jobs.iter().map(|j| (j.name.clone(), "Succeeded".to_string())).collect();
    assert_eq!(created.len(), 12, "two gate and two cleanup Jobs for each of three nodes");
    assert_eq!(reported, created);
}

#[test]
fn a_target_pool_reported_updated_before_it_took_its_nodes_back_is_still_walked() {
    let mut f = Fixture::new(3);
    let mut p = f.step();
    while p.status.phase != Some(RunPhase::Restoring) {
        f.answer();
        p = f.step();
    }
    // The MCO synced the restored worker pool while the canary (not restored yet in its eyes) still held every node:
    // Updated, with no machine.
    f.s.pools.values_mut().for_each(|pool| pool.updated = true);
    f.s.pools.get_mut("worker").unwrap().machine_count = Some(0);
    let p = f.step();
    assert_eq!(p.status.phase, Some(RunPhase::Restoring), "{:?}", p.status.message);
    assert!(p.status.message.as_deref().unwrap_or_default().contains("worker"), "{:?}", p.status.message);
    // It takes them back and walks them to its own rendered config: Updated with every machine.
    f.s.pools.get_mut("worker").unwrap().machine_count = Some(3);
    assert_eq!(f.step().status.phase, Some(RunPhase::Completed));
}
