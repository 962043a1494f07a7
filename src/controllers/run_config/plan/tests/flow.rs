//! The rollout from start to gating: validation, pausing, labelling, steering, gating, failures.

use super::*;

#[test]
fn a_new_run_config_gets_the_finalizer() {
    let mut f = Fixture::new(1);
    f.s.run_config.has_finalizer = false;
    assert_eq!(f.plan().intents.first(), Some(&Intent::AddFinalizer));
}

#[test]
fn a_missing_rule_is_invalid_and_changes_nothing() {
    let mut f = Fixture::new(2);
    f.s.rules[0].found = None;
    let p = f.plan();
    assert!(only_finalizer_or_nothing(&p), "{:?}", p.intents);
    assert_eq!(p.status.phase, Some(RunPhase::Invalid));
    let c = condition(&p, condition::CONFIG_VALIDATED);
    assert_eq!(c.status, "False");
    assert!(c.message.contains("MutexRule ops/first not found"), "{}", c.message);
    assert!(p.notices.iter().any(|n| n.warning && n.reason == "InvalidConfig"));
}

#[test]
fn a_rule_and_target_not_validated_yet_are_awaited_without_a_warning_or_a_change() {
    let mut f = Fixture::new(2);
    f.s.rules[0].found.as_mut().unwrap().valid = Err(Unusable::NotValidatedYet);
    f.s.targets[0].found = Some(Err(Unusable::NotValidatedYet));
    let p = f.plan();
    assert!(only_finalizer_or_nothing(&p), "{:?}", p.intents);
    assert_eq!(p.status.phase, Some(RunPhase::Waiting));
    let c = condition(&p, condition::CONFIG_VALIDATED);
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("Unknown", "AwaitingValidation"));
    for unchecked in [condition::UPGRADE_CHECKED, condition::UPGRADE_AVAILABLE, condition::UPGRADE_READY] {
        let c = condition(&p, unchecked);
        assert_eq!((c.status.as_str(), c.reason.as_str()), ("Unknown", "NotChecked"), "{unchecked}");
    }
    assert!(
        c.message.contains("MutexRule ops/first") && c.message.contains("MutexTarget ops/workers"),
        "{}",
        c.message
    );
    assert!(!p.notices.iter().any(|n| n.warning), "{:?}", p.notices);

    // A real problem beside them is reported as invalid at once.
    f.s.rules.push(RuleView { found: None, ..rule("second", false) });
    let p = f.plan();
    assert_eq!(p.status.phase, Some(RunPhase::Invalid));
    assert!(condition(&p, condition::CONFIG_VALIDATED).message.contains("MutexRule ops/second not found"));
}

#[test]
fn an_invalid_rule_a_missing_target_and_a_missing_pool_are_each_named() {
    let mut f = Fixture::new(1);
    f.s.rules[0].found.as_mut().unwrap().valid = Err(Unusable::Invalid("spec.jobSpec.template: missing".into()));
    f.s.targets.push(TargetView { namespace: "ops".into(), name: "gone".into(), found: None });
    f.s.targets.push(TargetView {
        namespace: "ops".into(),
        name: "infra".into(),
        found: Some(Ok(vec!["infra".into()])),
    });
    let message = condition(&f.plan(), condition::CONFIG_VALIDATED).message.clone();
    assert!(message.contains("MutexRule ops/first is invalid: spec.jobSpec.template: missing"), "{message}");
    assert!(message.contains("MutexTarget ops/gone not found"), "{message}");
    assert!(message.contains("MachineConfigPool infra of MutexTarget ops/infra not found"), "{message}");
}

#[test]
fn the_canary_must_exist_be_unpaused_and_not_be_a_target() {
    let mut f = Fixture::new(1);
    f.s.pools.get_mut("canary").unwrap().paused = true;
    let p = f.plan();
    assert!(condition(&p, condition::CONFIG_VALIDATED).message.contains("canary MachineConfigPool canary is paused"));
    assert!(only_finalizer_or_nothing(&p));

    let mut f = Fixture::new(1);
    f.s.run_config.spec.canary.name = "worker".into();
    let p = f.plan();
    assert!(condition(&p, condition::CONFIG_VALIDATED).message.contains("is also a target pool"));
    assert!(only_finalizer_or_nothing(&p));

    let mut f = Fixture::new(1);
    f.s.run_config.spec.canary.name = "nope".into();
    assert!(condition(&f.plan(), condition::CONFIG_VALIDATED)
        .message
        .contains("canary MachineConfigPool nope not found"));
}

