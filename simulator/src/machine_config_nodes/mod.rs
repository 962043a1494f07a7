//! MachineConfigNodes (`machineconfiguration.openshift.io/v1`, cluster-scoped, one per node and named after it), as
//! the machine-config operator, controller and daemon write them from OpenShift 4.20 (feature gate
//! `MachineConfigNodes` in the Default set; [`crate::OpenShiftRelease::writes_machine_config_nodes`]). On 4.16–4.19
//! the simulator writes none.
//!
//! Who writes what (openshift/machine-config-operator, `release-4.20` unless named):
//! - **the operator** ([`operator`], `pkg/operator/sync.go` `syncMachineConfigNodes`, as
//!   [`crate::operator_sync::OPERATOR_USER`]): on every sync, an object per node (owned by the Node,
//!   `spec.node.name`, `spec.pool.name` = the node's primary pool, `spec.configVersion.desired` = [`NOT_YET_SET`]
//!   then the node's `desiredConfig`); deletes the objects of nodes that are gone.
//! - **the node controller** (`pkg/controller/node/node_controller.go` `updateCandidateNode` →
//!   `pkg/upgrademonitor/upgrade_monitor.go` `UpdateMachineConfigNodeSpecDesiredAnnotation`, as
//!   [`crate::identities::CONTROLLER_USER`]): sets `spec.configVersion.desired` just before it sets the node's
//!   `desiredConfig` (a read and an update).
//! - **the daemon and the drain controller** ([`steps`], as [`crate::identities::DAEMON_USER`] and
//!   [`crate::identities::CONTROLLER_USER`]): the conditions of each phase of an update, through
//!   `upgrade_monitor.go` `generateAndApplyMachineConfigNodes` ([`conditions`]): a read, then a server-side apply of
//!   the whole status (field manager `machine-config-operator`, forced).
//!
//! The simulator's writes never make an update fail: when the API is not served (a cluster with numo's derived
//! CRDs), nothing is written; an error is logged and the update goes on, as the real components log and go on
//! ([`mod@write`]).
//!
//! The type here is the simulator's own, independent of numo's reading of the kind.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

pub mod conditions;
pub mod operator;
pub mod steps;
pub mod write;

pub use write::{MachineConfigNodes, NodeReport};

/// The placeholder of a config or pool name not known yet (`upgrademonitor.NotYetSet`; the CRD wants a lowercase
/// RFC 1123 subdomain).
pub const NOT_YET_SET: &str = "not-yet-set";
/// The field manager of the platform's MachineConfigNode writes (`upgrade_monitor.go`), whoever makes them.
pub const FIELD_MANAGER: &str = "machine-config-operator";

/// Condition: the daemon found the update compatible (`MachineConfigNodeUpdatePrepared`).
pub const UPDATE_PREPARED: &str = "UpdatePrepared";
/// Condition: the update is being carried out (cordon, drain, files and OS).
pub const UPDATE_EXECUTED: &str = "UpdateExecuted";
/// Condition: the actions after the update (reboot or none) are done.
pub const UPDATE_POST_ACTION_COMPLETE: &str = "UpdatePostActionComplete";
/// Condition: the update is complete (the node uncordoned).
pub const UPDATE_COMPLETE: &str = "UpdateComplete";
/// Condition: the daemon resumed normal operations on the new config.
pub const RESUMED: &str = "Resumed";
/// Condition: the node's drain (`Unknown` while it drains).
pub const DRAINED: &str = "Drained";
/// Condition: files and OS written (`MachineConfigNodeUpdateFilesAndOS`).
pub const APPLIED_FILES_AND_OS: &str = "AppliedFilesAndOS";
/// Condition: the OS image pulled (image mode; in the first write's list on 4.21 only).
pub const IMAGE_PULLED_FROM_REGISTRY: &str = "ImagePulledFromRegistry";
/// Condition: the node cordoned.
pub const CORDONED: &str = "Cordoned";
/// Condition: the node's reboot (`Unknown` until it is back).
pub const REBOOTED_NODE: &str = "RebootedNode";
/// Condition: the node runs its desired config; writing it resets every other condition.
pub const UPDATED: &str = "Updated";
/// Condition: the node uncordoned.
pub const UNCORDONED: &str = "Uncordoned";
/// Condition: the node's update failed.
pub const NODE_DEGRADED: &str = "NodeDegraded";
/// Condition: pinned image sets failed (feature gate `PinnedImages`, Default from 4.20).
pub const PINNED_IMAGE_SETS_DEGRADED: &str = "PinnedImageSetsDegraded";
/// Condition: pinned image sets being pulled.
pub const PINNED_IMAGE_SETS_PROGRESSING: &str = "PinnedImageSetsProgressing";

/// A reference to an object by name (`MCOObjectReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectName {
    /// The object's name.
    #[serde(default)]
    pub name: String,
}

/// The rendered config the node is to run (`spec.configVersion`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecConfigVersion {
    /// Its name, or [`NOT_YET_SET`].
    #[serde(default)]
    pub desired: String,
}

/// A node's MachineConfigNode: which node and pool, and the config it is to run.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[kube(
    group = "machineconfiguration.openshift.io",
    version = "v1",
    kind = "MachineConfigNode",
    status = "MachineConfigNodeStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigNodeSpec {
    /// The node (its name is the object's).
    #[serde(default)]
    pub node: ObjectName,
    /// The node's primary pool, or [`NOT_YET_SET`].
    #[serde(default)]
    pub pool: ObjectName,
    /// The config the node is to run.
    #[serde(default)]
    pub config_version: SpecConfigVersion,
}

/// What the node reports of its update.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigNodeStatus {
    /// The update's phases, one condition per type.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// The object's generation plus one, as the MCO writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The configs of the node's annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_version: Option<StatusConfigVersion>,
}

/// `status.configVersion`: the node's configs as its annotations show them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusConfigVersion {
    /// The desired config, once the update is found compatible ([`NOT_YET_SET`] before).
    #[serde(default)]
    pub desired: String,
    /// The current config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
}

impl MachineConfigNode {
    /// The condition of type `type_`, if reported.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status.as_ref()?.conditions.iter().find(|c| c.type_ == type_)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource;

    #[test]
    fn the_kind_addresses_the_real_api_path() {
        assert_eq!(
            MachineConfigNode::url_path(&(), None),
            "/apis/machineconfiguration.openshift.io/v1/machineconfignodes"
        );
    }

    #[test]
    fn an_object_of_the_real_crd_reads() {
        let mcn: MachineConfigNode = serde_json::from_value(serde_json::json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigNode",
            "metadata": {"name": "worker-0"},
            "spec": {"node": {"name": "worker-0"}, "pool": {"name": "worker"},
                     "configVersion": {"desired": "rendered-worker-1"}},
            "status": {"observedGeneration": 2, "configVersion": {"desired": "rendered-worker-1"},
                       "pinnedImageSets": [{"name": "x", "desiredGeneration": 1}],
                       "conditions": [{"type": "Updated", "status": "True", "reason": "Updated",
                                       "message": "Node worker-0 Updated", "lastTransitionTime": "2026-11-26T10:00:00Z"}]},
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(mcn.spec.pool.name, "worker");
        assert_eq!(mcn.condition(UPDATED).map(|c| c.status.as_str()), Some("True"));
        assert_eq!(mcn.condition(DRAINED), None);
    }
}
