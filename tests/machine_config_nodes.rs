//! A node's drain apart from its reboot, where MachineConfigNodes are served (OpenShift 4.20+), numo as installed:
//! the simulated machine-config daemon and drain controller report each update in the node's MachineConfigNode
//! (`Drained`, `RebootedNode`, ... as on 4.21); numo records when each worker's drain ended (`drainedAt`), says so in
//! an Event, measures the upgrade in its parts (`Drain`, `Reboot`) and keeps the drain's end in the rollout record for
//! the timeline. On 4.19 (no MachineConfigNodes) the upgrade is shown whole, as before.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Patch, PatchParams};
use kube::Api;
use numo::api::{MutexRunConfig, NodePhase, RunPhase, Step};
use numo_simulator::OpenShiftRelease;
use serde_json::json;
use support::*;

const WORKERS: usize = 2;

/// Each worker's slow drain and reboot, so that both are seen apart.
async fn slow_drains(setup: &Setup) -> anyhow::Result<()> {
    let nodes = Api::<Node>::all(setup.client.clone());
    let slow = json!({"metadata": {"annotations": {
        numo_simulator::faults::DRAIN_SECONDS: "2",
        numo_simulator::faults::REBOOT_SECONDS: "3",
    }}});
    for i in 0..WORKERS {
        nodes.patch(&format!("worker-{i}"), &PatchParams::default(), &Patch::Merge(&slow)).await?;
    }
    Ok(())
}

/// The notes of the `NodeDrained` Events among `events`.
fn drains_told(events: &[(String, String, String)]) -> Vec<&String> {
    events.iter().filter(|(_, reason, _)| reason == "NodeDrained").map(|e| &e.2).collect()
}

/// Every node entry an Upgrading node had in the run config's status, as a watch saw them.
fn record_upgrading(setup: &mut Setup, name: &str) -> Arc<Mutex<Vec<numo::api::NodeProgress>>> {
    setup.record_statuses(name, |status| status.nodes.into_iter().filter(|e| e.phase == NodePhase::Upgrading).collect())
}

