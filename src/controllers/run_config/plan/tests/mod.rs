//! Every transition of the run-config state machine, from hand-built snapshots: the fixture here, the tests in
//! the submodules.

mod admin_hold;
mod cases;
mod config_change;
mod ends;
mod estimate;
mod flow;
mod gated_index;
mod next_minor;
mod node_reads;
mod on_demand;
mod other_hands;
mod other_operator;
mod pool_shapes;
mod retarget;
mod safe_to_proceed;
mod topology;
mod turn_edges;
mod untouched;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use serde_json::json;

use super::*;
use crate::api::{CanaryPool, FailurePolicy, MutexRunConfigSpec, ObjectReference};
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
        uid: format!("uid-{name}"),
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

/// A Ready node with the `node-role.kubernetes.io/<role>` label of each of `roles`, running `version`.
fn ready_node(name: &str, roles: &[&str], version: &str) -> Arc<NodeView> {
    let labels: BTreeMap<String, String> =
        roles.iter().map(|role| (format!("node-role.kubernetes.io/{role}"), String::new())).collect();
    let view = NodeView {
        name: name.into(),
        labels: labels.into(),
        ready: true,
        version: Some(version.into()),
        ..Default::default()
    };
    Arc::new(view)
}

impl Fixture {
    fn new(workers: usize) -> Self {
        let pools = BTreeMap::from([
            ("master".to_string(), pool("master", selector("node-role.kubernetes.io/master"))),
            ("worker".to_string(), pool("worker", selector("node-role.kubernetes.io/worker"))),
            ("canary".to_string(), pool("canary", canary_selector())),
        ]);
        let mut nodes: BTreeMap<String, Arc<NodeView>> = (0..workers)
            .map(|i| ready_node(&format!("worker-{i}"), &["worker"], OLD))
            .map(|node| (node.name.clone(), node))
            .collect();
        nodes.insert("master-0".into(), ready_node("master-0", &["master"], NEW));
        let spec = MutexRunConfigSpec {
            canary: CanaryPool { name: "canary".into() },
            mutex_rules: vec![ObjectReference { name: "first".into(), namespace: None }],
            mutex_targets: vec![ObjectReference { name: "workers".into(), namespace: None }],
            ..Default::default()
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
            go_ahead: BTreeSet::new(),
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
            nodes: std::sync::Arc::new(nodes.into()),
            cluster: Some(ClusterView { target_version: Some(NEW.into()), control_plane_completed: true }),
            jobs: Vec::new(),
            run_configs: BTreeSet::from([ME.to_string()]),
            pools_behind: BTreeSet::new(),
            health: Default::default(),
            policy: None,
            image_builds: BTreeMap::new(),
            storage_domain_key: None,
            kubelet_skew: None,
            nonce: 7,
            project: false,
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
                    let written = PoolOriginal { paused: spec.paused, ..as_is(view) };
                    view.claim = ClaimAnnotations::Claimed(PoolClaim {
                        owner: owner.clone(),
                        original: Ok(original.clone()),
                        written: Some(written),
                        written_present: true,
                    });
                    apply_spec(view, spec);
                }
                Intent::SteerPool { pool, spec, .. } => {
                    let view = self.s.pools.get_mut(pool).unwrap();
                    let written = written_after(view, spec);
                    if let ClaimAnnotations::Claimed(claim) = &mut view.claim {
                        claim.written = Some(written);
                    }
                    apply_spec(view, spec);
                }
                Intent::PutBackPool { pool, put_back, .. } => {
                    let view = self.s.pools.get_mut(pool).unwrap();
                    if let Some(paused) = put_back.paused {
                        view.paused = paused;
                    }
                    if let Some(selector) = &put_back.node_selector {
                        view.node_selector = selector.clone();
                    }
                    if let Some(max) = &put_back.max_unavailable {
                        view.max_unavailable = max.clone();
                    }
                    if let Some(selector) = &put_back.machine_config_selector {
                        view.machine_config_selector = Some(selector.clone());
                    }
                }
                Intent::RestorePool { pool, spec, remove, .. } => {
                    let view = self.s.pools.get_mut(pool).unwrap();
                    view.paused = spec.paused;
                    if spec.node_selector.is_some() || remove.contains(&"/spec/nodeSelector") {
                        view.node_selector = spec.node_selector.clone();
                    }
                    if spec.max_unavailable.is_some() || remove.contains(&"/spec/maxUnavailable") {
                        view.max_unavailable = spec.max_unavailable.clone();
                    }
                    if spec.machine_config_selector.is_some() {
                        view.machine_config_selector = spec.machine_config_selector.clone();
                    }
                    if let Some(stream) = &spec.os_image_stream {
                        view.os_image_stream = stream.clone();
                    }
                    view.claim = ClaimAnnotations::None;
                    // The MCO moves the pool's nodes to its own rendered config before it reports Updated again.
                    view.updated = false;
                }
                Intent::ReleaseJob { name, .. } => {
                    self.s.jobs.retain(|j| !(j.name == *name && j.deleting));
                    for job in self.s.jobs.iter_mut().filter(|j| j.name == *name).map(Arc::make_mut) {
                        job.holds_result = false;
                    }
                }
                Intent::LabelNode { node, labels } => {
                    let view = self.s.nodes_mut().get_mut(node).map(Arc::make_mut).unwrap();
                    for l in labels {
                        view.labels.insert(l.clone(), String::new());
                    }
                    view.labels.remove(crate::labels::RELEASED);
                }
                Intent::ReleaseNode { node, labels, mark } => {
                    let view = self.s.nodes_mut().get_mut(node).map(Arc::make_mut).unwrap();
                    for l in labels {
                        view.labels.remove(l);
                    }
                    view.labels.insert(crate::labels::RELEASED.into(), mark.clone());
                }
                Intent::UnlabelNode { node, labels } => {
                    for l in labels {
                        self.s.nodes_mut().get_mut(node).map(Arc::make_mut).unwrap().labels.remove(l);
                    }
                }
                Intent::CreateJob(job) => {
                    let a = job.metadata.annotations.clone().unwrap();
                    let l = job.metadata.labels.clone().unwrap();
                    if !self.s.jobs.iter().any(|j| Some(&j.name) == job.metadata.name.as_ref()) {
                        let name = job.metadata.name.clone().unwrap();
                        let mut view = job_view(
                            &name,
                            &a[jobs::NODE_ANNOTATION],
                            JobPhase::parse(&l[crate::labels::JOB_PHASE]).unwrap(),
                        );
                        view.namespace = job.metadata.namespace.clone().unwrap();
                        view.rule = a[jobs::RULE_ANNOTATION].clone();
                        view.attempt = l[crate::labels::JOB_ATTEMPT].parse().unwrap();
                        view.target_version = a[jobs::VERSION_ANNOTATION].clone();
                        view.result = JobResult::Running;
                        self.s.jobs.push(Arc::new(view));
                    }
                }
                Intent::ClearRetry => self.s.run_config.retry = None,
                Intent::ClearGoAhead => self.s.run_config.go_ahead.clear(),
                Intent::TakeOverHold { pool, original, .. } => {
                    let view = self.s.pools.get_mut(pool).unwrap();
                    view.paused = true;
                    if let ClaimAnnotations::Claimed(claim) = &mut view.claim {
                        claim.original = Ok(original.clone());
                        if let Some(written) = &mut claim.written {
                            written.paused = true;
                        }
                    }
                }
                Intent::RecordRollout { .. } => {}
                Intent::AddFinalizer => self.s.run_config.has_finalizer = true,
                Intent::RemoveFinalizer => self.s.run_config.has_finalizer = false,
            }
        }
        refresh_streams(&mut self.s.pools);
        self.s.run_config.status = p.status.clone();
        // A new nonce for each reconcile, as numo draws one.
        self.s.nonce += 1;
        for intent in &p.after_status {
            if let Intent::ReleaseJob { name, .. } = intent {
                self.s.jobs.retain(|j| !(j.name == *name && j.deleting));
            }
        }
        self.s.now += Duration::from_secs(1);
    }

    fn finish_jobs(&mut self, result: JobResult) {
        for job in self.s.jobs.iter_mut().filter(|j| j.result == JobResult::Running).map(Arc::make_mut) {
            job.result = result;
            if result == JobResult::Failed {
                job.message = Some("BackoffLimitExceeded: Job has reached the specified backoff limit".into());
            }
        }
    }

    /// What the cluster does between two reconciles of a rollout that goes well: every running Job succeeds and
    /// every released node reaches the new version.
    fn answer(&mut self) {
        self.finish_jobs(JobResult::Succeeded);
        let released: Vec<String> = self
            .s
            .run_config
            .status
            .nodes
            .iter()
            .filter(|e| e.phase == NodePhase::Upgrading)
            .map(|e| e.name.clone())
            .collect();
        for node in released {
            self.upgrade(&node);
        }
    }

    fn upgrade(&mut self, node: &str) {
        self.s.nodes_mut().get_mut(node).map(Arc::make_mut).unwrap().version = Some(NEW.into());
    }

    /// Steps, answering Jobs with success, taking every Upgrading node to `version` and reporting restored pools
    /// Updated, until `done` holds; asserts on the way that no plan reports numo's own writes as someone else's.
    fn until(&mut self, version: &str, done: impl Fn(&Fixture, &Plan) -> bool) -> Plan {
        for _ in 0..100 {
            let p = self.step();
            assert_no_foreign_change(&p);
            if done(self, &p) {
                return p;
            }
            self.finish_jobs(JobResult::Succeeded);
            for entry in p.status.nodes.iter().filter(|e| e.phase == NodePhase::Upgrading) {
                self.s.nodes_mut().get_mut(&entry.name).map(Arc::make_mut).unwrap().version = Some(version.into());
            }
            if p.status.phase == Some(RunPhase::Restoring) {
                self.s.pools.values_mut().for_each(|pool| pool.updated = true);
            }
        }
        panic!("never got there: {:?}", self.s.run_config.status);
    }

    /// Gates, releases, upgrades and cleans up worker-0, whose gate Jobs and cleanup Jobs succeed.
    fn through_worker_0(&mut self) {
        self.advance_to_gating();
        self.finish_jobs(JobResult::Succeeded);
        for _ in 0..3 {
            self.step();
            self.upgrade("worker-0");
            self.finish_jobs(JobResult::Succeeded);
        }
    }

    /// Runs the rollout until it reaches the per-node gating (pools claimed, nodes labelled, pools steered).
    fn advance_to_gating(&mut self) {
        for _ in 0..4 {
            self.step();
        }
    }
}

