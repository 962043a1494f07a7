//! Every transition of the run-config state machine, from hand-built snapshots.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement, Time};
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::*;
use crate::api::{CanaryPool, FailurePolicy, MutexRunConfigSpec, ObjectReference, VersionSource};
use crate::api::{JobResult, NodePhase, RunPhase};
use crate::controllers::run_config::snapshot::{
    ClaimAnnotations, ClusterView, FoundRule, NodeView, PoolClaim, PoolOriginal, PoolView, RuleView, RunConfigView,
    TargetView, Unusable,
};
use crate::controllers::run_config::snapshot::{JobView, Snapshot};
use crate::jobs::{self, JobPhase};
use crate::labels::RULE_LABEL_PREFIX;

const OLD: &str = "4.16.4";
const NEW: &str = "4.16.5";
const ME: &str = "ops/example";

fn selector(label: &str) -> LabelSelector {
    LabelSelector { match_labels: Some(BTreeMap::from([(label.to_string(), String::new())])), match_expressions: None }
}

fn canary_selector() -> LabelSelector {
    LabelSelector {
        match_labels: Some(BTreeMap::from([("node-role.kubernetes.io/worker".to_string(), String::new())])),
        match_expressions: Some(vec![LabelSelectorRequirement {
            key: "isCanary".into(),
            operator: "Exists".into(),
            values: None,
        }]),
    }
}

fn pool(name: &str, node_selector: LabelSelector) -> PoolView {
    PoolView {
        name: name.into(),
        resource_version: "1".into(),
        node_selector: Some(node_selector),
        has_annotations: true,
        updated: true,
        ..Default::default()
    }
}

