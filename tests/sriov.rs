//! The SR-IOV network operator next to numo, against the real kube-apiserver with the simulated CVO, MCO and SR-IOV
//! (`numo_simulator::sriov`, acting as SR-IOV's own ServiceAccount), numo's admission policy in force: SR-IOV
//! pauses a node's pool around its drain of that node and unpauses it after. numo takes turns with it — it waits
//! while SR-IOV holds the canary, and pauses a held target pool again once SR-IOV ends its turn there — so SR-IOV's
//! drains complete, none of its writes is refused, every node upgrades in its gated turn, and the rollout completes.
//! Where SR-IOV's unpause would release held nodes into a pending release, numo's policy refuses it until numo
//! restores the pool, and numo says so (`OtherOperatorWaits`).

mod support;

use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams};
use kube::Api;
use numo::api::{MutexRunConfig, RunPhase};
use numo::openshift::MachineConfigPool;
use numo_simulator::faults::SRIOV_RECONFIGURE;
use numo_simulator::SimConfig;
use serde_json::json;
use support::*;

/// Asks SR-IOV to reconfigure `node`'s NICs (the config daemon's drain request).
async fn reconfigure(setup: &Setup, node: &str) -> anyhow::Result<()> {
    let patch = json!({"metadata": {"annotations": {SRIOV_RECONFIGURE: "true"}}});
    Api::<Node>::all(setup.client.clone()).patch(node, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn sriov_drains_a_held_node_and_a_canary_node_mid_rollout_and_numo_stays_gated() -> anyhow::Result<()> {
    let name = "with-sriov";
    let config = SimConfig {
        sriov: true,
        sriov_drain: Duration::from_secs(3),
        // The MCO renders the new release after the control plane: SR-IOV's turn on the held pool comes before.
        control_plane: Duration::from_secs(12),
        openshift: openshift_release(),
        ..Default::default()
    };
    let mut setup = Setup::with_config("sriov-turns", 4, config).await?;
    setup.check_workers(name, job_spec("4s", false), None, json!({})).await?;
    let desired = record_desired(&mut setup);
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    // A node of the target pool numo holds paused: SR-IOV pauses it too (no change), drains, and unpauses; numo
    // pauses it again.
    let pools = Api::<MachineConfigPool>::all(setup.client.clone());
    numo_testkit::wait_until(&pools, "worker", Duration::from_secs(60), "held paused", |p: &MachineConfigPool| {
        p.spec.paused
    })
    .await?;
    reconfigure(&setup, "worker-3").await?;

    // A node in the canary, done: SR-IOV pauses the canary; numo waits for it and goes on after.
    numo_testkit::wait_until(
        &setup.run_configs(),
        name,
        Duration::from_secs(120),
        "worker-0 done",
        |rc: &MutexRunConfig| rc.status.as_ref().is_some_and(|s| s.completed_nodes.iter().any(|n| n == "worker-0")),
    )
    .await?;
    reconfigure(&setup, "worker-0").await?;

    let rc = setup.wait_phase(name, RunPhase::Completed, Duration::from_secs(300)).await?;
    let ungated = honest(&setup, &rc, &desired).await?;
    assert!(ungated.is_empty(), "every node upgraded in its gated turn: {ungated:?}");

    let nodes = Api::<Node>::all(setup.client.clone());
    for node in ["worker-0", "worker-3"] {
        numo_testkit::wait_until(&nodes, node, Duration::from_secs(60), "SR-IOV done", |n: &Node| {
            !n.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(SRIOV_RECONFIGURE))
        })
        .await?;
    }
    let report = setup.world.simulator().map(|s| s.sriov()).unwrap_or_default();
    assert!(report.refused.is_empty(), "SR-IOV was refused nothing: {:?}", report.refused);
    let drained = |node: &str| report.drains.iter().find(|d| d.node == node).and_then(|d| d.pool.clone());
    assert_eq!(drained("worker-3").as_deref(), Some("worker"), "{report:?}");
    assert_eq!(drained("worker-0").as_deref(), Some("canary"), "SR-IOV paused the canary: {report:?}");
    for (pool, (paused, _)) in setup.pools().await? {
        assert!(!paused || pool == "master", "{pool} is left paused");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn sriov_waiting_for_a_held_pool_with_the_new_release_pending_is_said_and_goes_on_once_numo_restores_it(
) -> anyhow::Result<()> {
    let name = "sriov-waits";
    let config = SimConfig {
        sriov: true,
        // SR-IOV's drain spans the MCO's render of the new release, which comes after the control plane.
        sriov_drain: Duration::from_secs(12),
        control_plane: Duration::from_secs(6),
        openshift: openshift_release(),
        ..Default::default()
    };
    let mut setup = Setup::with_config("sriov-waits", 3, config).await?;
    setup.check_workers(name, job_spec("3s", false), None, json!({})).await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;
    // Right after numo paused `worker`, SR-IOV pauses it too and drains worker-2; meanwhile the MCO renders the
    // workers' new release, held by numo: SR-IOV's unpause would release it, and numo's policy refuses it.
    let pools = Api::<MachineConfigPool>::all(setup.client.clone());
    numo_testkit::wait_until(&pools, "worker", Duration::from_secs(60), "held paused", |p: &MachineConfigPool| {
        p.spec.paused
    })
    .await?;
    reconfigure(&setup, "worker-2").await?;
    let waits = |rc: &MutexRunConfig| {
        let status = rc.status.as_ref();
        let condition = status.and_then(|s| s.conditions.iter().find(|c| c.type_ == "OtherOperatorWaits"));
        condition.is_some_and(|c| c.status == "True" && c.message.contains("MachineConfigPool worker"))
    };
    numo_testkit::wait_until(&setup.run_configs(), name, Duration::from_secs(120), "SR-IOV's wait said", waits).await?;
    let told = |notes: &[(String, String, String)]| {
        notes
            .iter()
            .any(|(kind, reason, note)| kind == "Warning" && reason == "OtherOperatorWaits" && note.contains("SR-IOV"))
    };
    assert!(told(&setup.events_when(name, told).await?), "an Event says SR-IOV waits");

    // numo restores the pool at the end: SR-IOV's unpause goes through, and nobody waits any more.
    setup.wait_phase(name, RunPhase::Completed, Duration::from_secs(300)).await?;
    let nodes = Api::<Node>::all(setup.client.clone());
    numo_testkit::wait_until(&nodes, "worker-2", Duration::from_secs(120), "SR-IOV done", |n: &Node| {
        !n.metadata.annotations.as_ref().is_some_and(|a| a.contains_key(SRIOV_RECONFIGURE))
    })
    .await?;
    numo_testkit::wait_until(&setup.run_configs(), name, Duration::from_secs(60), "nobody waits", move |rc| !waits(rc))
        .await?;
    let report = setup.world.simulator().map(|s| s.sriov()).unwrap_or_default();
    assert!(!report.refused.is_empty(), "SR-IOV's unpause was refused while numo held the pool: {report:?}");
    Ok(())
}
