//! Rendering the Jobs numo runs for a node: deterministic names, labels naming the run config, node, rule and phase,
//! the environment every container gets, and the anti-affinity that keeps the pods off the node being upgraded.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec, JobStatus};
use k8s_openapi::api::core::v1::{
    Affinity, EnvVar, NodeAffinity, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, PodSpec,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

use crate::labels;

/// `gate` (before the node is released) or `cleanup` (after it reached the target version).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobPhase {
    /// Runs before the node is released for its upgrade.
    Gate,
    /// Runs after the node reached the target version.
    Cleanup,
}

impl JobPhase {
    /// The value of the `MUTEX_PHASE` variable and the phase label.
    pub fn as_str(self) -> &'static str {
        match self {
            JobPhase::Gate => "gate",
            JobPhase::Cleanup => "cleanup",
        }
    }

    /// Parses a phase label value.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "gate" => Some(JobPhase::Gate),
            "cleanup" => Some(JobPhase::Cleanup),
            _ => None,
        }
    }
}

/// Everything that identifies one Job of a rollout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobKey<'a> {
    /// Namespace of the run config.
    pub run_config_namespace: &'a str,
    /// Name of the run config.
    pub run_config: &'a str,
    /// The node the Job is for.
    pub node: &'a str,
    /// The rollout the Job belongs to: the target version under `trigger: Upgrade`, the config rollout's name
    /// under `AnyConfigChange` (`status.targetConfig.rollout`).
    pub rollout: &'a str,
    /// The version the node is upgraded to (`TARGET_VERSION`).
    pub target_version: &'a str,
    /// The rendered MachineConfig the node goes to, for a config change (`TARGET_CONFIG`).
    pub target_config: Option<&'a str>,
    /// Namespace of the rule.
    pub rule_namespace: &'a str,
    /// Name of the rule.
    pub rule: &'a str,
    /// Gate or cleanup.
    pub phase: JobPhase,
    /// 1 for the first run of this step; a retry runs the next attempt.
    pub attempt: u32,
}

/// Longest Job name: Job names become the `job-name` pod label, a label value.
const MAX_JOB_NAME: usize = 63;
/// Hex digits of the name's hash suffix.
const NAME_HASH: usize = 10;

impl JobKey<'_> {
    /// The Job's name: `<jobName>-<hash>`, the prefix shortened so the name fits 63 characters, the hash over the
    /// step and `nonce`. numo draws the nonce when it first asks for the step's Job and records the name in the run
    /// config's status before it creates the Job, so nobody can create a Job of that name first (and numo's create
    /// never meets a forgery), and a restarted operator creates the recorded Job, never a second one.
    pub fn job_name(&self, prefix: &str, nonce: u64) -> String {
        let identity = format!(
            "{}/{}/{}/{}/{}/{}/{}/{}/{nonce:016x}",
            self.run_config_namespace,
            self.run_config,
            self.node,
            self.rollout,
            self.rule_namespace,
            self.rule,
            self.phase.as_str(),
            self.attempt
        );
        let keep = MAX_JOB_NAME - NAME_HASH - 1;
        let head: String = prefix.chars().take(keep).collect();
        let head = head.trim_end_matches('-');
        format!("{head}-{}", labels::hash_hex(&identity, NAME_HASH))
    }

    /// The labels every Job of this step carries (the Job watch and the planner select on them).
    pub fn labels(&self) -> BTreeMap<String, String> {
        BTreeMap::from([
            (labels::JOB_MANAGED_BY.to_string(), labels::MANAGER.to_string()),
            (labels::JOB_RUN_CONFIG.to_string(), labels::label_value(self.run_config)),
            (labels::JOB_RUN_CONFIG_NAMESPACE.to_string(), labels::label_value(self.run_config_namespace)),
            (labels::JOB_NODE.to_string(), labels::label_value(self.node)),
            (labels::JOB_RULE.to_string(), labels::rule_name_part(self.rule, self.rule_namespace)),
            (labels::JOB_PHASE.to_string(), self.phase.as_str().to_string()),
            (labels::JOB_TARGET_VERSION.to_string(), labels::label_value(self.rollout)),
            (labels::JOB_ATTEMPT.to_string(), self.attempt.to_string()),
        ])
    }
}

