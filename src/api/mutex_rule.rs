//! `MutexRule`: one operation (a Job template, plus an optional cleanup Job) that must run around each node's upgrade.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One mandatory operation in front of (and optionally behind) every gated node's upgrade.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "openshift-optional.skrzypek.io",
    version = "v1alpha1",
    kind = "MutexRule",
    namespaced,
    status = "MutexRuleStatus",
    shortname = "mrule",
    category = "numo",
    doc = "MutexRule is one operation, run as a Kubernetes Job on the cluster before each gated node upgrades, with an optional cleanup Job after it upgraded.",
    printcolumn = r#"{"name": "Job", "type": "string", "jsonPath": ".spec.jobName", "description": "Prefix of the Jobs this rule creates"}"#,
    printcolumn = r#"{"name": "Job Namespace", "type": "string", "jsonPath": ".spec.jobNamespace", "description": "Namespace the Jobs run in"}"#,
    printcolumn = r#"{"name": "Valid", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"ValidConfig\")].status", "description": "Whether the rule is valid"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MutexRuleSpec {
    /// Prefix of the names of the Jobs this rule creates (a DNS label; numo appends a short deterministic suffix and shortens the prefix where the whole name would exceed 63 characters).
    #[schemars(length(min = 1, max = 63), regex(pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"))]
    pub job_name: String,

    /// Namespace the Jobs run in. Defaults to the rule's own namespace. Any other namespace must be on the
    /// operator's job-namespace allow-list, and the ServiceAccount the Jobs run as there must name the rule's
    /// namespace in its annotation `openshift-optional.skrzypek.io/allow-mutex-rules-from`; otherwise the rule is
    /// invalid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_namespace: Option<String>,

    /// A complete `batch/v1` JobSpec, run for each node before it is released for its upgrade. The pods get the
    /// environment variables NODE_NAME, MUTEX_RULE, TARGET_VERSION, MUTEX_PHASE and MUTEX_RUN_CONFIG, and by default
    /// are kept off the node being upgraded.
    #[schemars(schema_with = "crate::api::free_form_object")]
    pub job_spec: serde_json::Value,

    /// An optional `batch/v1` JobSpec, run for each node after it reached the target version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "optional_free_form_object")]
    pub clean_up_job_spec: Option<serde_json::Value>,

    /// Where the operation runs; only `kubernetes` (a Job) exists.
    #[serde(default, rename = "type")]
    pub rule_type: RuleType,
}

fn optional_free_form_object(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    crate::api::free_form_object(generator)
}

/// How a rule's operation is carried out.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RuleType {
    /// The operation is a Kubernetes Job.
    #[default]
    #[serde(rename = "kubernetes")]
    Kubernetes,
}

/// What numo observed about a `MutexRule`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MutexRuleStatus {
    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `ValidConfig`: whether the Job templates, the job namespace and the ServiceAccount the Jobs run as are valid;
    /// the message names the first bad field. True when the Jobs are accepted with or without numo's anti-affinity
    /// (see `jobRenderings`).
    #[serde(default)]
    #[schemars(schema_with = "crate::api::conditions_schema")]
    pub conditions: Vec<Condition>,
    /// The rule's Jobs as run configs create them, one entry per setting of a run config's `avoidTargetNode`
    /// (with and without numo's anti-affinity), and whether the API server accepts each in a dry-run create. Empty
    /// when a check before the dry run failed. A run config may use the rule only if the entry for its own
    /// `avoidTargetNode` is accepted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub job_renderings: Vec<JobRendering>,
}

/// One way of rendering a rule's Jobs (with or without numo's anti-affinity) and the API server's verdict on it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobRendering {
    /// The run configs this entry stands for: those with this `avoidTargetNode`. `true` (the default) adds numo's
    /// required anti-affinity that keeps the pods off the node being upgraded; `false` leaves the templates'
    /// affinity as it is.
    pub avoid_target_node: bool,
    /// Whether the API server accepted every Job of the rule rendered this way (dry-run create).
    pub accepted: bool,
    /// Why not: the API server's answer about the first Job it rejected, in the rule's terms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl MutexRule {
    /// The namespace this rule's Jobs run in.
    pub fn job_namespace(&self) -> Option<&str> {
        self.spec.job_namespace.as_deref().filter(|ns| !ns.is_empty()).or(self.metadata.namespace.as_deref())
    }

    /// Whether a run config with `avoidTargetNode: avoid_target_node` may use this rule, from the rule's status
    /// (see [`usability`]).
    pub fn usable(&self, avoid_target_node: bool) -> Result<(), RuleUnusable> {
        usability(self.status.as_ref(), self.metadata.generation, avoid_target_node)
    }
}

/// The condition type of a rule's status.
pub const VALID_CONFIG: &str = "ValidConfig";

/// Why a run config may not use a rule (yet).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleUnusable {
    /// numo has not judged the rule's current generation yet: wait.
    NotValidatedYet,
    /// The rule is invalid, or its Jobs are rejected as this run config would create them; the sentence says why
    /// and what to do.
    Invalid(String),
}

