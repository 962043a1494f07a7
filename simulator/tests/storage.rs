//! Rook's managed disruption budgets against the real API server, kube-controller-manager (its Deployment and
//! disruption controllers) and kwok: a storage cluster of three racks of one node each, a worker rollout.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::ResourceExt;
use numo_simulator::storage::{
    seed_storage, DrainTiming, FailureDomain, RookTiming, StorageConfig, StorageShape, NAMESPACE,
};
use numo_simulator::{ClusterShape, SimConfig};
use numo_testkit::World;
use serde_json::json;
use support::*;
use tokio::time::Instant;

const PGS_CLEAN: Duration = Duration::from_secs(3);

fn config() -> SimConfig {
    let storage = StorageConfig {
        domain: FailureDomain::Rack,
        pgs_clean: PGS_CLEAN,
        rook: RookTiming { default_missing: Duration::from_millis(500), default_at_zero: Duration::from_millis(500) },
        drain: DrainTiming {
            eviction_retry: Duration::from_millis(300),
            attempt: Duration::from_secs(90),
            requeue: Duration::from_secs(1),
        },
    };
    SimConfig { reboot: Duration::from_secs(2), storage: Some(storage), ..fast() }
}

fn budgets(world: &World) -> Api<PodDisruptionBudget> {
    Api::namespaced(world.client.clone(), NAMESPACE)
}

fn allowed(budget: &PodDisruptionBudget) -> Option<i32> {
    budget.status.as_ref().map(|s| s.disruptions_allowed)
}

/// Every change of the budgets in the storage namespace: when, and each budget's allowed disruptions.
type BudgetLog = Arc<Mutex<Vec<(Instant, BTreeMap<String, Option<i32>>)>>>;

fn record_budgets(world: &mut World) -> BudgetLog {
    let log: BudgetLog = Arc::default();
    let api = budgets(world);
    let recorded = log.clone();
    world.spawn(async move {
        let mut now: BTreeMap<String, Option<i32>> = BTreeMap::new();
        let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            match event {
                Ok(Event::Apply(b) | Event::InitApply(b)) => {
                    now.insert(b.name_any(), allowed(&b));
                }
                Ok(Event::Delete(b)) => {
                    now.remove(&b.name_any());
                }
                _ => continue,
            }
            if let Ok(mut log) = recorded.lock() {
                if log.last().map(|(_, last)| last) != Some(&now) {
                    log.push((Instant::now(), now.clone()));
                }
            }
        }
    });
    log
}

/// When each worker was last seen uncordoned after being cordoned.
fn record_uncordons(world: &mut World) -> Arc<Mutex<BTreeMap<String, Instant>>> {
    let back: Arc<Mutex<BTreeMap<String, Instant>>> = Arc::default();
    let api: Api<Node> = Api::all(world.client.clone());
    let recorded = back.clone();
    world.spawn(async move {
        let mut cordoned_seen = BTreeMap::new();
        let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            let Ok(Event::Apply(node) | Event::InitApply(node)) = event else { continue };
            let name = node.name_any();
            if cordoned(&node) {
                cordoned_seen.insert(name, true);
            } else if cordoned_seen.remove(&name).is_some() {
                if let Ok(mut back) = recorded.lock() {
                    back.insert(name, Instant::now());
                }
            }
        }
    });
    back
}

/// A MachineConfig for the worker role: every worker updates, with a reboot (and a drain).
fn worker_file() -> numo::openshift::MachineConfig {
    machine_config(
        "99-worker-storage-test",
        "worker",
        json!({
            "ignition": {"version": "3.2.0"},
            "storage": {"files": [{"path": "/etc/storage-test", "mode": 420, "contents": {"source": "data:,x"}}]},
        }),
    )
}