#[test]
fn a_target_pool_in_image_mode_is_refused_unless_its_second_reboot_is_accepted_with_a_canary_in_image_mode() {
    let mut f = Fixture::new(2);
    f.s.image_builds.insert("worker".into(), "worker-image".into());
    f.s.image_builds.insert("canary".into(), "canary-image".into());
    let p = f.step();
    let validated = condition(&p, condition::CONFIG_VALIDATED);
    assert_eq!(validated.status, "False", "a canary in image mode is not enough: two builds never share a digest");
    assert!(validated.message.contains("MachineOSConfig worker-image"), "{}", validated.message);
    assert!(validated.message.contains("reboots a second time"), "{}", validated.message);
    assert!(validated.message.contains("spec.acceptImageModeSecondReboot: true"), "{}", validated.message);
    assert!(only_finalizer_or_nothing(&p), "nothing is changed: {:?}", p.intents);

    // Accepted, but the canary has no image of its own: a released node would boot the plain OS.
    f.s.run_config.spec.accept_image_mode_second_reboot = true;
    f.s.image_builds.remove("canary");
    let p = f.step();
    let validated = condition(&p, condition::CONFIG_VALIDATED);
    assert_eq!(validated.status, "False");
    assert!(validated.message.contains("Give the canary a MachineOSConfig"), "{}", validated.message);
    assert!(only_finalizer_or_nothing(&p), "nothing is changed: {:?}", p.intents);

    // Accepted, and the canary builds its own image too: the admin keeps the two alike, numo goes on.
    f.s.image_builds.insert("canary".into(), "canary-image".into());
    let p = f.step();
    assert_eq!(condition(&p, condition::CONFIG_VALIDATED).status, "True");
}

#[test]
fn the_arbiter_pool_cannot_be_a_target_nor_a_built_in_pool_the_canary() {
    let mut f = Fixture::new(1);
    f.s.pools.insert("arbiter".into(), pool("arbiter", selector("node-role.kubernetes.io/arbiter")));
    f.s.targets[0].found = Some(Ok(vec!["arbiter".into()]));
    let p = f.step();
    let validated = condition(&p, condition::CONFIG_VALIDATED);
    assert!(validated.message.contains("names the arbiter pool"), "{}", validated.message);
    let mut f = Fixture::new(1);
    f.s.run_config.spec.canary.name = "worker".into();
    f.s.targets[0].found = Some(Ok(vec!["canary".into()]));
    let p = f.step();
    let validated = condition(&p, condition::CONFIG_VALIDATED);
    assert!(validated.message.contains("the canary cannot be the worker pool"), "{}", validated.message);
}

#[test]
fn the_master_pool_cannot_be_a_target() {
    let mut f = Fixture::new(1);
    f.s.targets[0].found = Some(Ok(vec!["master".into()]));
    let p = f.plan();
    assert!(condition(&p, condition::CONFIG_VALIDATED).message.contains("names the master pool"));
    assert!(only_finalizer_or_nothing(&p));
}

#[test]
fn without_an_upgrade_the_run_config_is_idle() {
    let mut f = Fixture::new(2);
    f.upgrade("worker-0");
    f.upgrade("worker-1");
    let p = f.plan();
    assert!(only_finalizer_or_nothing(&p));
    assert_eq!(p.status.phase, Some(RunPhase::Idle));
    assert_eq!(condition(&p, condition::UPGRADE_AVAILABLE).status, "False");
}

#[test]
fn a_missing_cluster_version_is_reported() {
    let mut f = Fixture::new(1);
    f.s.cluster = None;
    let p = f.plan();
    assert_eq!(condition(&p, condition::UPGRADE_CHECKED).status, "False");
    assert!(only_finalizer_or_nothing(&p));
}

