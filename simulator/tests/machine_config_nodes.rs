//! MachineConfigNodes against the real API server and the real CRD: on 4.21 the operator creates one per node and
//! the controller and daemon write each phase of an update, the drain apart from the reboot; on 4.19 there are none.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::api::Api;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::ResourceExt;
use numo_simulator::faults::{DRAIN_SECONDS, REBOOT_SECONDS};
use numo_simulator::machine_config_nodes::{MachineConfigNode, CORDONED, DRAINED, REBOOTED_NODE, UPDATED};
use numo_simulator::{ClusterShape, OpenShiftRelease, SimConfig};
use numo_testkit::World;
use serde_json::json;
use support::*;

const NODE: &str = "worker-0";

fn on(minor: u32) -> SimConfig {
    SimConfig { openshift: OpenShiftRelease { minor }, ..fast() }
}

fn shape() -> ClusterShape {
    ClusterShape { version: OLD.into(), workers: 1, masters: 1 }
}

fn machine_config_nodes(world: &World) -> Api<MachineConfigNode> {
    Api::all(world.client.clone())
}

/// A MachineConfig for the worker role: the worker pool renders a new config and its node updates, with a reboot.
fn worker_file() -> numo::openshift::MachineConfig {
    let config = json!({
        "ignition": {"version": "3.2.0"},
        "storage": {"files": [{"path": "/etc/mcn-test", "mode": 420, "contents": {"source": "data:,x"}}]},
    });
    machine_config("99-worker-mcn-test", "worker", config)
}

/// Slows `NODE`'s updates: a second of drain, a second of reboot.
async fn slow_drain_and_reboot(world: &World) -> anyhow::Result<()> {
    let slow = json!({"metadata": {"annotations": {DRAIN_SECONDS: "1", REBOOT_SECONDS: "1"}}});
    patch(&nodes(world), NODE, slow).await
}

/// Updates the worker pool with [`worker_file`]; returns its new rendered config once `NODE` runs it.
async fn update_the_workers(world: &World) -> anyhow::Result<String> {
    let old = spec_config(&wait_rolled_out(world, "worker", 1).await?).unwrap_or_default();
    machine_configs(world).create(&Default::default(), &worker_file()).await?;
    let rolled = numo_testkit::wait_until(&pools(world), "worker", WAIT, "the workers on a new config", move |p| {
        rolled_out(p, 1) && spec_config(p).is_some_and(|c| c != old)
    })
    .await?;
    Ok(spec_config(&rolled).unwrap_or_default())
}

fn condition<'a>(mcn: &'a MachineConfigNode, type_: &str) -> Option<&'a Condition> {
    mcn.condition(type_)
}

fn has(mcn: &MachineConfigNode, type_: &str, status: &str) -> bool {
    condition(mcn, type_).is_some_and(|c| c.status == status)
}

/// Every version of `NODE`'s MachineConfigNode a watch sees, from now on.
struct History(Arc<Mutex<Vec<MachineConfigNode>>>);

