//! The simulated MCO against the real API server: paused and unpaused pools, maxUnavailable, custom pools, and the
//! fault annotations. Each test gets the shared test cluster to itself (numo_testkit) and seeds its own world.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use numo::openshift::MCD_REASON;
use numo_simulator::faults::{FAIL_UPDATE, REBOOT_SECONDS};
use numo_simulator::ClusterShape;
use serde_json::json;
use support::*;

fn shape(workers: usize) -> ClusterShape {
    ClusterShape { version: OLD.into(), workers, masters: 1 }
}

#[tokio::test]
async fn unpausing_a_paused_pool_rolls_it_within_max_unavailable() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-unpause").await?;
    world.openshift(shape(5), fast()).await?;
    let before = wait_rolled_out(&world, "worker", 5).await?;
    let old_config = spec_config(&before).unwrap_or_default();
    patch(&pools(&world), "worker", json!({"spec": {"paused": true, "maxUnavailable": 2}})).await?;
    let invariants = PoolInvariants::watch(&mut world, BTreeMap::from([("worker".to_string(), 2)])).await?;

    upgrade(&world, NEW).await?;
    numo_testkit::wait_until(&versions(&world), "version", WAIT, "the control plane at 4.16.5", |cv| {
        cv.control_plane_completed(NEW)
    })
    .await?;
    wait_rolled_out(&world, "master", 1).await?;
    let master = nodes(&world).get("master-0").await?;
    let taints = master.spec.as_ref().and_then(|s| s.taints.clone()).unwrap_or_default();
    assert!(
        taints.iter().any(|t| t.key == "node-role.kubernetes.io/master" && t.effect == "NoSchedule"),
        "the control-plane taint survives the update taint's coming and going: {taints:?}"
    );
    assert!(!update_tainted(&master));

    // The control plane rolled (a node rebooted), so an unpaused worker pool would have started by now.
    let paused = pools(&world).get("worker").await?;
    assert_ne!(spec_config(&paused), Some(old_config.clone()), "the paused pool gets the new rendered config");
    assert_eq!(status_config(&paused), Some(old_config.clone()), "but its machines stay on the old one");
    assert_eq!(counts(&paused), (5, 0, 0, 0, 0));
    assert!(condition_is(&paused, "Updated", "False") && condition_is(&paused, "Updating", "False"));
    assert!(condition_message(&paused, "Updating").is_some_and(|m| m.starts_with("Pool is paused; will not update")));
    for (name, node) in all_nodes(&world).await?.iter().filter(|(n, _)| n.starts_with("worker-")) {
        assert_eq!(
            (current(node), desired(node), state(node)),
            (old_config.clone(), old_config.clone(), "Done".into())
        );
        assert_eq!(release(&world, node).await?, OLD, "{name} keeps its release");
        assert!(!cordoned(node), "{name} is schedulable");
        assert!(!update_tainted(node), "the MCO taints no node of a paused pool");
    }

    let workers = ["worker-0", "worker-1", "worker-2", "worker-3", "worker-4"];
    let concurrency = Concurrency::watch(&mut world, &workers).await?;
    let unpaused = std::time::Instant::now();
    patch(&pools(&world), "worker", json!({"spec": {"paused": false}})).await?;
    // The MCO acts on an unpaused pool as soon as it sees it, as the real one does within a second: numo's tests of
    // other hands rely on it to catch a node upgraded ungated.
    let targeted = loop {
        let moved = all_nodes(&world).await?.values().any(|n| desired(n) != old_config);
        if moved || unpaused.elapsed() > std::time::Duration::from_secs(5) {
            break unpaused.elapsed();
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    assert!(targeted < std::time::Duration::from_secs(1), "the first node was targeted {targeted:?} after the unpause");
    let done = wait_rolled_out(&world, "worker", 5).await?;

    let new_config = spec_config(&done).unwrap_or_default();
    assert_ne!(new_config, old_config);
    assert_eq!(counts(&done), (5, 5, 5, 0, 0));
    for name in workers {
        let node = nodes(&world).get(name).await?;
        assert_eq!((current(&node), state(&node)), (new_config.clone(), "Done".into()));
        assert_eq!(release(&world, &node).await?, NEW);
        assert_eq!(release_label(&node), None, "without the NFD stand-in no node carries a release label");
        assert!(!cordoned(&node), "{name} is uncordoned after its update");
        assert!(!update_tainted(&node), "{name} lost the UpdateInProgress taint");
    }
    assert_eq!(concurrency.max(), 2, "nodes update two at a time, never more");
    assert!(invariants.seen() > 0);
    assert_eq!(invariants.violations(), Vec::<String>::new());
    Ok(())
}

#[tokio::test]
async fn a_node_labelled_into_an_unpaused_custom_pool_is_upgraded() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-custom-pool").await?;
    world.openshift(shape(3), fast()).await?;
    let worker = wait_rolled_out(&world, "worker", 3).await?;
    let old_config = spec_config(&worker).unwrap_or_default();
    patch(&pools(&world), "worker", json!({"spec": {"paused": true}})).await?;
    upgrade(&world, NEW).await?;
    numo_testkit::wait_until(&versions(&world), "version", WAIT, "the control plane at 4.16.5", |cv| {
        cv.control_plane_completed(NEW)
    })
    .await?;

    pools(&world).create(&Default::default(), &custom_pool("canary")?).await?;
    let canary = wait_rolled_out(&world, "canary", 0).await?;
    let canary_config = spec_config(&canary).unwrap_or_default();
    assert!(canary_config.starts_with("rendered-canary-"), "{canary_config}");

    patch(&nodes(&world), "worker-1", json!({"metadata": {"labels": {"node-role.kubernetes.io/canary": ""}}})).await?;
    let moved = numo_testkit::wait_until(&nodes(&world), "worker-1", WAIT, "worker-1 on the canary config", {
        let canary_config = canary_config.clone();
        move |n| current(n) == canary_config && state(n) == "Done" && !cordoned(n)
    })
    .await?;
    assert_eq!(release(&world, &moved).await?, NEW);
    wait_rolled_out(&world, "canary", 1).await?;

    let worker =
        numo_testkit::wait_until(&pools(&world), "worker", WAIT, "worker pool without worker-1", |p| counts(p).0 == 2)
            .await?;
    assert_eq!(counts(&worker), (2, 0, 0, 0, 0), "the paused pool's own nodes are untouched");
    for name in ["worker-0", "worker-2"] {
        let node = nodes(&world).get(name).await?;
        assert_eq!(current(&node), old_config, "{name} stays behind");
        assert_eq!(release(&world, &node).await?, OLD);
    }
    Ok(())
}

