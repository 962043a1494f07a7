//! What a simulated cluster starts from ([`ClusterShape`]) and how its operators play ([`SimConfig`]): the release
//! whose platform writers they play, their timings, and the optional worlds (NFD, ODF storage, SR-IOV).

use std::time::Duration;

use crate::release::OpenShiftRelease;
use crate::{required_pools, storage};

/// The cluster a test or the demo starts from.
#[derive(Clone, Debug)]
pub struct ClusterShape {
    /// The release the cluster runs, e.g. `4.16.4`.
    pub version: String,
    /// Number of worker nodes (`worker-0`, `worker-1`, ...).
    pub workers: usize,
    /// Number of control-plane nodes (`master-0`, ...).
    pub masters: usize,
}

impl Default for ClusterShape {
    fn default() -> Self {
        Self { version: "4.16.4".into(), workers: 3, masters: 1 }
    }
}

/// Timings of the simulated operators. The defaults roll a 10-node pool in about 25 seconds.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// How long a node "reboots" while the daemon updates it (a node's `reboot-seconds` annotation overrides it).
    pub reboot: Duration,
    /// How long a node drains after its cordon, before its reboot (a node's `drain-seconds` annotation overrides
    /// it); no pod is evicted. Default zero.
    pub drain: Duration,
    /// How long the control plane takes to upgrade before the CVO updates the MCO.
    pub control_plane: Duration,
    /// How long to wait before trying again after an API error.
    pub retry: Duration,
    /// Also play Node Feature Discovery ([`crate::nfd`]): label every node with the release it runs. Off by default, as
    /// the MCO itself writes no such label.
    pub nfd_labels: bool,
    /// The OpenShift release whose platform writers the simulator plays ([`crate::operator_sync`]); default the newest.
    pub openshift: OpenShiftRelease,
    /// Also play ODF's storage nodes and Rook's managed disruption budgets ([`crate::storage`]), and let the drain evict OSD
    /// pods through the Eviction API. Off by default.
    pub storage: Option<storage::StorageConfig>,
    /// How long the machine-config operator waits for its required pools, per machine in them, before its sync
    /// fails with `RequiredPoolsFailed` ([`crate::required_pools`]); the MCO's 10 minutes by default.
    pub required_pool_wait_per_machine: Duration,
    /// Also play the SR-IOV network operator's drain controller ([`crate::sriov`]): it pauses a node's pool around its
    /// drain of a node annotated [`crate::faults::SRIOV_RECONFIGURE`]. Off by default.
    pub sriov: bool,
    /// How long SR-IOV's drain of a node takes, between its pause and its unpause ([`crate::sriov`]).
    pub sriov_drain: Duration,
}

impl Default for SimConfig {
    fn default() -> Self {
        Self {
            reboot: Duration::from_secs(2),
            drain: Duration::ZERO,
            control_plane: Duration::from_secs(2),
            retry: Duration::from_secs(1),
            nfd_labels: false,
            openshift: OpenShiftRelease::default(),
            storage: None,
            required_pool_wait_per_machine: required_pools::WAIT_PER_MACHINE,
            sriov: false,
            sriov_drain: Duration::from_secs(2),
        }
    }
}
