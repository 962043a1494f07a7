//! OpenShift Data Foundation's storage nodes and Rook's managed disruption budgets (opt-in with
//! [`crate::SimConfig::storage`], `numo-sim run --storage-domains rack`).
//!
//! Modelled after rook/rook (`design/ceph/ceph-managed-disruptionbudgets.md`,
//! `pkg/operator/ceph/disruption/clusterdisruption/osd.go`, `reconcile.go`, `add.go`; OSD labels from
//! `pkg/operator/ceph/cluster/osd/labels.go` and `spec.go`):
//! - **storage nodes** carry ODF's label [`STORAGE_NODE_LABEL`] and a failure-domain label ([`FailureDomain`]); seeding
//!   labels them ([`seed_storage`]).
//! - **OSDs** ([`osds`]): Rook's operator keeps one OSD Deployment per storage node in [`NAMESPACE`]
//!   (`rook-ceph-osd-<id>`, labels `app=rook-ceph-osd`, `ceph-osd-id`, `osd`, `topology-location-<type>`, the pod bound
//!   to its node by `nodeSelector`), so the real kube-controller-manager runs its pods and its disruption controller
//!   computes every budget's status. An OSD is down while its Deployment has no ready replica, as Rook reads it;
//!   one that never booted yet holds no data and counts neither way (Rook would count it down).
//! - **Ceph's PGs** ([`ceph`]): a stand-in that calls the PGs clean once no OSD has been down for
//!   [`StorageConfig::pgs_clean`] (recovery after the node is back).
//! - **Rook's disruption controller** ([`rook`], [`budgets`], [`operator`]), as Rook's ServiceAccount: the default
//!   budget `rook-ceph-osd` (`maxUnavailable: 1` over every OSD) while the cluster is clean; once an OSD is down and
//!   PGs are not clean, its failure domain is the *draining* one (kept in ConfigMap `rook-ceph-pdbstatemap`) and every
//!   other domain gets a blocking budget `rook-ceph-osd-<type>-<domain>` (`maxUnavailable: 0`), the default one
//!   deleted; back to the default budget at the first reconcile after the PGs are clean. It reconciles when the
//!   default budget's status drops to zero allowed disruptions, and requeues every 15 s while the default budget is
//!   missing and every 30 s while it allows none, as Rook does.
//! - **the drain** ([`drain`]): the machine-config controller's drain evicts the node's OSD pods through the Eviction
//!   API (as its ServiceAccount), so the API server refuses (429) while a budget at zero covers them; it retries every
//!   5 s for 90 s, then waits a minute, as the MCO's drain controller (`pkg/controller/drain/drain_controller.go`).
//!   Other pods are not evicted.
//! - **the record** ([`ledger`]): per failure domain, the longest stretch it had a node down (not Ready or cordoned)
//!   and the most nodes down at once; every drain that waited and on which budgets ([`StorageReport`]).
//!
//! Not modelled: Ceph itself (no monitors, managers or pools; the pool failure domain is the configured one), the
//! `noout` flag, the exclusion of down OSDs from the default budget (the stand-in's PGs are never clean while an OSD
//! is down), the budgets of monitors, managers and gateways, and the CephCluster owning the budgets. The OSD
//! Deployments are owned by their Node (not by a CephCluster), so removing a node removes its OSD.

use std::time::Duration;

pub mod budgets;
pub mod ceph;
pub mod drain;
pub mod ledger;
pub mod operator;
pub mod osds;
pub mod rook;
mod seed;

pub use ledger::{DomainRecord, DrainWait, StorageReport};
pub use seed::{seed_storage, StorageShape};

/// ODF's namespace, where Rook runs its OSDs and budgets.
pub const NAMESPACE: &str = "openshift-storage";
/// ODF's label of a storage node (value `""`).
pub const STORAGE_NODE_LABEL: &str = "cluster.ocs.openshift.io/openshift-storage";
/// The `app` label of Rook's OSD Deployments and pods (`osdPDBAppName`), and the name of the default budget.
pub const OSD_APP: &str = "rook-ceph-osd";
/// The label key `app`.
pub const APP_LABEL: &str = "app";

