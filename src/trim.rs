//! What numo keeps of the Nodes it caches: only what its controllers read. A Node's status lists every container
//! image on it (tens of kilobytes on an OpenShift node), which numo never reads. (Jobs are cached as
//! [`crate::cached_job::CachedJob`].)

use k8s_openapi::api::core::v1::Node;

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
}
