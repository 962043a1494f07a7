//! Helpers of the simulator's integration tests: reading and patching the simulated objects, and recorders that
//! watch the whole run to check what must hold at every moment.

#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, ListParams, Patch, PatchParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::ResourceExt;
use numo::openshift::{
    ClusterVersion, MachineConfig, MachineConfigPool, MachineConfigPoolSpec, MachineConfigSpec, CLUSTER_VERSION_NAME,
    CURRENT_CONFIG, DESIRED_CONFIG, MCD_STATE, MC_ROLE, RELEASE_VERSION,
};
use numo_simulator::cluster_operators::ClusterOperator;
use numo_simulator::SimConfig;
use numo_testkit::World;
use serde_json::{json, Value};
use tokio::sync::oneshot;

/// The release the tests seed.
pub const OLD: &str = "4.16.4";
/// The release the tests upgrade to.
pub const NEW: &str = "4.16.5";
/// How long any one step may take (generous: the machine is shared).
pub const WAIT: Duration = Duration::from_secs(120);

/// Fast timings: sub-second reboots and control-plane step.
pub fn fast() -> SimConfig {
    SimConfig {
        reboot: Duration::from_millis(700),
        control_plane: Duration::from_millis(300),
        retry: Duration::from_millis(300),
        ..SimConfig::default()
    }
}

pub fn pools(world: &World) -> Api<MachineConfigPool> {
    Api::all(world.client.clone())
}

pub fn nodes(world: &World) -> Api<Node> {
    Api::all(world.client.clone())
}

pub fn versions(world: &World) -> Api<ClusterVersion> {
    Api::all(world.client.clone())
}

pub fn operators(world: &World) -> Api<ClusterOperator> {
    Api::all(world.client.clone())
}

pub fn machine_configs(world: &World) -> Api<MachineConfig> {
    Api::all(world.client.clone())
}

/// A MachineConfig as an admin writes one: labelled for `role`, with the Ignition config `config`.
pub fn machine_config(name: &str, role: &str, config: Value) -> MachineConfig {
    let mut object = MachineConfig::new(name, MachineConfigSpec { config: Some(config), os_image_url: None });
    object.metadata.labels = Some(BTreeMap::from([(MC_ROLE.to_string(), role.to_string())]));
    object
}

/// The hash part of a rendered config's name: `rendered-<pool>-<hash>`.
pub fn hash_of(rendered: &str) -> &str {
    rendered.rsplit('-').next().unwrap_or_default()
}

/// A custom pool that renders the worker configs plus its own, selecting nodes labelled
/// `node-role.kubernetes.io/<name>`, as the OpenShift docs create one.
pub fn custom_pool(name: &str) -> anyhow::Result<MachineConfigPool> {
    let spec: MachineConfigPoolSpec = serde_json::from_value(json!({
        "machineConfigSelector": {"matchExpressions": [{"key": MC_ROLE, "operator": "In", "values": ["worker", name]}]},
        "nodeSelector": {"matchLabels": {format!("node-role.kubernetes.io/{name}"): ""}},
    }))?;
    Ok(MachineConfigPool::new(name, spec))
}

/// Merge-patches an object with `body`.
pub async fn patch<K>(api: &Api<K>, name: &str, body: Value) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(name, &PatchParams::default(), &Patch::Merge(&body)).await?;
    Ok(())
}

/// Requests an upgrade to `version`.
pub async fn upgrade(world: &World, version: &str) -> anyhow::Result<()> {
    patch(&versions(world), CLUSTER_VERSION_NAME, json!({"spec": {"desiredUpdate": {"version": version}}})).await
}

/// Whether the pool's condition `type_` has `status`.
pub fn condition_is(pool: &MachineConfigPool, type_: &str, status: &str) -> bool {
    pool.status.as_ref().is_some_and(|s| s.conditions.iter().any(|c| c.type_ == type_ && c.status == status))
}

/// The message of the pool's condition `type_`.
pub fn condition_message(pool: &MachineConfigPool, type_: &str) -> Option<String> {
    pool.status.as_ref()?.conditions.iter().find(|c| c.type_ == type_)?.message.clone()
}

pub fn spec_config(pool: &MachineConfigPool) -> Option<String> {
    pool.spec.configuration.as_ref()?.name.clone()
}

pub fn status_config(pool: &MachineConfigPool) -> Option<String> {
    pool.status.as_ref()?.configuration.as_ref()?.name.clone()
}

/// `(machineCount, updatedMachineCount, readyMachineCount, unavailableMachineCount, degradedMachineCount)`.
pub fn counts(pool: &MachineConfigPool) -> (i32, i32, i32, i32, i32) {
    let s = pool.status.clone().unwrap_or_default();
    (
        s.machine_count,
        s.updated_machine_count,
        s.ready_machine_count,
        s.unavailable_machine_count,
        s.degraded_machine_count,
    )
}