/// The failure domain of the storage pools, hence of Rook's budgets: the node label Rook reads it from, and the
/// CRUSH type naming the budgets and the OSDs' `topology-location-<type>` label.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureDomain {
    /// Each node its own domain (`kubernetes.io/hostname`).
    Host,
    /// Racks (`topology.rook.io/rack`).
    Rack,
    /// Zones (`topology.kubernetes.io/zone`).
    Zone,
}

impl FailureDomain {
    /// Parses `host`, `rack` or `zone`.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "host" => Ok(Self::Host),
            "rack" => Ok(Self::Rack),
            "zone" => Ok(Self::Zone),
            other => Err(format!("unknown failure domain {other:?} (use host, rack or zone)")),
        }
    }

    /// The CRUSH type: `host`, `rack` or `zone`.
    pub fn crush_type(self) -> &'static str {
        match self {
            Self::Host => "host",
            Self::Rack => "rack",
            Self::Zone => "zone",
        }
    }

    /// The node label Rook reads the domain from (`pkg/operator/ceph/cluster/osd/topology`).
    pub fn node_label(self) -> &'static str {
        match self {
            Self::Host => "kubernetes.io/hostname",
            Self::Rack => "topology.rook.io/rack",
            Self::Zone => "topology.kubernetes.io/zone",
        }
    }

    /// The label Rook puts on OSD Deployments and pods: `topology-location-<type>` (`osd.TopologyLocationLabel`).
    pub fn location_label(self) -> String {
        location_label(self.crush_type())
    }
}

impl std::fmt::Display for FailureDomain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.crush_type())
    }
}

/// `topology-location-<crush type>`.
pub fn location_label(crush_type: &str) -> String {
    format!("topology-location-{crush_type}")
}

/// The storage world's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StorageConfig {
    /// The pools' failure domain.
    pub domain: FailureDomain,
    /// How long Ceph's PGs take to be clean again once every OSD is back up.
    pub pgs_clean: Duration,
    /// Rook's requeue delays.
    pub rook: RookTiming,
    /// The MCO drain controller's retry delays.
    pub drain: DrainTiming,
}

impl StorageConfig {
    /// Racks or zones with Rook's and the MCO's own delays, PGs clean a minute after the last OSD is back.
    pub fn new(domain: FailureDomain) -> Self {
        Self { domain, pgs_clean: Duration::from_secs(60), rook: RookTiming::default(), drain: DrainTiming::default() }
    }
}

/// When Rook's disruption controller reconciles again by itself (`requeuePDBController`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RookTiming {
    /// While the default budget is missing (Rook: 15 s).
    pub default_missing: Duration,
    /// While the default budget allows no disruption (Rook: 30 s).
    pub default_at_zero: Duration,
}

impl Default for RookTiming {
    fn default() -> Self {
        Self { default_missing: Duration::from_secs(15), default_at_zero: Duration::from_secs(30) }
    }
}

/// The MCO drain controller's delays (`DefaultConfig` and the drain helper it builds).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DrainTiming {
    /// Between two evictions of a pod the API refused with 429 (`EvictErrorRetryDelay`: 5 s).
    pub eviction_retry: Duration,
    /// How long one drain attempt tries before it fails (`DrainHelperTimeout`: 90 s).
    pub attempt: Duration,
    /// After a failed attempt, before the next (`DrainRequeueDelay`: 1 minute).
    pub requeue: Duration,
}

impl Default for DrainTiming {
    fn default() -> Self {
        Self {
            eviction_retry: Duration::from_secs(5),
            attempt: Duration::from_secs(90),
            requeue: Duration::from_secs(60),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failure_domains_name_rooks_labels() {
        assert_eq!(FailureDomain::parse("rack"), Ok(FailureDomain::Rack));
        assert_eq!(FailureDomain::Rack.node_label(), "topology.rook.io/rack");
        assert_eq!(FailureDomain::Zone.node_label(), "topology.kubernetes.io/zone");
        assert_eq!(FailureDomain::Zone.location_label(), "topology-location-zone");
        assert!(FailureDomain::parse("row").is_err());
    }
}