/// Runs a two-worker upgrade on `release` with slow drains; returns the completed run config, the Upgrading entries
/// seen, the Events about it (once `told` holds for them: numo publishes Events from a queue) and its rollout record.
async fn upgrade_on(
    release: &str,
    told: impl Fn(&[(String, String, String)]) -> bool,
) -> anyhow::Result<(MutexRunConfig, Vec<numo::api::NodeProgress>, Vec<(String, String, String)>, ConfigMap)> {
    let openshift = OpenShiftRelease::parse(release).map_err(anyhow::Error::msg)?;
    let test = format!("drain-{}", release.replace('.', "-"));
    let mut setup = Setup::on(&test, WORKERS, Nfd::Off, openshift).await?;
    slow_drains(&setup).await?;
    setup.check_workers("gated", job_spec("1s", false), None, json!({})).await?;
    let upgrading = record_upgrading(&mut setup, "gated");
    setup.start_operator().await?;
    setup.wait_phase("gated", RunPhase::Idle, Duration::from_secs(60)).await?;
    setup.upgrade_cluster(NEW).await?;
    let done = setup.wait_phase("gated", RunPhase::Completed, ROLLOUT).await?;
    let events = setup.events_when("gated", told).await?;
    let record = Api::<ConfigMap>::namespaced(setup.client.clone(), &setup.ns).get("numo-timeline-gated").await?;
    let upgrading = upgrading.lock().map(|u| u.clone()).unwrap_or_default();
    Ok((done, upgrading, events, record))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_4_21_each_drain_is_shown_apart_from_its_reboot() -> anyhow::Result<()> {
    let each_drain_told = |events: &[(String, String, String)]| drains_told(events).len() == WORKERS;
    let (done, upgrading, events, record) = upgrade_on("4.21", each_drain_told).await?;
    let status = done.status.clone().unwrap_or_default();
    assert_eq!(status.progress.as_deref(), Some("2/2"), "{status:?}");

    // Each worker was seen drained while it upgraded, after the MCO started on it.
    let mut drained: BTreeMap<String, numo::api::NodeProgress> = BTreeMap::new();
    for entry in upgrading.into_iter().filter(|e| e.drained_at.is_some()) {
        drained.entry(entry.name.clone()).or_insert(entry);
    }
    assert_eq!(drained.keys().cloned().collect::<Vec<_>>(), ["worker-0", "worker-1"], "{drained:?}");
    for entry in drained.values() {
        let after_start = entry.upgrading_at.as_ref().zip(entry.drained_at.as_ref()).is_some_and(|(u, d)| u.0 <= d.0);
        assert!(after_start, "drained after the MCO started on it: {entry:?}");
    }
    let said = drains_told(&events);
    assert_eq!(said.len(), WORKERS, "{events:?}");
    assert!(
        said.iter().all(|note| note.contains("was drained for its upgrade") && note.contains("reboots")),
        "{said:?}"
    );

    // The upgrade is measured whole and in its parts: the reboot (3 s) is told apart from the drain.
    let samples = |step: Step| status.step_durations.iter().find(|s| s.step == step).map(|s| s.seconds.clone());
    let reboots = samples(Step::Reboot).unwrap_or_default();
    assert_eq!(reboots.len(), WORKERS, "{:?}", status.step_durations);
    assert!(reboots.iter().all(|s| *s >= 2), "a 3 s reboot: {reboots:?}");
    assert_eq!(samples(Step::Drain).map(|d| d.len()), Some(WORKERS), "{:?}", status.step_durations);
    let upgrades = samples(Step::Upgrade).unwrap_or_default();
    assert!(upgrades.iter().zip(&reboots).all(|(u, r)| u >= r), "{upgrades:?} {reboots:?}");
    let figures = status.history.last().map(|h| h.steps.clone()).unwrap_or_default();
    assert!(figures.iter().any(|f| f.step == Step::Drain), "{figures:?}");
    assert!(figures.iter().any(|f| f.step == Step::Reboot), "{figures:?}");

    // The rollout record keeps each drain's end, for the timeline of finished nodes.
    let data = record.data.unwrap_or_default();
    let (_, nodes, _) = numo::rollout_record::read(&data);
    assert_eq!(nodes.len(), WORKERS, "{data:?}");
    assert!(nodes.iter().all(|n| n.times[6].is_some()), "{data:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_4_19_without_machine_config_nodes_the_upgrade_is_shown_whole() -> anyhow::Result<()> {
    let (done, upgrading, events, record) = upgrade_on("4.19", |_| true).await?;
    let status = done.status.clone().unwrap_or_default();
    assert_eq!(status.progress.as_deref(), Some("2/2"), "{status:?}");
    assert!(!upgrading.is_empty(), "the workers were seen upgrading");
    assert!(upgrading.iter().all(|e| e.drained_at.is_none()), "{upgrading:?}");
    assert!(drains_told(&events).is_empty(), "{events:?}");
    let steps: Vec<Step> = status.step_durations.iter().map(|s| s.step).collect();
    assert!(steps.contains(&Step::Upgrade) && !steps.contains(&Step::Drain) && !steps.contains(&Step::Reboot));
    let (_, nodes, _) = numo::rollout_record::read(&record.data.unwrap_or_default());
    assert!(nodes.iter().all(|n| n.times[6].is_none()));
    Ok(())
}

/// The `blockedBy` entry of `check` in the run config's status, if any.
fn blocked_by(rc: &MutexRunConfig, check: &str) -> Option<String> {
    let status = rc.status.as_ref()?;
    status.blocked_by.iter().find(|b| b.check == check).map(|b| b.message.clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_its_machine_config_node_says_is_degraded_holds_the_next_node_until_it_updates() -> anyhow::Result<()> {
    // worker-0's update fails: the simulated daemon reports NodeDegraded=True in its MachineConfigNode. The rollout
    // goes on past failures (Continue), and only the MachineConfigNode check is on among the cluster-wide ones.
    let mut setup =
        Setup::on("mcn-degraded", 3, Nfd::Off, OpenShiftRelease::parse("4.21").map_err(anyhow::Error::msg)?).await?;
    let nodes = Api::<Node>::all(setup.client.clone());
    let broken = json!({"metadata": {"annotations": {numo_simulator::faults::FAIL_UPDATE: "true"}}});
    nodes.patch("worker-0", &PatchParams::default(), &Patch::Merge(&broken)).await?;
    setup.rule("check", job_spec("1s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    let spec = json!({"nodeTimeout": "20s", "failurePolicy": "Continue", "healthChecks": {
        "clusterOperators": {"enabled": false}, "machineConfigPools": {"enabled": false}, "machineConfigNodes": {}}});
    setup.run_config("checked", &["check"], &["workers"], spec).await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    // worker-0 fails; the next node waits, and the status names the node and the daemon's reason.
    let held =
        numo_testkit::wait_until(&setup.run_configs(), "checked", ROLLOUT, "held by the MachineConfigNode", |rc| {
            blocked_by(rc, "MachineConfigNodes").is_some()
        })
        .await?;
    let message = blocked_by(&held, "MachineConfigNodes").unwrap_or_default();
    assert!(message.starts_with("MachineConfigNode worker-0 is NodeDegraded: "), "{message}");
    assert!(message.contains("upgrade failure"), "{message}");
    let started: Vec<String> = setup.jobs().await?.iter().filter_map(job_node).collect();
    assert!(started.iter().all(|node| node == "worker-0"), "no other node started: {started:?}");
    // numo plan, reading the cluster as an admin, says the same.
    let (rc, stores) = numo::controllers::run_config::preview::read::read(&setup.client, &setup.ns, "checked")
        .await
        .map_err(anyhow::Error::msg)?;
    let preview = numo::controllers::run_config::preview::from_cluster(&setup.client, &rc, &stores, None, None).await;
    let previewed = preview.held_by.iter().find(|b| b.check == "MachineConfigNodes").map(|b| b.message.clone());
    assert_eq!(previewed.as_deref(), Some(message.as_str()), "{:?}", preview.held_by);

    // The admin fixes the node: the daemon retries, the update succeeds, NodeDegraded goes False, the next node starts.
    let fixed = json!({"metadata": {"annotations": {numo_simulator::faults::FAIL_UPDATE: null}}});
    nodes.patch("worker-0", &PatchParams::default(), &Patch::Merge(&fixed)).await?;
    numo_testkit::wait_until(&setup.run_configs(), "checked", ROLLOUT, "worker-1 under way", |rc| {
        rc.status.as_ref().is_some_and(|s| s.nodes.iter().any(|e| e.name == "worker-1"))
    })
    .await?;
    // The admin skips worker-0 all the same: a skipped node is listed as skipped, never as completed.
    let skip = json!({"metadata": {"annotations": {numo::labels::SKIP_ANNOTATION: "worker-0"}}});
    setup.run_configs().patch("checked", &PatchParams::default(), &Patch::Merge(&skip)).await?;
    let done = setup.wait_phase("checked", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.unwrap_or_default();
    assert_eq!(status.completed_nodes, vec!["worker-1".to_string(), "worker-2".to_string()]);
    Ok(())
}

/// The node a numo Job is for.
fn job_node(job: &k8s_openapi::api::batch::v1::Job) -> Option<String> {
    job.metadata.annotations.as_ref()?.get(numo::jobs::NODE_ANNOTATION).cloned()
}