#[test]
fn pools_are_paused_and_recorded_as_soon_as_an_upgrade_is_available() {
    let mut f = Fixture::new(2);
    f.s.cluster.as_mut().unwrap().control_plane_completed = false;
    let p = f.step();
    assert_eq!(p.status.phase, Some(RunPhase::Pausing));
    assert_eq!(condition(&p, condition::UPGRADE_AVAILABLE).status, "True");
    let writes: Vec<_> = p
        .intents
        .iter()
        .filter_map(|i| match i {
            Intent::ClaimPool { pool, original, spec, owner, .. } => Some((
                pool.as_str(),
                Some(original.clone()),
                spec.paused,
                f.s.pools[pool].node_selector.clone(),
                owner.as_str(),
            )),
            _ => None,
        })
        .collect();
    assert_eq!(writes.len(), 2, "canary and worker are claimed: {writes:?}");
    let (name, record, paused, sel, claim) = &writes[1];
    assert_eq!(*name, "worker");
    assert!(*paused);
    assert_eq!(*claim, ME);
    assert_eq!(record.as_ref().unwrap().node_selector, Some(selector("node-role.kubernetes.io/worker")));
    assert!(!record.as_ref().unwrap().paused);
    assert_eq!(sel.as_ref(), Some(&selector("node-role.kubernetes.io/worker")), "selector untouched while pausing");
    let (name, _, paused, _, _) = &writes[0];
    assert_eq!(*name, "canary");
    assert!(!*paused, "the canary is never paused");

    // While the control plane upgrades: paused, nothing labelled.
    let p = f.step();
    assert_eq!(p.status.phase, Some(RunPhase::Waiting));
    assert_eq!(condition(&p, condition::TARGET_POOLS_PAUSED).status, "True");
    assert_eq!(condition(&p, condition::UPGRADE_READY).status, "False");
    assert!(p.intents.is_empty(), "{:?}", p.intents);
}

#[test]
fn nodes_are_labelled_then_pools_steered_then_gated_one_at_a_time() {
    let mut f = Fixture::new(3);
    f.step(); // claim + pause
    let p = f.step();
    let labelled: Vec<_> = p.intents.iter().filter(|i| matches!(i, Intent::LabelNode { .. })).collect();
    assert_eq!(labelled.len(), 3);
    assert!(!p.intents.iter().any(|i| matches!(i, Intent::SteerPool { .. })), "no steering before labels");
    let key = crate::labels::rule_label("first", "ops");
    assert_eq!(p.intents[0], Intent::LabelNode { node: "worker-0".into(), labels: vec![key.clone()] });

    let p = f.step();
    assert_eq!(condition(&p, condition::MUTEX_RULES_APPLIED).status, "True");
    let steer: BTreeMap<_, _> = p
        .intents
        .iter()
        .filter_map(|i| match i {
            Intent::SteerPool { pool, spec, .. } => Some((pool.clone(), spec.node_selector.clone().unwrap())),
            _ => None,
        })
        .collect();
    assert!(!steer.contains_key("worker"), "the built-in worker pool's selector is the MCO's: {steer:?}");
    let canary = &steer["canary"];
    assert_eq!(canary.match_labels, canary_selector().match_labels);
    let exprs = canary.match_expressions.as_ref().unwrap();
    assert_eq!(exprs.len(), 1, "the canary's own expressions are set aside while steered");
    assert_eq!(
        (exprs[0].key.as_str(), exprs[0].operator.as_str(), exprs[0].values.clone()),
        (crate::labels::RELEASED, "In", Some(vec!["canary".to_string()])),
        "the canary takes only the nodes numo marks released"
    );
    assert!(jobs_created(&p).is_empty(), "no Job before the pools are steered");

    let p = f.step();
    assert_eq!(condition(&p, condition::MCP_UPDATED).status, "True");
    assert_eq!(jobs_created(&p), vec![("worker-0".to_string(), "gate".to_string(), 1)]);
    assert_eq!(p.status.phase, Some(RunPhase::Upgrading));
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Gating));
    assert_eq!(p.status.pending_nodes, 2);
    assert_eq!(p.status.progress.as_deref(), Some("0/3"));
    assert!(p.notices.iter().any(|n| n.reason == "NodeGating"));
}

