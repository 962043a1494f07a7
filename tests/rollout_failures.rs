//! The gated rollout against the real kube-apiserver, with the simulated CVO and MCO, when something goes wrong:
//! a failing Job, a node that times out, invalid configurations, two run configs sharing a pool, a delete and a
//! restart in the middle.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use kube::api::{Patch, PatchParams};
use kube::{Api, ResourceExt};
use numo::api::{NodePhase, RunPhase};
use serde_json::json;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_gate_job_holds_the_rollout_until_retried() -> anyhow::Result<()> {
    let mut setup = Setup::new("gate-fails", 2).await?;
    setup.check_workers("held", job_spec("1s", true), None, json!({})).await?;
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
    setup.check_workers("doomed", job_spec("2s", false), None, json!({})).await?;
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
        "spec": {"machineConfigSelector": {"matchLabels": {"machineconfiguration.openshift.io/role": "worker"}},
                 "nodeSelector": {"matchLabels": {"never": ""}}, "paused": true}
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
    setup.check_workers("first", job_spec("2s", false), None, json!({})).await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;
    setup.wait_node_phase("first", "worker-0", NodePhase::Gating).await?;
    setup.run_config("second", &["check"], &["workers"], json!({})).await?;
    // Waiting has other causes too (a rule or target not judged yet): wait for the one this test is about.
    let first = format!("{}/first", setup.ns);
    let in_conflict = format!("Waiting, Conflict=True naming {first}");
    numo_testkit::wait_until(&setup.run_configs(), "second", Duration::from_secs(60), &in_conflict, move |rc| {
        rc.status.as_ref().is_some_and(|s| {
            s.phase == Some(RunPhase::Waiting)
                && numo::conditions::find(&s.conditions, "Conflict")
                    .is_some_and(|c| c.status == "True" && c.message.contains(&first))
        })
    })
    .await?;
    // The waiting run config shares the rule, so its label: it leaves the first one's held nodes alone, and every
    // node is gated.
    let done = setup.wait_phase("first", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.unwrap_or_default();
    assert_eq!(status.completed_nodes, ["worker-0", "worker-1"], "{:?}", status.nodes);
    assert!(status.nodes.iter().all(|e| e.phase != NodePhase::Ungated), "{:?}", status.nodes);
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
    setup.check_workers("sturdy", job_spec("2s", false), Some(job_spec("1s", false)), json!({})).await?;
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
    // Three workers: worker-0 stays cordoned while it updates, so the Jobs gating worker-1 run on worker-2.
    let mut setup = Setup::new("timeout", 3).await?;
    // worker-0's update says nothing for longer than nodeTimeout (a failed one fails at once: tests/turn_edges.rs):
    // its reboot takes 45 s, and it reports the new version only after that.
    let broken = json!({"metadata": {"annotations": {numo_simulator::faults::REBOOT_SECONDS: "45"}}});
    Api::<k8s_openapi::api::core::v1::Node>::all(setup.client.clone())
        .patch("worker-0", &PatchParams::default(), &Patch::Merge(&broken))
        .await?;
    setup.check_workers("bounded", job_spec("1s", false), None, json!({"nodeTimeout": "20s"})).await?;
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

    // Skipped, worker-0 finishes its update in its own pool; the rollout is Completed once the pool is Updated.
    let skip = json!({"metadata": {"annotations": {numo::labels::SKIP_ANNOTATION: "worker-0"}}});
    setup.run_configs().patch("bounded", &PatchParams::default(), &Patch::Merge(&skip)).await?;
    let done = setup.wait_phase("bounded", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.unwrap_or_default();
    assert_eq!(status.skipped_nodes, vec!["worker-0".to_string()]);
    assert_eq!(status.completed_nodes, vec!["worker-1".to_string(), "worker-2".to_string()]);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_node_skipped_by_the_admin_lets_the_rollout_go_on_with_health_checks_on() -> anyhow::Result<()> {
    // The machine-config operator gives up waiting for its degraded pools after 3 s per master (10 min on a real
    // cluster), then says Degraded RequiredPoolsFailed.
    let config = numo_simulator::SimConfig {
        openshift: openshift_release(),
        required_pool_wait_per_machine: Duration::from_secs(3),
        ..Default::default()
    };
    let mut setup = Setup::with_config("skip-with-checks", 3, config).await?;
    let broken = json!({"metadata": {"annotations": {"sim.numo.openshift-optional.skrzypek.io/fail-update": "true"}}});
    Api::<k8s_openapi::api::core::v1::Node>::all(setup.client.clone())
        .patch("worker-0", &PatchParams::default(), &Patch::Merge(&broken))
        .await?;
    setup.rule("check", job_spec("1s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    let spec = json!({"nodeTimeout": "20s", "healthChecks": {"clusterOperators": {"enabled": true},
                      "machineConfigPools": {"enabled": true}, "nodes": {"enabled": true}}});
    setup.run_config("checked", &["check"], &["workers"], spec).await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;
    setup.wait_phase("checked", RunPhase::Failed, ROLLOUT).await?;

    // The admin skips it: its pool stays degraded (the daemon keeps failing), and the health checks leave that out.
    let skip = json!({"metadata": {"annotations": {numo::labels::SKIP_ANNOTATION: "worker-0"}}});
    setup.run_configs().patch("checked", &PatchParams::default(), &Patch::Merge(&skip)).await?;
    numo_testkit::wait_until(
        &setup.run_configs(),
        "checked",
        ROLLOUT,
        "ReadyForNextNode=True, the health checks saying what they leave out",
        |rc| {
            rc.status.as_ref().is_some_and(|s| {
                numo::conditions::find(&s.conditions, "ReadyForNextNode").is_some_and(|c| {
                    c.status == "True"
                        && c.message.contains("MachineConfigPool worker is degraded while node worker-0")
                        && c.message.contains("which an admin skipped")
                })
            })
        },
    )
    .await?;
    // The rollout is not Completed while worker-0 keeps `worker` from Updated: it says so.
    numo_testkit::wait_until(&setup.run_configs(), "checked", ROLLOUT, "waiting for worker", |rc| {
        rc.status.as_ref().is_some_and(|s| {
            s.phase == Some(RunPhase::Restoring)
                && numo::conditions::find(&s.conditions, "NodeUpgrade")
                    .is_some_and(|c| c.reason == "SkippedNodeNotUpdated" && c.message.contains("worker-0 (skipped)"))
        })
    })
    .await?;
    // The admin fixes it: the daemon retries, worker-0 updates in its restored pool, and the rollout completes.
    let fixed = json!({"metadata": {"annotations": {numo_simulator::faults::FAIL_UPDATE: null}}});
    Api::<k8s_openapi::api::core::v1::Node>::all(setup.client.clone())
        .patch("worker-0", &PatchParams::default(), &Patch::Merge(&fixed))
        .await?;
    let done = setup.wait_phase("checked", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.unwrap_or_default();
    assert_eq!(status.skipped_nodes, vec!["worker-0".to_string()]);
    assert_eq!(status.completed_nodes, vec!["worker-1".to_string(), "worker-2".to_string()]);
    Ok(())
}
