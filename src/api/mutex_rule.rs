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

    /// Namespace the Jobs run in. Defaults to the rule's own namespace; any other namespace must be on the
    /// operator's job-namespace allow-list, otherwise the rule is invalid.
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
    /// `ValidConfig`: whether the Job templates and the job namespace are valid; the message names the first bad field.
    #[serde(default)]
    #[schemars(schema_with = "crate::api::conditions_schema")]
    pub conditions: Vec<Condition>,
}

impl MutexRule {
    /// The namespace this rule's Jobs run in.
    pub fn job_namespace(&self) -> Option<&str> {
        self.spec.job_namespace.as_deref().filter(|ns| !ns.is_empty()).or(self.metadata.namespace.as_deref())
    }
}