/// Whether the pool is Updated on its target with `machines` machines.
pub fn rolled_out(pool: &MachineConfigPool, machines: i32) -> bool {
    condition_is(pool, "Updated", "True")
        && spec_config(pool).is_some()
        && status_config(pool) == spec_config(pool)
        && counts(pool).0 == machines
        && counts(pool).1 == machines
}

/// Waits until `pool` is Updated on its target with `machines` machines.
pub async fn wait_rolled_out(world: &World, pool: &str, machines: i32) -> anyhow::Result<MachineConfigPool> {
    let what = format!("pool {pool} updated with {machines} machines");
    numo_testkit::wait_until(&pools(world), pool, WAIT, &what, move |p| rolled_out(p, machines)).await
}

pub fn annotation(node: &Node, key: &str) -> String {
    node.annotations().get(key).cloned().unwrap_or_default()
}

/// The release a node runs, as the MCO shows it: the `release-image-version` annotation of the rendered
/// MachineConfig named by the node's `currentConfig` (`""` when either is missing).
pub async fn release(world: &World, node: &Node) -> anyhow::Result<String> {
    let Some(config) = Api::<MachineConfig>::all(world.client.clone()).get_opt(&current(node)).await? else {
        return Ok(String::new());
    };
    Ok(config.release_version().unwrap_or_default().to_string())
}

/// The node's `release-image-version` label: only the NFD stand-in writes it.
pub fn release_label(node: &Node) -> Option<String> {
    node.labels().get(RELEASE_VERSION).cloned()
}

pub fn current(node: &Node) -> String {
    annotation(node, CURRENT_CONFIG)
}

pub fn desired(node: &Node) -> String {
    annotation(node, DESIRED_CONFIG)
}

pub fn state(node: &Node) -> String {
    annotation(node, MCD_STATE)
}

pub fn cordoned(node: &Node) -> bool {
    node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false)
}

/// Whether the MCO's `UpdateInProgress:PreferNoSchedule` taint is on the node.
pub fn update_tainted(node: &Node) -> bool {
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or_default();
    taints.iter().any(|t| t.key == "UpdateInProgress" && t.effect == "PreferNoSchedule")
}

/// Working or cordoned: what counts against `maxUnavailable` while a node updates.
pub fn updating(node: &Node) -> bool {
    state(node) == "Working" || cordoned(node)
}

/// Every node, by name.
pub async fn all_nodes(world: &World) -> anyhow::Result<BTreeMap<String, Node>> {
    Ok(nodes(world).list(&ListParams::default()).await?.items.into_iter().map(|n| (n.name_any(), n)).collect())
}

/// Records, over a watch of the nodes named in `names`, the most that were updating (Working or cordoned) at once.
pub struct Concurrency {
    max: Arc<Mutex<usize>>,
}

impl Concurrency {
    /// Starts watching (as a task of `world`) and returns once the watch has listed the nodes.
    pub async fn watch(world: &mut World, names: &[&str]) -> anyhow::Result<Self> {
        let names: BTreeSet<String> = names.iter().map(|n| n.to_string()).collect();
        let max = Arc::new(Mutex::new(0));
        let (ready_tx, ready_rx) = oneshot::channel();
        let events = watcher::watcher(nodes(world), watcher::Config::default()).default_backoff();
        let record = max.clone();
        world.spawn(async move {
            let mut ready = Some(ready_tx);
            let mut now: BTreeMap<String, bool> = BTreeMap::new();
            futures::pin_mut!(events);
            while let Some(event) = events.next().await {
                match event {
                    Ok(Event::Apply(node) | Event::InitApply(node)) if names.contains(&node.name_any()) => {
                        now.insert(node.name_any(), updating(&node));
                    }
                    Ok(Event::Delete(node)) => {
                        now.remove(&node.name_any());
                    }
                    Ok(Event::InitDone) => {
                        if let Some(tx) = ready.take() {
                            let _ = tx.send(());
                        }
                    }
                    _ => {}
                }
                let at_once = now.values().filter(|u| **u).count();
                let mut max = record.lock().unwrap_or_else(|e| e.into_inner());
                *max = (*max).max(at_once);
            }
        });
        tokio::time::timeout(WAIT, ready_rx).await??;
        Ok(Self { max })
    }

