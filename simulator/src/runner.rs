//! Runs the simulated operators: one watch (reflector) per kind fills a cache and wakes a single loop, which runs the
//! machine-config operator's sync (its MachineConfigNode step on releases that have them, its pool step, its
//! controller's admission policies and its wait for the required pools), a CVO pass, a ClusterOperators pass, an MCO pass and (when enabled) an NFD
//! stand-in pass over the caches. Besides events, the loop wakes only at the end of the control-plane step, at the
//! end of the operator's wait for the required pools, and after an API error.
//!
//! The loop starts once the caches of nodes, pools, MachineConfigs and ClusterVersions are filled; the
//! ClusterOperators pass runs only once theirs is, so a cluster without the ClusterOperator CRD still gets a CVO and
//! an MCO; likewise nothing writes MachineConfigNodes until their cache is filled.

use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use futures::{FutureExt, StreamExt};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::jiff::Timestamp;
use kube::api::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::Resource;
use numo::openshift::{ClusterVersion, MachineConfig, MachineConfigPool};
use serde::de::DeserializeOwned;
use tokio::sync::Notify;
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::admission_policies::{AdmissionPolicies, CONTROLLER_TASK};
use crate::cluster_operators::{ClusterOperator, ClusterOperators};
use crate::config::SimConfig;
use crate::cvo::Cvo;
use crate::daemon;
use crate::machine_config_nodes::{MachineConfigNode, MachineConfigNodes, SyncError};
use crate::mco::{Mco, View};
use crate::nfd::Nfd;
use crate::operator_sync::{OperatorSync, SyncFailure, SyncReport, MACHINE_CONFIG_NODE_TASK, POOLS_TASK};
use crate::platform::Platform;
use crate::record::SharedRecord;
use crate::render;
use crate::required_pools::{self, RequiredPools};
use crate::storage;

/// The caches the passes read.
struct Caches {
    nodes: Store<Node>,
    pools: Store<MachineConfigPool>,
    configs: Store<MachineConfig>,
    versions: Store<ClusterVersion>,
    operators: Store<ClusterOperator>,
    /// Only on releases that write MachineConfigNodes.
    machine_config_nodes: Option<Store<MachineConfigNode>>,
}

/// The record of the storage world, when it is played.
pub(crate) type StorageLedger = Option<Arc<std::sync::Mutex<storage::ledger::Ledger>>>;

/// Starts the watches and the loop (and the storage world's, when configured), recording into `record`; returns
/// their tasks.
pub(crate) fn start(
    client: kube::Client,
    platform: Platform,
    config: Arc<SimConfig>,
    record: SharedRecord,
    sriov: crate::sriov::SharedReport,
) -> (Vec<AbortHandle>, StorageLedger) {
    let notify = Arc::new(Notify::new());
    let (nodes, nodes_writer) = reflector::store();
    let (pools, pools_writer) = reflector::store();
    let (configs, configs_writer) = reflector::store();
    let (versions, versions_writer) = reflector::store();
    let (operators, operators_writer) = reflector::store();
    let mut tasks = vec![
        watch(Api::<Node>::all(client.clone()), nodes_writer, notify.clone()),
        watch(Api::<MachineConfigPool>::all(client.clone()), pools_writer, notify.clone()),
        watch(Api::<MachineConfig>::all(client.clone()), configs_writer, notify.clone()),
        watch(Api::<ClusterVersion>::all(client.clone()), versions_writer, notify.clone()),
        watch(Api::<ClusterOperator>::all(client.clone()), operators_writer, notify.clone()),
    ];
    let machine_config_nodes = config.openshift.writes_machine_config_nodes().then(|| {
        let (store, writer) = reflector::store();
        tasks.push(watch(Api::<MachineConfigNode>::all(client.clone()), writer, notify.clone()));
        store
    });
    let caches = Caches { nodes, pools, configs, versions, operators, machine_config_nodes };
    let ledger = config.storage.as_ref().map(|_| Arc::new(std::sync::Mutex::new(storage::ledger::Ledger::default())));
    if let (Some(storage), Some(ledger)) = (&config.storage, &ledger) {
        let rook = platform.rook_operator.clone();
        tasks.extend(storage::operator::start(client.clone(), rook, storage.clone(), ledger.clone(), config.retry));
    }
    let drainer = config.storage.as_ref().zip(ledger.as_ref()).map(|(storage, ledger)| {
        storage::drain::Drainer::new(platform.drain_evictions.clone(), storage.drain, ledger.clone())
    });
    let sriov = config
        .sriov
        .then(|| crate::sriov::Sriov::new(platform.sriov_operator.clone(), config.sriov_drain, config.retry, sriov));
    let run = tokio::spawn(run(client, platform, config, caches, notify, drainer, record, sriov));
    (tasks.into_iter().chain([run.abort_handle()]).collect(), ledger)
}