impl History {
    async fn watch(world: &mut World) -> anyhow::Result<Self> {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let config = watcher::Config::default().fields(&format!("metadata.name={NODE}"));
        let events = watcher::watcher(machine_config_nodes(world), config).default_backoff();
        let record = seen.clone();
        world.spawn(async move {
            let mut ready = Some(ready_tx);
            futures::pin_mut!(events);
            while let Some(event) = events.next().await {
                match event {
                    Ok(Event::Apply(mcn) | Event::InitApply(mcn)) => {
                        record.lock().unwrap_or_else(|e| e.into_inner()).push(mcn);
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
        Ok(Self(seen))
    }

    fn seen(&self) -> Vec<MachineConfigNode> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// When `type_` first turned True in an object about the update to `desired`.
    fn first_true(&self, type_: &str, desired: &str) -> Option<Time> {
        self.seen()
            .iter()
            .filter(|m| m.spec.config_version.desired == desired)
            .filter_map(|m| condition(m, type_).filter(|c| c.status == "True"))
            .map(|c| c.last_transition_time.clone())
            .next()
    }
}

fn between(earlier: &Time, later: &Time) -> Duration {
    Duration::try_from(later.0.duration_since(earlier.0)).unwrap_or_default()
}

#[tokio::test]
async fn on_4_21_the_machine_config_node_shows_the_drain_then_the_reboot() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-mcn-421").await?;
    world.openshift(shape(), on(21)).await?;
    let seeded = desired(&nodes(&world).get(NODE).await?);
    let created = numo_testkit::wait_until(&machine_config_nodes(&world), NODE, WAIT, "the operator's object", {
        let seeded = seeded.clone();
        move |m| m.spec.config_version.desired == seeded
    })
    .await?;
    assert_eq!((created.spec.node.name.as_str(), created.spec.pool.name.as_str()), (NODE, "worker"));
    let owners = created.owner_references();
    assert!(owners.iter().any(|o| o.kind == "Node" && o.name == NODE), "owned by its node: {owners:?}");
    slow_drain_and_reboot(&world).await?;
    let history = History::watch(&mut world).await?;

    let target = update_the_workers(&world).await?;
    let node = nodes(&world).get(NODE).await?;
    assert_eq!(desired(&node), target);
    let updated = numo_testkit::wait_until(&machine_config_nodes(&world), NODE, WAIT, "Updated for the new config", {
        let target = target.clone();
        move |m| m.spec.config_version.desired == target && has(m, UPDATED, "True")
    })
    .await?;
    assert_eq!(updated.spec.config_version.desired, desired(&node), "spec.configVersion.desired is the node's");
    let version = updated.status.as_ref().and_then(|s| s.config_version.clone()).unwrap_or_default();
    assert_eq!((version.desired.as_str(), version.current.as_deref()), (target.as_str(), Some(target.as_str())));
    assert_eq!(condition(&updated, UPDATED).map(|c| c.message.as_str()), Some("Node worker-0 Updated"));
    let drained = condition(&updated, DRAINED).map(|c| (c.status.as_str(), c.message.as_str()));
    let reset = format!("Action during update to {target}: Drained node.");
    assert!(
        drained.is_some_and(|(s, m)| s == "False" && m.starts_with(&reset)),
        "the end resets the phases: {drained:?}"
    );

    let seen = history.seen();
    let draining = seen.iter().find(|m| m.spec.config_version.desired == target && has(m, DRAINED, "Unknown"));
    let draining = draining.and_then(|m| condition(m, DRAINED)).map(|c| c.message.clone());
    assert!(draining.is_some_and(|m| m.starts_with("Draining node.")), "a watcher sees the node draining");
    let cordoned_at = history.first_true(CORDONED, &target);
    let drained_at = history.first_true(DRAINED, &target);
    let rebooted_at = history.first_true(REBOOTED_NODE, &target);
    let (Some(cordoned_at), Some(drained_at), Some(rebooted_at)) = (cordoned_at, drained_at, rebooted_at) else {
        anyhow::bail!("Cordoned, Drained and RebootedNode were not all seen True: {seen:#?}");
    };
    assert!(between(&cordoned_at, &drained_at) >= Duration::from_secs(1), "the drain lasts its second");
    assert!(between(&drained_at, &rebooted_at) >= Duration::from_secs(1), "the reboot lies between drained and back");
    Ok(())
}

#[tokio::test]
async fn on_4_19_no_machine_config_node_is_written() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-mcn-419").await?;
    world.openshift(shape(), on(19)).await?;
    slow_drain_and_reboot(&world).await?;
    update_the_workers(&world).await?;
    // The API is served (the list succeeds), and empty.
    let objects = machine_config_nodes(&world).list(&Default::default()).await?;
    let names: Vec<String> = objects.items.iter().map(|m| m.name_any()).collect();
    assert!(names.is_empty(), "4.19 writes no MachineConfigNode: {names:?}");
    Ok(())
}
