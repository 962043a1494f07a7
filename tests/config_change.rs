//! `trigger: AnyConfigChange` against the real kube-apiserver with the simulated MCO: every MachineConfig change of
//! the target pools goes through the gate, node by node, as an admin would watch it.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::batch::v1::Job;
use kube::api::{DeleteParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use numo::api::{NodePhase, RunPhase};
use numo::openshift::{config_content, MachineConfigPool, CURRENT_CONFIG, MCD_STATE};
use serde_json::json;
use support::*;

const THREE_WORKERS: [&str; 3] = ["worker-0", "worker-1", "worker-2"];

async fn pool(client: &kube::Client, name: &str) -> anyhow::Result<MachineConfigPool> {
    Ok(Api::<MachineConfigPool>::all(client.clone()).get(name).await?)
}

/// The rendered config a pool wants, once it is not `before` any more (the MCO re-rendered it).
async fn rerendered(client: &kube::Client, name: &str, before: &str) -> anyhow::Result<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let wanted = pool(client, name).await?.spec.configuration.and_then(|c| c.name).unwrap_or_default();
        if !wanted.is_empty() && wanted != before {
            return Ok(wanted);
        }
        anyhow::ensure!(std::time::Instant::now() < deadline, "pool {name} was not re-rendered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn wanted(pool: &MachineConfigPool) -> String {
    pool.spec.configuration.as_ref().and_then(|c| c.name.clone()).unwrap_or_default()
}

/// When `node` was first seen running a config with the content `hash`.
fn reached(timeline: &Timeline, node: &str, hash: &str) -> Option<SystemTime> {
    timeline.events().into_iter().find_map(|(at, seen)| match seen {
        Seen::NodeConfig { node: n, current_config: Some(config), .. }
            if n == node && config_content(&config) == hash =>
        {
            Some(at)
        }
        _ => None,
    })
}

/// What the daemon showed of a node at one moment: its state, whether it was cordoned, and its config.
#[derive(Clone, Debug)]
struct NodeSeen {
    at: SystemTime,
    node: String,
    state: Option<String>,
    cordoned: bool,
    config: Option<String>,
}

/// Records every change of every node from a watch, as a user would see them.
fn watch_nodes(setup: &mut Setup) -> std::sync::Arc<std::sync::Mutex<Vec<NodeSeen>>> {
    use futures::StreamExt;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let api = Api::<k8s_openapi::api::core::v1::Node>::all(setup.client.clone());
    setup.world.spawn(async move {
        let stream = kube::runtime::watcher(api, Default::default());
        let mut stream = kube::runtime::WatchStreamExt::applied_objects(stream).boxed();
        while let Some(Ok(node)) = stream.next().await {
            let entry = NodeSeen {
                at: SystemTime::now(),
                node: node.name_any(),
                state: node.annotations().get(MCD_STATE).cloned(),
                cordoned: node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false),
                config: node.annotations().get(CURRENT_CONFIG).cloned(),
            };
            if let Ok(mut v) = record.lock() {
                v.push(entry);
            }
        }
    });
    seen
}

fn env_of(job: &Job) -> BTreeMap<String, String> {
    let container = &job.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers[0];
    container.env.iter().flatten().map(|e| (e.name.clone(), e.value.clone().unwrap_or_default())).collect()
}

fn node_of(job: &Job) -> String {
    job.annotations().get("openshift-optional.skrzypek.io/node").cloned().unwrap_or_default()
}

fn phase_of(job: &Job) -> String {
    job.labels().get("openshift-optional.skrzypek.io/phase").cloned().unwrap_or_default()
}

async fn config_change_setup(test: &str, workers: usize) -> anyhow::Result<Setup> {
    config_change_setup_on(test, workers, openshift_release()).await
}

