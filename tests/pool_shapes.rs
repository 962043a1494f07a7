//! One gated reboot per node on every pool shape: `worker` and an `infra` pool with MachineConfigs of its own
//! (kernel arguments, a KubeletConfig-style config, a storage section), targeted together. Every node reboots exactly
//! once, into its own pool's new config, inside its gated turn (after its gate Jobs, before its cleanup Jobs); no
//! node ever matches two custom pools; `machine-config` is never Degraded. The reboots are the simulator's record
//! of what its daemon did.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::Node;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use numo::api::RunPhase;
use numo::openshift::{config_content, ClusterOperator, MachineConfig, MachineConfigPool, OsImageStreamReference};
use numo_simulator::OpenShiftRelease;
use serde_json::{json, Value};
use support::*;

const WORKERS: [&str; 2] = ["worker-0", "worker-1"];
const INFRA: [&str; 2] = ["worker-2", "worker-3"];

/// A MachineConfig for the `infra` role with the Ignition config `config`.
fn infra_config(name: &str, config: Value) -> Value {
    json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": "infra"}},
        "spec": {"config": config}
    })
}

/// Kernel arguments, as the simulator's content model holds them: a file of the infra pool's own.
fn kernel_arguments() -> Value {
    infra_config(
        "50-infra-kargs",
        json!({"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": "/etc/infra-kargs.conf", "mode": 420,
               "contents": {"source": "data:,hugepagesz%3D1G"}}]}}),
    )
}

/// What the machine-config operator renders for a KubeletConfig of the infra pool (`99-<pool>-generated-kubelet`).
fn kubelet_config() -> Value {
    infra_config(
        "99-infra-generated-kubelet",
        json!({"ignition": {"version": "3.2.0"}, "storage": {"files": [{"path": "/etc/kubernetes/kubelet.conf",
               "mode": 420, "contents": {"source": "data:,maxPods%3A%20500"}}]}}),
    )
}

/// A separate disk for container storage, as infra nodes often have: a change the daemon cannot reconcile.
fn container_storage_disk() -> Value {
    infra_config(
        "98-infra-var-lib-containers",
        json!({"ignition": {"version": "3.2.0"}, "storage": {
            "disks": [{"device": "/dev/sdb", "wipeTable": true,
                       "partitions": [{"label": "containers", "number": 1, "sizeMiB": 0}]}],
            "filesystems": [{"device": "/dev/disk/by-partlabel/containers", "format": "xfs",
                             "path": "/var/lib/containers", "wipeFilesystem": true}]}}),
    )
}

/// Four workers at [`OLD`]; worker-2 and worker-3 are infra nodes (labelled so, worker too) in an `infra` pool that
/// selects the worker configs and its own (`configs`). The infra nodes were provisioned into their pool (their first
/// boot's Ignition is the pool's config, as a MachineSet's user data gives it): they run its rendered config from
/// the start, so a storage section needs no change on them.
/// With `stream`, the infra pool boots an OS image stream of its own (`spec.osImageStream`, 4.23+).
async fn infra_world(
    test: &str,
    release: OpenShiftRelease,
    configs: &[Value],
    stream: Option<&str>,
) -> anyhow::Result<Setup> {
    let setup = Setup::on(test, 4, Nfd::Off, release).await?;
    for config in configs {
        let config: MachineConfig = serde_json::from_value(config.clone())?;
        Api::<MachineConfig>::all(setup.client.clone()).create(&PostParams::default(), &config).await?;
    }
    let pools: Api<MachineConfigPool> = Api::all(setup.client.clone());
    let mut pool = numo_testkit::pools::custom("infra", "infra");
    pool.spec.paused = true;
    pool.spec.os_image_stream = stream.map(|name| OsImageStreamReference { name: name.to_string() });
    pools.create(&PostParams::default(), &pool).await?;
    let rendered = rendered_config(&setup, "infra").await?;
    let nodes: Api<Node> = Api::all(setup.client.clone());
    for node in INFRA {
        let patch = json!({"metadata": {
            "labels": {"node-role.kubernetes.io/infra": ""},
            "annotations": {numo::openshift::CURRENT_CONFIG: rendered, numo::openshift::DESIRED_CONFIG: rendered}
        }});
        nodes.patch(node, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    }
    pools.patch("infra", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"paused": false}}))).await?;
    settled(&setup, "infra", &INFRA).await?;
    Ok(setup)
}

