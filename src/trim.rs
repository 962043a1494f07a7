//! What numo keeps of the Nodes and Jobs it caches: only what its controllers read. A Node's status lists every
//! container image on it (tens of kilobytes on an OpenShift node) and a Job carries its whole pod template; numo
//! reads neither, and at thousands of nodes (and four Jobs each per rollout) they were most of its memory.

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, PodTemplateSpec};

use crate::guard::Guarded;

/// The annotation `kubectl apply` leaves: a second copy of the object.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Keeps a Node's metadata, spec and conditions; drops its image and volume lists and its daemon/config details.
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
    }
}

/// Keeps a Job's metadata and status; drops its pod template (numo reads a Job's labels, annotations, finalizers and
/// conditions only).
pub fn job(job: &mut Guarded<Job>) {
    let Ok(job) = &mut job.0 else { return };
    if let Some(annotations) = &mut job.metadata.annotations {
        annotations.remove(LAST_APPLIED);
    }
    if let Some(spec) = &mut job.spec {
        spec.template = PodTemplateSpec::default();
        spec.selector = None;
        spec.pod_failure_policy = None;
        spec.success_policy = None;
    }
    if let Some(status) = &mut job.status {
        status.uncounted_terminated_pods = None;
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
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
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
        assert!(status.node_info.is_some());
        assert!(status.images.is_none());
    }

    #[test]
    fn a_trimmed_job_keeps_its_identity_and_outcome() {
        let mut guarded: Guarded<Job> = serde_json::from_value(json!({
            "metadata": {"name": "check-1", "namespace": "ops", "labels": {"a": "b"}, "annotations": {"c": "d"},
                         "finalizers": ["openshift-optional.skrzypek.io/record-result"]},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        job(&mut guarded);
        let job = guarded.decoded().unwrap_or_else(|| panic!("decoded"));
        assert!(job.spec.as_ref().is_some_and(|s| s.template.spec.is_none()));
        assert_eq!(job.metadata.finalizers.as_ref().map(Vec::len), Some(1));
        assert_eq!(crate::jobs::job_result(job), crate::api::JobResult::Succeeded);
    }
}