/// Keeps `writer`'s cache in step with the API and pokes `notify` on every event.
fn watch<K>(api: Api<K>, writer: reflector::store::Writer<K>, notify: Arc<Notify>) -> AbortHandle
where
    K: Resource + Clone + Debug + DeserializeOwned + Send + Sync + 'static,
    K::DynamicType: Default + Eq + Hash + Clone + Send + Sync,
{
    let events = watcher::watcher(api, watcher::Config::default()).default_backoff().reflect(writer);
    tokio::spawn(async move {
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            if let Err(err) = event {
                tracing::debug!(kind = %K::kind(&K::DynamicType::default()), error = %err, "watch error; retrying");
            }
            notify.notify_one();
        }
    })
    .abort_handle()
}

/// The loop: a CVO pass, a ClusterOperators pass, an MCO pass (and an NFD pass, an SR-IOV pass) per wake-up.
#[allow(clippy::too_many_arguments)]
async fn run(
    client: kube::Client,
    platform: Platform,
    config: Arc<SimConfig>,
    caches: Caches,
    notify: Arc<Notify>,
    drainer: Option<storage::drain::Drainer>,
    record: SharedRecord,
    mut sriov: Option<crate::sriov::Sriov>,
) {
    let ready = async {
        caches.nodes.wait_until_ready().await?;
        caches.pools.wait_until_ready().await?;
        caches.configs.wait_until_ready().await?;
        caches.versions.wait_until_ready().await
    };
    if ready.await.is_err() {
        tracing::error!("a watch stopped before its cache was filled; the simulator does not run");
        return;
    }
    tracing::info!(nfd_labels = config.nfd_labels, "simulated CVO and MCO running");
    let mut cvo = Cvo::new(client.clone(), config.control_plane);
    let mut operators = ClusterOperators::new(client.clone(), config.openshift);
    let mut nfd = config.nfd_labels.then(|| Nfd::new(client.clone()));
    let timing = daemon::Timing { drain: config.drain, reboot: config.reboot };
    let mut mco = Mco::new(client, timing, config.retry, notify.clone(), record);
    if let Some(drainer) = drainer {
        mco = mco.with_drainer(drainer);
    }
    if config.openshift.plays_os_image_streams() {
        mco = mco.with_os_image_streams();
    }
    let machine_config_nodes =
        caches.machine_config_nodes.map(|store| MachineConfigNodes::new(&platform, config.openshift, store));
    if let Some(writers) = &machine_config_nodes {
        mco = mco.with_machine_config_nodes(writers.clone());
    }
    let operator_sync = OperatorSync::new(platform.machine_config_operator.clone(), config.openshift);
    let policies = AdmissionPolicies::new(platform.machine_config_operator.clone(), config.openshift);
    let mut required_pools = RequiredPools::new(config.required_pool_wait_per_machine);
    loop {
        let view = View { nodes: caches.nodes.state(), pools: caches.pools.state(), configs: caches.configs.state() };
        let (sync, nodes_incomplete, sync_wake) =
            sync_operator(&view, machine_config_nodes.as_ref(), (&operator_sync, &policies), &mut required_pools).await;
        if let Some(failure) = &sync.failed {
            tracing::warn!(task = failure.task, error = %failure.error, "machine-config operator: its sync failed");
        }
        let failed = sync.stopped_before_controllers();
        let mut wake = match cvo.reconcile(&caches.versions.state(), &view.pools, &view.configs, failed).await {
            Ok(at) => earliest(at.map(instant_of), sync_wake),
            Err(err) => {
                tracing::warn!(error = %format!("{err:#}"), "CVO pass failed; retrying");
                Some(Instant::now() + config.retry)
            }
        };
        // Ready once the watch has listed; checked without waiting, so a missing CRD does not hold the other passes.
        if matches!(caches.operators.wait_until_ready().now_or_never(), Some(Ok(()))) {
            let versions = caches.versions.state();
            let operator_states = caches.operators.state();
            let reconciled =
                operators.reconcile(&operator_states, &versions, &view.configs, &sync, &view.pools, &view.nodes).await;
            if let Err(err) = reconciled {
                tracing::debug!(error = %format!("{err:#}"), "ClusterOperators pass incomplete; retrying");
                wake = earliest(wake, Some(Instant::now() + config.retry));
            }
        }
        if let Err(err) = mco.reconcile(&view).await {
            tracing::debug!(error = %format!("{err:#}"), "MCO pass incomplete; retrying");
            wake = earliest(wake, Some(Instant::now() + config.retry));
        }
        if let Some(nfd) = nfd.as_mut() {
            if let Err(err) = nfd.reconcile(&view).await {
                tracing::debug!(error = %format!("{err:#}"), "NFD stand-in pass incomplete; retrying");
                wake = earliest(wake, Some(Instant::now() + config.retry));
            }
        }
        if let Some(sriov) = sriov.as_mut() {
            wake = earliest(wake, sriov.reconcile(&view).await);
        }
        if sync.failed.is_some() || nodes_incomplete {
            // The real operator requeues a failed sync with a rate limit.
            wake = earliest(wake, Some(Instant::now() + config.retry));
        }
        match wake {
            Some(at) => {
                tokio::select! {
                    _ = notify.notified() => {}
                    _ = tokio::time::sleep_until(at) => {}
                }
            }
            None => notify.notified().await,
        }
    }
}