/// Annotation on numo's Jobs: the node, unshortened.
pub const NODE_ANNOTATION: &str = "openshift-optional.skrzypek.io/node";
/// Annotation on numo's Jobs: the rule as `namespace/name`, unshortened.
pub const RULE_ANNOTATION: &str = "openshift-optional.skrzypek.io/rule";
/// Annotation on numo's Jobs: the rollout (the target version, or a config rollout's name), unshortened.
pub const VERSION_ANNOTATION: &str = "openshift-optional.skrzypek.io/target-version";
/// Annotation on numo's Jobs: the run config that created the Job, `namespace/name`, unshortened (its labels may be
/// shortened with a hash, which names no object).
pub const RUN_CONFIG_ANNOTATION: &str = "openshift-optional.skrzypek.io/run-config";
/// Finalizer on numo's Jobs: the Job stays readable after someone (its TTL, an admin) deletes it until the run
/// config's status records its result; numo then removes the finalizer.
pub const RESULT_FINALIZER: &str = "openshift-optional.skrzypek.io/record-result";
/// `ttlSecondsAfterFinished` of numo's Jobs when the rule's template sets none: finished Jobs are collected after a
/// day (their results live on in the run config's status).
pub const DEFAULT_TTL_SECONDS: i32 = 24 * 60 * 60;

/// What a Job needs besides its key.
pub struct JobTemplate<'a> {
    /// The rule's `jobName`.
    pub prefix: &'a str,
    /// Where the Job runs.
    pub namespace: &'a str,
    /// The rule's `jobSpec` or `cleanUpJobSpec`.
    pub spec: &'a serde_json::Value,
    /// Owner reference to the run config, when the Job runs in the run config's namespace (Kubernetes does not allow
    /// owners in another namespace).
    pub owner: Option<OwnerReference>,
    /// Whether to keep the pods off the node being upgraded.
    pub avoid_node: bool,
    /// The Job's name ([`JobKey::job_name`], or the one the status recorded).
    pub name: &'a str,
}

/// Renders the Job for `key` from `template`. Fails only if the spec is not a JobSpec (the MutexRule controller
/// reports that in the rule's status).
pub fn render(key: &JobKey<'_>, template: &JobTemplate<'_>) -> Result<Job, serde_json::Error> {
    let mut raw = template.spec.clone();
    drop_empty_selector(&mut raw);
    let mut spec: JobSpec = serde_json::from_value(raw)?;
    spec.ttl_seconds_after_finished.get_or_insert(DEFAULT_TTL_SECONDS);
    let labels = key.labels();
    let pod_meta = spec.template.metadata.get_or_insert_with(Default::default);
    pod_meta.labels.get_or_insert_with(Default::default).extend(labels.clone());
    if let Some(pod) = spec.template.spec.as_mut() {
        add_env(pod, key);
        if template.avoid_node {
            avoid_node(pod, key.node);
        }
    }
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(template.name.to_string()),
            namespace: Some(template.namespace.to_string()),
            labels: Some(labels),
            annotations: Some(BTreeMap::from([
                (NODE_ANNOTATION.to_string(), key.node.to_string()),
                (RULE_ANNOTATION.to_string(), format!("{}/{}", key.rule_namespace, key.rule)),
                (VERSION_ANNOTATION.to_string(), key.rollout.to_string()),
                (RUN_CONFIG_ANNOTATION.to_string(), format!("{}/{}", key.run_config_namespace, key.run_config)),
            ])),
            owner_references: template.owner.clone().map(|o| vec![o]),
            finalizers: Some(vec![RESULT_FINALIZER.to_string()]),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    })
}

/// The reference's YAML carries `selector: {}`; the apiserver generates the selector itself unless
/// `manualSelector` is set, so an empty one is dropped.
fn drop_empty_selector(spec: &mut serde_json::Value) {
    let manual = spec.get("manualSelector").and_then(|v| v.as_bool()).unwrap_or(false);
    if let Some(map) = spec.as_object_mut() {
        let empty = map.get("selector").is_some_and(|s| s.as_object().is_none_or(|o| o.is_empty()) || s.is_null());
        if empty && !manual {
            map.remove("selector");
        }
    }
}

/// Appends NODE_NAME, MUTEX_RULE, TARGET_VERSION, MUTEX_PHASE, MUTEX_RUN_CONFIG and, for a config change,
/// TARGET_CONFIG to every container and init container; a variable the template already defines is left as the
/// template has it.
fn add_env(pod: &mut PodSpec, key: &JobKey<'_>) {
    let mut vars = vec![
        ("NODE_NAME", key.node.to_string()),
        ("MUTEX_RULE", key.rule.to_string()),
        ("TARGET_VERSION", key.target_version.to_string()),
        ("MUTEX_PHASE", key.phase.as_str().to_string()),
        ("MUTEX_RUN_CONFIG", key.run_config.to_string()),
    ];
    if let Some(config) = key.target_config {
        vars.push(("TARGET_CONFIG", config.to_string()));
    }
    let containers = pod.containers.iter_mut().chain(pod.init_containers.iter_mut().flatten());
    for container in containers {
        let env = container.env.get_or_insert_with(Vec::new);
        for (name, value) in &vars {
            if !env.iter().any(|e| e.name == *name) {
                env.push(EnvVar { name: name.to_string(), value: Some(value.clone()), value_from: None });
            }
        }
    }
}

