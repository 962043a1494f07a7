//! The SR-IOV network operator next to numo, against the real kube-apiserver with the simulated CVO, MCO and SR-IOV
//! (`numo_simulator::sriov`, acting as SR-IOV's own ServiceAccount), numo's admission policy in force: SR-IOV
//! pauses a node's pool around its drain of that node and unpauses it after. numo takes turns with it — it waits
//! while SR-IOV holds the canary, and pauses a held target pool again once SR-IOV ends its turn there — so SR-IOV's
//! drains complete, none of its writes is refused, every node upgrades in its gated turn, and the rollout completes.

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
