//! The gated rollout against the real kube-apiserver, with the simulated CVO and MCO, as an admin would see it
//! go well: every node gated in order, concurrency, versions read without NFD, nodes no target pool owns.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use numo::api::{NodePhase, RunPhase};
use serde_json::json;
use support::*;

const FIVE_WORKERS: [&str; 5] = ["worker-0", "worker-1", "worker-2", "worker-3", "worker-4"];

fn second(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or_default()
}
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn happy_path_gates_every_node_and_restores_the_pools() -> anyhow::Result<()> {
    happy_path("happy-path", Nfd::Off).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn happy_path_with_nfd_labels_gates_every_node_and_restores_the_pools() -> anyhow::Result<()> {
    happy_path("happy-path-nfd", Nfd::On).await
}

async fn happy_path(test: &str, nfd: Nfd) -> anyhow::Result<()> {
    let mut setup = Setup::with(test, 5, nfd).await?;
    setup.rule("drain-check", job_spec("1s", false), Some(job_spec("1s", false))).await?;
    setup.rule("backup", job_spec("1s", false), Some(job_spec("1s", false))).await?;
    setup.target("workers", &["worker"]).await?;
    setup.run_config("example", &["drain-check", "backup"], &["workers"], json!({})).await?;
    let before = setup.pools().await?;
    let timeline = Timeline::start(&mut setup, "example");
    setup.start_operator().await?;
    setup.wait_phase("example", RunPhase::Idle, Duration::from_secs(60)).await?;

    setup.upgrade_cluster(NEW).await?;
    let done = setup.wait_phase("example", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.clone().unwrap_or_default();
    assert_eq!(status.progress.as_deref(), Some("5/5"));
    assert_eq!(status.target_version.as_deref(), Some(NEW));

    // Pools paused before the control plane completed, so no worker updated ungated.
    let paused =
        timeline.first(|s| matches!(s, Seen::Pool { name, paused: true } if name == "worker")).expect("worker paused");
    let completed = timeline
        .first(|s| matches!(s, Seen::ControlPlane { state, version } if state == "Completed" && version == NEW))
        .expect("control plane completed");
    assert!(paused <= completed, "the worker pool was paused only after the control plane completed");

    // Every node is on the new version and no rule label is left; pools are exactly as before.
    let versions = setup.node_versions().await?;
    for node in setup.nodes().await? {
        let name = node.name_any();
        assert!(!node.labels().keys().any(|k| k.starts_with(numo::labels::RULE_LABEL_PREFIX)), "{name} still held");
        let label = node.labels().get(numo::openshift::RELEASE_VERSION).map(String::as_str);
        match nfd {
            Nfd::Off => assert_eq!(label, None, "{name}: a release label without NFD"),
            Nfd::On => assert!(label.is_some(), "{name}: the NFD stand-in labels every node"),
        }
        if name.starts_with("worker") {
            assert_eq!(versions[&name].as_deref(), Some(NEW), "{name}");
        }
    }
    assert_eq!(setup.pools().await?, before, "pools restored exactly");

    // The run config's Events tell each node's story and every phase, with no Warning on the way.
    let told = |notes: &[(String, String, String)]| {
        FIVE_WORKERS.iter().all(|node| notes.iter().any(|(_, r, n)| r == "NodeUpgraded" && n.contains(node)))
    };
    let notes = setup.events_when("example", told).await?;
    // The test's numo runs in-process without a ServiceAccount, so it says once that it cannot put its admission
    // policy in place (tests/admission_policy.rs covers the policy); nothing else may warn.
    let warnings = notes.iter().filter(|(kind, reason, _)| kind == "Warning" && reason != "AdmissionPolicyUnavailable");
    assert_eq!(warnings.count(), 0, "a Warning in a clean rollout: {notes:?}");
    for node in FIVE_WORKERS {
        for reason in ["NodeGating", "NodeReleased", "NodeCleaningUp", "NodeUpgraded"] {
            assert!(
                notes.iter().any(|(_, r, note)| r == reason && note.contains(&format!("Node {node}"))),
                "no {reason} Event names {node}: {notes:?}"
            );
        }
    }
    assert!(notes.iter().any(|(_, r, note)| r == "PhaseChanged" && note.starts_with("Completed")), "{notes:?}");

    // At most one node in flight at any moment the status showed.
    for (_, seen) in timeline.events() {
        if let Seen::Status { in_flight, .. } = seen {
            assert!(in_flight <= 1, "{in_flight} nodes in flight with concurrency 1");
        }
    }

    // Per node: gate Jobs of both rules completed before the labels were removed; cleanup Jobs started after the
    // node reached the version.
    let jobs = setup.jobs().await?;
    for node in FIVE_WORKERS {
        let released = timeline.released(node).map(second);
        let upgraded = timeline.reached(node, NEW).map(second).expect("node reached the version");
        let node_jobs: Vec<_> = jobs
            .iter()
            .filter(|j| j.annotations().get("openshift-optional.skrzypek.io/node").map(String::as_str) == Some(node))
            .collect();
        let gates: Vec<_> =
            node_jobs.iter().filter(|j| j.labels()["openshift-optional.skrzypek.io/phase"] == "gate").collect();
        let cleanups: Vec<_> =
            node_jobs.iter().filter(|j| j.labels()["openshift-optional.skrzypek.io/phase"] == "cleanup").collect();
        assert_eq!(gates.len(), 2, "{node}: one gate Job per rule");
        assert_eq!(cleanups.len(), 2, "{node}: one cleanup Job per rule");
        for gate in &gates {
            let finished = gate
                .status
                .as_ref()
                .and_then(|s| s.completion_time.as_ref())
                .expect("gate Job completed")
                .0
                .as_second();
            let released = released.expect("labels were removed");
            assert!(
                finished <= released,
                "{node}: gate Job {} completed at {finished}, labels removed at {released}",
                gate.name_any()
            );
        }
        for cleanup in &cleanups {
            let created = cleanup.creation_timestamp().expect("created").0.as_second();
            assert!(
                created >= upgraded,
                "{node}: cleanup Job created at {created} before the node upgraded at {upgraded}"
            );
            assert!(cleanup.status.as_ref().and_then(|s| s.succeeded).unwrap_or(0) >= 1, "cleanup Job succeeded");
        }
        // The environment is added to the template's own and the pods ran away from the node they gate.
        for job in gates.iter().chain(cleanups.iter()) {
            let container = &job.spec.as_ref().unwrap().template.spec.as_ref().unwrap().containers[0];
            let env: BTreeMap<_, _> =
                container.env.iter().flatten().map(|e| (e.name.clone(), e.value.clone().unwrap_or_default())).collect();
            assert_eq!(env["NODE_NAME"], node);
            assert_eq!(env["TARGET_VERSION"], NEW);
            assert_eq!(env["MUTEX_RUN_CONFIG"], "example");
            assert_eq!(env["FROM_TEMPLATE"], "kept");
            assert!(matches!(env["MUTEX_PHASE"].as_str(), "gate" | "cleanup"));
            assert!(matches!(env["MUTEX_RULE"].as_str(), "drain-check" | "backup"));
            let pods = Api::<Pod>::namespaced(setup.client.clone(), &setup.ns)
                .list(&kube::api::ListParams::default().labels(&format!("job-name={}", job.name_any())))
                .await?;
            assert!(!pods.items.is_empty(), "the Job's pod exists");
            for pod in pods {
                let placed = pod.spec.and_then(|s| s.node_name).expect("scheduled");
                assert_ne!(placed, node, "a Job for {node} ran on {node}");
            }
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_two_keeps_two_nodes_in_flight_in_a_stable_order() -> anyhow::Result<()> {
    let mut setup = Setup::new("concurrency", 4).await?;
    setup.check_workers("pairs", job_spec("1s", false), None, json!({"concurrency": 2})).await?;
    let timeline = Timeline::start(&mut setup, "pairs");
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;
    setup.wait_phase("pairs", RunPhase::Completed, ROLLOUT).await?;

    let mut max = 0;
    let mut order = Vec::new();
    for (_, seen) in timeline.events() {
        if let Seen::Status { in_flight, nodes, .. } = seen {
            max = max.max(in_flight);
            for (node, phase) in nodes {
                if phase == NodePhase::Gating && !order.contains(&node) {
                    order.push(node);
                }
            }
        }
    }
    assert!(max <= 2, "{max} nodes in flight with concurrency 2");
    assert_eq!(max, 2, "two nodes were in flight together");
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted, "nodes start in name order");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_version_is_read_from_the_rendered_machine_config_without_node_labels() -> anyhow::Result<()> {
    let mut setup = Setup::new("rendered-version", 2).await?;
    for node in setup.nodes().await? {
        let label = node.labels().get(numo::openshift::RELEASE_VERSION);
        assert_eq!(label, None, "no NFD: {} carries no release-image-version label", node.name_any());
    }
    setup.check_workers("native", job_spec("1s", false), None, json!({"versionSource": "RenderedConfig"})).await?;
    setup.start_operator().await?;
    let idle = setup.wait_phase("native", RunPhase::Idle, Duration::from_secs(60)).await?;
    assert_eq!(idle.status.unwrap_or_default().total_nodes, 2, "both workers are known to run the current version");
    setup.upgrade_cluster(NEW).await?;
    let done = setup.wait_phase("native", RunPhase::Completed, ROLLOUT).await?;
    assert_eq!(done.status.unwrap_or_default().progress.as_deref(), Some("2/2"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nodes_no_target_pool_owns_are_neither_gated_nor_moved_into_the_canary() -> anyhow::Result<()> {
    let mut setup = Setup::new("outsider", 3).await?;
    // A Windows worker: it has the worker role label, but the MCO manages it in no pool.
    let mut windows = numo_testkit::kwok::fake_node("windows-0");
    let labels = windows.metadata.labels.get_or_insert_with(Default::default);
    labels.insert("kubernetes.io/os".into(), "windows".into());
    labels.insert("node-role.kubernetes.io/worker".into(), String::new());
    Api::<k8s_openapi::api::core::v1::Node>::all(setup.client.clone()).create(&Default::default(), &windows).await?;
    // worker-2 belongs to the custom pool "infra", which is not a target: the canary's own selector (workers) would
    // match it too, and the MCO degrades a node matched by two custom pools; the steered canary takes only the nodes
    // numo marked released.
    let infra = numo_testkit::pools::custom("infra", "infra");
    Api::<numo::openshift::MachineConfigPool>::all(setup.client.clone()).create(&Default::default(), &infra).await?;
    let role = json!({"metadata": {"labels": {"node-role.kubernetes.io/infra": ""}}});
    Api::<k8s_openapi::api::core::v1::Node>::all(setup.client.clone())
        .patch("worker-2", &PatchParams::default(), &Patch::Merge(&role))
        .await?;
    let degraded = record_degraded_pools(&mut setup);
    setup.check_workers("scoped", job_spec("1s", false), None, json!({})).await?;
    setup.start_operator().await?;
    let idle = setup.wait_phase("scoped", RunPhase::Idle, Duration::from_secs(60)).await?;
    assert_eq!(idle.status.unwrap_or_default().total_nodes, 2, "neither worker-2 nor windows-0 is a target node");
    setup.upgrade_cluster(NEW).await?;

    let done = setup.wait_phase("scoped", RunPhase::Completed, ROLLOUT).await?;
    assert_eq!(done.status.unwrap_or_default().total_nodes, 2, "neither worker-2 nor windows-0 is a target node");
    for outsider in ["worker-2", "windows-0"] {
        let jobs = setup.jobs().await?;
        assert!(jobs.iter().all(|j| j.annotations()["openshift-optional.skrzypek.io/node"] != outsider), "{outsider}");
    }
    let seen = degraded.lock().map(|d| d.clone()).unwrap_or_default();
    assert!(seen.is_empty(), "pools went Degraded during the rollout: {seen:?}");
    assert!(!setup.pools().await?["infra"].0, "the infra pool was never paused");
    Ok(())
}

/// Records every pool that showed `Degraded=True`, with the condition's message.
fn record_degraded_pools(setup: &mut Setup) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    use futures::StreamExt;
    use kube::runtime::watcher::{self, Event};
    use kube::runtime::WatchStreamExt;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let api = Api::<numo::openshift::MachineConfigPool>::all(setup.client.clone());
    let record = seen.clone();
    setup.world.spawn(async move {
        let events = watcher::watcher(api, watcher::Config::default()).default_backoff();
        futures::pin_mut!(events);
        while let Some(event) = events.next().await {
            let Ok(Event::Apply(pool) | Event::InitApply(pool)) = event else { continue };
            let conditions = pool.status.as_ref().map(|s| s.conditions.clone()).unwrap_or_default();
            for c in conditions.iter().filter(|c| c.type_ == "Degraded" && c.status == "True") {
                if let Ok(mut seen) = record.lock() {
                    seen.push(format!("{}: {}", pool.name_any(), c.message.clone().unwrap_or_default()));
                }
            }
        }
    });
    seen
}
