//! `ocs.openshift.io/v1` StorageCluster, OpenShift Data Foundation's description of its Ceph cluster. Its operator
//! (red-hat-storage/ocs-operator, `controllers/storagecluster/`) works out the failure domain Ceph spreads its
//! replicas over (rack, zone or host) and publishes the node label that names it in `status.failureDomainKey`. numo
//! reads only that key: it is the best default for failure-domain waves on a cluster that runs ODF.

use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The storage cluster (`spec` is not read).
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "ocs.openshift.io",
    version = "v1",
    kind = "StorageCluster",
    namespaced,
    status = "StorageClusterStatus",
    doc = "StorageCluster: OpenShift Data Foundation's storage cluster (derived fallback of the ODF CRD)."
)]
pub struct StorageClusterSpec {}

/// What the ODF operator observed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorageClusterStatus {
    /// The node label whose value names a node's failure domain, e.g. `topology.kubernetes.io/zone` or
    /// `topology.rook.io/rack`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_domain_key: Option<String>,
    /// The kind of failure domain: `zone`, `rack` or `host`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_domain: Option<String>,
}
