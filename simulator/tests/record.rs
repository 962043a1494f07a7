//! The simulator's record of what the platform did (`SimulatorHandle::reboots`, `SimulatorHandle::multi_pool_nodes`),
//! against the real API server: an upgrade reboots every node once, from its old rendered config into the new one,
//! in its pool; a move to another pool's config of equal content is no reboot; a node matching two custom pools is
//! listed with both.

mod support;

use std::collections::BTreeSet;
use std::time::SystemTime;

use numo_simulator::ClusterShape;
use serde_json::json;
use support::*;

#[tokio::test]
async fn an_upgrade_reboots_every_node_once_and_a_move_of_pool_with_equal_content_does_not() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-record-reboots").await?;
    world.openshift(ClusterShape { version: OLD.into(), workers: 3, masters: 1 }, fast()).await?;
    let old_worker = spec_config(&wait_rolled_out(&world, "worker", 3).await?).unwrap_or_default();
    let old_master = spec_config(&wait_rolled_out(&world, "master", 1).await?).unwrap_or_default();
    let simulator = world.simulator().ok_or_else(|| anyhow::anyhow!("no simulator"))?;
    assert!(simulator.reboots().is_empty(), "seeded nodes are Done: nothing rebooted yet");

    let started = SystemTime::now();
    upgrade(&world, NEW).await?;
    let new_master = numo_testkit::wait_until(&pools(&world), "master", WAIT, "master on a new config", {
        let old_master = old_master.clone();
        move |p| rolled_out(p, 1) && spec_config(p) != Some(old_master.clone())
    })
    .await?;
    let new_master = spec_config(&new_master).unwrap_or_default();
    let new_worker = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "workers on a new config", {
        let old_worker = old_worker.clone();
        move |p| rolled_out(p, 3) && spec_config(p) != Some(old_worker.clone())
    })
    .await?;
    let new_worker = spec_config(&new_worker).unwrap_or_default();
    let finished = SystemTime::now();

    let simulator = world.simulator().ok_or_else(|| anyhow::anyhow!("no simulator"))?;
    let reboots = simulator.reboots();
    let names: BTreeSet<&str> = reboots.keys().map(String::as_str).collect();
    assert_eq!(names, BTreeSet::from(["master-0", "worker-0", "worker-1", "worker-2"]), "{reboots:#?}");
    for (node, list) in &reboots {
        assert_eq!(list.len(), 1, "{node} rebooted exactly once: {list:#?}");
        let reboot = &list[0];
        let (pool, from, to) = if node.starts_with("master") {
            ("master", &old_master, &new_master)
        } else {
            ("worker", &old_worker, &new_worker)
        };
        assert_eq!((reboot.pool.as_deref(), &reboot.from, &reboot.to), (Some(pool), from, to), "{node}");
        assert!(started <= reboot.at && reboot.at <= finished, "{node} rebooted during the upgrade");
    }

    // A custom pool without configs of its own renders the worker pool's content: moving a node there is rebootless.
    pools(&world).create(&Default::default(), &custom_pool("canary")?).await?;
    wait_rolled_out(&world, "canary", 0).await?;
    patch(&nodes(&world), "worker-1", json!({"metadata": {"labels": {"node-role.kubernetes.io/canary": ""}}})).await?;
    let canary = wait_rolled_out(&world, "canary", 1).await?;
    assert_eq!(hash_of(&spec_config(&canary).unwrap_or_default()), hash_of(&new_worker));
    let simulator = world.simulator().ok_or_else(|| anyhow::anyhow!("no simulator"))?;
    assert_eq!(simulator.reboots(), reboots, "a rename is no reboot");
    assert!(simulator.multi_pool_nodes().is_empty(), "no node matched two custom pools");
    Ok(())
}

#[tokio::test]
async fn a_node_matching_two_custom_pools_is_recorded_when_the_controller_sees_it() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-record-multi-pool").await?;
    world.openshift(ClusterShape { version: OLD.into(), workers: 2, masters: 1 }, fast()).await?;
    wait_rolled_out(&world, "worker", 2).await?;
    for name in ["infra", "gpu"] {
        pools(&world).create(&Default::default(), &custom_pool(name)?).await?;
    }
    let before = SystemTime::now();
    let labels =
        json!({"metadata": {"labels": {"node-role.kubernetes.io/infra": "", "node-role.kubernetes.io/gpu": ""}}});
    patch(&nodes(&world), "worker-0", labels).await?;
    numo_testkit::wait_until(&pools(&world), "gpu", WAIT, "the pool Degraded", |p| condition_is(p, "Degraded", "True"))
        .await?;
    // Taken out of one pool again before anyone looks: the record still has it.
    patch(&nodes(&world), "worker-0", json!({"metadata": {"labels": {"node-role.kubernetes.io/gpu": null}}})).await?;
    wait_rolled_out(&world, "infra", 1).await?;

    let simulator = world.simulator().ok_or_else(|| anyhow::anyhow!("no simulator"))?;
    let seen = simulator.multi_pool_nodes();
    assert_eq!(seen.len(), 1, "{seen:#?}");
    assert_eq!((seen[0].node.as_str(), seen[0].pools.clone()), ("worker-0", vec!["gpu".into(), "infra".into()]));
    assert!(before <= seen[0].first_seen && seen[0].first_seen <= seen[0].last_seen);
    Ok(())
}
