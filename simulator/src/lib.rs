#![forbid(unsafe_code)]
//! numo-simulator: plays OpenShift's cluster-version operator (CVO) and machine-config operator (MCO) against a
//! plain Kubernetes API server, so numo can be tested and demonstrated without OpenShift. It works only through the
//! API, as the real operators do, and aims to be faithful to what they show there, not to what numo needs.
//!
//! ```no_run
//! # async fn example(client: kube::Client) -> anyhow::Result<()> {
//! use numo_simulator::{seed, ClusterShape, SimConfig, Simulator};
//! seed(&client, &ClusterShape { version: "4.16.4".into(), workers: 6, masters: 3 }).await?;
//! let simulator = Simulator::start(client, SimConfig::default()); // stops when dropped
//! # Ok(()) }
//! ```
//!
//! # The simulated world
//! - **Seeding** ([`seed`]): ClusterVersion `version`; the ClusterOperators of the payload
//!   ([`cluster_operators::PAYLOAD`]: `dns`, `ingress`, `kube-apiserver`, `machine-config`, `monitoring`, `network`),
//!   healthy (`Available=True`, `Progressing=False`, `Degraded=False`, `Upgradeable=True`) at the cluster's release
//!   (`status.versions` entry `operator`); the MCO's template MachineConfigs `00-master` and `00-worker`
//!   (they carry the release the MCO runs); pools `master` and `worker` selecting configs by
//!   `machineconfiguration.openshift.io/role` and nodes by `node-role.kubernetes.io/<role>`; each pool's rendered
//!   config `rendered-<pool>-<hash>` ([`render`]); nodes `master-N` and `worker-N` managed by kwok, Done on their
//!   pool's config.
//!   Nodes carry what the MCO writes (the daemon's `currentConfig`, `desiredConfig` and `state` annotations); the
//!   release is on the rendered MachineConfig (its `release-image-version` annotation), not on the node. Also the
//!   namespace `openshift-machine-config-operator` with the operator's, the daemon's and the controller's
//!   ServiceAccounts and their role bindings ([`platform`]), which the components of [`Platform`] act as.
//! - **CVO** ([`cvo`]): a new `spec.desiredUpdate.version` gets a `Partial` history entry at once; after the
//!   control-plane step the templates move to the new release (the MCO is updated); the entry becomes `Completed`
//!   when the master pool has rolled, without waiting for other pools.
//! - **ClusterOperators** ([`cluster_operators`]): the payload's operators follow the update
//!   ([`cvo::operator_release`]): `Progressing=True` during the control-plane step, then the new `operator` version
//!   and `Progressing=False`; `machine-config` progresses from the end of that step until the master pool has rolled.
//!   Every ClusterOperator (also one a test creates) reports the faults of its annotations (below).
//! - **MCO** ([`mco`]): renders every pool, paused or not, from the MachineConfigs it selects, so one MachineConfig
//!   labelled for a role re-renders every pool selecting that role (a custom pool that selects `worker` too).
//!   Rendered names are content-addressed like the MCO's: `rendered-<pool>-<hash>`, the hash over the rendered spec
//!   only (not the pool; the release only through the content, its OS image). So pools with equal content get the
//!   same hash under their own names (a custom pool without configs of its own carries the worker pool's hash), and
//!   since rendered configs are never deleted, removing a MachineConfig brings the earlier names back. The hash is
//!   SHA-256 without the MCO's salt, never equal to a real cluster's. A selected MachineConfig whose
//!   `spec.config.ignition.version` is missing or unsupported fails the render, with the MCO's `RenderDegraded`
//!   message ("parsing Ignition config failed: ..."); the pool keeps its target until it renders again. Nodes count
//!   as updated by name, as in the MCO: a node on another pool's rendered config of equal content is not updated,
//!   though moving it there needs no reboot. It decides membership ([`membership`]); in unpaused pools
//!   targets nodes at most `maxUnavailable` at a time, tainting the others `UpdateInProgress:PreferNoSchedule` until
//!   they are targeted ([`rollout`]); runs the daemon on targeted nodes
//!   ([`daemon`]: Working, cordon, drain ([`SimConfig::drain`], a wait: no pod is evicted), reboot, Done, uncordon;
//!   never on Windows nodes); keeps each pool's status true ([`status`]). Rendered content also carries the
//!   sources' `storage.disks`, `filesystems`, `raid` and `luks`; a move between configs whose disks, filesystems or
//!   raid differ cannot be reconciled ([`reconcile`]): the daemon applies nothing and marks the node
//!   `Unreconcilable` with the MCO's reason (`... ignition disks section contains changes`), its pool
//!   `NodeDegraded`; a change of files (or luks) stays reconcilable.
//! - **The operator's reactions** ([`operator_sync`], [`required_pools`], [`cluster_operators`]): its sync runs its
//!   MachineConfigNode step, its pool step and its wait for the required (master) pool in order, and the first that
//!   fails stops it, with `machine-config` `Degraded=True`, reason `<step>Failed`, until that step passes. On 4.20
//!   and later a node matched by two custom pools fails the MachineConfigNode step (`MachineConfigNodeFailed`,
//!   `node <n> belongs to 2 custom roles, cannot proceed with this Node`). A degraded pool makes `machine-config`
//!   `Upgradeable=False` (`DegradedPool`) and holds the operator's sync in its wait for the required pools, which
//!   fails after 10 minutes per master ([`SimConfig::required_pool_wait_per_machine`], `RequiredPoolsFailed`);
//!   both clear once no pool is degraded.
//! - **The MCO's admission policies** ([`admission_policies`]): from 4.18
//!   ([`OpenShiftRelease::has_custom_pool_selector_policy`]) the operator's sync installs, as its ServiceAccount,
//!   `custom-machine-config-pool-selector` and its binding, and puts them back when deleted or changed (its
//!   `MachineConfigController` step; a failed write is `MachineConfigControllerFailed`). The API server then refuses
//!   any pool (created or updated) whose `machineConfigSelector` selects neither `matchLabels` role `master` or
//!   `worker` (or `arbiter` from 4.19) nor, by an expression on the role key, `worker` (`In` with it, `NotIn`
//!   without it), with the MCO's message ("All custom MachineConfigPools must inherit from the worker pool ...").
//!   None on 4.16–4.17.
//! - **MachineConfigNodes** ([`machine_config_nodes`], OpenShift 4.20 and later:
//!   [`OpenShiftRelease::writes_machine_config_nodes`]; none on 4.16–4.19): the operator keeps one per node (named
//!   after it, owned by it, `spec.pool` its primary pool) and deletes those of nodes that are gone; the node
//!   controller sets `spec.configVersion.desired` before the node's `desiredConfig`; the daemon and the drain
//!   controller write the conditions of each phase of an update (`UpdatePrepared`, `Cordoned`, `Drained`,
//!   `AppliedFilesAndOS`, `RebootedNode`, `Uncordoned`, `Resumed`, `NodeDegraded`, then `Updated`, which resets the
//!   rest to False), with the real reasons and messages, each as its own ServiceAccount. `Drained` is `Unknown`
//!   while the node drains and `True` at the drain's end, before the reboot. A failed update keeps its conditions
//!   and adds `NodeDegraded=True` with the reason. These writes never fail an update: where the API is not served
//!   nothing is written, and an error is logged.
//! - **NFD stand-in** ([`nfd`], opt-in with [`SimConfig::nfd_labels`]): labels each node with the release it runs
//!   (`machineconfiguration.openshift.io/release-image-version`), as Node Feature Discovery does on clusters set up
//!   like the reference's; the label follows the node's config in a write of its own, so it lags it. Off, nodes
//!   carry no such label, as on a cluster without NFD.
//! - **ODF storage and Rook** ([`storage`], opt-in with [`SimConfig::storage`]; [`storage::seed_storage`] labels the
//!   workers as storage nodes in racks or zones): Rook's operator, as its ServiceAccount, keeps an OSD Deployment per
//!   storage node and its managed disruption budgets — the default `rook-ceph-osd` (`maxUnavailable: 1`) while Ceph
//!   is clean, blocking `rook-ceph-osd-<type>-<domain>` (`maxUnavailable: 0`) on every other failure domain while
//!   one domain's OSDs are down and for [`storage::StorageConfig::pgs_clean`] after; the drain then evicts the node's
//!   OSD pods through the Eviction API and waits while a budget refuses, as the MCO's drain controller.
//! - **The SR-IOV network operator** ([`sriov`], opt-in with [`SimConfig::sriov`]): as its own ServiceAccount, its
//!   drain controller pauses a node's pool (annotating it `sriovnetwork.openshift.io/state: Paused`) around its
//!   drain of a node annotated [`faults::SRIOV_RECONFIGURE`], and unpauses it (`Idle`) after, one node at a time;
//!   a refused write is tried again. [`SimulatorHandle::sriov`] tells its drains and refused writes.
//! - **Record** ([`record`], [`SimulatorHandle::reboots`], [`SimulatorHandle::multi_pool_nodes`]): every reboot the
//!   daemon performs (node, wall-clock time, the rendered configs it rebooted from and into, the pool managing the
//!   node), written by the daemon as it reboots; rebootless updates are none. And every stretch of time in which the
//!   controller found a node matched by two or more custom pools, written where it decides membership, so no
//!   moment it acted on is missed.
//!
//! # Fault injection
//! Node annotations (see [`faults`]):
//! - `sim.numo.openshift-optional.skrzypek.io/fail-update: "true"`: the node's update ends in state `Degraded` with a
//!   reason, cordoned, on its old config; its pool goes `Degraded`/`NodeDegraded`. Remove the annotation and the
//!   daemon retries.
//! - `sim.numo.openshift-optional.skrzypek.io/reboot-seconds: "30"`: the node reboots that long (a slow node).
//! - `sim.numo.openshift-optional.skrzypek.io/drain-seconds: "30"`: the node drains that long after its cordon,
//!   before its reboot (pods that are slow to go), on every release.
//! - `sim.numo.openshift-optional.skrzypek.io/sriov-reconfigure: "true"` (with [`SimConfig::sriov`]): SR-IOV
//!   wants to reconfigure the node's NICs: it pauses the node's pool, drains the node, unpauses ([`sriov`]).
//!
//! ClusterOperator annotations, any ClusterOperator (see [`faults`] and [`cluster_operators`]):
//! - `sim.numo.openshift-optional.skrzypek.io/degraded: "<message>"`: while present the operator reports
//!   `Degraded=True`, reason `SimulatedFault`, the value as message. Remove it and it reports `Degraded=False` again
//!   (a new `lastTransitionTime`).
//! - `sim.numo.openshift-optional.skrzypek.io/unavailable: "<message>"`: likewise `Available=False`, then
//!   `Available=True` once removed.
//!
//! ```text
//! kubectl annotate clusteroperator dns sim.numo.openshift-optional.skrzypek.io/degraded="DNS pods crash-loop"
//! kubectl annotate clusteroperator dns sim.numo.openshift-optional.skrzypek.io/degraded-
//! ```
//!
//! # Not modelled
//! The drain's work beyond OSD pods (other pods are not evicted, so only the storage world's budgets hold a drain),
//! Events, layered (OS image) pools, the content of Ignition beyond files, units and the storage sections (so of
//! the unreconcilable changes only disks, filesystems and raid: not kernel arguments, directories, links, passwd or
//! FIPS), and the MCO's 5-second delay before it acts on a change. Of MachineConfigNodes: pinned image sets, image
//! mode (`ImagePulledFromRegistry` is only listed, on 4.21), the irreconcilable differences of 4.23, node
//! disruption policies other than reboot and none, the daemon's drainer annotations (named in the messages, not
//! written on the node), the operator degrading on a failed MachineConfigNode write (only a node in two custom
//! pools fails its step), and the 4.22 node controller reading them for pool status; the daemon's and
//! controller's other writes (nodes, pools, MachineConfigs) still go through the simulator's own client. Of the
//! operator's wait for the required pools: the check that their config was rendered by the running operator, and
//! the other reasons of `Upgradeable=False` (kubelet skew, cgroup v1, interrupted builds, boot image skew). Of
//! ClusterOperators, only their conditions and `operator` version: no operands' versions, `relatedObjects` or
//! `extension`, the control-plane operators update all at once (not in run levels), and the CVO neither waits for
//! them nor turns `Failing` when one is degraded. Of the MCO's admission policies: `mcn-guards` (4.17+, the
//! daemon's MachineConfigNode writes only for its own node, by its credential's node-name claim), the TechPreview
//! `machineconfigpool-osimagestream-reference-validation` (4.21+), and those on kinds the simulator has not
//! (`MachineConfiguration`, boot images); the pool-selector rule's evaluation errors are refusals with its message.