#[tokio::test]
async fn a_drained_rack_blocks_the_other_racks_until_the_pgs_are_clean() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-storage-racks").await?;
    world.openshift(ClusterShape { version: OLD.into(), workers: 3, masters: 1 }, config()).await?;
    seed_storage(&world.client, &StorageShape { domain: FailureDomain::Rack, domains: 3 }).await?;

    // Rook's default budget over the six OSDs, its status computed by kube-controller-manager.
    let healthy = |b: &PodDisruptionBudget| {
        b.status.as_ref().is_some_and(|s| s.expected_pods == 3 && s.current_healthy == 3 && s.disruptions_allowed == 1)
    };
    numo_testkit::wait_until(&budgets(&world), "rook-ceph-osd", WAIT, "the default budget, all OSDs up", healthy)
        .await?;
    let osds: Api<Deployment> = Api::namespaced(world.client.clone(), NAMESPACE);
    let osd0 = osds.get("rook-ceph-osd-0").await?;
    assert_eq!(osd0.labels().get("topology-location-rack").map(String::as_str), Some("rack0"));
    let log = record_budgets(&mut world);
    let back = record_uncordons(&mut world);

    // worker-0 (rack0) goes first, alone.
    machine_configs(&world).create(&PostParams::default(), &worker_file()).await?;
    let blocked = |b: &PodDisruptionBudget| allowed(b) == Some(0);
    numo_testkit::wait_until(&budgets(&world), "rook-ceph-osd-rack-rack1", WAIT, "rack1 blocked", blocked).await?;
    // Now two at a time: worker-1 (rack1) drains while rack1's budget is at zero.
    patch(&pools(&world), "worker", json!({"spec": {"maxUnavailable": 2}})).await?;
    let map: Api<ConfigMap> = Api::namespaced(world.client.clone(), NAMESPACE);
    let draining =
        |m: &ConfigMap| m.data.as_ref().and_then(|d| d.get("draining-failure-domain")).is_some_and(|d| d == "rack0");
    let state = numo_testkit::wait_until(&map, "rook-ceph-pdbstatemap", WAIT, "rack0 draining", draining).await?;
    let state = state.data.unwrap_or_default();
    assert_eq!(state.get("set-no-out").map(String::as_str), Some("true"), "a drained node opened rack0");

    wait_rolled_out(&world, "worker", 3).await?;
    numo_testkit::wait_until(&budgets(&world), "rook-ceph-osd", WAIT, "the default budget back", healthy).await?;
    let end = Instant::now();

    let log = log.lock().map_err(|_| anyhow::anyhow!("the recorder panicked"))?.clone();
    let first_blocking = log.iter().find(|(_, b)| !b.contains_key("rook-ceph-osd"));
    let (_, first_blocking) =
        first_blocking.ok_or_else(|| anyhow::anyhow!("the default budget never went: {log:?}"))?;
    assert_eq!(
        first_blocking.keys().collect::<Vec<_>>(),
        ["rook-ceph-osd-rack-rack1", "rook-ceph-osd-rack-rack2"],
        "worker-0 of rack0 drained first: {log:?}"
    );
    assert!(
        log.iter()
            .all(|(_, b)| b.contains_key("rook-ceph-osd") || b.keys().any(|n| n.starts_with("rook-ceph-osd-rack-"))),
        "never without a budget: {log:?}"
    );
    assert!(
        log.iter().any(|(_, b)| !b.contains_key("rook-ceph-osd")
            && b.get("rook-ceph-osd-rack-rack1") == Some(&Some(0))
            && b.get("rook-ceph-osd-rack-rack2") == Some(&Some(0))),
        "the default budget deleted, the other racks at zero: {log:?}"
    );

    let report = world.simulator().and_then(|s| s.storage_report()).unwrap_or_default();
    let worker_1 = report.drain_waits.iter().find(|w| w.node == "worker-1");
    let worker_1 = worker_1.ok_or_else(|| anyhow::anyhow!("worker-1's drain did not wait: {report:?}"))?;
    assert!(worker_1.blocking && worker_1.budgets.contains("rook-ceph-osd-rack-rack1"), "{worker_1:?}");
    assert!(worker_1.done);
    assert!(report.drain_waits.iter().all(|w| w.node != "worker-0"), "worker-0's drain, the first, passed: {report:?}");
    assert_eq!(report.drains, 3, "{report:?}");
    assert_eq!(report.domains.len(), 3);

    // The default budget returns only once the PGs are clean: at least PGS_CLEAN after the last node came back.
    let last_back = back.lock().map_err(|_| anyhow::anyhow!("the recorder panicked"))?.values().max().copied();
    let last_back = last_back.ok_or_else(|| anyhow::anyhow!("no node seen uncordoned"))?;
    let default_back = log
        .iter()
        .filter(|(at, b)| *at >= last_back && b.contains_key("rook-ceph-osd"))
        .map(|(at, _)| *at)
        .next()
        .unwrap_or(end);
    let waited = default_back.duration_since(last_back);
    assert!(waited + Duration::from_millis(800) >= PGS_CLEAN, "the default budget back {waited:?} after the last node");
    // Rook deletes the blocking budgets just after it creates the default one.
    let deadline = Instant::now() + WAIT;
    loop {
        let left: Vec<String> =
            budgets(&world).list(&Default::default()).await?.items.iter().map(|b| b.name_any()).collect();
        if left == ["rook-ceph-osd"] {
            break;
        }
        assert!(Instant::now() < deadline, "blocking budgets left: {left:?}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}
