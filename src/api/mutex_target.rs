//! `MutexTarget`: the MachineConfigPools whose nodes are gated.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A set of MachineConfigPools whose nodes upgrade only through numo's gate.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "openshift-optional.skrzypek.io",
    version = "v1alpha1",
    kind = "MutexTarget",
    namespaced,
    status = "MutexTargetStatus",
    shortname = "mtarget",
    category = "numo",
    doc = "MutexTarget names the MachineConfigPools whose nodes are paused and upgraded one at a time through numo's gate.",
    printcolumn = r#"{"name": "Pools", "type": "string", "jsonPath": ".spec.machineConfigPools", "description": "The gated MachineConfigPools"}"#,
    printcolumn = r#"{"name": "Nodes", "type": "integer", "jsonPath": ".status.nodeCount", "description": "How many nodes the pools select"}"#,
    printcolumn = r#"{"name": "Valid", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"ValidConfig\")].status", "description": "Whether every pool exists"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MutexTargetSpec {
    /// Names of existing MachineConfigPools (cluster-scoped) whose nodes are gated.
    #[schemars(length(min = 1))]
    #[schemars(extend("x-kubernetes-list-type" = "set"))]
    pub machine_config_pools: Vec<String>,
}

/// What numo observed about a `MutexTarget`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MutexTargetStatus {
    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The sorted names of the nodes the pools select now, as the Machine Config Operator applies their selectors.
    #[serde(default)]
    pub nodes: Vec<String>,
    /// How many nodes the pools select now.
    #[serde(default)]
    pub node_count: u32,
    /// `ValidConfig` (every pool exists; the message names missing ones) and `NodeListGathered`.
    #[serde(default)]
    #[schemars(schema_with = "crate::api::conditions_schema")]
    pub conditions: Vec<Condition>,
}