use std::sync::Arc;

pub mod admission_policies;
pub mod cluster_operators;
pub mod config;
pub mod crds;
mod create;
pub mod cvo;
pub mod daemon;
pub mod faults;
pub mod kubelet_skew;
pub mod machine_config_nodes;
pub mod mco;
pub mod membership;
pub mod nfd;
pub mod node_state;
pub mod operator_sync;
pub mod platform;
pub mod reconcile;
pub mod record;
pub mod release;
pub mod render;
pub mod required_pools;
pub mod rollout;
mod runner;
mod seed;
pub mod sriov;
pub mod status;
pub mod storage;

pub use config::{ClusterShape, SimConfig};
pub use platform::{Platform, FIELD_MANAGER};
pub use release::OpenShiftRelease;
pub use seed::{seed, KWOK_NODE_ANNOTATION};

/// The running simulated operators; they stop when this is dropped.
pub struct SimulatorHandle {
    tasks: Vec<tokio::task::AbortHandle>,
    storage: Option<Arc<std::sync::Mutex<storage::ledger::Ledger>>>,
    record: record::SharedRecord,
    sriov: sriov::SharedReport,
}

impl SimulatorHandle {
    /// Stops the simulated operators now (the same as dropping the handle).
    pub fn stop(self) {}

    /// What the storage world saw so far ([`storage::StorageReport`]); None unless [`SimConfig::storage`] is set.
    pub fn storage_report(&self) -> Option<storage::StorageReport> {
        let ledger = self.storage.as_ref()?.lock().ok()?;
        Some(ledger.report(tokio::time::Instant::now()))
    }