    /// The most nodes seen updating at once so far.
    pub fn max(&self) -> usize {
        *self.max.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Records, over a watch of the nodes named in `names`, which were ever seen cordoned and which ever in the daemon's
/// Working state: a node in both rebooted for an update; a node in neither was left alone.
pub struct NodeHistory {
    cordoned: Arc<Mutex<BTreeSet<String>>>,
    working: Arc<Mutex<BTreeSet<String>>>,
}

impl NodeHistory {
    /// Starts watching (as a task of `world`) and returns once the watch has listed the nodes.
    pub async fn watch(world: &mut World, names: &[&str]) -> anyhow::Result<Self> {
        let names: BTreeSet<String> = names.iter().map(|n| n.to_string()).collect();
        let (cordons, works) = (Arc::new(Mutex::new(BTreeSet::new())), Arc::new(Mutex::new(BTreeSet::new())));
        let (ready_tx, ready_rx) = oneshot::channel();
        let events = watcher::watcher(nodes(world), watcher::Config::default()).default_backoff();
        let (seen_cordoned, seen_working) = (cordons.clone(), works.clone());
        world.spawn(async move {
            let mut ready = Some(ready_tx);
            futures::pin_mut!(events);
            while let Some(event) = events.next().await {
                match event {
                    Ok(Event::Apply(node) | Event::InitApply(node)) if names.contains(&node.name_any()) => {
                        if cordoned(&node) {
                            seen_cordoned.lock().unwrap_or_else(|e| e.into_inner()).insert(node.name_any());
                        }
                        if state(&node) == "Working" {
                            seen_working.lock().unwrap_or_else(|e| e.into_inner()).insert(node.name_any());
                        }
                    }
                    Ok(Event::InitDone) => {
                        if let Some(tx) = ready.take() {
                            let _ = tx.send(());
                        }
                    }
                    _ => {}
                }
            }
        });
        tokio::time::timeout(WAIT, ready_rx).await??;
        Ok(Self { cordoned: cordons, working: works })
    }

    /// The nodes seen cordoned so far.
    pub fn cordoned(&self) -> BTreeSet<String> {
        self.cordoned.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The nodes seen Working so far.
    pub fn working(&self) -> BTreeSet<String> {
        self.working.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// The nodes seen both cordoned and Working: those that rebooted for an update.
    pub fn rebooted(&self) -> BTreeSet<String> {
        self.cordoned().intersection(&self.working()).cloned().collect()
    }
}

/// Checks, over a watch of every pool, that each status written is consistent; collects what was not.
pub struct PoolInvariants {
    violations: Arc<Mutex<Vec<String>>>,
    seen: Arc<Mutex<usize>>,
}

impl PoolInvariants {
    /// Starts watching (as a task of `world`); `max_unavailable` bounds each named pool's unavailable count.
    pub async fn watch(world: &mut World, max_unavailable: BTreeMap<String, i32>) -> anyhow::Result<Self> {
        let violations = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::new(Mutex::new(0));
        let (ready_tx, ready_rx) = oneshot::channel();
        let events = watcher::watcher(pools(world), watcher::Config::default()).default_backoff();
        let (record, count) = (violations.clone(), seen.clone());
        world.spawn(async move {
            let mut ready = Some(ready_tx);
            futures::pin_mut!(events);
            while let Some(event) = events.next().await {
                match event {
                    Ok(Event::Apply(pool) | Event::InitApply(pool)) => {
                        let bound = max_unavailable.get(&pool.name_any()).copied();
                        let found = check_pool(&pool, bound);
                        *count.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                        record.lock().unwrap_or_else(|e| e.into_inner()).extend(found);
                    }
                    Ok(Event::InitDone) => {
                        if let Some(tx) = ready.take() {
                            let _ = tx.send(());
                        }
                    }
                    _ => {}
                }
            }
        });
        tokio::time::timeout(WAIT, ready_rx).await??;
        Ok(Self { violations, seen })
    }

    /// The inconsistencies seen so far.
    pub fn violations(&self) -> Vec<String> {
        self.violations.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// How many pool states were checked.
    pub fn seen(&self) -> usize {
        *self.seen.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// What must hold for any pool status the MCO writes.
fn check_pool(pool: &MachineConfigPool, max_unavailable: Option<i32>) -> Vec<String> {
    let Some(status) = pool.status.as_ref() else { return Vec::new() };
    let (machines, updated, ready, unavailable, degraded) = counts(pool);
    let mut out = Vec::new();
    let mut check = |ok: bool, what: &str| {
        if !ok {
            out.push(format!("pool {} {what}: {:?}", pool.name_any(), status));
        }
    };
    check(ready <= updated && updated <= machines, "has ready <= updated <= machines violated");
    check(unavailable <= machines && degraded <= machines, "counts more unavailable or degraded than machines");
    if let Some(bound) = max_unavailable {
        check(unavailable <= bound, "has more machines unavailable than maxUnavailable");
    }
    if condition_is(pool, "Updated", "True") {
        check(updated == machines && ready == machines && unavailable == 0, "is Updated with machines behind");
        check(!condition_is(pool, "Updating", "True"), "is both Updated and Updating");
    }
    // A status describes the spec of its observedGeneration; the spec may have moved on since.
    if pool.metadata.generation == Some(status.observed_generation) {
        if condition_is(pool, "Updated", "True") {
            check(status_config(pool) == spec_config(pool), "is Updated on another config than its target");
        }
        if condition_is(pool, "Updating", "True") {
            check(!pool.spec.paused, "is Updating while paused");
        }
    }
    check(condition_is(pool, "Degraded", "True") || degraded == 0, "has degraded machines but is not Degraded");
    out
}