#[tokio::test]
async fn a_node_matching_two_custom_pools_degrades_both_until_it_matches_one() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-two-custom-pools").await?;
    world.openshift(shape(2), fast()).await?;
    wait_rolled_out(&world, "worker", 2).await?;
    for name in ["infra", "gpu"] {
        pools(&world).create(&Default::default(), &custom_pool(name)?).await?;
    }
    let labels =
        json!({"metadata": {"labels": {"node-role.kubernetes.io/infra": "", "node-role.kubernetes.io/gpu": ""}}});
    patch(&nodes(&world), "worker-0", labels).await?;

    let message = "node worker-0 belongs to 2 custom roles, cannot proceed with this Node";
    for name in ["infra", "gpu"] {
        let pool = numo_testkit::wait_until(&pools(&world), name, WAIT, "the pool Degraded", move |p| {
            condition_is(p, "Degraded", "True")
        })
        .await?;
        assert_eq!(condition_message(&pool, "Degraded").as_deref(), Some(message));
        assert_eq!(counts(&pool).0, 0, "the node is in neither pool");
    }
    let worker = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "worker-0 out of the worker pool", |p| {
        counts(p).0 == 1
    })
    .await?;
    assert!(condition_is(&worker, "Degraded", "False"), "the worker pool is not affected");

    patch(&nodes(&world), "worker-0", json!({"metadata": {"labels": {"node-role.kubernetes.io/gpu": null}}})).await?;
    let infra = wait_rolled_out(&world, "infra", 1).await?;
    assert!(condition_is(&infra, "Degraded", "False"));
    let gpu = numo_testkit::wait_until(&pools(&world), "gpu", WAIT, "gpu no longer Degraded", |p| {
        condition_is(p, "Degraded", "False")
    })
    .await?;
    assert_eq!(counts(&gpu).0, 0);
    let node = nodes(&world).get("worker-0").await?;
    assert_eq!(current(&node), spec_config(&infra).unwrap_or_default(), "worker-0 runs the infra pool's config");
    assert_eq!(release(&world, &node).await?, OLD, "same release: only the pool changed");
    Ok(())
}