#[test]
fn gate_jobs_run_in_rule_order_then_the_node_is_released_upgraded_and_cleaned_up() {
    let mut f = Fixture::new(2).rules(vec![rule("first", false), rule("second", true)]);
    f.advance_to_gating();
    assert_eq!(f.s.jobs.len(), 1);
    assert_eq!(f.s.jobs[0].rule, "ops/first");
    let p = f.step();
    assert!(jobs_created(&p).is_empty(), "the second rule waits for the first");
    f.finish_jobs(JobResult::Succeeded);
    let p = f.step();
    assert_eq!(jobs_created(&p), vec![("worker-0".to_string(), "gate".to_string(), 1)]);
    assert_eq!(f.s.jobs[1].rule, "ops/second");
    f.finish_jobs(JobResult::Succeeded);

    let p = f.step();
    let keys = vec![crate::labels::rule_label("first", "ops"), crate::labels::rule_label("second", "ops")];
    let release = Intent::ReleaseNode { node: "worker-0".into(), labels: keys, mark: "canary".into() };
    assert!(p.intents.contains(&release), "{:?}", p.intents);
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Released));

    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Upgrading));
    assert!(jobs_created(&p).is_empty(), "nothing runs while the MCO upgrades the node");
    assert!(p.status.nodes[0].released_at.is_some());

    f.upgrade("worker-0");
    f.s.nodes_mut().get_mut("worker-0").map(Arc::make_mut).unwrap().ready = false;
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Upgrading), "a node that is not Ready is not done");
    f.s.nodes_mut().get_mut("worker-0").map(Arc::make_mut).unwrap().ready = true;
    let p = f.step();
    assert_eq!(jobs_created(&p), vec![("worker-0".to_string(), "cleanup".to_string(), 1)]);
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::CleaningUp));
    assert_eq!(f.s.jobs.last().unwrap().rule, "ops/second", "only rules with a cleanup spec clean up");

    f.finish_jobs(JobResult::Succeeded);
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Done));
    assert_eq!(jobs_created(&p), vec![("worker-1".to_string(), "gate".to_string(), 1)], "the next node starts");
    assert_eq!(p.status.progress.as_deref(), Some("1/2"));
    assert!(p.notices.iter().any(|n| n.reason == "NodeUpgraded"));
}

#[test]
fn concurrency_bounds_the_nodes_in_flight_in_a_stable_order() {
    let mut f = Fixture::new(5);
    f.s.run_config.spec.concurrency = 2;
    f.advance_to_gating();
    let started: BTreeSet<_> = f.s.jobs.iter().map(|j| j.node.clone()).collect();
    assert_eq!(started, BTreeSet::from(["worker-0".to_string(), "worker-1".to_string()]));
    let p = f.step();
    assert!(jobs_created(&p).is_empty());
    assert_eq!(p.status.nodes.len(), 2);
}

#[test]
fn a_failed_gate_job_holds_the_rollout_and_the_retry_annotation_resumes_it() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    f.finish_jobs(JobResult::Failed);
    let p = f.step();
    assert_eq!(p.status.phase, Some(RunPhase::Failed));
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Failed));
    assert!(jobs_created(&p).is_empty(), "no other node starts");
    assert!(!p.intents.iter().any(|i| matches!(i, Intent::RestorePool { .. } | Intent::UnlabelNode { .. })));
    assert_eq!(condition(&p, condition::JOB_RUN).status, "False");
    assert_eq!(condition(&p, condition::NODE_UPGRADE).reason, "NodeFailed");
    let warning = p.notices.iter().find(|n| n.reason == "NodeFailed").unwrap();
    assert!(warning.warning && warning.note.contains(crate::labels::RETRY_ANNOTATION), "{}", warning.note);
    assert!(p.status.message.as_deref().unwrap().contains("BackoffLimitExceeded"));

    let p = f.step();
    assert!(p.notices.iter().all(|n| n.reason != "NodeFailed"), "the failure is announced once");

    f.s.run_config.retry = Some("worker-0".into());
    let p = f.step();
    assert_eq!(jobs_created(&p), vec![("worker-0".to_string(), "gate".to_string(), 2)]);
    assert!(p.intents.contains(&Intent::ClearRetry));
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Gating));
    f.finish_jobs(JobResult::Succeeded);
    let p = f.step();
    assert!(p.intents.iter().any(|i| matches!(i, Intent::ReleaseNode { node, .. } if node == "worker-0")));
}

#[test]
fn with_on_failure_continue_other_nodes_go_on_and_the_pools_stay_paused() {
    let mut f = Fixture::new(2);
    f.s.run_config.spec.on_failure = FailurePolicy::Continue;
    f.advance_to_gating();
    f.finish_jobs(JobResult::Failed);
    let p = f.step();
    assert_eq!(jobs_created(&p), vec![("worker-1".to_string(), "gate".to_string(), 1)]);
    f.finish_jobs(JobResult::Succeeded);
    f.step();
    f.step();
    f.upgrade("worker-1");
    // Home first, then its cleanup Job.
    f.step();
    f.step();
    f.finish_jobs(JobResult::Succeeded);
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-1"), Some(NodePhase::Done));
    assert_eq!(p.status.phase, Some(RunPhase::Failed));
    assert!(!p.intents.iter().any(|i| matches!(i, Intent::RestorePool { .. })));
}