/// The rendered config `pool` wants, once the machine-config operator has rendered one.
async fn rendered_config(setup: &Setup, pool: &str) -> anyhow::Result<String> {
    let pools: Api<MachineConfigPool> = Api::all(setup.client.clone());
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let wanted = pools.get(pool).await?.spec.configuration.and_then(|c| c.name).unwrap_or_default();
        if !wanted.is_empty() {
            return Ok(wanted);
        }
        anyhow::ensure!(std::time::Instant::now() < deadline, "pool {pool} rendered no config");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until every node of `members` runs `pool`'s rendered config with the daemon Done.
async fn settled(setup: &Setup, pool: &str, members: &[&str]) -> anyhow::Result<()> {
    let pools: Api<MachineConfigPool> = Api::all(setup.client.clone());
    let nodes: Api<Node> = Api::all(setup.client.clone());
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    loop {
        let wanted = pools.get(pool).await?.spec.configuration.and_then(|c| c.name).unwrap_or_default();
        let mut there = !wanted.is_empty();
        for node in members {
            let node = nodes.get(node).await?;
            let annotations = node.annotations();
            there &= annotations.get(numo::openshift::CURRENT_CONFIG) == Some(&wanted)
                && annotations.get(numo::openshift::MCD_STATE).map(String::as_str) == Some("Done");
        }
        if there {
            return Ok(());
        }
        anyhow::ensure!(std::time::Instant::now() < deadline, "{members:?} did not settle on pool {pool}'s {wanted}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Records every `Degraded=True` the `machine-config` ClusterOperator reports until the returned flag is dropped.
fn watch_machine_config(setup: &Setup) -> (Arc<Mutex<Vec<String>>>, tokio::task::JoinHandle<()>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let operators: Api<ClusterOperator> = Api::all(setup.client.clone());
    let record = seen.clone();
    let task = tokio::spawn(async move {
        loop {
            if let Ok(operator) = operators.get("machine-config").await {
                let value = serde_json::to_value(&operator).unwrap_or_default();
                for condition in value["status"]["conditions"].as_array().into_iter().flatten() {
                    if condition["type"] == "Degraded" && condition["status"] == "True" {
                        let said = format!("{}: {}", condition["reason"], condition["message"]);
                        if let Ok(mut seen) = record.lock() {
                            seen.push(said);
                        }
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    });
    (seen, task)
}

fn seconds(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or_default()
}

/// Upgrades the infra world with numo gating `worker` and `infra` together, and checks what the admin would:
/// one reboot per node into its own pool's config (its OS image included) inside its gated turn, never a node in two
/// custom pools, and `machine-config` never Degraded.
async fn one_gated_reboot_per_node(
    test: &str,
    release: OpenShiftRelease,
    configs: &[Value],
    stream: Option<&str>,
) -> anyhow::Result<()> {
    let mut setup = infra_world(test, release, configs, stream).await?;
    setup.rule("check", job_spec("1s", false), Some(job_spec("1s", false))).await?;
    setup.target("gated", &["worker", "infra"]).await?;
    setup.run_config("pools", &["check"], &["gated"], json!({})).await?;
    setup.start_operator().await?;
    setup.wait_phase("pools", RunPhase::Idle, Duration::from_secs(60)).await?;

    let (degraded, watcher) = watch_machine_config(&setup);
    let started = SystemTime::now();
    setup.upgrade_cluster(NEW).await?;
    setup.wait_phase("pools", RunPhase::Completed, ROLLOUT).await?;
    settled(&setup, "infra", &INFRA).await?;
    settled(&setup, "worker", &WORKERS).await?;
    watcher.abort();

    let simulator = setup.world.simulator().expect("the simulator runs");
    let reboots = simulator.reboots();
    let pools: BTreeMap<String, MachineConfigPool> = Api::<MachineConfigPool>::all(setup.client.clone())
        .list(&Default::default())
        .await?
        .into_iter()
        .map(|p| (p.name_any(), p))
        .collect();
    let jobs = setup.jobs().await?;
    for (node, pool) in WORKERS.iter().map(|n| (n, "worker")).chain(INFRA.iter().map(|n| (n, "infra"))) {
        let during: Vec<_> = reboots.get(*node).into_iter().flatten().filter(|r| r.at >= started).collect();
        assert_eq!(during.len(), 1, "{node} rebooted {} times during the rollout: {during:?}", during.len());
        let reboot = during[0];
        let own = pools[pool].spec.configuration.as_ref().and_then(|c| c.name.clone()).unwrap_or_default();
        assert_eq!(
            config_content(&reboot.to),
            config_content(&own),
            "{node} booted {} instead of its pool {pool}'s config {own}",
            reboot.to
        );
        let of_node = |phase: &str| {
            jobs.iter()
                .filter(|j| {
                    j.annotations().get("openshift-optional.skrzypek.io/node").map(String::as_str) == Some(*node)
                })
                .filter(|j| j.labels().get("openshift-optional.skrzypek.io/phase").map(String::as_str) == Some(phase))
                .filter_map(|j| j.status.clone())
                .collect::<Vec<_>>()
        };
        let gated = of_node("gate").iter().filter_map(|s| s.completion_time.as_ref()).map(|t| t.0.as_second()).max();
        let cleanup = of_node("cleanup").iter().filter_map(|s| s.start_time.as_ref()).map(|t| t.0.as_second()).min();
        let at = seconds(reboot.at);
        assert!(gated.is_some_and(|g| g <= at), "{node} rebooted at {at}, before its gate Jobs finished ({gated:?})");
        assert!(cleanup.is_some_and(|c| c >= at), "{node} rebooted at {at}, after its cleanup started ({cleanup:?})");
    }
    let two_pools = simulator.multi_pool_nodes();
    assert!(two_pools.is_empty(), "nodes matched two custom pools: {two_pools:?}");
    let degraded = degraded.lock().map(|d| d.clone()).unwrap_or_default();
    assert!(degraded.is_empty(), "machine-config went Degraded: {degraded:?}");
    // The canary selects its own MachineConfigs again.
    let canary = serde_json::to_value(&pools["canary"].spec.machine_config_selector)?;
    assert_eq!(canary, json!({"matchLabels": {"machineconfiguration.openshift.io/role": "worker"}}));
    // And its own OS image stream (none: it inherits worker's).
    assert_eq!(pools["canary"].spec.os_image_stream, None);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infra_pool_with_kernel_arguments_reboots_each_node_once_into_its_own_config_on_4_21() -> anyhow::Result<()>
{
    let release = OpenShiftRelease::parse("4.21").map_err(anyhow::Error::msg)?;
    one_gated_reboot_per_node("pool-shapes-421", release, &[kernel_arguments()], None).await
}

/// 4.23 boots OS image streams: an infra pool on a stream of its own boots another OS image than the canary, which
/// inherits worker's, until numo points the canary at infra's stream.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infra_pool_on_its_own_os_image_stream_reboots_each_node_once_into_its_own_config_on_4_23(
) -> anyhow::Result<()> {
    let release = OpenShiftRelease::parse("4.23").map_err(anyhow::Error::msg)?;
    one_gated_reboot_per_node("pool-shapes-423", release, &[kernel_arguments()], Some("rhel-10")).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_infra_pool_with_a_kubelet_config_and_a_storage_disk_reboots_each_node_once() -> anyhow::Result<()> {
    let configs = [kubelet_config(), container_storage_disk()];
    one_gated_reboot_per_node("pool-shapes-storage", OpenShiftRelease::NEWEST, &configs, None).await
}