#[tokio::test]
async fn a_node_that_fails_its_update_degrades_the_pool_until_the_fault_is_removed() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-fail-update").await?;
    world.openshift(shape(3), fast()).await?;
    let worker = wait_rolled_out(&world, "worker", 3).await?;
    let old_config = spec_config(&worker).unwrap_or_default();
    patch(&nodes(&world), "worker-1", json!({"metadata": {"annotations": {FAIL_UPDATE: "true"}}})).await?;
    upgrade(&world, NEW).await?;

    let degraded = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "the worker pool Degraded", |p| {
        condition_is(p, "Degraded", "True") && condition_is(p, "NodeDegraded", "True")
    })
    .await?;
    let failed = nodes(&world).get("worker-1").await?;
    assert_eq!(state(&failed), "Degraded");
    assert!(annotation(&failed, MCD_REASON).contains(FAIL_UPDATE), "{}", annotation(&failed, MCD_REASON));
    assert!(cordoned(&failed), "a failed node stays cordoned");
    assert_eq!(current(&failed), old_config, "on its old config");
    assert_eq!(release(&world, &failed).await?, OLD);
    assert_eq!(desired(&failed), spec_config(&degraded).unwrap_or_default());
    assert_eq!(counts(&degraded).4, 1, "one degraded machine");
    assert!(condition_message(&degraded, "NodeDegraded").is_some_and(|m| m.starts_with("Node worker-1 is reporting:")));
    let others = all_nodes(&world).await?;
    for name in ["worker-0", "worker-2"] {
        let node = &others[name];
        assert!(!updating(node), "maxUnavailable 1 and a failed node: {name} must not be mid-update");
        let targeted = desired(node) == desired(&failed);
        assert!(targeted || update_tainted(node), "{name} waits for its update with the UpdateInProgress taint");
    }

    patch(&nodes(&world), "worker-1", json!({"metadata": {"annotations": {FAIL_UPDATE: null}}})).await?;
    let done = wait_rolled_out(&world, "worker", 3).await?;
    assert!(condition_is(&done, "Degraded", "False") && condition_is(&done, "NodeDegraded", "False"));
    let recovered = nodes(&world).get("worker-1").await?;
    assert_eq!(state(&recovered), "Done");
    assert_eq!(release(&world, &recovered).await?, NEW);
    assert!(!cordoned(&recovered));
    Ok(())
}

#[tokio::test]
async fn a_slow_node_lets_the_faster_ones_finish_first() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-slow-node").await?;
    world.openshift(shape(3), fast()).await?;
    let old_config = spec_config(&wait_rolled_out(&world, "worker", 3).await?);
    patch(&pools(&world), "worker", json!({"spec": {"maxUnavailable": "100%"}})).await?;
    patch(&nodes(&world), "worker-0", json!({"metadata": {"annotations": {REBOOT_SECONDS: "600"}}})).await?;
    upgrade(&world, NEW).await?;

    let retargeted = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "the worker pool retargeted", move |p| {
        spec_config(p) != old_config
    })
    .await?;
    let new_config = spec_config(&retargeted).unwrap_or_default();
    for name in ["worker-1", "worker-2"] {
        let updated = numo_testkit::wait_until(&nodes(&world), name, WAIT, "the node on the new config", {
            let new_config = new_config.clone();
            move |n| current(n) == new_config && state(n) == "Done"
        })
        .await?;
        assert_eq!(release(&world, &updated).await?, NEW);
    }
    let slow = nodes(&world).get("worker-0").await?;
    assert_eq!(state(&slow), "Working", "worker-0 is still rebooting");
    assert_eq!(release(&world, &slow).await?, OLD);
    assert!(cordoned(&slow));
    let pool = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "two of three updated", |p| {
        counts(p) == (3, 2, 2, 1, 0)
    })
    .await?;
    assert!(condition_is(&pool, "Updating", "True") && condition_is(&pool, "Updated", "False"));
    Ok(())
}

#[tokio::test]
async fn a_restarted_simulator_finishes_an_interrupted_update() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-restart-mco").await?;
    world.openshift(shape(2), fast()).await?;
    let old_config = spec_config(&wait_rolled_out(&world, "worker", 2).await?);
    patch(&nodes(&world), "worker-0", json!({"metadata": {"annotations": {REBOOT_SECONDS: "600"}}})).await?;
    upgrade(&world, NEW).await?;
    numo_testkit::wait_until(&nodes(&world), "worker-0", WAIT, "worker-0 rebooting", |n| {
        state(n) == "Working" && cordoned(n)
    })
    .await?;

    patch(&nodes(&world), "worker-0", json!({"metadata": {"annotations": {REBOOT_SECONDS: null}}})).await?;
    // Replaces the running simulator (stopped mid-reboot) with a new one; seeding again changes nothing.
    world.openshift(shape(2), fast()).await?;

    numo_testkit::wait_until(&pools(&world), "worker", WAIT, "workers on the new config", move |p| {
        rolled_out(p, 2) && spec_config(p) != old_config
    })
    .await?;
    let node = nodes(&world).get("worker-0").await?;
    assert_eq!(state(&node), "Done");
    assert_eq!(release(&world, &node).await?, NEW);
    assert!(!cordoned(&node));
    Ok(())
}