/// Whether a run config with `avoidTargetNode: avoid_target_node` may use a rule whose status is `status` and
/// whose `metadata.generation` is `generation`: its `ValidConfig` describes the current generation and is True, and
/// its Jobs rendered as that run config renders them were accepted (`jobRenderings`). A status written before
/// numo recorded `jobRenderings` vouches only for the Jobs with numo's anti-affinity, which is what it checked.
pub fn usability(
    status: Option<&MutexRuleStatus>,
    generation: Option<i64>,
    avoid_target_node: bool,
) -> Result<(), RuleUnusable> {
    let status = status.ok_or(RuleUnusable::NotValidatedYet)?;
    let condition = crate::conditions::find(&status.conditions, VALID_CONFIG).ok_or(RuleUnusable::NotValidatedYet)?;
    if condition.observed_generation.is_some() && condition.observed_generation != generation {
        return Err(RuleUnusable::NotValidatedYet);
    }
    if condition.status != "True" {
        return Err(RuleUnusable::Invalid(condition.message.clone()));
    }
    let rendering = status.job_renderings.iter().find(|r| r.avoid_target_node == avoid_target_node);
    match rendering {
        Some(r) if r.accepted => Ok(()),
        Some(r) => Err(RuleUnusable::Invalid(rejected_rendering(avoid_target_node, r.message.as_deref()))),
        None if status.job_renderings.is_empty() && avoid_target_node => Ok(()),
        None => Err(RuleUnusable::NotValidatedYet),
    }
}

fn rejected_rendering(avoid_target_node: bool, message: Option<&str>) -> String {
    let (how, other) = if avoid_target_node {
        ("with numo's anti-affinity (avoidTargetNode: true, the default)", "set avoidTargetNode: false")
    } else {
        ("without numo's anti-affinity (avoidTargetNode: false)", "drop avoidTargetNode: false")
    };
    let why = message.unwrap_or("the API server rejected them");
    format!("its Jobs as this run config creates them, {how}, are not accepted: {why}; fix the rule or {other}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn status(valid: &str, generation: i64, renderings: &[(bool, bool)]) -> MutexRuleStatus {
        MutexRuleStatus {
            observed_generation: Some(generation),
            conditions: vec![Condition {
                type_: VALID_CONFIG.into(),
                status: valid.into(),
                reason: "r".into(),
                message: "why".into(),
                observed_generation: Some(generation),
                last_transition_time: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
            }],
            job_renderings: renderings
                .iter()
                .map(|&(avoid_target_node, accepted)| JobRendering {
                    avoid_target_node,
                    accepted,
                    message: (!accepted)
                        .then(|| "the apiserver rejected the Job from spec.jobSpec (dry run): x".into()),
                })
                .collect(),
        }
    }

    #[test]
    fn a_rule_is_usable_when_the_run_configs_rendering_was_accepted() {
        let both = status("True", 2, &[(true, true), (false, true)]);
        assert_eq!(usability(Some(&both), Some(2), true), Ok(()));
        assert_eq!(usability(Some(&both), Some(2), false), Ok(()));

        let only_with = status("True", 2, &[(true, true), (false, false)]);
        assert_eq!(usability(Some(&only_with), Some(2), true), Ok(()));
        let Err(RuleUnusable::Invalid(why)) = usability(Some(&only_with), Some(2), false) else {
            panic!("avoidTargetNode: false may not use a rule whose Jobs without anti-affinity are rejected")
        };
        assert!(why.contains("avoidTargetNode: false") && why.contains("spec.jobSpec (dry run): x"), "{why}");

        let only_without = status("True", 2, &[(true, false), (false, true)]);
        assert!(matches!(usability(Some(&only_without), Some(2), true), Err(RuleUnusable::Invalid(_))));
        assert_eq!(usability(Some(&only_without), Some(2), false), Ok(()));
    }

    #[test]
    fn an_invalid_or_unjudged_rule_is_not_usable() {
        let invalid = status("False", 2, &[]);
        assert_eq!(usability(Some(&invalid), Some(2), true), Err(RuleUnusable::Invalid("why".into())));
        let stale = status("True", 1, &[(true, true), (false, true)]);
        assert_eq!(usability(Some(&stale), Some(2), true), Err(RuleUnusable::NotValidatedYet));
        assert_eq!(usability(None, Some(1), true), Err(RuleUnusable::NotValidatedYet));
        let no_condition = MutexRuleStatus::default();
        assert_eq!(usability(Some(&no_condition), Some(1), false), Err(RuleUnusable::NotValidatedYet));
    }

    #[test]
    fn a_status_from_before_renderings_vouches_for_the_default_only() {
        let old = status("True", 3, &[]);
        assert_eq!(usability(Some(&old), Some(3), true), Ok(()));
        assert_eq!(usability(Some(&old), Some(3), false), Err(RuleUnusable::NotValidatedYet));
    }
}