async fn config_change_setup_on(
    test: &str,
    workers: usize,
    openshift: numo_simulator::OpenShiftRelease,
) -> anyhow::Result<Setup> {
    let setup = Setup::on(test, workers, Nfd::Off, openshift).await?;
    setup
        .check_workers(
            "every-change",
            job_spec("1s", false),
            Some(job_spec("1s", false)),
            json!({"trigger": "AnyConfigChange"}),
        )
        .await?;
    Ok(setup)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_config_for_workers_is_gated_node_by_node_and_the_pools_stay_paused_until_the_run_config_goes(
) -> anyhow::Result<()> {
    let mut setup = config_change_setup("config-change", 3).await?;
    let before = setup.pools().await?;
    let timeline = Timeline::start(&mut setup, "every-change");
    let node_history = watch_nodes(&mut setup);
    setup.start_operator().await?;
    // Held for as long as the run config exists, with nothing to roll.
    setup.wait_phase("every-change", RunPhase::Idle, Duration::from_secs(60)).await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !pool(&setup.client, "worker").await?.spec.paused {
        anyhow::ensure!(std::time::Instant::now() < deadline, "the worker pool was not paused");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert!(!pool(&setup.client, "canary").await?.spec.paused, "the canary is left alone");
    let old = wanted(&pool(&setup.client, "worker").await?);

    machine_config(&setup.client, "99-worker-chrony", "worker").await?;
    let new = rerendered(&setup.client, "worker", &old).await?;
    let hash = config_content(&new).to_string();
    let done = setup.wait_phase("every-change", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.clone().unwrap_or_default();
    assert_eq!(status.progress.as_deref(), Some("3/3"));
    let target = status.target_config.clone().expect("status.targetConfig");
    assert_eq!(target.pools.len(), 1);
    assert_eq!(target.pools[0].rendered_config, new);
    assert!(target.machine_configs.contains(&"+99-worker-chrony".to_string()), "{:?}", target.machine_configs);

    // One gate and one cleanup Job per node, the gate done before the node got the config, the cleanup after.
    let jobs = setup.jobs().await?;
    for node in THREE_WORKERS {
        let gates: Vec<&Job> = jobs.iter().filter(|j| node_of(j) == node && phase_of(j) == "gate").collect();
        let cleanups: Vec<&Job> = jobs.iter().filter(|j| node_of(j) == node && phase_of(j) == "cleanup").collect();
        assert_eq!((gates.len(), cleanups.len()), (1, 1), "{node}: one gate and one cleanup Job");
        let got = reached(&timeline, node, &hash).unwrap_or_else(|| panic!("{node} never ran {new}"));
        let gate_done = gates[0].status.as_ref().and_then(|s| s.completion_time.as_ref()).expect("completed").0;
        assert!(gate_done.as_second() <= second(got), "{node} ran the new config before its gate Job completed");
        // Whole seconds on two clocks' views (the apiserver's stamp, this watch's arrival): one second of slack.
        assert!(cleanups[0].creation_timestamp().expect("created").0.as_second() >= second(got) - 1);
        let env = env_of(gates[0]);
        assert_eq!(env["TARGET_CONFIG"], new, "{node}: the Job is told the config");
        assert_eq!(env["TARGET_VERSION"], OLD);
    }
    // One node at a time: each node got the config only after the one before it.
    let mut at: Vec<SystemTime> = THREE_WORKERS.iter().map(|n| reached(&timeline, n, &hash).unwrap()).collect();
    let sorted = {
        let mut s = at.clone();
        s.sort();
        s
    };
    assert_eq!(at, sorted, "nodes got the config in order");
    at.dedup();
    assert_eq!(at.len(), 3);

    // The pools are as before, except that the worker pool stays paused while the run config exists; the MCO then
    // names the nodes' configs after their own pool, with no reboot.
    let deadline = std::time::Instant::now() + ROLLOUT;
    loop {
        let worker = pool(&setup.client, "worker").await?;
        let nodes = setup.nodes().await?;
        let renamed = nodes
            .iter()
            .filter(|n| n.name_any().starts_with("worker"))
            .all(|n| n.annotations().get(CURRENT_CONFIG) == Some(&new));
        if renamed && worker.spec.paused && worker.condition_true("Updated") {
            break;
        }
        anyhow::ensure!(std::time::Instant::now() < deadline, "the worker pool never reported Updated");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let mut after = setup.pools().await?;
    assert!(after["worker"].0, "the worker pool stays paused");
    after.get_mut("worker").unwrap().0 = before["worker"].0;
    assert_eq!(after, before, "selectors restored exactly");
    // The rename rebooted nothing and changed no content: after the last cleanup Job was created (the last node was
    // Done on the new content), no node was cordoned (the daemon cordons and drains before a reboot; for a rename it
    // only goes Working for the moment it writes the new name), and every config a node ran had that content.
    let last_cleanup = jobs
        .iter()
        .filter(|j| phase_of(j) == "cleanup")
        .filter_map(|j| j.creation_timestamp())
        .map(|t| t.0.as_second())
        .max()
        .expect("cleanup Jobs");
    let history = node_history.lock().map(|h| h.clone()).unwrap_or_default();
    let renamed_at: Vec<&NodeSeen> = history.iter().filter(|s| s.config.as_deref() == Some(new.as_str())).collect();
    assert!(!renamed_at.is_empty(), "the nodes were renamed to {new}");
    for seen in history.iter().filter(|s| s.node.starts_with("worker") && second(s.at) > last_cleanup) {
        assert!(matches!(seen.state.as_deref(), Some("Done" | "Working")), "{seen:?}");
        assert!(!seen.cordoned, "{seen:?}: the rename cordoned a node");
        assert_eq!(seen.config.as_deref().map(config_content), Some(hash.as_str()), "{seen:?}");
    }
    assert_eq!(setup.jobs().await?.len(), 6, "the rename ran no Job");

    // Deleting the run config gives the pool back unpaused, as it was.
    setup.run_configs().delete("every-change", &DeleteParams::default()).await?;
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while setup.pools().await? != before {
        anyhow::ensure!(std::time::Instant::now() < deadline, "pools not restored after delete");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}

fn second(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_trigger_upgrade_a_machine_config_is_not_gated() -> anyhow::Result<()> {
    let mut setup = Setup::new("config-ungated", 2).await?;
    setup.check_workers("upgrades-only", job_spec("1s", false), None, json!({})).await?;
    setup.start_operator().await?;
    setup.wait_phase("upgrades-only", RunPhase::Idle, Duration::from_secs(60)).await?;
    let old = wanted(&pool(&setup.client, "worker").await?);
    machine_config(&setup.client, "99-worker-registries", "worker").await?;
    let new = rerendered(&setup.client, "worker", &old).await?;
    // The MCO rolls it through the unpaused pool, as without numo.
    let deadline = std::time::Instant::now() + ROLLOUT;
    loop {
        let nodes = setup.nodes().await?;
        let all = nodes
            .iter()
            .filter(|n| n.name_any().starts_with("worker"))
            .all(|n| n.annotations().get(CURRENT_CONFIG) == Some(&new));
        if all {
            break;
        }
        anyhow::ensure!(std::time::Instant::now() < deadline, "the MCO did not roll the MachineConfig");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    assert!(setup.jobs().await?.is_empty(), "no Job for a MachineConfig under trigger Upgrade");
    assert!(!setup.pools().await?["worker"].0, "never paused");
    let rc = setup.run_configs().get("upgrades-only").await?;
    assert_eq!(rc.status.and_then(|s| s.phase), Some(RunPhase::Idle));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_under_any_config_change_is_gated_exactly_like_under_upgrade() -> anyhow::Result<()> {
    let mut setup = config_change_setup("config-upgrade", 2).await?;
    setup.start_operator().await?;
    setup.wait_phase("every-change", RunPhase::Idle, Duration::from_secs(60)).await?;
    setup.upgrade_cluster(NEW).await?;
    let done = setup.wait_phase("every-change", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.unwrap_or_default();
    assert_eq!(status.target_version.as_deref(), Some(NEW));
    let versions = setup.node_versions().await?;
    for node in ["worker-0", "worker-1"] {
        assert_eq!(versions[node].as_deref(), Some(NEW), "{node}");
    }
    let jobs = setup.jobs().await?;
    for node in ["worker-0", "worker-1"] {
        assert_eq!(jobs.iter().filter(|j| node_of(j) == node && phase_of(j) == "gate").count(), 1, "{node}");
        let gate = jobs.iter().find(|j| node_of(j) == node && phase_of(j) == "gate").unwrap();
        assert_eq!(env_of(gate)["TARGET_VERSION"], NEW);
    }
    assert!(setup.pools().await?["worker"].0, "still held for the next change");
    let conditions: Vec<String> = status.conditions.iter().map(|c| c.type_.clone()).collect();
    for reference in ["ConfigValidated", "UpgradeChecked", "UpgradeAvailable", "UpgradeReady", "TargetPoolsPaused"] {
        assert!(conditions.iter().any(|c| c == reference), "{reference} missing");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_in_the_middle_of_a_config_change_resumes_it_with_no_job_twice() -> anyhow::Result<()> {
    let mut setup = config_change_setup("config-restart", 3).await?;
    setup.start_operator().await?;
    setup.wait_phase("every-change", RunPhase::Idle, Duration::from_secs(60)).await?;
    let old = wanted(&pool(&setup.client, "worker").await?);
    machine_config(&setup.client, "99-worker-kargs", "worker").await?;
    rerendered(&setup.client, "worker", &old).await?;
    setup.wait_node_phase("every-change", "worker-1", NodePhase::Gating).await?;
    setup.kill_operator();
    tokio::time::sleep(Duration::from_secs(2)).await;
    setup.start_operator().await?;
    setup.wait_phase("every-change", RunPhase::Completed, ROLLOUT).await?;
    let jobs = setup.jobs().await?;
    for node in THREE_WORKERS {
        for phase in ["gate", "cleanup"] {
            let n = jobs.iter().filter(|j| node_of(j) == node && phase_of(j) == phase).count();
            assert_eq!(n, 1, "{node}: {n} {phase} Jobs");
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_the_canary_does_not_select_is_brought_by_pointing_the_canary_at_the_pools_configs(
) -> anyhow::Result<()> {
    // The admin changes the worker pool's machineConfigSelector, which only 4.22 and later leave to the admin (up to
    // 4.21 the machine-config operator puts it back at once).
    let mut setup = config_change_setup_on("config-not-in-canary", 2, numo_simulator::OpenShiftRelease::NEWEST).await?;
    // The worker pool also takes configs of a role the canary does not select.
    let selector = json!({"spec": {"machineConfigSelector": {"matchLabels": null, "matchExpressions": [
        {"key": "machineconfiguration.openshift.io/role", "operator": "In", "values": ["worker", "worker-only"]}]}}});
    let pools = Api::<MachineConfigPool>::all(setup.client.clone());
    pools.patch("worker", &PatchParams::default(), &Patch::Merge(&selector)).await?;
    let canary_before = pools.get("canary").await?.spec.machine_config_selector;
    setup.start_operator().await?;
    setup.wait_phase("every-change", RunPhase::Idle, Duration::from_secs(60)).await?;
    let old = wanted(&pool(&setup.client, "worker").await?);
    machine_config(&setup.client, "99-worker-only-motd", "worker-only").await?;
    let new = rerendered(&setup.client, "worker", &old).await?;
    // numo points the canary at the worker pool's MachineConfigs for the rollout, so each node boots exactly the
    // worker pool's new content, and puts the canary's own selector back at the end.
    setup.wait_phase("every-change", RunPhase::Completed, ROLLOUT).await?;
    assert_eq!(setup.jobs().await?.iter().filter(|j| phase_of(j) == "gate").count(), 2);
    let reboots = setup.world.simulator().expect("the simulator runs").reboots();
    for node in ["worker-0", "worker-1"] {
        let into: Vec<&str> = reboots.get(node).into_iter().flatten().map(|r| r.to.as_str()).collect();
        assert_eq!(into.len(), 1, "{node} rebooted into {into:?}");
        assert_eq!(numo::openshift::config_content(into[0]), numo::openshift::config_content(&new), "{node}");
    }
    assert_eq!(pools.get("canary").await?.spec.machine_config_selector, canary_before, "the canary's own selector");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_change_in_the_middle_of_a_rollout_reaches_every_node_only_inside_its_gate() -> anyhow::Result<()> {
    let mut setup = config_change_setup("config-midway", 3).await?;
    let node_history = watch_nodes(&mut setup);
    setup.start_operator().await?;
    setup.wait_phase("every-change", RunPhase::Idle, Duration::from_secs(60)).await?;
    let old = wanted(&pool(&setup.client, "worker").await?);
    machine_config(&setup.client, "99-worker-first", "worker").await?;
    let first = rerendered(&setup.client, "worker", &old).await?;
    setup.wait_node_phase("every-change", "worker-1", NodePhase::Gating).await?;
    machine_config(&setup.client, "99-worker-second", "worker").await?;
    let second_config = rerendered(&setup.client, "worker", &first).await?;
    let final_hash = config_content(&second_config).to_string();
    let deadline = std::time::Instant::now() + ROLLOUT;
    loop {
        let rc = setup.run_configs().get("every-change").await?;
        let nodes = setup.nodes().await?;
        let all = nodes
            .iter()
            .filter(|n| n.name_any().starts_with("worker"))
            .all(|n| n.annotations().get(CURRENT_CONFIG).map(|c| config_content(c)) == Some(final_hash.as_str()));
        let status = rc.status.clone().unwrap_or_default();
        if all && status.phase == Some(RunPhase::Completed) {
            break;
        }
        let configs: Vec<(String, Option<String>)> =
            nodes.iter().map(|n| (n.name_any(), n.annotations().get(CURRENT_CONFIG).cloned())).collect();
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "the second change did not reach every node: {status:#?} {configs:?}"
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let jobs = setup.jobs().await?;
    let rollout = |j: &Job| j.annotations().get("openshift-optional.skrzypek.io/target-version").cloned();
    let history = node_history.lock().map(|h| h.clone()).unwrap_or_default();
    for node in THREE_WORKERS {
        let gates: Vec<&Job> = jobs.iter().filter(|j| node_of(j) == node && phase_of(j) == "gate").collect();
        // Never twice for one rollout.
        let mut rollouts: Vec<Option<String>> = gates.iter().map(|j| rollout(j)).collect();
        rollouts.sort();
        rollouts.dedup();
        assert_eq!(rollouts.len(), gates.len(), "{node}: two gate Jobs in one rollout");
        // Every content the node moved to, it moved to inside a gate: after a gate Job of a rollout completed and
        // before that rollout's cleanup Job for the node was created.
        let mut content = None;
        for seen in history.iter().filter(|s| s.node == node) {
            let now = seen.config.as_deref().map(config_content).map(String::from);
            if content.is_some() && now != content {
                let at = second(seen.at);
                let inside = gates.iter().any(|gate| {
                    let done = gate.status.as_ref().and_then(|s| s.completion_time.as_ref()).map(|t| t.0.as_second());
                    let cleanup = jobs
                        .iter()
                        .filter(|j| node_of(j) == node && phase_of(j) == "cleanup" && rollout(j) == rollout(gate))
                        .filter_map(|j| j.creation_timestamp())
                        .map(|t| t.0.as_second())
                        .next();
                    // Whole seconds, as the apiserver stamps them and as this watch saw the change: 1 s of slack.
                    done.is_some_and(|d| d <= at) && cleanup.is_none_or(|c| c >= at - 1)
                });
                assert!(inside, "{node} moved to {now:?} at {at} outside its gate: {gates:#?}");
            }
            if now.is_some() {
                content = now;
            }
        }
    }
    Ok(())
}
