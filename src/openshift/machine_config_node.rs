//! `machineconfiguration.openshift.io/v1` MachineConfigNode (GA in OpenShift 4.20): one per node, named after it,
//! where the machine-config operator reports the node's progress through an update as conditions (`UpdatePrepared`,
//! `UpdateExecuted`, `Cordoned`, `Drained`, `RebootedNode`, `Updated`, ...). numo reads only which update the object
//! speaks of (`spec.configVersion.desired`) and when the drain ended, to show the drain apart from the reboot; its
//! simulator writes the rest of what is modelled here.
//!
//! The daemon and the drain controller write the conditions (openshift/machine-config-operator, release-4.20:
//! `pkg/upgrademonitor/upgrade_monitor.go`, `pkg/controller/drain/drain_controller.go`); once the node is `Updated`,
//! every other condition goes back to False with a new time, so the drain's end is read while the update runs.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Condition type: the drain of the node for the update (`Unknown` while it drains, `True` once drained).
pub const DRAINED: &str = "Drained";
/// Condition type: the node's reboot for the update (`Unknown` while it reboots, `True` once back).
pub const REBOOTED: &str = "RebootedNode";

/// The update progress of one node (`spec`; the status carries the conditions).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "machineconfiguration.openshift.io",
    version = "v1",
    kind = "MachineConfigNode",
    status = "MachineConfigNodeStatus",
    doc = "MachineConfigNode: a node's update progress (derived fallback of the OpenShift CRD)."
)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigNodeSpec {
    /// The node (its name is the object's).
    #[serde(default)]
    pub node: ObjectName,
    /// The node's primary pool.
    #[serde(default)]
    pub pool: ObjectName,
    /// The update the object speaks of.
    #[serde(default)]
    pub config_version: DesiredConfigVersion,
}

/// The rendered config an update moves a node to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DesiredConfigVersion {
    /// The rendered MachineConfig's name (`not-yet-set` before the first one).
    #[serde(default)]
    pub desired: String,
}

/// A reference to an object by name (`MCOObjectReference`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct ObjectName {
    /// The object's name.
    #[serde(default)]
    pub name: String,
}

/// What the machine-config operator reports of the node's update.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MachineConfigNodeStatus {
    /// The update's phases, one condition per type.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// The object's generation plus one, as the machine-config operator writes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The node's configs as its annotations show them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_version: Option<StatusConfigVersion>,
}

/// `status.configVersion`: the node's configs as its annotations show them.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct StatusConfigVersion {
    /// The desired config, once the update is found compatible (`not-yet-set` before).
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

    /// When the node was drained for the update to rendered config `desired`: the `Drained` condition's time, when
    /// it is True and the object speaks of that update. None while it drains, before, after the update ended (the
    /// conditions are reset), or when the object speaks of another update.
    pub fn drained_for(&self, desired: &str) -> Option<Time> {
        if desired.is_empty() || self.spec.config_version.desired != desired {
            return None;
        }
        let drained = self.condition(DRAINED).filter(|c| c.status == "True")?;
        Some(drained.last_transition_time.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mcn(desired: &str, drained: &str, at: &str) -> MachineConfigNode {
        serde_json::from_value(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigNode",
            "metadata": {"name": "worker-1"},
            "spec": {"configVersion": {"desired": desired}, "node": {"name": "worker-1"}, "pool": {"name": "worker"}},
            "status": {"conditions": [
                {"type": "Drained", "status": drained, "lastTransitionTime": at, "reason": "UpdateExecutedDrained",
                 "message": "Drained node."},
                {"type": "RebootedNode", "status": "Unknown", "lastTransitionTime": at, "reason": "RebootedNode",
                 "message": "Upgrade requires a reboot."},
            ]},
        }))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_drain_ends_when_drained_turns_true_for_this_update() {
        let drained = mcn("rendered-canary-2", "True", "2026-11-26T10:00:05Z");
        let at = drained.drained_for("rendered-canary-2").map(|t| t.0.to_string());
        assert_eq!(at.as_deref(), Some("2026-11-26T10:00:05Z"));
        assert_eq!(drained.drained_for("rendered-canary-3"), None, "another update");
        assert_eq!(drained.drained_for(""), None);
        assert_eq!(mcn("rendered-canary-2", "Unknown", "2026-11-26T10:00:01Z").drained_for("rendered-canary-2"), None);
        assert_eq!(mcn("rendered-canary-2", "False", "2026-11-26T10:09:00Z").drained_for("rendered-canary-2"), None);
    }

    #[test]
    fn an_object_without_status_says_nothing() {
        let bare: MachineConfigNode = serde_json::from_value(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigNode",
            "metadata": {"name": "worker-1"}, "spec": {"configVersion": {"desired": "not-yet-set"}},
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(bare.drained_for("not-yet-set"), None);
    }
}