#[tokio::test]
async fn a_windows_worker_is_in_no_pool_and_never_updated() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-windows-node").await?;
    world.openshift(shape(2), fast()).await?;
    // A Windows node as the Windows Machine Config Operator adds one: a worker, with no MCO annotations.
    let mut windows = numo_testkit::kwok::fake_node("windows-0");
    let labels = windows.metadata.labels.get_or_insert_with(Default::default);
    labels.insert("kubernetes.io/os".into(), "windows".into());
    labels.insert("node-role.kubernetes.io/worker".into(), String::new());
    nodes(&world).create(&Default::default(), &windows).await?;
    let old_config = spec_config(&wait_rolled_out(&world, "worker", 2).await?);

    upgrade(&world, NEW).await?;
    let done = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "workers on the new config", move |p| {
        rolled_out(p, 2) && spec_config(p) != old_config
    })
    .await?;
    assert_eq!(counts(&done), (2, 2, 2, 0, 0), "the Windows worker is not counted");
    let windows = nodes(&world).get("windows-0").await?;
    assert_eq!((current(&windows), desired(&windows), state(&windows)), (String::new(), String::new(), String::new()));
    assert!(!cordoned(&windows) && !update_tainted(&windows), "the MCO never touched the Windows node");
    Ok(())
}

/// The Ignition config of an admin's MachineConfig writing one file.
fn ignition_file(version: Option<&str>, path: &str) -> serde_json::Value {
    let ignition = version.map(|v| json!({"version": v})).unwrap_or_else(|| json!({}));
    json!({"ignition": ignition, "storage": {"files": [{"path": path, "mode": 420, "contents": {"source": "data:,x"}}]}})
}

/// The paths of the files a rendered MachineConfig writes.
async fn rendered_files(world: &numo_testkit::World, rendered: &str) -> anyhow::Result<Vec<String>> {
    let config = machine_configs(world).get(rendered).await?;
    let files = config.spec.config.as_ref().and_then(|c| c.pointer("/storage/files")).cloned().unwrap_or_default();
    let files = files.as_array().cloned().unwrap_or_default();
    Ok(files.iter().filter_map(|f| f.get("path")?.as_str().map(String::from)).collect())
}

