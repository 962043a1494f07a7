//! The simulated CVO against the real API server: the history of an upgrade, and seeding that leaves a running
//! cluster alone.

mod support;

use numo::openshift::ClusterVersion;
use numo_simulator::faults::REBOOT_SECONDS;
use numo_simulator::ClusterShape;
use serde_json::json;
use support::*;

fn newest(cv: &ClusterVersion) -> Option<&numo::openshift::UpdateHistory> {
    cv.status.as_ref()?.history.first()
}

#[tokio::test]
async fn history_goes_partial_then_completed_while_workers_are_still_behind() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-cvo-history").await?;
    world.openshift(ClusterShape { version: OLD.into(), workers: 2, masters: 1 }, fast()).await?;
    wait_rolled_out(&world, "worker", 2).await?;
    for name in ["worker-0", "worker-1"] {
        patch(&nodes(&world), name, json!({"metadata": {"annotations": {REBOOT_SECONDS: "600"}}})).await?;
    }
    upgrade(&world, NEW).await?;

    let partial = numo_testkit::wait_until(&versions(&world), "version", WAIT, "a Partial entry for 4.16.5", |cv| {
        newest(cv).is_some_and(|h| h.version == NEW && h.state == "Partial")
    })
    .await?;
    let status = partial.status.clone().unwrap_or_default();
    assert_eq!(status.desired.version, NEW, "status.desired moves when the update is accepted");
    assert_eq!(status.history.len(), 2);
    assert_eq!(status.history[0].completion_time, None);
    assert_eq!((status.history[1].version.as_str(), status.history[1].state.as_str()), (OLD, "Completed"));
    assert!(status.history[1].completion_time.is_some());

    let completed = numo_testkit::wait_until(&versions(&world), "version", WAIT, "4.16.5 Completed", |cv| {
        newest(cv).is_some_and(|h| h.version == NEW && h.state == "Completed")
    })
    .await?;
    let entry = newest(&completed).cloned().expect("a history entry");
    assert!(entry.completion_time.is_some_and(|done| done.0 >= entry.started_time.0));
    assert_eq!(completed.status.as_ref().map(|s| s.history.len()), Some(2), "one entry per update");

    let master = pools(&world).get("master").await?;
    assert!(rolled_out(&master, 1), "the control plane is done");
    let workers = all_nodes(&world).await?;
    for name in ["worker-0", "worker-1"] {
        assert_eq!(release(&world, &workers[name]).await?, OLD, "the CVO did not wait for the (slow) worker {name}");
    }
    let worker = pools(&world).get("worker").await?;
    assert!(condition_is(&worker, "Updated", "False"));
    Ok(())
}

#[tokio::test]
async fn seeding_again_leaves_an_upgraded_cluster_as_it_is() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-reseed").await?;
    let shape = ClusterShape { version: OLD.into(), workers: 2, masters: 1 };
    world.openshift(shape.clone(), fast()).await?;
    let old_config = spec_config(&wait_rolled_out(&world, "worker", 2).await?);
    upgrade(&world, NEW).await?;
    let upgraded = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "workers on 4.16.5", move |p| {
        rolled_out(p, 2) && spec_config(p) != old_config
    })
    .await?;
    numo_testkit::wait_until(&versions(&world), "version", WAIT, "4.16.5 Completed", |cv| {
        cv.control_plane_completed(NEW)
    })
    .await?;
    let cv_before = versions(&world).get("version").await?;
    let nodes_before = all_nodes(&world).await?;

    numo_simulator::seed(&world.client, &shape).await?;

    let cv_after = versions(&world).get("version").await?;
    assert_eq!(cv_after.metadata.resource_version, cv_before.metadata.resource_version, "ClusterVersion untouched");
    let worker = pools(&world).get("worker").await?;
    assert_eq!(spec_config(&worker), spec_config(&upgraded), "the pool keeps its new config");
    let nodes_after = all_nodes(&world).await?;
    assert_eq!(nodes_after.keys().collect::<Vec<_>>(), nodes_before.keys().collect::<Vec<_>>(), "no node added");
    for (name, node) in &nodes_after {
        assert_eq!(release(&world, node).await?, NEW, "{name} keeps its release");
        assert_eq!(current(node), current(&nodes_before[name]), "{name} keeps its config");
    }
    Ok(())
}

#[tokio::test]
async fn a_restarted_cvo_continues_the_update_it_started() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-restart-cvo").await?;
    let shape = ClusterShape { version: OLD.into(), workers: 1, masters: 1 };
    let slow_control_plane = numo_simulator::SimConfig { control_plane: std::time::Duration::from_secs(600), ..fast() };
    world.openshift(shape.clone(), slow_control_plane).await?;
    upgrade(&world, NEW).await?;
    let partial = numo_testkit::wait_until(&versions(&world), "version", WAIT, "a Partial entry for 4.16.5", |cv| {
        newest(cv).is_some_and(|h| h.version == NEW && h.state == "Partial")
    })
    .await?;
    let started = newest(&partial).map(|h| h.started_time.clone());

    world.openshift(shape, fast()).await?;

    let completed = numo_testkit::wait_until(&versions(&world), "version", WAIT, "4.16.5 Completed", |cv| {
        cv.control_plane_completed(NEW)
    })
    .await?;
    let history = completed.status.map(|s| s.history).unwrap_or_default();
    assert_eq!(history.len(), 2, "the same update, not a second one: {history:?}");
    assert_eq!(Some(history[0].started_time.clone()), started);
    Ok(())
}