/// Merges a required "not on this node" term into the pod's node affinity: every existing required term gets the
/// requirement (terms are ORed, so each must exclude the node); without terms, one term is added.
fn avoid_node(pod: &mut PodSpec, node: &str) {
    let requirement = NodeSelectorRequirement {
        key: "metadata.name".into(),
        operator: "NotIn".into(),
        values: Some(vec![node.to_string()]),
    };
    let affinity = pod.affinity.get_or_insert_with(Affinity::default);
    let node_affinity = affinity.node_affinity.get_or_insert_with(NodeAffinity::default);
    let required = node_affinity
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(|| NodeSelector { node_selector_terms: Vec::new() });
    if required.node_selector_terms.is_empty() {
        required.node_selector_terms.push(NodeSelectorTerm::default());
    }
    for term in &mut required.node_selector_terms {
        let fields = term.match_fields.get_or_insert_with(Vec::new);
        if !fields.contains(&requirement) {
            fields.push(requirement.clone());
        }
    }
}

/// The outcome of a Job, from the final conditions of its status.
pub fn job_result(status: Option<&JobStatus>) -> crate::api::JobResult {
    let conditions = status.and_then(|s| s.conditions.as_ref());
    let holds = |type_: &str| conditions.into_iter().flatten().any(|c| c.type_ == type_ && c.status == "True");
    if holds("Complete") {
        crate::api::JobResult::Succeeded
    } else if holds("Failed") {
        crate::api::JobResult::Failed
    } else {
        crate::api::JobResult::Running
    }
}

