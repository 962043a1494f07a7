//! numo's own kinds: `MutexRule`, `MutexTarget` and `MutexRunConfig`, in the API group of the operator they replace.

pub mod estimate;
pub mod mutex_rule;
pub mod mutex_run_config;
pub mod mutex_target;
pub mod node_names;
pub mod node_phases;
pub mod safe_to_proceed;
pub mod topology;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use estimate::{Estimate, EstimateBasis, RolloutFigures, Step, StepFigure, StepSamples, StepSeconds};
pub use mutex_rule::{JobRendering, MutexRule, MutexRuleSpec, MutexRuleStatus, RuleType, RuleUnusable};
pub use mutex_run_config::{
    parse_duration, CanaryPool, FailurePolicy, ForeignChange, HeldPool, JobRecord, JobResult, MutexRunConfig,
    MutexRunConfigSpec, MutexRunConfigStatus, NodePhase, NodeProgress, PoolConfig, RunPhase, TargetChange,
    TargetConfig, Trigger, VersionSource,
};
pub use mutex_target::{MutexTarget, MutexTargetSpec, MutexTargetStatus};
pub use node_names::NodeNames;
pub use safe_to_proceed::check;
pub use safe_to_proceed::{
    AlertsCheck, BlackoutWindow, Blocker, BuiltInCheck, ClusterOperatorsCheck, CustomCheck, HealthChecks,
    MaintenanceWindow, WindowTimes,
};
pub use topology::{KeySource, Topology, TopologyMode, TopologyStatus, Wave};

/// The API group, identical to the Ansible operator numo replaces.
pub const GROUP: &str = "openshift-optional.skrzypek.io";
/// The API version of all three kinds.
pub const VERSION: &str = "v1alpha1";

/// A list of standard Kubernetes conditions, merged by `type` under server-side apply.
pub type Conditions = Vec<Condition>;

/// Schema of a condition list: a list-map keyed by `type`, as every Kubernetes API has it.
pub(crate) fn conditions_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let mut schema = generator.subschema_for::<Vec<Condition>>();
    schema.insert("x-kubernetes-list-type".into(), "map".into());
    schema.insert("x-kubernetes-list-map-keys".into(), serde_json::json!(["type"]));
    schema
}

/// Schema of an embedded Kubernetes object the apiserver must keep verbatim (a Job spec, a selector snapshot).
pub(crate) fn free_form_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
    })
}

/// A reference to a namespaced numo object; the namespace defaults to the referring object's own.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
pub struct ObjectReference {
    /// Name of the referenced object.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// Namespace of the referenced object; defaults to the namespace of the object that refers to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

impl ObjectReference {
    /// The namespace this reference resolves to, given the referring object's namespace.
    pub fn namespace_or<'a>(&'a self, default: &'a str) -> &'a str {
        self.namespace.as_deref().filter(|ns| !ns.is_empty()).unwrap_or(default)
    }
}

/// Every numo CRD, in a stable order.
pub fn crds() -> Vec<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> {
    use kube::CustomResourceExt;
    vec![MutexRule::crd(), MutexTarget::crd(), MutexRunConfig::crd()]
}
