//! What numo keeps of the Nodes and MachineConfigNodes it caches: only what its controllers read. A Node's status
//! lists every container image on it (tens of kilobytes on an OpenShift node), which numo never reads; a
//! MachineConfigNode carries a dozen conditions with messages, of which numo reads one. (Jobs are cached as
//! [`crate::cached_job::CachedJob`].)

use k8s_openapi::api::core::v1::Node;

use crate::openshift::machine_config_node::{MachineConfigNode, DRAINED};

use crate::guard::Guarded;

/// The annotation `kubectl apply` leaves: a second copy of the object.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Keeps a Node's metadata, spec and `Ready` condition; drops its other conditions, its image and volume lists, its
/// system info and its daemon/config details.
pub fn node(node: &mut Guarded<Node>) {
    let Ok(node) = &mut node.0 else { return };
    if let Some(annotations) = &mut node.metadata.annotations {
        annotations.remove(LAST_APPLIED);
    }
    if let Some(status) = &mut node.status {
        status.images = None;
        status.volumes_attached = None;
        status.volumes_in_use = None;
        status.config = None;
        status.daemon_endpoints = None;
        status.addresses = None;
        status.capacity = None;
        status.allocatable = None;
        status.runtime_handlers = None;
        status.features = None;
        status.node_info = None;
        if let Some(conditions) = &mut status.conditions {
            conditions.retain(|c| c.type_ == "Ready");
        }
    }
}

/// Keeps of a MachineConfigNode what numo reads: its name and uid, the update it speaks of
/// (`spec.configVersion.desired`), its `Drained` condition (without its message) and the conditions of types `read`
/// (the health checks'); one per node, so at 2,000 nodes what it drops is most of what the cache would hold.
pub fn machine_config_node(progress: &mut Guarded<MachineConfigNode>, read: &[&str]) {
    let Ok(progress) = &mut progress.0 else { return };
    let meta = &mut progress.metadata;
    (meta.labels, meta.annotations, meta.owner_references, meta.managed_fields) = (None, None, None, None);
    progress.spec.node = Default::default();
    progress.spec.pool = Default::default();
    if let Some(status) = &mut progress.status {
        status.conditions.retain(|c| c.type_ == DRAINED || read.contains(&c.type_.as_str()));
        for condition in status.conditions.iter_mut().filter(|c| !read.contains(&c.type_.as_str())) {
            condition.message.clear();
        }
        status.config_version = None;
        status.observed_generation = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_trimmed_node_keeps_what_numo_reads() {
        let mut guarded: Guarded<Node> = serde_json::from_value(json!({
            "metadata": {"name": "worker-1", "labels": {"a": "b"},
                         "annotations": {"machineconfiguration.openshift.io/currentConfig": "rendered-worker-1"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "MemoryPressure", "status": "False", "message": "kubelet has sufficient memory available"},
                                      {"type": "Ready", "status": "True"}],
                       "images": [{"names": ["quay.io/x@sha256:0"], "sizeBytes": 1}],
                       "nodeInfo": {"kubeletVersion": "v1.34.4", "architecture": "amd64", "bootID": "", "containerRuntimeVersion": "",
                                    "kernelVersion": "", "kubeProxyVersion": "", "machineID": "", "operatingSystem": "linux",
                                    "osImage": "", "systemUUID": ""}}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        node(&mut guarded);
        let node = guarded.decoded().unwrap_or_else(|| panic!("decoded"));
        assert_eq!(node.metadata.labels.as_ref().map(|l| l.len()), Some(1));
        assert_eq!(node.metadata.annotations.as_ref().map(|a| a.len()), Some(1));
        assert_eq!(node.spec.as_ref().and_then(|s| s.unschedulable), Some(true));
        let status = node.status.as_ref().unwrap_or_else(|| panic!("status"));
        assert_eq!(status.conditions.as_ref().map(Vec::len), Some(1));
        assert_eq!(status.conditions.as_ref().map(|c| c[0].type_.as_str()), Some("Ready"));
        assert!(status.node_info.is_none());
        assert!(status.images.is_none());
    }

    #[test]
    fn a_trimmed_machine_config_node_still_says_when_its_node_was_drained_and_nothing_else() {
        let at = "2026-11-27T10:00:00Z";
        let mut guarded: Guarded<MachineConfigNode> = serde_json::from_value(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigNode",
            "metadata": {"name": "worker-1", "uid": "u1", "labels": {"a": "b"},
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "worker-1", "uid": "n1"}]},
            "spec": {"configVersion": {"desired": "rendered-worker-2"}, "node": {"name": "worker-1"},
                     "pool": {"name": "worker"}},
            "status": {"observedGeneration": 3, "configVersion": {"desired": "rendered-worker-2", "current": "rendered-worker-1"},
                       "conditions": [
                {"type": "Drained", "status": "True", "lastTransitionTime": at, "reason": "UpdateExecutedDrained",
                 "message": "Drained node. The drain is complete."},
                {"type": "RebootedNode", "status": "Unknown", "lastTransitionTime": at, "reason": "RebootedNode",
                 "message": "Upgrade requires a reboot."},
                {"type": "Updated", "status": "False", "lastTransitionTime": at, "reason": "Updated",
                 "message": "Node worker-1 Updated=False"}]}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let before = guarded.decoded().and_then(|m| m.drained_for("rendered-worker-2"));
        machine_config_node(&mut guarded, &[]);
        let progress = guarded.decoded().unwrap_or_else(|| panic!("decoded"));
        assert!(before.is_some());
        assert_eq!(progress.drained_for("rendered-worker-2"), before, "what numo reads is kept");
        let status = progress.status.as_ref().unwrap_or_else(|| panic!("status"));
        assert_eq!(status.conditions.len(), 1);
        assert!(status.conditions[0].message.is_empty() && status.config_version.is_none());
        assert!(progress.metadata.labels.is_none() && progress.metadata.owner_references.is_none());
        assert_eq!(progress.metadata.uid.as_deref(), Some("u1"));
    }

    #[test]
    fn a_trimmed_machine_config_node_keeps_the_conditions_a_health_check_reads_with_their_messages() {
        let mut guarded: Guarded<MachineConfigNode> = serde_json::from_value(json!({
            "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigNode",
            "metadata": {"name": "worker-1", "uid": "u1"},
            "spec": {"configVersion": {"desired": "rendered-worker-2"}},
            "status": {"conditions": [
                {"type": "NodeDegraded", "status": "True", "lastTransitionTime": "2026-11-27T10:00:00Z",
                 "reason": "UpdateFailed", "message": "Node worker-1 upgrade failure. disk full"},
                {"type": "Updated", "status": "False", "lastTransitionTime": "2026-11-27T10:00:00Z",
                 "reason": "Updated", "message": "Node worker-1 Updated=False"}]}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        machine_config_node(&mut guarded, &["NodeDegraded"]);
        let progress = guarded.decoded().unwrap_or_else(|| panic!("decoded"));
        let degraded = progress.condition("NodeDegraded").unwrap_or_else(|| panic!("kept"));
        assert_eq!(degraded.message, "Node worker-1 upgrade failure. disk full");
        assert!(progress.condition("Updated").is_none());
    }
}
