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
//!   ServiceAccounts and their role bindings ([`identities`]), which the components of [`Platform`] act as.
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
//!   "node <n> belongs to 2 custom roles, cannot proceed with this Node"). A degraded pool makes `machine-config`
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
use std::time::Duration;

pub mod admission_policies;
pub mod cluster_operators;
pub mod crds;
pub mod cvo;
pub mod daemon;
pub mod faults;
pub mod identities;
pub mod kubelet_skew;
pub mod machine_config_nodes;
pub mod mco;
pub mod membership;
pub mod nfd;
pub mod node_state;
pub mod operator_sync;
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

pub use release::OpenShiftRelease;
pub use seed::{seed, KWOK_NODE_ANNOTATION};

/// Field manager of every write the simulator makes.
pub const FIELD_MANAGER: &str = "numo-simulator";

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
    /// Also play Node Feature Discovery ([`nfd`]): label every node with the release it runs. Off by default, as
    /// the MCO itself writes no such label.
    pub nfd_labels: bool,
    /// The OpenShift release whose platform writers the simulator plays ([`operator_sync`]); default the newest.
    pub openshift: OpenShiftRelease,
    /// Also play ODF's storage nodes and Rook's managed disruption budgets ([`storage`]), and let the drain evict OSD
    /// pods through the Eviction API. Off by default.
    pub storage: Option<storage::StorageConfig>,
    /// How long the machine-config operator waits for its required pools, per machine in them, before its sync
    /// fails with `RequiredPoolsFailed` ([`required_pools`]); the MCO's 10 minutes by default.
    pub required_pool_wait_per_machine: Duration,
    /// Also play the SR-IOV network operator's drain controller ([`sriov`]): it pauses a node's pool around its
    /// drain of a node annotated [`faults::SRIOV_RECONFIGURE`]. Off by default.
    pub sriov: bool,
    /// How long SR-IOV's drain of a node takes, between its pause and its unpause ([`sriov`]).
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

/// The clients of the platform components that must act under their own identity, so that admission (numo's
/// ValidatingAdmissionPolicy) judges their writes as on a real cluster and RBAC holds them to their roles.
#[derive(Clone)]
pub struct Platform {
    /// Acts as the machine-config operator ([`operator_sync::OPERATOR_USER`]): its pool sync and its
    /// MachineConfigNode sync.
    pub machine_config_operator: kube::Client,
    /// Acts as the machine-config daemon ([`identities::DAEMON_USER`]): its MachineConfigNode writes.
    pub machine_config_daemon: kube::Client,
    /// Acts as the machine-config controller ([`identities::CONTROLLER_USER`]): the MachineConfigNode writes of its
    /// node and drain controllers.
    pub machine_config_controller: kube::Client,
    /// The drain controller's evictions ([`storage::drain`]), as the machine-config controller but without kube's
    /// retry of 429 responses: client-go does not retry the 429 of a disruption budget (it carries no
    /// `Retry-After`), the drain itself tries again.
    pub drain_evictions: kube::Client,
    /// Acts as Rook's operator ([`identities::ROOK_USER`]): the OSDs, budgets and state map of [`storage`].
    pub rook_operator: kube::Client,
    /// Acts as the SR-IOV network operator ([`identities::SRIOV_USER`]): its pauses and unpauses of pools
    /// ([`sriov`]).
    pub sriov_operator: kube::Client,
}

impl Platform {
    /// Every component acting as the user of `client`.
    pub fn as_one(client: kube::Client) -> Self {
        Self {
            machine_config_operator: client.clone(),
            machine_config_daemon: client.clone(),
            machine_config_controller: client.clone(),
            drain_evictions: client.clone(),
            rook_operator: client.clone(),
            sriov_operator: client,
        }
    }

    /// Each component impersonating its own user, from the (admin) client configuration `config`; seeding creates
    /// their ServiceAccounts and binds their roles. (With [`Platform::as_one`] the drain's evictions go through the
    /// given client, whose retries may hide a budget's refusals.)
    pub fn impersonating(config: &kube::Config) -> Result<Self, kube::Error> {
        let acting_as_with = |user: &str, default_retry: bool| {
            let mut config = config.clone();
            config.auth_info.impersonate = Some(user.to_string());
            config.auth_info.impersonate_groups = None;
            config.default_retry = default_retry;
            kube::Client::try_from(config)
        };
        let acting_as = |user: &str| acting_as_with(user, config.default_retry);
        Ok(Self {
            machine_config_operator: acting_as(operator_sync::OPERATOR_USER)?,
            machine_config_daemon: acting_as(identities::DAEMON_USER)?,
            machine_config_controller: acting_as(identities::CONTROLLER_USER)?,
            drain_evictions: acting_as_with(identities::CONTROLLER_USER, false)?,
            rook_operator: acting_as(identities::ROOK_USER)?,
            sriov_operator: acting_as(identities::SRIOV_USER)?,
        })
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