/// Why a Job failed, from the Failed condition of its status.
pub fn failure_message(status: Option<&JobStatus>) -> Option<String> {
    let condition = status?.conditions.as_ref()?.iter().find(|c| c.type_ == "Failed")?;
    Some(match (&condition.reason, &condition.message) {
        (Some(r), Some(m)) => format!("{r}: {m}"),
        (Some(r), None) => r.clone(),
        (None, Some(m)) => m.clone(),
        (None, None) => "failed".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(attempt: u32) -> JobKey<'static> {
        JobKey {
            run_config_namespace: "ops",
            run_config: "example",
            node: "worker-1",
            rollout: "4.16.5",
            target_version: "4.16.5",
            target_config: None,
            rule_namespace: "ops",
            rule: "drain-check",
            phase: JobPhase::Gate,
            attempt,
        }
    }

    fn reference_spec() -> serde_json::Value {
        json!({
            "selector": {},
            "template": {
                "metadata": {"name": "mutex"},
                "spec": {
                    "containers": [{"name": "mutex", "image": "ubi9/toolbox", "command": ["sleep"], "args": ["30"],
                                    "env": [{"name": "NODE_NAME", "value": "mine"}, {"name": "OTHER", "value": "x"}]}],
                    "restartPolicy": "Never",
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
                            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}
                        ]}}}
                }
            }
        })
    }

    fn template(spec: &serde_json::Value) -> JobTemplate<'_> {
        JobTemplate { prefix: "example", namespace: "ops", spec, owner: None, avoid_node: true, name: "example-1" }
    }

    #[test]
    fn names_are_short_distinct_per_attempt_and_unknowable_without_the_nonce() {
        assert_eq!(key(1).job_name("example", 7), key(1).job_name("example", 7));
        assert_ne!(key(1).job_name("example", 7), key(2).job_name("example", 7));
        assert_ne!(key(1).job_name("example", 7), key(1).job_name("example", 8), "another nonce, another name");
        let long = key(1).job_name(&"x".repeat(80), 7);
        assert!(long.len() <= 63, "{long}");
        assert!(key(1).job_name("example", 7).starts_with("example-"));
    }

    #[test]
    fn env_is_appended_without_clobbering_the_templates_own() {
        let spec = reference_spec();
        let job = render(&key(1), &template(&spec)).unwrap();
        let pod = job.spec.unwrap().template.spec.unwrap();
        let env = pod.containers[0].env.clone().unwrap();
        let get = |n: &str| env.iter().filter(|e| e.name == n).map(|e| e.value.clone().unwrap()).collect::<Vec<_>>();
        assert_eq!(get("NODE_NAME"), ["mine"]);
        assert_eq!(get("OTHER"), ["x"]);
        assert_eq!(get("MUTEX_RULE"), ["drain-check"]);
        assert_eq!(get("TARGET_VERSION"), ["4.16.5"]);
        assert_eq!(get("MUTEX_PHASE"), ["gate"]);
        assert_eq!(get("MUTEX_RUN_CONFIG"), ["example"]);
        assert!(get("TARGET_CONFIG").is_empty(), "an upgrade names no config");
    }

    #[test]
    fn a_config_change_names_its_config_and_its_jobs_after_its_rollout() {
        let spec = reference_spec();
        let config = JobKey { rollout: "4.16.5-0a1b2c3d4e", target_config: Some("rendered-worker-0f0f"), ..key(1) };
        let job = render(&config, &template(&spec)).unwrap();
        let annotations = job.metadata.annotations.clone().unwrap();
        assert_eq!(annotations[VERSION_ANNOTATION], "4.16.5-0a1b2c3d4e");
        let pod = job.spec.unwrap().template.spec.unwrap();
        let env = pod.containers[0].env.clone().unwrap();
        let get = |n: &str| env.iter().filter(|e| e.name == n).map(|e| e.value.clone().unwrap()).collect::<Vec<_>>();
        assert_eq!(get("TARGET_CONFIG"), ["rendered-worker-0f0f"]);
        assert_eq!(get("TARGET_VERSION"), ["4.16.5"]);
        // Two config rollouts at one version never share a Job name.
        assert_ne!(config.job_name("example", 7), key(1).job_name("example", 7));
        assert_ne!(
            config.job_name("example", 7),
            JobKey { rollout: "4.16.5-ffffffffff", ..config.clone() }.job_name("example", 7)
        );
    }

    #[test]
    fn anti_affinity_is_merged_into_every_existing_term() {
        let spec = reference_spec();
        let job = render(&key(1), &template(&spec)).unwrap();
        let pod = job.spec.unwrap().template.spec.unwrap();
        let terms = pod
            .affinity
            .unwrap()
            .node_affinity
            .unwrap()
            .required_during_scheduling_ignored_during_execution
            .unwrap()
            .node_selector_terms;
        assert_eq!(terms.len(), 2);
        for term in terms {
            assert_eq!(term.match_expressions.as_ref().map(Vec::len), Some(1));
            let fields = term.match_fields.unwrap();
            assert_eq!(fields[0].key, "metadata.name");
            assert_eq!(fields[0].operator, "NotIn");
            assert_eq!(fields[0].values, Some(vec!["worker-1".to_string()]));
        }
    }

    #[test]
    fn without_affinity_one_term_is_added_and_it_can_be_turned_off() {
        let spec =
            json!({"template": {"spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}}});
        let job = render(&key(1), &template(&spec)).unwrap();
        let affinity = job.spec.unwrap().template.spec.unwrap().affinity.unwrap();
        let terms = affinity.node_affinity.unwrap().required_during_scheduling_ignored_during_execution.unwrap();
        assert_eq!(terms.node_selector_terms.len(), 1);
        let off = JobTemplate { avoid_node: false, ..template(&spec) };
        let job = render(&key(1), &off).unwrap();
        assert!(job.spec.unwrap().template.spec.unwrap().affinity.is_none());
    }

    #[test]
    fn empty_selector_is_dropped_unless_manual() {
        let spec = reference_spec();
        let job = render(&key(1), &template(&spec)).unwrap();
        assert!(job.spec.unwrap().selector.is_none());
        let manual = json!({"manualSelector": true, "selector": {}, "template": {"spec": {"containers": []}}});
        let job = render(&key(1), &template(&manual)).unwrap();
        assert!(job.spec.unwrap().selector.is_some());
    }

    #[test]
    fn jobs_and_their_pods_carry_the_identifying_labels() {
        let spec = reference_spec();
        let job = render(&key(2), &template(&spec)).unwrap();
        let labels = job.metadata.labels.clone().unwrap();
        assert_eq!(labels[crate::labels::JOB_NODE], "worker-1");
        assert_eq!(labels[crate::labels::JOB_PHASE], "gate");
        assert_eq!(labels[crate::labels::JOB_ATTEMPT], "2");
        assert_eq!(labels[crate::labels::JOB_RULE], "drain-check.ops");
        assert_eq!(labels[crate::labels::JOB_RUN_CONFIG], "example");
        let pod_labels = job.spec.unwrap().template.metadata.unwrap().labels.unwrap();
        assert_eq!(pod_labels[crate::labels::JOB_NODE], "worker-1");
    }
}