    /// Every reboot the daemon performed so far, by node, each node's in order ([`record`]): rebootless updates
    /// are not reboots.
    pub fn reboots(&self) -> std::collections::BTreeMap<String, Vec<record::Reboot>> {
        record::with(&self.record, |r| r.reboots())
    }

    /// What the SR-IOV network operator did so far ([`sriov::Report`]): its drains completed, its writes refused.
    /// Empty unless [`SimConfig::sriov`] is set.
    pub fn sriov(&self) -> sriov::Report {
        self.sriov.lock().map(|r| r.clone()).unwrap_or_default()
    }
    /// Every stretch of time so far in which the controller found a node matched by two or more custom pools
    /// ([`record`]), in the order they began.
    pub fn multi_pool_nodes(&self) -> Vec<record::MultiPoolNode> {
        record::with(&self.record, |r| r.multi_pool_nodes())
    }
}

impl Drop for SimulatorHandle {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl std::fmt::Debug for SimulatorHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimulatorHandle").field("tasks", &self.tasks.len()).finish()
    }
}

/// The simulated CVO and MCO.
pub struct Simulator;

impl Simulator {
    /// Starts the simulated operators on the current tokio runtime (panics outside one, like `tokio::spawn`), every
    /// one of them acting as the user of `client`.
    pub fn start(client: kube::Client, config: SimConfig) -> SimulatorHandle {
        Self::start_with(client.clone(), Platform::as_one(client), config)
    }

    /// Starts the simulated operators, the components of `platform` acting through their own clients.
    pub fn start_with(client: kube::Client, platform: Platform, config: SimConfig) -> SimulatorHandle {
        let record = record::SharedRecord::default();
        let sriov = sriov::SharedReport::default();
        let (tasks, storage) = runner::start(client, platform, Arc::new(config), record.clone(), sriov.clone());
        SimulatorHandle { tasks, storage, record, sriov }
    }
}
