//! The machine-config operator's reactions, against the real API server: its MachineConfigNode sync stops at a node
//! in two custom pools on 4.20 and later (`Degraded=True`, `MachineConfigNodeFailed`, and its pool sync does not
//! run); a degraded pool makes it `Upgradeable=False` (`DegradedPool`) and, once its wait for the required pools
//! times out, `Degraded=True` (`RequiredPoolsFailed`); both clear when a later sync passes.

mod support;

use std::time::Duration;

use numo_simulator::cluster_operators::{
    ClusterOperator, ClusterOperatorCondition, DEGRADED, MACHINE_CONFIG, UPGRADEABLE,
};
use numo_simulator::faults::FAIL_UPDATE;
use numo_simulator::required_pools::{DEGRADED_POOL, DEGRADED_POOL_MESSAGE};
use numo_simulator::{ClusterShape, OpenShiftRelease, SimConfig};
use serde_json::json;
use support::*;

fn on(minor: u32) -> SimConfig {
    SimConfig {
        openshift: OpenShiftRelease { minor },
        required_pool_wait_per_machine: Duration::from_secs(6),
        ..fast()
    }
}

fn shape(workers: usize) -> ClusterShape {
    ClusterShape { version: OLD.into(), workers, masters: 1 }
}

fn condition(operator: &ClusterOperator, type_: &str) -> ClusterOperatorCondition {
    operator.status.as_ref().and_then(|s| s.condition(type_)).cloned().unwrap_or_default()
}

async fn wait_condition(
    world: &numo_testkit::World,
    what: &str,
    check: impl Fn(&ClusterOperatorCondition, &ClusterOperatorCondition) -> bool + Send + 'static,
) -> anyhow::Result<ClusterOperator> {
    numo_testkit::wait_until(&operators(world), MACHINE_CONFIG, WAIT, what, move |o| {
        check(&condition(o, DEGRADED), &condition(o, UPGRADEABLE))
    })
    .await
}

const EDITED: &str = r#"{"matchLabels":{"node-role.kubernetes.io/worker":"","team":"a"}}"#;
const MANIFEST: &str = r#"{"matchLabels":{"node-role.kubernetes.io/worker":""}}"#;

fn selector(pool: &numo::openshift::MachineConfigPool) -> String {
    serde_json::to_string(&pool.spec.node_selector).unwrap_or_default()
}

#[tokio::test]
async fn on_4_20_a_node_in_two_custom_pools_stops_the_operators_sync_until_it_is_in_one() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-mcn-two-pools").await?;
    world.openshift(shape(2), on(20)).await?;
    wait_rolled_out(&world, "worker", 2).await?;
    for name in ["infra", "gpu"] {
        pools(&world).create(&Default::default(), &custom_pool(name)?).await?;
    }
    let labels =
        json!({"metadata": {"labels": {"node-role.kubernetes.io/infra": "", "node-role.kubernetes.io/gpu": ""}}});
    patch(&nodes(&world), "worker-0", labels).await?;

    // The operator's informers are independent: a sync may see the gpu pool degraded (its controller saw the node
    // in two pools) before it sees the node's new labels, pass its MachineConfigNode step and wait on the pool. That
    // wait ends in RequiredPoolsFailed; the sync after it stops at the node.
    let degraded = wait_condition(&world, "Degraded by the node in two pools", |d, _| {
        d.status == "True" && d.reason.as_deref() == Some("MachineConfigNodeFailed")
    })
    .await?;
    let degraded = condition(&degraded, DEGRADED);
    assert_eq!(
        degraded.message.as_deref(),
        Some(
            format!("Failed to resync {OLD} because: node worker-0 belongs to 2 custom roles, cannot proceed with this Node")
                .as_str()
        )
    );
    // The rest of the sync stops: the operator does not put the worker pool's selector back (4.20 would).
    let edit: serde_json::Value = serde_json::from_str(EDITED)?;
    patch(&pools(&world), "worker", json!({"spec": {"nodeSelector": edit}})).await?;
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(selector(&pools(&world).get("worker").await?), EDITED, "the pool step did not run");

    patch(&nodes(&world), "worker-0", json!({"metadata": {"labels": {"node-role.kubernetes.io/gpu": null}}})).await?;
    wait_condition(&world, "not Degraded", |d, _| d.status == "False").await?;
    numo_testkit::wait_until(&pools(&world), "worker", WAIT, "the manifest's selector", |p| selector(p) == MANIFEST)
        .await?;
    Ok(())
}

#[tokio::test]
async fn a_degraded_pool_makes_machine_config_not_upgradeable_then_degraded_when_the_wait_times_out(
) -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-degraded-pool").await?;
    world.openshift(shape(2), on(21)).await?;
    wait_rolled_out(&world, "worker", 2).await?;
    let healthy = wait_condition(&world, "Upgradeable", |_, u| u.status == "True").await?;
    assert_eq!(condition(&healthy, DEGRADED).status, "False");

    patch(&nodes(&world), "worker-0", json!({"metadata": {"annotations": {FAIL_UPDATE: "true"}}})).await?;
    let config = json!({
        "ignition": {"version": "3.2.0"},
        "storage": {"files": [{"path": "/etc/degraded-test", "mode": 420, "contents": {"source": "data:,x"}}]},
    });
    machine_configs(&world)
        .create(&Default::default(), &machine_config("99-worker-degraded", "worker", config))
        .await?;
    numo_testkit::wait_until(&pools(&world), "worker", WAIT, "Degraded", |p| condition_is(p, "Degraded", "True"))
        .await?;
    let not_upgradeable = wait_condition(&world, "Upgradeable=False", |_, u| u.status == "False").await?;
    let upgradeable = condition(&not_upgradeable, UPGRADEABLE);
    assert_eq!(
        (upgradeable.reason.as_deref(), upgradeable.message.as_deref()),
        (Some(DEGRADED_POOL), Some(DEGRADED_POOL_MESSAGE))
    );
    assert_eq!(condition(&not_upgradeable, DEGRADED).status, "False", "not before the wait times out");

    // One master: the operator waits 6 s (the test's 10 minutes) for the pools, then fails its sync.
    let degraded = wait_condition(&world, "Degraded", |d, _| d.status == "True").await?;
    let degraded = condition(&degraded, DEGRADED);
    assert_eq!(degraded.reason.as_deref(), Some("RequiredPoolsFailed"));
    let message = degraded.message.unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "Failed to resync {OLD} because: error during syncRequiredMachineConfigPools: [context deadline exceeded, \
             error MachineConfigPool worker is not ready, retrying."
        )),
        "{message}"
    );

    patch(&nodes(&world), "worker-0", json!({"metadata": {"annotations": {FAIL_UPDATE: null}}})).await?;
    wait_rolled_out(&world, "worker", 2).await?;
    let recovered = wait_condition(&world, "healthy again", |d, u| d.status == "False" && u.status == "True").await?;
    assert_eq!(condition(&recovered, UPGRADEABLE).reason.as_deref(), Some("AsExpected"));
    Ok(())
}