/// One pass of the machine-config operator's sync (`syncAll`, of which the simulator plays four steps in order):
/// its MachineConfigNodes (on releases that have them), its pools, its controller's admission policies
/// ([`crate::admission_policies`]), then the wait for the required pools ([`crate::required_pools`]); a failed step
/// stops the sync, and while the wait is under way nothing before it runs.
/// Returns the report, whether a MachineConfigNode write failed (to retry; it stops nothing), and when to look at
/// the wait again.
async fn sync_operator(
    view: &View,
    machine_config_nodes: Option<&MachineConfigNodes>,
    (operator_sync, policies): (&OperatorSync, &AdmissionPolicies),
    required_pools: &mut RequiredPools,
) -> (SyncReport, bool, Option<Instant>) {
    let mut report = SyncReport::default();
    let mut nodes_incomplete = false;
    let release = operator_release(&view.configs);
    if !required_pools.waiting(&release) {
        match machine_config_nodes {
            Some(writers) => match writers.sync(&view.nodes, &view.pools).await {
                Ok(()) => report.passed.push(MACHINE_CONFIG_NODE_TASK),
                Err(SyncError::Stopped(conflict)) => {
                    let error = conflict.to_string();
                    report.failed = Some(SyncFailure { task: MACHINE_CONFIG_NODE_TASK, error });
                    return (report, false, None);
                }
                Err(SyncError::Write(err)) => {
                    tracing::debug!(error = %format!("{err:#}"), "MachineConfigNode sync incomplete; retrying");
                    nodes_incomplete = true;
                    report.passed.push(MACHINE_CONFIG_NODE_TASK);
                }
            },
            // Before 4.20 the step does nothing (the feature gate is off) and passes.
            None => report.passed.push(MACHINE_CONFIG_NODE_TASK),
        }
        if let Err(error) = operator_sync.reconcile(&view.pools).await {
            report.failed = Some(SyncFailure { task: POOLS_TASK, error });
            return (report, nodes_incomplete, None);
        }
        report.passed.push(POOLS_TASK);
        if let Err(error) = policies.apply().await {
            report.failed = Some(SyncFailure { task: CONTROLLER_TASK, error });
            return (report, nodes_incomplete, None);
        }
        report.passed.push(CONTROLLER_TASK);
    }
    let pools: Vec<&MachineConfigPool> = view.pools.iter().map(Arc::as_ref).collect();
    let mut wake = None;
    match required_pools.step(Instant::now(), &pools, &release) {
        required_pools::Outcome::Passed => report.passed.push(required_pools::TASK),
        required_pools::Outcome::Waiting(until) => wake = Some(until),
        required_pools::Outcome::NotYet => {}
        required_pools::Outcome::Failed(error) => {
            report.failed = Some(SyncFailure { task: required_pools::TASK, error });
        }
    }
    (report, nodes_incomplete, wake)
}

/// The release the machine-config operator runs: that of its templates (the CVO moves them when it updates it).
fn operator_release(configs: &[Arc<MachineConfig>]) -> String {
    let templates = configs.iter().filter(|c| render::is_template(c));
    templates.filter_map(|c| c.release_version()).max().unwrap_or_default().to_string()
}

/// The monotonic instant of a wall-clock time (now if it has passed).
fn instant_of(at: Timestamp) -> Instant {
    let left = Duration::try_from(at.duration_since(Timestamp::now())).unwrap_or_default();
    Instant::now() + left
}

fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
