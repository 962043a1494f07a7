//! A numo Job as the run-config controller caches it: read once, when its watch delivers it, into what the planner
//! needs (which run config, node, rule, phase, attempt and version it is for, how it ended), with nothing else kept.
//!
//! A rollout leaves four Jobs per node, and numo watches them for as long as they exist. Cached as `k8s_openapi`'s
//! `Job` (2.8 KB before any of its strings, with labels, annotations, owner references and conditions) they were
//! numo's largest cost at thousands of nodes, about 4.5 KB each; a [`CachedJob`] takes about a quarter of that.

use std::borrow::Cow;

use k8s_openapi::api::batch::v1::{Job, JobStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{NamespaceResourceScope, Resource as _};
use kube::Resource;
use serde::Deserialize;

use crate::api::JobResult;
use crate::jobs::{self, JobPhase};
use crate::labels;

/// A Job, decoded from its JSON as numo caches it.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(from = "WholeJob")]
pub struct CachedJob {
    /// Its metadata: name, namespace, uid, resourceVersion, deletion timestamp and finalizers only (labels,
    /// annotations and owner references are read into `facts` and dropped).
    pub metadata: ObjectMeta,
    /// The run config it belongs to, `namespace/name`, from its annotation (never shortened, unlike the labels).
    pub run_config: Option<String>,
    /// What its labels and annotations say it is for; `None` for a Job that lacks one of numo's labels or
    /// annotations.
    pub facts: Option<JobFacts>,
    /// How it ended so far.
    pub result: JobResult,
    /// Why it failed, from its `Failed` condition.
    pub failure: Option<String>,
    /// Who created it, as far as the API server's record of its writers tells (the field manager of its first
    /// `managedFields` entry), to name the maker of a Job that is not numo's.
    pub creator: Option<String>,
}

/// What a numo Job's labels and annotations say it is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobFacts {
    /// The run config's namespace and name, as label values (shortened with a hash when too long for a label).
    pub run_config_labels: (String, String),
    /// The node it is for.
    pub node: String,
    /// The rule, `namespace/name`.
    pub rule: String,
    /// Gate or cleanup.
    pub phase: JobPhase,
    /// The attempt (1, 2, ...).
    pub attempt: u32,
    /// The target version it runs for.
    pub target_version: String,
}

impl JobFacts {
    /// Reads the facts from a Job's metadata; `None` when one of numo's labels or annotations is missing or wrong.
    pub fn read(meta: &ObjectMeta) -> Option<Self> {
        let (l, a) = (meta.labels.as_ref()?, meta.annotations.as_ref()?);
        Some(Self {
            run_config_labels: (
                l.get(labels::JOB_RUN_CONFIG_NAMESPACE)?.clone(),
                l.get(labels::JOB_RUN_CONFIG)?.clone(),
            ),
            node: a.get(jobs::NODE_ANNOTATION)?.clone(),
            rule: a.get(jobs::RULE_ANNOTATION)?.clone(),
            phase: JobPhase::parse(l.get(labels::JOB_PHASE)?)?,
            attempt: l.get(labels::JOB_ATTEMPT)?.parse().ok()?,
            target_version: a.get(jobs::VERSION_ANNOTATION)?.clone(),
        })
    }
}

/// The values of the namespace and name labels that numo's Jobs for run config `namespace/name` carry (worked out
/// once per reconcile, not once per Job).
pub fn run_config_labels(namespace: &str, name: &str) -> (String, String) {
    (labels::label_value(namespace), labels::label_value(name))
}

/// The run config a Job's annotation names, `namespace/name`.
pub fn run_config_of(meta: &ObjectMeta) -> Option<String> {
    meta.annotations.as_ref()?.get(jobs::RUN_CONFIG_ANNOTATION).cloned()
}

/// The Job as the API sends it (its spec is skipped unread).
#[derive(Deserialize)]
struct WholeJob {
    metadata: ObjectMeta,
    status: Option<JobStatus>,
}