#[tokio::test]
async fn a_machine_config_for_the_worker_role_rerenders_every_pool_selecting_it_paused_or_not() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-mc-rerender").await?;
    world.openshift(shape(3), fast()).await?;
    wait_rolled_out(&world, "worker", 3).await?;
    let history = NodeHistory::watch(&mut world, &["worker-0", "worker-1", "worker-2"]).await?;
    pools(&world).create(&Default::default(), &custom_pool("canary")?).await?;
    patch(&nodes(&world), "worker-2", json!({"metadata": {"labels": {"node-role.kubernetes.io/canary": ""}}})).await?;
    let canary = wait_rolled_out(&world, "canary", 1).await?;
    let worker = wait_rolled_out(&world, "worker", 2).await?;
    let (old_worker, old_canary) = (spec_config(&worker).unwrap_or_default(), spec_config(&canary).unwrap_or_default());
    assert!(old_canary.starts_with("rendered-canary-"), "{old_canary}");
    assert_eq!(hash_of(&old_canary), hash_of(&old_worker), "no canary config: the worker content, the same hash");
    assert_eq!(current(&nodes(&world).get("worker-2").await?), old_canary);
    assert_eq!(history.cordoned(), BTreeSet::new(), "worker-2 moved to equal content without a reboot");

    patch(&pools(&world), "worker", json!({"spec": {"paused": true}})).await?;
    let chrony = machine_config("99-worker-chrony", "worker", ignition_file(Some("3.2.0"), "/etc/chrony.conf"));
    machine_configs(&world).create(&Default::default(), &chrony).await?;

    let canary = numo_testkit::wait_until(&pools(&world), "canary", WAIT, "canary rolled out on a new config", {
        let old_canary = old_canary.clone();
        move |p| rolled_out(p, 1) && spec_config(p) != Some(old_canary.clone())
    })
    .await?;
    let worker = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "the paused worker pool re-rendered", {
        let old_worker = old_worker.clone();
        move |p| spec_config(p).is_some_and(|c| c != old_worker)
    })
    .await?;
    let (new_worker, new_canary) = (spec_config(&worker).unwrap_or_default(), spec_config(&canary).unwrap_or_default());
    assert!(new_worker.starts_with("rendered-worker-") && new_canary.starts_with("rendered-canary-"));
    assert_eq!(hash_of(&new_worker), hash_of(&new_canary), "both pools render the same content");
    assert_ne!(hash_of(&new_worker), hash_of(&old_worker));
    for rendered in [&new_worker, &new_canary] {
        assert!(rendered_files(&world, rendered).await?.contains(&"/etc/chrony.conf".to_string()), "{rendered}");
    }

    let worker = pools(&world).get("worker").await?;
    assert_eq!(status_config(&worker), Some(old_worker.clone()), "the paused pool's machines stay on the old config");
    assert_eq!(counts(&worker), (2, 0, 0, 0, 0));
    assert!(condition_is(&worker, "Updated", "False") && condition_is(&worker, "Updating", "False"));
    for name in ["worker-0", "worker-1"] {
        let node = nodes(&world).get(name).await?;
        assert_eq!(
            (current(&node), desired(&node), state(&node)),
            (old_worker.clone(), old_worker.clone(), "Done".into())
        );
        assert!(!cordoned(&node) && !update_tainted(&node), "{name} is left alone");
    }
    assert_eq!(history.working(), BTreeSet::from(["worker-2".to_string()]), "only the canary's node was updated");
    assert_eq!(history.rebooted(), BTreeSet::from(["worker-2".to_string()]), "new content: worker-2 rebooted");
    assert_eq!(current(&nodes(&world).get("worker-2").await?), new_canary);

    patch(&pools(&world), "worker", json!({"spec": {"paused": false}})).await?;
    let done = wait_rolled_out(&world, "worker", 2).await?;
    assert_eq!(spec_config(&done), Some(new_worker.clone()));
    for name in ["worker-0", "worker-1"] {
        let node = nodes(&world).get(name).await?;
        assert_eq!((current(&node), state(&node)), (new_worker.clone(), "Done".into()));
        assert!(!cordoned(&node), "{name} is uncordoned after its update");
    }
    let all = BTreeSet::from(["worker-0".to_string(), "worker-1".to_string(), "worker-2".to_string()]);
    assert_eq!(history.rebooted(), all, "unpaused, the worker nodes rebooted into the new content");
    Ok(())
}

#[tokio::test]
async fn deleting_a_machine_config_brings_the_previous_rendered_names_back() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-mc-delete").await?;
    world.openshift(shape(1), fast()).await?;
    let worker = wait_rolled_out(&world, "worker", 1).await?;
    pools(&world).create(&Default::default(), &custom_pool("canary")?).await?;
    let canary = wait_rolled_out(&world, "canary", 0).await?;
    let (old_worker, old_canary) = (spec_config(&worker).unwrap_or_default(), spec_config(&canary).unwrap_or_default());

    let chrony = machine_config("99-worker-chrony", "worker", ignition_file(Some("3.2.0"), "/etc/chrony.conf"));
    machine_configs(&world).create(&Default::default(), &chrony).await?;
    let worker = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "workers on the new config", {
        let old_worker = old_worker.clone();
        move |p| rolled_out(p, 1) && spec_config(p) != Some(old_worker.clone())
    })
    .await?;
    let canary = numo_testkit::wait_until(&pools(&world), "canary", WAIT, "canary re-rendered", {
        let old_canary = old_canary.clone();
        move |p| rolled_out(p, 0) && spec_config(p) != Some(old_canary.clone())
    })
    .await?;
    let (new_worker, new_canary) = (spec_config(&worker).unwrap_or_default(), spec_config(&canary).unwrap_or_default());

    machine_configs(&world).delete("99-worker-chrony", &Default::default()).await?;
    let worker = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "workers back on the old config", {
        let old_worker = old_worker.clone();
        move |p| rolled_out(p, 1) && spec_config(p) == Some(old_worker.clone())
    })
    .await?;
    let canary = numo_testkit::wait_until(&pools(&world), "canary", WAIT, "canary back on the old config", {
        let old_canary = old_canary.clone();
        move |p| rolled_out(p, 0) && spec_config(p) == Some(old_canary.clone())
    })
    .await?;
    assert_eq!(status_config(&worker), Some(old_worker.clone()));
    assert_eq!(status_config(&canary), Some(old_canary));
    assert_eq!(current(&nodes(&world).get("worker-0").await?), old_worker, "worker-0 runs the old name again");
    for rendered in [&new_worker, &new_canary] {
        assert!(machine_configs(&world).get_opt(rendered).await?.is_some(), "{rendered} is kept, as the MCO keeps it");
    }
    Ok(())
}

