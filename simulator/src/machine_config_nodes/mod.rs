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
//!   [`crate::platform::CONTROLLER_USER`]): sets `spec.configVersion.desired` just before it sets the node's
//!   `desiredConfig` (a read and an update).
//! - **the daemon and the drain controller** ([`steps`], as [`crate::platform::DAEMON_USER`] and
//!   [`crate::platform::CONTROLLER_USER`]): the conditions of each phase of an update, through
//!   `upgrade_monitor.go` `generateAndApplyMachineConfigNodes` ([`conditions`]): a read, then a server-side apply of
//!   the whole status (field manager `machine-config-operator`, forced).
//!
//! The simulator's writes never make an update fail: when the API is not served (a cluster with numo's derived
//! CRDs), nothing is written; an error is logged and the update goes on, as the real components log and go on
//! ([`mod@write`]).
//!
//! The kind is numo's type ([`numo::openshift::machine_config_node`]), which models what the simulator writes too.

pub use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
pub use numo::openshift::machine_config_node::{
    DesiredConfigVersion, MachineConfigNode, MachineConfigNodeSpec, MachineConfigNodeStatus, ObjectName,
    StatusConfigVersion,
};

pub mod conditions;
pub mod operator;
pub mod steps;
pub mod write;

pub use write::{MachineConfigNodes, NodeReport, SyncError};

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
pub const DRAINED: &str = numo::openshift::machine_config_node::DRAINED;
/// Condition: files and OS written (`MachineConfigNodeUpdateFilesAndOS`).
pub const APPLIED_FILES_AND_OS: &str = "AppliedFilesAndOS";
/// Condition: the OS image pulled (image mode; in the first write's list on 4.21 only).
pub const IMAGE_PULLED_FROM_REGISTRY: &str = "ImagePulledFromRegistry";
/// Condition: the node cordoned.
pub const CORDONED: &str = "Cordoned";
/// Condition: the node's reboot (`Unknown` until it is back).
pub const REBOOTED_NODE: &str = numo::openshift::machine_config_node::REBOOTED;
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
