//! What numo keeps of the Nodes and Jobs it caches: only what its controllers read. A Node's status lists every
//! container image on it (tens of kilobytes on an OpenShift node) and a Job carries its whole pod template; numo
//! reads neither, and at thousands of nodes (and four Jobs each per rollout) they were most of its memory.

use std::borrow::Cow;

use k8s_openapi::api::batch::v1::{Job, JobStatus};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{NamespaceResourceScope, Resource as _};
use kube::Resource;
use serde::Deserialize;

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

/// A Job as numo caches it: its metadata and status. Its spec is never read back (numo rendered it), and a Job's
/// spec, with its pod template, is most of its size: `k8s_openapi`'s `Job` takes 2.8 KB before any of its strings,
/// this 0.6 KB, which at four Jobs per node and thousands of nodes was numo's largest cache.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct CachedJob {
    /// The Job's metadata.
    pub metadata: ObjectMeta,
    /// The Job's status (its conditions say how it ended).
    pub status: Option<JobStatus>,
}

impl Resource for CachedJob {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(_: &()) -> Cow<'_, str> {
        Job::KIND.into()
    }

    fn group(_: &()) -> Cow<'_, str> {
        Job::GROUP.into()
    }

    fn version(_: &()) -> Cow<'_, str> {
        Job::VERSION.into()
    }

    fn plural(_: &()) -> Cow<'_, str> {
        Job::URL_PATH_SEGMENT.into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// Drops what numo never reads from a cached Job: the last applied configuration and the pods not counted yet.
pub fn job(job: &mut Guarded<CachedJob>) {
    let Ok(job) = &mut job.0 else { return };
    if let Some(annotations) = &mut job.metadata.annotations {
        annotations.remove(LAST_APPLIED);
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
    fn a_cached_job_keeps_its_identity_and_outcome() {
        let mut guarded: Guarded<CachedJob> = serde_json::from_value(json!({
            "metadata": {"name": "check-1", "namespace": "ops", "labels": {"a": "b"}, "annotations": {"c": "d"},
                         "finalizers": ["openshift-optional.skrzypek.io/record-result"]},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
            "status": {"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        job(&mut guarded);
        let job = guarded.decoded().unwrap_or_else(|| panic!("decoded"));
        assert_eq!(job.metadata.finalizers.as_ref().map(Vec::len), Some(1));
        assert_eq!(job.metadata.labels.as_ref().map(|l| l.len()), Some(1));
        assert_eq!(crate::jobs::job_result(job.status.as_ref()), crate::api::JobResult::Succeeded);
    }
}
