//! Failure-domain waves: `spec.topology` says which node label names a node's failure domain (a zone, a rack) and
//! how the rollout moves through the domains; `status.topology` says which domain is in progress and which are done.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The zone label every cloud provider and most bare-metal installs set, numo's default failure-domain key when no
/// OpenShift Data Foundation StorageCluster names one.
pub const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// How the rollout moves through the cluster's failure domains.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Topology {
    /// The node label whose value names a node's failure domain. Unset: the `status.failureDomainKey` of an
    /// OpenShift Data Foundation StorageCluster when one says it, else `topology.kubernetes.io/zone`. Nodes without
    /// the label form one domain of their own, upgraded last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 317))]
    pub key: Option<String>,

    /// `DomainAtATime`: every node of one domain finishes (gate Jobs, upgrade, cleanup Jobs, soak) before the first
    /// node of the next domain starts; inside a domain up to `concurrency` (and `maxNodesPerDomain`) nodes at once.
    /// `Spread`: never two nodes of one domain in flight at once. Unset: nodes are released in target order, then by
    /// name, whatever their domain (the domains are still shown in the status).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<TopologyMode>,

    /// Under `DomainAtATime`: at most this many nodes of the domain in flight at once (besides `concurrency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    pub max_nodes_per_domain: Option<u32>,

    /// The order of the domains, by label value. Domains not listed follow, the one with the fewest nodes first
    /// (then by name); nodes without the label come last. Unset: that rule for every domain.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub domains: Vec<String>,

    /// Under `DomainAtATime`: how long to wait after the last node of a domain finished before the first node of the
    /// next domain starts, e.g. `10m` (the health checks are made again when it ends).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(s|m|h))+$"))]
    pub domain_soak_time: Option<String>,
}

impl Topology {
    /// The domain soak, parsed from `domainSoakTime`.
    pub fn domain_soak(&self) -> Option<std::time::Duration> {
        self.domain_soak_time.as_deref().and_then(super::parse_duration)
    }
}

/// How the rollout moves through the failure domains.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum TopologyMode {
    /// One domain at a time: every node of a domain finishes before the next domain starts.
    DomainAtATime,
    /// Never two nodes of one domain in flight at once.
    Spread,
}

impl TopologyMode {
    /// The name as written in the spec.
    pub fn as_str(self) -> &'static str {
        match self {
            TopologyMode::DomainAtATime => "DomainAtATime",
            TopologyMode::Spread => "Spread",
        }
    }
}

/// Where the failure-domain key in use came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum KeySource {
    /// `spec.topology.key`.
    Spec,
    /// The `status.failureDomainKey` of an OpenShift Data Foundation StorageCluster.
    StorageCluster,
    /// numo's default, `topology.kubernetes.io/zone`.
    Default,
}

/// The failure domains of the rollout, as numo moves through them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopologyStatus {
    /// The node label that names a node's failure domain.
    pub key: String,
    /// Where `key` came from: `Spec`, `StorageCluster` or `Default`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_source: Option<KeySource>,
    /// `DomainAtATime` or `Spread`; unset when the nodes go in target and name order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<TopologyMode>,
    /// Under `DomainAtATime`: the domain whose nodes are in flight (or, between domains, the one that starts next).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current: Option<String>,
    /// The domains every node of which has finished, in the order they finished.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub done: Vec<String>,
    /// Every domain of the rollout in the order numo takes them, with its progress. The domain of the nodes without
    /// the label is named `""`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub waves: Vec<Wave>,
}

/// One failure domain of the rollout.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Wave {
    /// The domain: the value of the key label (`""` for the nodes without it).
    pub domain: String,
    /// How many of the rollout's nodes are in this domain.
    pub nodes: u32,
    /// How many of them have finished (done, skipped, or taken ungated).
    pub done: u32,
    /// When the first node of the domain started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When the last node of the domain finished (its domain soak, if any, counts from here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
}