impl From<WholeJob> for CachedJob {
    fn from(job: WholeJob) -> Self {
        let facts = JobFacts::read(&job.metadata);
        let run_config = run_config_of(&job.metadata);
        let result = jobs::job_result(job.status.as_ref());
        let failure = match result {
            JobResult::Failed => jobs::failure_message(job.status.as_ref()),
            _ => None,
        };
        let m = job.metadata;
        let creator = m.managed_fields.iter().flatten().min_by_key(|f| f.time.as_ref().map(|t| t.0)).and_then(|f| {
            let manager = f.manager.clone()?;
            Some(manager)
        });
        let metadata = ObjectMeta {
            name: m.name,
            namespace: m.namespace,
            uid: m.uid,
            resource_version: m.resource_version,
            deletion_timestamp: m.deletion_timestamp,
            finalizers: m.finalizers,
            ..ObjectMeta::default()
        };
        Self { metadata, run_config, facts, result, failure, creator }
    }
}

impl Resource for CachedJob {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Job::KIND.into()
    }

    fn group(_: &()) -> Cow<'_, str> {
        Job::GROUP.into()
    }

    fn version(_: &()) -> Cow<'_, str> {
        Job::VERSION.into()
    }

    fn plural(_: &()) -> Cow<'_, str> {
        Job::URL_PATH_SEGMENT.into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guard::Guarded;
    use serde_json::json;

    fn job(status: serde_json::Value) -> serde_json::Value {
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "check-1", "namespace": "ops", "uid": "u", "resourceVersion": "7",
                "finalizers": [jobs::RESULT_FINALIZER],
                "ownerReferences": [{"apiVersion": "v1", "kind": "X", "name": "x", "uid": "x"}],
                "labels": {labels::JOB_RUN_CONFIG: "rc", labels::JOB_RUN_CONFIG_NAMESPACE: "ops",
                           labels::JOB_PHASE: "cleanup", labels::JOB_ATTEMPT: "2", "app": "x"},
                "annotations": {jobs::NODE_ANNOTATION: "worker-1", jobs::RULE_ANNOTATION: "ops/check",
                                jobs::VERSION_ANNOTATION: "4.16.5", jobs::RUN_CONFIG_ANNOTATION: "ops/rc",
                                "kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": status,
        })
    }

    #[test]
    fn a_cached_job_keeps_what_the_planner_reads_and_nothing_else() {
        let status = json!({"failed": 1, "conditions": [
            {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded", "message": "too many"},
            {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
             "message": "Job has reached the specified backoff limit"}]});
        let cached: Guarded<CachedJob> = serde_json::from_value(job(status)).unwrap_or_else(|e| panic!("{e}"));
        let cached = cached.decoded().unwrap_or_else(|| panic!("decoded"));
        let facts = cached.facts.as_ref().unwrap_or_else(|| panic!("facts"));
        assert_eq!(
            (facts.node.as_str(), facts.rule.as_str(), facts.phase, facts.attempt, facts.target_version.as_str()),
            ("worker-1", "ops/check", JobPhase::Cleanup, 2, "4.16.5")
        );
        assert_eq!(facts.run_config_labels, run_config_labels("ops", "rc"));
        assert_ne!(facts.run_config_labels, run_config_labels("ops", "other"));
        assert_eq!(cached.run_config.as_deref(), Some("ops/rc"));
        assert_eq!(cached.result, JobResult::Failed);
        assert_eq!(
            cached.failure.as_deref(),
            Some("BackoffLimitExceeded: Job has reached the specified backoff limit")
        );
        let meta = &cached.metadata;
        assert_eq!((meta.name.as_deref(), meta.namespace.as_deref()), (Some("check-1"), Some("ops")));
        assert_eq!(meta.finalizers.as_deref(), Some(&[jobs::RESULT_FINALIZER.to_string()][..]));
        assert!(meta.labels.is_none() && meta.annotations.is_none() && meta.owner_references.is_none());
    }

    #[test]
    fn a_job_without_numos_labels_has_no_facts_and_a_running_job_no_failure() {
        let mut value = job(json!({"active": 1}));
        value["metadata"]["labels"].as_object_mut().map(|l| l.remove(labels::JOB_ATTEMPT));
        let cached: CachedJob = serde_json::from_value(value).unwrap_or_default();
        assert_eq!((cached.facts, cached.result, cached.failure), (None, JobResult::Running, None));
        let done: CachedJob =
            serde_json::from_value(job(json!({"conditions": [{"type": "Complete", "status": "True"}]})))
                .unwrap_or_default();
        assert_eq!(done.result, JobResult::Succeeded);
    }
}
