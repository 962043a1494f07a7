//! Unreconcilable storage changes against the real API server: a MachineConfig that adds a disk cannot be applied
//! in place, so the daemon applies nothing (no cordon, no reboot) and the node goes `Unreconcilable` with the MCO's
//! reason, its pool `NodeDegraded`, its MachineConfigNode `UpdatePrepared=Unknown`; removing the MachineConfig
//! brings the node back. A change of files stays reconcilable.

mod support;

use numo::openshift::MCD_REASON;
use numo_simulator::machine_config_nodes::{MachineConfigNode, UPDATE_PREPARED};
use numo_simulator::{ClusterShape, OpenShiftRelease, SimConfig};
use serde_json::json;
use support::*;

#[tokio::test]
async fn a_disk_change_leaves_nodes_unreconcilable_until_it_is_removed_and_a_file_change_applies() -> anyhow::Result<()>
{
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-unreconcilable").await?;
    let config = SimConfig { openshift: OpenShiftRelease { minor: 21 }, ..fast() };
    world.openshift(ClusterShape { version: OLD.into(), workers: 2, masters: 1 }, config).await?;
    let before = spec_config(&wait_rolled_out(&world, "worker", 2).await?).unwrap_or_default();
    let history = NodeHistory::watch(&mut world, &["worker-0", "worker-1"]).await?;

    let disk = json!({
        "ignition": {"version": "3.2.0"},
        "storage": {"disks": [{"device": "/dev/sdb", "partitions": [{"label": "data"}]}]},
    });
    machine_configs(&world).create(&Default::default(), &machine_config("99-worker-disk", "worker", disk)).await?;
    let node = numo_testkit::wait_until(&nodes(&world), "worker-0", WAIT, "worker-0 Unreconcilable", |n| {
        state(n) == "Unreconcilable"
    })
    .await?;
    let target = desired(&node);
    assert_ne!(target, before);
    assert_eq!(current(&node), before, "nothing applied");
    assert_eq!(
        annotation(&node, MCD_REASON),
        format!(
            "can't reconcile config {before} with {target}: configs {before}, {target} are not reconcilable: new \
             machineconfig \"{before}\" is not reconcilable against \"{target}\": ignition disks section contains \
             changes"
        )
    );
    let pool = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "NodeDegraded", |p| {
        condition_is(p, "NodeDegraded", "True")
    })
    .await?;
    assert!(condition_is(&pool, "Degraded", "True"));
    let mcn = kube::Api::<MachineConfigNode>::all(world.client.clone()).get("worker-0").await?;
    let prepared = mcn.condition(UPDATE_PREPARED).ok_or_else(|| anyhow::anyhow!("no UpdatePrepared: {mcn:?}"))?;
    assert_eq!(prepared.status, "Unknown");
    assert!(prepared.message.starts_with("Update Failed compatibility validation."), "{}", prepared.message);
    assert!(history.cordoned().is_empty(), "no node was cordoned: {:?}", history.cordoned());
    let simulator = world.simulator().ok_or_else(|| anyhow::anyhow!("no simulator"))?;
    assert!(simulator.reboots().is_empty(), "no node rebooted");

    machine_configs(&world).delete("99-worker-disk", &Default::default()).await?;
    let back = wait_rolled_out(&world, "worker", 2).await?;
    assert_eq!(spec_config(&back), Some(before.clone()), "the earlier rendered config again");
    assert!(condition_is(&back, "Degraded", "False"));

    let file = json!({
        "ignition": {"version": "3.2.0"},
        "storage": {"files": [{"path": "/etc/reconcilable", "mode": 420, "contents": {"source": "data:,x"}}]},
    });
    machine_configs(&world).create(&Default::default(), &machine_config("99-worker-file", "worker", file)).await?;
    let after = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "rolled out to the file", move |p| {
        rolled_out(p, 2) && spec_config(p) != Some(before.clone())
    })
    .await?;
    assert!(condition_is(&after, "Degraded", "False"));
    let simulator = world.simulator().ok_or_else(|| anyhow::anyhow!("no simulator"))?;
    assert_eq!(simulator.reboots().len(), 2, "each worker rebooted for the file");
    Ok(())
}