/// numo's Job `name` for `node`'s first attempt of rule `ops/first` in `phase`, towards [`NEW`], Succeeded (uid
/// `uid-<name>`).
fn job_view(name: &str, node: &str, phase: JobPhase) -> JobView {
    JobView {
        name: name.into(),
        namespace: "ops".into(),
        node: node.into(),
        rule: "ops/first".into(),
        phase,
        attempt: 1,
        target_version: NEW.into(),
        result: JobResult::Succeeded,
        message: None,
        deleting: false,
        holds_result: true,
        uid: format!("uid-{name}"),
        creator: "numo".into(),
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
    if spec.machine_config_selector.is_some() {
        view.machine_config_selector = spec.machine_config_selector.clone();
    }
    if let Some(stream) = &spec.os_image_stream {
        view.os_image_stream = stream.clone();
    }
}

/// Each pool's effective OS image stream, as observe derives it.
fn refresh_streams(pools: &mut BTreeMap<String, PoolView>) {
    let worker = pools.get("worker").and_then(|w| w.os_image_stream.clone());
    for (name, pool) in pools.iter_mut() {
        let effective =
            crate::openshift::effective_os_image_stream(name, pool.os_image_stream.as_deref(), worker.as_deref());
        pool.effective_os_image_stream = effective.map(String::from);
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

/// Asserts that `p` reports none of numo's own writes as someone else's (no `ForeignChange` Event or record).
fn assert_no_foreign_change(p: &Plan) {
    let foreign: Vec<&str> =
        p.notices.iter().filter(|n| n.reason == "ForeignChange").map(|n| n.note.as_str()).collect();
    assert!(foreign.is_empty(), "numo's own writes reported as foreign: {foreign:?}");
    assert!(p.status.foreign_changes.is_empty(), "{:?}", p.status.foreign_changes);
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
        f.answer();
    }
    panic!("the rollout did not complete: {:?}", f.s.run_config.status);
}
