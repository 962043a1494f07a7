//! The gated rollout against the real kube-apiserver, with the simulated CVO and MCO: what an admin would see.

mod support;

use std::collections::{BTreeMap, BTreeSet};
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
    assert!(!notes.iter().any(|(kind, ..)| kind == "Warning"), "a Warning in a clean rollout: {notes:?}");
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
    setup.rule("check", job_spec("1s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    setup.run_config("pairs", &["check"], &["workers"], json!({"concurrency": 2})).await?;
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
async fn a_failing_gate_job_holds_the_rollout_until_retried() -> anyhow::Result<()> {
    let mut setup = Setup::new("gate-fails", 2).await?;
    setup.rule("check", job_spec("1s", true), None).await?;
    setup.target("workers", &["worker"]).await?;
    setup.run_config("held", &["check"], &["workers"], json!({})).await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    let failed = setup.wait_phase("held", RunPhase::Failed, ROLLOUT).await?;
    let status = failed.status.clone().unwrap_or_default();
    let entry = status.nodes.iter().find(|e| e.name == "worker-0").expect("worker-0 entry");
    assert_eq!(entry.phase, NodePhase::Failed);
    let condition = status.conditions.iter().find(|c| c.type_ == "NodeUpgrade").expect("NodeUpgrade");
    assert_eq!(condition.status, "False");
    assert!(condition.message.contains("failed"), "{}", condition.message);
    assert!(status.message.as_deref().unwrap_or_default().contains(numo::labels::RETRY_ANNOTATION));
    let pools = setup.pools().await?;
    assert!(pools["worker"].0, "the target pool stays paused");
    assert!(
        setup.jobs().await?.iter().all(|j| j.annotations()["openshift-optional.skrzypek.io/node"] == "worker-0"),
        "no other node started"
    );
    let failed = |events: &[(String, String, String)]| {
        events.iter().any(|(kind, reason, _)| reason == "NodeFailed" && kind == "Warning")
    };
    let events = setup.events_when("held", failed).await?;
    assert!(failed(&events), "a Warning Event says why: {events:?}");

    // The admin fixes the rule and asks for a retry: the node goes on and the rollout completes.
    let mut fixed = json!({"spec": {"jobSpec": job_spec("1s", false)}});
    // A merge patch keeps keys it does not name: the failing annotation is removed explicitly.
    fixed["spec"]["jobSpec"]["template"]["metadata"]["annotations"]
        ["sim.numo.openshift-optional.skrzypek.io/job-result"] = serde_json::Value::Null;
    Api::<numo::api::MutexRule>::namespaced(setup.client.clone(), &setup.ns)
        .patch("check", &PatchParams::default(), &Patch::Merge(&fixed))
        .await?;
    let retry = json!({"metadata": {"annotations": {numo::labels::RETRY_ANNOTATION: "worker-0"}}});
    setup.run_configs().patch("held", &PatchParams::default(), &Patch::Merge(&retry)).await?;
    let done = setup.wait_phase("held", RunPhase::Completed, ROLLOUT).await?;
    assert!(!done.annotations().contains_key(numo::labels::RETRY_ANNOTATION), "the retry annotation was consumed");
    let attempts: BTreeSet<String> = setup
        .jobs()
        .await?
        .iter()
        .filter(|j| j.annotations()["openshift-optional.skrzypek.io/node"] == "worker-0")
        .map(|j| j.labels()["openshift-optional.skrzypek.io/attempt"].clone())
        .collect();
    assert_eq!(attempts, BTreeSet::from(["1".to_string(), "2".to_string()]));
    assert!(!setup.pools().await?["worker"].0, "unpaused at the end");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_run_config_mid_rollout_restores_everything() -> anyhow::Result<()> {
    let mut setup = Setup::new("delete-mid", 3).await?;
    setup.rule("check", job_spec("2s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    setup.run_config("doomed", &["check"], &["workers"], json!({})).await?;
    let before = setup.pools().await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;
    setup.wait_node_phase("doomed", "worker-0", NodePhase::Gating).await?;

    let uid = setup.run_configs().get("doomed").await?.uid().unwrap_or_default();
    setup.run_configs().delete("doomed", &Default::default()).await?;
    let gone = kube::runtime::wait::await_condition(
        setup.run_configs(),
        "doomed",
        kube::runtime::wait::conditions::is_deleted(&uid),
    );
    tokio::time::timeout(ROLLOUT, gone).await??;
    assert_eq!(setup.pools().await?, before, "pools restored exactly");
    for node in setup.nodes().await? {
        assert!(
            !node.labels().keys().any(|k| k.starts_with(numo::labels::RULE_LABEL_PREFIX)),
            "{} still held",
            node.name_any()
        );
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_configurations_are_reported_and_change_nothing() -> anyhow::Result<()> {
    let mut setup = Setup::new("invalid", 2).await?;
    setup.rule("check", job_spec("1s", false), None).await?;
    setup.rule("elsewhere", job_spec("1s", false), None).await?;
    let elsewhere = json!({"spec": {"jobNamespace": "kube-system"}});
    Api::<numo::api::MutexRule>::namespaced(setup.client.clone(), &setup.ns)
        .patch("elsewhere", &PatchParams::default(), &Patch::Merge(&elsewhere))
        .await?;
    setup.target("workers", &["worker"]).await?;
    setup.target("ghost-pool", &["does-not-exist"]).await?;
    setup.target("canary-target", &["canary"]).await?;
    setup.run_config("missing-rule", &["nope"], &["workers"], json!({})).await?;
    setup.run_config("not-allowed", &["elsewhere"], &["workers"], json!({})).await?;
    setup.run_config("no-pool", &["check"], &["ghost-pool"], json!({})).await?;
    setup.run_config("canary-is-target", &["check"], &["canary-target"], json!({})).await?;
    let mut paused_canary = serde_json::from_value::<numo::openshift::MachineConfigPool>(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": "paused-canary"},
        "spec": {"nodeSelector": {"matchLabels": {"never": ""}}, "paused": true}
    }))?;
    paused_canary.metadata.namespace = None;
    Api::<numo::openshift::MachineConfigPool>::all(setup.client.clone())
        .create(&Default::default(), &paused_canary)
        .await?;
    setup.run_config("paused-canary", &["check"], &["workers"], json!({"canary": {"name": "paused-canary"}})).await?;
    let before = setup.pools().await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    for (name, expected) in [
        ("missing-rule", "not found"),
        ("not-allowed", "allow"),
        ("no-pool", "does-not-exist"),
        ("canary-is-target", "also a target pool"),
        ("paused-canary", "is paused"),
    ] {
        // A run config is Invalid at once while its rule is not validated yet; wait for the message to settle.
        let rc = numo_testkit::wait_until(
            &setup.run_configs(),
            name,
            Duration::from_secs(60),
            &format!("Invalid naming {expected:?}"),
            move |rc: &numo::api::MutexRunConfig| {
                let status = rc.status.clone().unwrap_or_default();
                status.phase == Some(RunPhase::Invalid)
                    && status.conditions.iter().any(|c| c.type_ == "ConfigValidated" && c.message.contains(expected))
            },
        )
        .await?;
        let condition = rc
            .status
            .unwrap_or_default()
            .conditions
            .into_iter()
            .find(|c| c.type_ == "ConfigValidated")
            .expect("ConfigValidated");
        assert_eq!(condition.status, "False", "{name}");
        assert!(condition.message.contains(expected), "{name}: {}", condition.message);
    }
    // Give the simulator's control plane time to finish, then check nothing numo owns was touched.
    let cv = Api::<numo::openshift::ClusterVersion>::all(setup.client.clone());
    numo_testkit::wait_until(
        &cv,
        "version",
        ROLLOUT,
        "control plane completed",
        |cv: &numo::openshift::ClusterVersion| cv.control_plane_completed(NEW),
    )
    .await?;
    let after = setup.pools().await?;
    for (name, state) in &before {
        if name != "master" {
            assert_eq!(after.get(name), Some(state), "pool {name} changed");
        }
    }
    assert!(setup.jobs().await?.is_empty(), "no Job was created");
    for node in setup.nodes().await? {
        assert!(!node.labels().keys().any(|k| k.starts_with(numo::labels::RULE_LABEL_PREFIX)));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_run_configs_sharing_a_pool_take_turns() -> anyhow::Result<()> {
    let mut setup = Setup::new("shared-pool", 2).await?;
    setup.rule("check", job_spec("2s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    setup.run_config("first", &["check"], &["workers"], json!({})).await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;
    setup.wait_node_phase("first", "worker-0", NodePhase::Gating).await?;
    setup.run_config("second", &["check"], &["workers"], json!({})).await?;
    let waiting = setup.wait_phase("second", RunPhase::Waiting, Duration::from_secs(60)).await?;
    let conflict =
        waiting.status.unwrap_or_default().conditions.into_iter().find(|c| c.type_ == "Conflict").expect("Conflict");
    assert_eq!(conflict.status, "True");
    assert!(conflict.message.contains(&format!("{}/first", setup.ns)), "{}", conflict.message);
    setup.wait_phase("first", RunPhase::Completed, ROLLOUT).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_operator_resumes_without_duplicates_or_skips() -> anyhow::Result<()> {
    restarted_operator("restart", Nfd::Off).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_operator_resumes_without_duplicates_or_skips_with_nfd_labels() -> anyhow::Result<()> {
    restarted_operator("restart-nfd", Nfd::On).await
}

async fn restarted_operator(test: &str, nfd: Nfd) -> anyhow::Result<()> {
    let mut setup = Setup::with(test, 3, nfd).await?;
    setup.rule("check", job_spec("2s", false), Some(job_spec("1s", false))).await?;
    setup.target("workers", &["worker"]).await?;
    setup.run_config("sturdy", &["check"], &["workers"], json!({})).await?;
    let before = setup.pools().await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    // Between Job creation and completion.
    setup.wait_node_phase("sturdy", "worker-0", NodePhase::Gating).await?;
    setup.kill_operator();
    setup.start_operator().await?;
    // Right after the labels were removed.
    setup.wait_node_phase("sturdy", "worker-1", NodePhase::Upgrading).await?;
    setup.kill_operator();
    setup.start_operator().await?;
    // During the restore (or, if the watch missed that short phase, right after it).
    numo_testkit::wait_until(
        &setup.run_configs(),
        "sturdy",
        ROLLOUT,
        "phase Restoring",
        |rc: &numo::api::MutexRunConfig| {
            matches!(rc.status.as_ref().and_then(|s| s.phase), Some(RunPhase::Restoring | RunPhase::Completed))
        },
    )
    .await?;
    setup.kill_operator();
    setup.start_operator().await?;
    setup.wait_phase("sturdy", RunPhase::Completed, ROLLOUT).await?;

    let jobs = setup.jobs().await?;
    for node in ["worker-0", "worker-1", "worker-2"] {
        let per_phase: Vec<_> = jobs
            .iter()
            .filter(|j| j.annotations()["openshift-optional.skrzypek.io/node"] == node)
            .map(|j| j.labels()["openshift-optional.skrzypek.io/phase"].clone())
            .collect();
        assert_eq!(per_phase.iter().filter(|p| *p == "gate").count(), 1, "{node}: exactly one gate Job");
        assert_eq!(per_phase.iter().filter(|p| *p == "cleanup").count(), 1, "{node}: exactly one cleanup Job");
    }
    assert_eq!(setup.pools().await?, before);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_never_reaches_the_version_times_out_and_can_be_skipped() -> anyhow::Result<()> {
    // Three workers: worker-0 stays cordoned after its failed update, so the Jobs gating worker-1 run on worker-2.
    let mut setup = Setup::new("timeout", 3).await?;
    // The simulated MCO fails to update worker-0: it never reports the new version.
    let broken = json!({"metadata": {"annotations": {"sim.numo.openshift-optional.skrzypek.io/fail-update": "true"}}});
    Api::<k8s_openapi::api::core::v1::Node>::all(setup.client.clone())
        .patch("worker-0", &PatchParams::default(), &Patch::Merge(&broken))
        .await?;
    setup.rule("check", job_spec("1s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    setup.run_config("bounded", &["check"], &["workers"], json!({"nodeTimeout": "20s"})).await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    let failed = setup.wait_phase("bounded", RunPhase::Failed, ROLLOUT).await?;
    let status = failed.status.clone().unwrap_or_default();
    let condition = status.conditions.iter().find(|c| c.type_ == "NodeUpgrade").expect("NodeUpgrade");
    assert_eq!(condition.reason, "NodeTimedOut");
    assert!(condition.message.contains("worker-0") && condition.message.contains("20s"), "{}", condition.message);
    assert!(setup.pools().await?["worker"].0, "the target pool stays paused");
    let worker1 = setup.nodes().await?.into_iter().find(|n| n.name_any() == "worker-1").expect("worker-1");
    assert!(
        worker1.labels().keys().any(|k| k.starts_with(numo::labels::RULE_LABEL_PREFIX)),
        "worker-1 is still held: nothing after the failed node started"
    );

    let skip = json!({"metadata": {"annotations": {numo::labels::SKIP_ANNOTATION: "worker-0"}}});
    setup.run_configs().patch("bounded", &PatchParams::default(), &Patch::Merge(&skip)).await?;
    let done = setup.wait_phase("bounded", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.unwrap_or_default();
    assert_eq!(status.skipped_nodes, vec!["worker-0".to_string()]);
    assert_eq!(status.completed_nodes, vec!["worker-1".to_string(), "worker-2".to_string()]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_version_is_read_from_the_rendered_machine_config_without_node_labels() -> anyhow::Result<()> {
    let mut setup = Setup::new("rendered-version", 2).await?;
    for node in setup.nodes().await? {
        let label = node.labels().get(numo::openshift::RELEASE_VERSION);
        assert_eq!(label, None, "no NFD: {} carries no release-image-version label", node.name_any());
    }
    setup.rule("check", job_spec("1s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    setup.run_config("native", &["check"], &["workers"], json!({"versionSource": "RenderedConfig"})).await?;
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
    // worker-2 belongs to the custom pool "infra", which is not a target: the steered canary (workers without the
    // rule labels) would match it too, and the MCO degrades a node matched by two custom pools.
    let infra: numo::openshift::MachineConfigPool = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": "infra"},
        "spec": {
            "machineConfigSelector": {"matchExpressions": [{"key": "machineconfiguration.openshift.io/role",
                "operator": "In", "values": ["worker", "infra"]}]},
            "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/infra": ""}},
            "paused": false
        }
    }))?;
    Api::<numo::openshift::MachineConfigPool>::all(setup.client.clone()).create(&Default::default(), &infra).await?;
    let role = json!({"metadata": {"labels": {"node-role.kubernetes.io/infra": ""}}});
    Api::<k8s_openapi::api::core::v1::Node>::all(setup.client.clone())
        .patch("worker-2", &PatchParams::default(), &Patch::Merge(&role))
        .await?;
    let degraded = record_degraded_pools(&mut setup);
    setup.rule("check", job_spec("1s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    setup.run_config("scoped", &["check"], &["workers"], json!({})).await?;
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