fn rule(name: &str, cleanup: bool) -> RuleView {
    let spec = json!({"template": {"spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}}});
    RuleView {
        namespace: "ops".into(),
        name: name.into(),
        found: Some(FoundRule {
            valid: Ok(()),
            job_name: name.into(),
            job_namespace: "ops".into(),
            job_spec: spec.clone(),
            cleanup: cleanup.then_some(spec),
        }),
    }
}

/// A cluster with pools master/worker/canary, `workers` worker nodes at 4.16.4, and a ClusterVersion going to 4.16.5.
struct Fixture {
    s: Snapshot,
}

impl Fixture {
    fn new(workers: usize) -> Self {
        let pools = BTreeMap::from([
            ("master".to_string(), pool("master", selector("node-role.kubernetes.io/master"))),
            ("worker".to_string(), pool("worker", selector("node-role.kubernetes.io/worker"))),
            ("canary".to_string(), pool("canary", canary_selector())),
        ]);
        let mut nodes = BTreeMap::new();
        for i in 0..workers {
            let name = format!("worker-{i}");
            let labels = BTreeMap::from([("node-role.kubernetes.io/worker".to_string(), String::new())]);
            nodes.insert(name.clone(), NodeView { name, labels, ready: true, version: Some(OLD.into()) });
        }
        let master_labels = BTreeMap::from([("node-role.kubernetes.io/master".to_string(), String::new())]);
        nodes.insert(
            "master-0".into(),
            NodeView { name: "master-0".into(), labels: master_labels, ready: true, version: Some(NEW.into()) },
        );
        let spec = MutexRunConfigSpec {
            skip_tls_verify: false,
            canary: CanaryPool { name: "canary".into() },
            mutex_rules: vec![ObjectReference { name: "first".into(), namespace: None }],
            mutex_targets: vec![ObjectReference { name: "workers".into(), namespace: None }],
            concurrency: 1,
            node_timeout: None,
            on_failure: FailurePolicy::Hold,
            version_source: VersionSource::Auto,
            paused: false,
            avoid_target_node: true,
        };
        let run_config = RunConfigView {
            namespace: "ops".into(),
            name: "example".into(),
            uid: "uid-1".into(),
            generation: Some(1),
            spec,
            status: Default::default(),
            deleting: false,
            has_finalizer: true,
            retry: None,
            skip: BTreeSet::new(),
        };
        let s = Snapshot {
            now: Timestamp::from_second(1_000_000).unwrap(),
            run_config,
            rules: vec![rule("first", true)],
            targets: vec![TargetView {
                namespace: "ops".into(),
                name: "workers".into(),
                found: Some(Ok(vec!["worker".into()])),
            }],
            pools,
            nodes,
            cluster: Some(ClusterView { target_version: Some(NEW.into()), control_plane_completed: true }),
            jobs: Vec::new(),
            run_configs: BTreeSet::from([ME.to_string()]),
        };
        Self { s }
    }

    fn rules(mut self, rules: Vec<RuleView>) -> Self {
        self.s.run_config.spec.mutex_rules =
            rules.iter().map(|r| ObjectReference { name: r.name.clone(), namespace: None }).collect();
        self.s.rules = rules;
        self
    }

    fn plan(&self) -> Plan {
        plan(&self.s)
    }

    /// Applies a plan's pool, label and Job intents to the snapshot, as the cluster would, and takes its status.
    fn step(&mut self) -> Plan {
        let p = self.plan();
        self.absorb(&p);
        p
    }

    fn absorb(&mut self, p: &Plan) {
        for intent in &p.intents {
            match intent {
                Intent::ClaimPool { pool, owner, original, spec, .. } => {
                    let view = self.s.pools.get_mut(pool).unwrap();
                    view.claim =
                        ClaimAnnotations::Claimed(PoolClaim { owner: owner.clone(), original: Ok(original.clone()) });
                    apply_spec(view, spec);
                }
                Intent::SteerPool { pool, spec, .. } => apply_spec(self.s.pools.get_mut(pool).unwrap(), spec),
                Intent::RestorePool { pool, spec, .. } => {
                    let view = self.s.pools.get_mut(pool).unwrap();
                    view.paused = spec.paused;
                    view.node_selector = spec.node_selector.clone();
                    view.max_unavailable = spec.max_unavailable.clone();
                    view.claim = ClaimAnnotations::None;
                    // The MCO moves the pool's nodes to its own rendered config before it reports Updated again.
                    view.updated = false;
                }
                Intent::ReleaseJob { name, .. } => {
                    self.s.jobs.retain(|j| !(j.name == *name && j.deleting));
                    for job in self.s.jobs.iter_mut().filter(|j| j.name == *name) {
                        job.holds_result = false;
                    }
                }
                Intent::LabelNode { node, labels } => {
                    for l in labels {
                        self.s.nodes.get_mut(node).unwrap().labels.insert(l.clone(), String::new());
                    }
                }
                Intent::UnlabelNode { node, labels } => {
                    for l in labels {
                        self.s.nodes.get_mut(node).unwrap().labels.remove(l);
                    }
                }
                Intent::CreateJob(job) => {
                    let a = job.metadata.annotations.clone().unwrap();
                    let l = job.metadata.labels.clone().unwrap();
                    if !self.s.jobs.iter().any(|j| Some(&j.name) == job.metadata.name.as_ref()) {
                        self.s.jobs.push(JobView {
                            name: job.metadata.name.clone().unwrap(),
                            namespace: job.metadata.namespace.clone().unwrap(),
                            node: a[jobs::NODE_ANNOTATION].clone(),
                            rule: a[jobs::RULE_ANNOTATION].clone(),
                            phase: JobPhase::parse(&l[crate::labels::JOB_PHASE]).unwrap(),
                            attempt: l[crate::labels::JOB_ATTEMPT].parse().unwrap(),
                            target_version: a[jobs::VERSION_ANNOTATION].clone(),
                            result: JobResult::Running,
                            message: None,
                            deleting: false,
                            holds_result: true,
                        });
                    }
                }
                Intent::ClearRetry => self.s.run_config.retry = None,
                Intent::AddFinalizer => self.s.run_config.has_finalizer = true,
                Intent::RemoveFinalizer => self.s.run_config.has_finalizer = false,
            }
        }
        self.s.run_config.status = p.status.clone();
        for intent in &p.after_status {
            if let Intent::ReleaseJob { name, .. } = intent {
                self.s.jobs.retain(|j| !(j.name == *name && j.deleting));
            }
        }
        self.s.now += Duration::from_secs(1);
    }

    fn finish_jobs(&mut self, result: JobResult) {
        for job in self.s.jobs.iter_mut().filter(|j| j.result == JobResult::Running) {
            job.result = result;
            if result == JobResult::Failed {
                job.message = Some("BackoffLimitExceeded: Job has reached the specified backoff limit".into());
            }
        }
    }

    fn upgrade(&mut self, node: &str) {
        self.s.nodes.get_mut(node).unwrap().version = Some(NEW.into());
    }

    /// Runs the rollout until it reaches the per-node gating (pools claimed, nodes labelled, pools steered).
    fn advance_to_gating(&mut self) {
        for _ in 0..4 {
            self.step();
        }
    }
}

/// Sets a pool's spec as a write would; the MCO then reports the pool Updated.
fn apply_spec(view: &mut PoolView, spec: &PoolSpec) {
    view.paused = spec.paused;
    if spec.node_selector.is_some() {
        view.node_selector = spec.node_selector.clone();
    }
    if spec.max_unavailable.is_some() {
        view.max_unavailable = spec.max_unavailable.clone();
    }
}

fn jobs_created(p: &Plan) -> Vec<(String, String, u32)> {
    p.intents
        .iter()
        .filter_map(|i| match i {
            Intent::CreateJob(job) => {
                let a = job.metadata.annotations.clone().unwrap();
                let l = job.metadata.labels.clone().unwrap();
                Some((
                    a[jobs::NODE_ANNOTATION].clone(),
                    l[crate::labels::JOB_PHASE].clone(),
                    l[crate::labels::JOB_ATTEMPT].parse().unwrap(),
                ))
            }
            _ => None,
        })
        .collect()
}

fn condition<'a>(p: &'a Plan, type_: &str) -> &'a k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
    p.status.conditions.iter().find(|c| c.type_ == type_).unwrap_or_else(|| panic!("no {type_} condition"))
}

fn node_phase(p: &Plan, node: &str) -> Option<NodePhase> {
    p.status
        .nodes
        .iter()
        .find(|e| e.name == node)
        .map(|e| e.phase)
        .or_else(|| p.status.completed_nodes.iter().any(|n| n == node).then_some(NodePhase::Done))
}

fn only_finalizer_or_nothing(p: &Plan) -> bool {
    p.intents.iter().all(|i| matches!(i, Intent::AddFinalizer))
}

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
    assert_eq!((c.status.as_str(), c.reason.as_str()), ("False", "AwaitingValidation"));
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
    let worker = &steer["worker"];
    assert_eq!(worker.match_labels, selector("node-role.kubernetes.io/worker").match_labels);
    assert_eq!(worker.match_expressions.as_ref().unwrap()[0].operator, "Exists");
    let canary = &steer["canary"];
    assert_eq!(canary.match_labels, canary_selector().match_labels);
    let exprs = canary.match_expressions.as_ref().unwrap();
    assert_eq!(exprs.len(), 1, "the canary's own expressions are set aside while steered");
    assert_eq!((exprs[0].key.as_str(), exprs[0].operator.as_str()), (key.as_str(), "DoesNotExist"));
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
    assert!(p.intents.contains(&Intent::UnlabelNode { node: "worker-0".into(), labels: keys }));
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Released));

    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Upgrading));
    assert!(jobs_created(&p).is_empty(), "nothing runs while the MCO upgrades the node");
    assert!(p.status.nodes[0].released_at.is_some());

    f.upgrade("worker-0");
    f.s.nodes.get_mut("worker-0").unwrap().ready = false;
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-0"), Some(NodePhase::Upgrading), "a node that is not Ready is not done");
    f.s.nodes.get_mut("worker-0").unwrap().ready = true;
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
    assert!(p.intents.iter().any(|i| matches!(i, Intent::UnlabelNode { node, .. } if node == "worker-0")));
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
    f.step();
    f.finish_jobs(JobResult::Succeeded);
    let p = f.step();
    assert_eq!(node_phase(&p, "worker-1"), Some(NodePhase::Done));
    assert_eq!(p.status.phase, Some(RunPhase::Failed));
    assert!(!p.intents.iter().any(|i| matches!(i, Intent::RestorePool { .. })));
}

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
fn nodes_of_other_pools_the_steered_canary_would_match_are_held_but_not_gated() {
    let mut f = Fixture::new(2);
    f.s.pools.insert("infra".into(), pool("infra", selector("node-role.kubernetes.io/infra")));
    let labels = BTreeMap::from([
        ("node-role.kubernetes.io/worker".to_string(), String::new()),
        ("node-role.kubernetes.io/infra".to_string(), String::new()),
    ]);
    f.s.nodes
        .insert("infra-0".into(), NodeView { name: "infra-0".into(), labels, ready: true, version: Some(OLD.into()) });
    f.advance_to_gating();
    let held = |f: &Fixture, node: &str| f.s.nodes[node].labels.keys().any(|k| k.starts_with(RULE_LABEL_PREFIX));
    assert!(held(&f, "infra-0"), "out of the canary's reach");
    assert!(!held(&f, "master-0"), "the canary never selects masters");
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

/// Drives a rollout of `f` to its end, answering Jobs with success and upgrading released nodes.
fn run_to_end(f: &mut Fixture) -> Plan {
    for _ in 0..200 {
        let p = f.step();
        if p.status.phase == Some(RunPhase::Completed) {
            return p;
        }
        if p.status.phase == Some(RunPhase::Restoring) {
            f.s.pools.values_mut().for_each(|pool| pool.updated = true);
        }
        f.finish_jobs(JobResult::Succeeded);
        let released: Vec<String> =
            f.s.run_config
                .status
                .nodes
                .iter()
                .filter(|e| e.phase == NodePhase::Upgrading)
                .map(|e| e.name.clone())
                .collect();
        for node in released {
            f.upgrade(&node);
        }
    }
    panic!("the rollout did not complete: {:?}", f.s.run_config.status);
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
fn restoring_happens_pools_first_then_labels() {
    let mut f = Fixture::new(1);
    for _ in 0..50 {
        let p = f.plan();
        if p.status.phase == Some(RunPhase::Restoring) {
            let first_unlabel = p.intents.iter().position(|i| matches!(i, Intent::UnlabelNode { .. }));
            let last_restore = p.intents.iter().rposition(|i| matches!(i, Intent::RestorePool { .. }));
            assert!(last_restore < first_unlabel || first_unlabel.is_none());
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
    let original = PoolOriginal { paused: false, node_selector: worker.node_selector.clone(), max_unavailable: None };
    worker.claim = ClaimAnnotations::Claimed(PoolClaim { owner: "team/other".into(), original: Ok(original) });
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
        max_unavailable: None,
    };
    let worker = f.s.pools.get_mut("worker").unwrap();
    worker.claim =
        ClaimAnnotations::Claimed(PoolClaim { owner: "team/deleted".into(), original: Ok(recorded.clone()) });
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
fn a_restart_replans_the_same_steps_from_the_cluster_alone() {
    let mut f = Fixture::new(2);
    f.advance_to_gating();
    let p = f.plan();
    // The status was lost (or never written): the Jobs and labels still tell where the rollout is.
    f.s.run_config.status = Default::default();
    let again = f.plan();
    assert_eq!(jobs_created(&again), jobs_created(&p));
    assert_eq!(node_phase(&again, "worker-0"), Some(NodePhase::Gating));
    assert!(!again.intents.iter().any(|i| matches!(i, Intent::LabelNode { .. })));
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
    // As a long rollout leaves them: released, upgraded, gate and cleanup Jobs succeeded, counted as done.
    let mut done = Vec::new();
    for i in 0..NODES - CONCURRENCY {
        let name = format!("worker-{i}");
        let node = f.s.nodes.get_mut(&name).unwrap();
        node.labels.remove(&label);
        node.version = Some(NEW.into());
        for phase in [JobPhase::Gate, JobPhase::Cleanup] {
            f.s.jobs.push(JobView {
                name: format!("first-{i}-{}", phase.as_str()),
                namespace: "ops".into(),
                node: name.clone(),
                rule: "ops/first".into(),
                phase,
                attempt: 1,
                target_version: NEW.into(),
                result: JobResult::Succeeded,
                message: None,
                deleting: false,
                holds_result: true,
            });
        }
        // Real node names are longer (worker-N.<cluster>.<domain>); the status lists the done ones by name.
        done.push(format!("{name}.cluster-with-a-long-name.apps.example.com"));
    }
    f.s.run_config.status.completed_nodes = (0..NODES - CONCURRENCY).map(|i| format!("worker-{i}")).collect();

    let p = f.step();
    assert_eq!(jobs_created(&p).len(), CONCURRENCY, "the last {CONCURRENCY} nodes start together");
    assert_eq!(p.intents.len(), CONCURRENCY, "{:?}", p.intents);
    assert_eq!(p.status.nodes.len(), CONCURRENCY, "full entries only for the nodes in flight");
    assert_eq!(p.status.completed_nodes.len(), NODES - CONCURRENCY);
    assert_eq!(p.status.progress.as_deref(), Some("1990/2000"));

    // With the names real clusters use, the status is a small fraction of the 1.5 MiB limit.
    let mut status = p.status.clone();
    status.completed_nodes = done;
    let bytes = serde_json::to_vec(&status).unwrap().len();
    assert!(bytes < 256 * 1024, "the status of a 2,000-node rollout takes {bytes} bytes");

    // Nothing changed: nothing to write.
    let p = f.plan();
    assert!(p.intents.is_empty(), "{:?}", p.intents);
}
