//! Reads what the planner needs from the controller's caches (reflector stores fed by watches) into a [`Snapshot`].

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use kube::core::{DeserializeGuard, PartialObjectMeta};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::ResourceExt;

use super::snapshot::{
    ClusterView, FoundRule, JobView, NodeView, PoolClaim, PoolView, RuleView, RunConfigView, Snapshot, TargetView,
    Unusable,
};
use crate::api::{JobResult, MutexRule, MutexRunConfig, MutexTarget, VersionSource};
use crate::jobs::{self, JobPhase};
use crate::labels;
use crate::openshift::{self, ClusterVersion, MachineConfig, MachineConfigPool};

/// The caches the run-config controller reads; every one is fed by a watch.
#[derive(Clone)]
pub struct Stores {
    /// Every MutexRunConfig.
    pub run_configs: Store<DeserializeGuard<MutexRunConfig>>,
    /// Every MutexRule.
    pub rules: Store<DeserializeGuard<MutexRule>>,
    /// Every MutexTarget.
    pub targets: Store<DeserializeGuard<MutexTarget>>,
    /// Every MachineConfigPool.
    pub pools: Store<MachineConfigPool>,
    /// Every node.
    pub nodes: Store<Node>,
    /// Metadata of every MachineConfig (the rendered configs' release-version annotation).
    pub machine_configs: Store<PartialObjectMeta<MachineConfig>>,
    /// The ClusterVersion.
    pub cluster_versions: Store<ClusterVersion>,
    /// numo's Jobs (the watch selects them by label).
    pub jobs: Store<Job>,
}

/// Builds the snapshot for one run config.
pub fn snapshot(stores: &Stores, rc: &MutexRunConfig, now: Timestamp) -> Snapshot {
    let namespace = rc.namespace().unwrap_or_default();
    let annotations = rc.annotations();
    let run_config = RunConfigView {
        namespace: namespace.clone(),
        name: rc.name_any(),
        uid: rc.uid().unwrap_or_default(),
        generation: rc.metadata.generation,
        spec: rc.spec.clone(),
        status: rc.status.clone().unwrap_or_default(),
        deleting: rc.metadata.deletion_timestamp.is_some(),
        has_finalizer: rc.finalizers().iter().any(|f| f == labels::FINALIZER),
        retry: annotations.get(labels::RETRY_ANNOTATION).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()),
        skip: annotations
            .get(labels::SKIP_ANNOTATION)
            .map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect())
            .unwrap_or_default(),
    };
    let rules = rc.spec.mutex_rules.iter().map(|r| rule_view(stores, r.namespace_or(&namespace), &r.name)).collect();
    let targets =
        rc.spec.mutex_targets.iter().map(|t| target_view(stores, t.namespace_or(&namespace), &t.name)).collect();
    let pools = stores.pools.state().iter().map(|p| (p.name_any(), pool_view(p))).collect();
    let rendered_versions: BTreeMap<String, String> = stores
        .machine_configs
        .state()
        .iter()
        .filter_map(|mc| Some((mc.name_any(), mc.annotations().get(openshift::RELEASE_VERSION)?.clone())))
        .collect();
    let nodes = stores
        .nodes
        .state()
        .iter()
        .map(|n| (n.name_any(), node_view(n, rc.spec.version_source, &rendered_versions)))
        .collect();
    let cluster = stores.cluster_versions.get(&ObjectRef::new(openshift::CLUSTER_VERSION_NAME)).map(|cv| {
        let target_version = cv.target_version().map(String::from);
        let control_plane_completed = target_version.as_deref().is_some_and(|v| cv.control_plane_completed(v));
        ClusterView { target_version, control_plane_completed }
    });
    let jobs = stores.jobs.state().iter().filter_map(|j| job_view(j, &namespace, &run_config.name)).collect();
    let run_configs: BTreeSet<String> = stores
        .run_configs
        .state()
        .iter()
        .filter_map(|g| {
            let meta = match &g.0 {
                Ok(rc) => &rc.metadata,
                Err(invalid) => &invalid.metadata,
            };
            Some(format!("{}/{}", meta.namespace.as_ref()?, meta.name.as_ref()?))
        })
        .collect();
    Snapshot { now, run_config, rules, targets, pools, nodes, cluster, jobs, run_configs }
}