#[tokio::test]
async fn a_machine_config_the_mco_cannot_parse_stops_rendering_until_it_is_removed_or_fixed() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-mc-invalid").await?;
    world.openshift(shape(1), fast()).await?;
    let worker = wait_rolled_out(&world, "worker", 1).await?;
    pools(&world).create(&Default::default(), &custom_pool("canary")?).await?;
    let canary = wait_rolled_out(&world, "canary", 0).await?;
    let old = BTreeMap::from([("worker", spec_config(&worker)), ("canary", spec_config(&canary))]);
    let supported = "Supported spec versions: 2.2, 3.0, 3.1, 3.2, 3.3, 3.4";
    let render_degraded = |pool: &str, problem: &str| {
        format!(
            "Failed to render configuration for pool {pool}: could not generate rendered MachineConfig: \
             parsing Ignition config failed: {problem} version. {supported}"
        )
    };

    // No ignition.version at all.
    let missing = machine_config("99-worker-missing", "worker", ignition_file(None, "/etc/missing"));
    machine_configs(&world).create(&Default::default(), &missing).await?;
    for (pool, old_config) in &old {
        let degraded = numo_testkit::wait_until(&pools(&world), pool, WAIT, "the pool RenderDegraded", |p| {
            condition_is(p, "RenderDegraded", "True")
        })
        .await?;
        assert_eq!(condition_message(&degraded, "RenderDegraded"), Some(render_degraded(pool, "invalid")));
        assert!(condition_is(&degraded, "Degraded", "True"), "{pool} is Degraded");
        assert_eq!(&spec_config(&degraded), old_config, "{pool} keeps its previous configuration");
        assert_eq!(&status_config(&degraded), old_config);
    }
    let master = pools(&world).get("master").await?;
    assert!(condition_is(&master, "RenderDegraded", "False"), "the master pool does not select it");

    // Removed: the pools render again, the same content under the same names.
    machine_configs(&world).delete("99-worker-missing", &Default::default()).await?;
    for (pool, old_config) in &old {
        let renders = numo_testkit::wait_until(&pools(&world), pool, WAIT, "the pool rendering again", |p| {
            condition_is(p, "RenderDegraded", "False") && condition_is(p, "Degraded", "False")
        })
        .await?;
        assert_eq!(&spec_config(&renders), old_config);
    }

    // A version the MCO does not know, then fixed.
    let unknown = machine_config("99-worker-motd", "worker", ignition_file(Some("3.5.0"), "/etc/motd"));
    machine_configs(&world).create(&Default::default(), &unknown).await?;
    let degraded = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "the worker pool RenderDegraded", |p| {
        condition_is(p, "RenderDegraded", "True")
    })
    .await?;
    assert_eq!(condition_message(&degraded, "RenderDegraded"), Some(render_degraded("worker", "unknown")));
    assert_eq!(spec_config(&degraded), old["worker"]);

    patch(&machine_configs(&world), "99-worker-motd", json!({"spec": {"config": {"ignition": {"version": "3.4.0"}}}}))
        .await?;
    let old_worker = old["worker"].clone();
    let fixed = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "workers on the fixed config", move |p| {
        condition_is(p, "RenderDegraded", "False") && rolled_out(p, 1) && spec_config(p) != old_worker
    })
    .await?;
    let new_worker = spec_config(&fixed).unwrap_or_default();
    assert!(rendered_files(&world, &new_worker).await?.contains(&"/etc/motd".to_string()));
    assert!(condition_is(&fixed, "Degraded", "False"));
    let canary = numo_testkit::wait_until(&pools(&world), "canary", WAIT, "canary rendering again", |p| {
        condition_is(p, "RenderDegraded", "False")
    })
    .await?;
    assert_eq!(spec_config(&canary).as_deref().map(hash_of), Some(hash_of(&new_worker)));
    Ok(())
}