/// Whether a status condition `ValidConfig` is True for the object's current generation; else why not.
fn valid_config(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    generation: Option<i64>,
) -> Result<(), Unusable> {
    match crate::conditions::find(conditions, "ValidConfig") {
        None => Err(Unusable::NotValidatedYet),
        Some(c) if c.observed_generation.is_some() && c.observed_generation != generation => {
            Err(Unusable::NotValidatedYet)
        }
        Some(c) if c.status == "True" => Ok(()),
        Some(c) => Err(Unusable::Invalid(c.message.clone())),
    }
}

fn rule_view(stores: &Stores, namespace: &str, name: &str) -> RuleView {
    let found = stores.rules.get(&ObjectRef::new(name).within(namespace)).map(|guard| match &guard.0 {
        Ok(rule) => FoundRule {
            valid: valid_config(
                rule.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default(),
                rule.metadata.generation,
            ),
            job_name: rule.spec.job_name.clone(),
            job_namespace: rule.job_namespace().unwrap_or(namespace).to_string(),
            job_spec: rule.spec.job_spec.clone(),
            cleanup: rule.spec.clean_up_job_spec.clone(),
        },
        Err(invalid) => FoundRule {
            valid: Err(Unusable::Invalid(format!("malformed: {}", invalid.error))),
            job_name: String::new(),
            job_namespace: namespace.to_string(),
            job_spec: serde_json::Value::Null,
            cleanup: None,
        },
    });
    RuleView { namespace: namespace.to_string(), name: name.to_string(), found }
}

fn target_view(stores: &Stores, namespace: &str, name: &str) -> TargetView {
    let found = stores.targets.get(&ObjectRef::new(name).within(namespace)).map(|guard| match &guard.0 {
        Ok(target) => valid_config(
            target.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default(),
            target.metadata.generation,
        )
        .map(|()| target.spec.machine_config_pools.clone()),
        Err(invalid) => Err(Unusable::Invalid(format!("malformed: {}", invalid.error))),
    });
    TargetView { namespace: namespace.to_string(), name: name.to_string(), found }
}

fn pool_view(pool: &MachineConfigPool) -> PoolView {
    let status = pool.status.as_ref();
    let current = status.is_some_and(|st| Some(st.observed_generation) >= pool.metadata.generation);
    PoolView {
        name: pool.name_any(),
        resource_version: pool.resource_version().unwrap_or_default(),
        paused: pool.spec.paused,
        node_selector: pool.spec.node_selector.clone(),
        max_unavailable: pool.spec.max_unavailable.clone(),
        claim: PoolClaim::read(pool.annotations()),
        has_annotations: pool.metadata.annotations.is_some(),
        updated: current && pool.condition_true("Updated"),
    }
}

fn node_view(node: &Node, source: VersionSource, rendered: &BTreeMap<String, String>) -> NodeView {
    let label = node.labels().get(openshift::RELEASE_VERSION).cloned();
    let from_config = || node.annotations().get(openshift::CURRENT_CONFIG).and_then(|c| rendered.get(c)).cloned();
    let version = match source {
        VersionSource::Label => label,
        VersionSource::RenderedConfig => from_config(),
        VersionSource::Auto => label.or_else(from_config),
    };
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    NodeView { name: node.name_any(), labels: node.labels().clone(), ready, version }
}

fn job_view(job: &Job, namespace: &str, name: &str) -> Option<JobView> {
    let l = job.labels();
    if l.get(labels::JOB_RUN_CONFIG)? != &labels::label_value(name)
        || l.get(labels::JOB_RUN_CONFIG_NAMESPACE)? != &labels::label_value(namespace)
    {
        return None;
    }
    let a = job.annotations();
    Some(JobView {
        name: job.name_any(),
        namespace: job.namespace().unwrap_or_default(),
        node: a.get(jobs::NODE_ANNOTATION)?.clone(),
        rule: a.get(jobs::RULE_ANNOTATION)?.clone(),
        phase: JobPhase::parse(l.get(labels::JOB_PHASE)?)?,
        attempt: l.get(labels::JOB_ATTEMPT)?.parse().ok()?,
        target_version: a.get(jobs::VERSION_ANNOTATION)?.clone(),
        result: jobs::job_result(job),
        message: (jobs::job_result(job) == JobResult::Failed).then(|| jobs::failure_message(job)).flatten(),
        deleting: job.metadata.deletion_timestamp.is_some(),
        holds_result: job.finalizers().iter().any(|f| f == jobs::RESULT_FINALIZER),
    })
}
