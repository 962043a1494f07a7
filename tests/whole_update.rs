//! The whole update as admins run it: a new release asked for while a rollout runs (a z-stream fix during a long
//! rollout) is an ordinary event. The node in its gated turn goes on to the newest release inside it and counts as
//! gated; nodes done at the older release get a gated turn of their own; the rest go straight to the newest release,
//! one reboot each; the rollout completes at the newest release and says what happened.

mod support;

use std::time::{Duration, SystemTime};

use kube::ResourceExt;
use numo::api::{NodePhase, RunPhase};
use serde_json::json;
use support::*;

const NEWEST: &str = "4.16.6";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_z_stream_update_asked_for_mid_rollout_completes_at_the_newest_release_with_every_node_gated(
) -> anyhow::Result<()> {
    let mut setup = Setup::new("retarget", 3).await?;
    setup.check_workers("rolling", job_spec("2s", false), Some(job_spec("1s", false)), json!({})).await?;
    // Every node entry of every status numo wrote.
    let entries = setup.record_statuses("rolling", |status| status.nodes);
    let foreign = setup.record_statuses("rolling", |status| status.foreign_changes);
    setup.start_operator().await?;
    setup.wait_phase("rolling", RunPhase::Idle, Duration::from_secs(60)).await?;
    let started = SystemTime::now();
    setup.upgrade_cluster(NEW).await?;
    // worker-1 is in its gated turn (its gate Jobs ran, it is released) when the fix is asked for.
    setup.wait_node_phase("rolling", "worker-1", NodePhase::Upgrading).await?;
    setup.upgrade_cluster(NEWEST).await?;
    let done = setup.wait_phase("rolling", RunPhase::Completed, ROLLOUT).await?;

    let status = done.status.unwrap_or_default();
    assert_eq!(status.target_version.as_deref(), Some(NEWEST));
    assert_eq!(status.progress.as_deref(), Some("3/3"));
    let change = status.target_changes.first().expect("the change of target is in the status");
    assert_eq!((change.from.as_str(), change.to.as_str()), (NEW, NEWEST));
    assert!(change.in_flight.contains(&"worker-1".to_string()), "{change:?}");
    let seen = entries.lock().map(|s| s.clone()).unwrap_or_default();
    let ungated_or_failed: Vec<_> = seen
        .iter()
        .filter(|e| matches!(e.phase, NodePhase::Ungated | NodePhase::Failed))
        .map(|e| (e.name.clone(), e.phase, e.message.clone()))
        .collect();
    assert!(ungated_or_failed.is_empty(), "a node was Ungated or Failed: {ungated_or_failed:?}");
    let told = |notes: &[(String, String, String)]| {
        notes.iter().any(|(_, reason, note)| reason == "TargetChanged" && note.contains(NEWEST))
    };
    let notes = setup.events_when("rolling", told).await?;
    assert!(told(&notes), "{notes:?}");
    // Only numo and the daemon wrote the nodes' labels: none of numo's own writes is reported as someone else's.
    let foreign_notes: Vec<_> = notes.iter().filter(|(_, reason, _)| reason == "ForeignChange").collect();
    assert!(foreign_notes.is_empty(), "{foreign_notes:?}");
    let foreign = foreign.lock().map(|f| f.clone()).unwrap_or_default();
    assert!(foreign.is_empty(), "{foreign:?}");

    let versions = setup.node_versions().await?;
    for node in ["worker-0", "worker-1", "worker-2"] {
        assert_eq!(versions[node].as_deref(), Some(NEWEST), "{node}");
    }
    // worker-1's gate Jobs ran once; worker-2, not started before the change, rebooted once, straight to the newest.
    let jobs = setup.jobs().await?;
    let gates = |node: &str| {
        jobs.iter()
            .filter(|j| j.labels().get("openshift-optional.skrzypek.io/node").map(String::as_str) == Some(node))
            .filter(|j| j.labels().get("openshift-optional.skrzypek.io/phase").map(String::as_str) == Some("gate"))
            .count()
    };
    assert_eq!(gates("worker-1"), 1, "worker-1's gate Jobs ran once");
    assert_eq!(gates("worker-2"), 1);
    assert_eq!(gates("worker-0"), 2, "done at {NEW}, worker-0 had a gated turn for {NEWEST} too");
    let reboots = setup.world.simulator().expect("the simulator runs").reboots();
    let during = |node: &str| reboots.get(node).into_iter().flatten().filter(|r| r.at >= started).count();
    assert_eq!(during("worker-2"), 1, "worker-2 went straight to {NEWEST}");
    Ok(())
}

/// OpenShift's EUS-to-EUS (Control Plane Only) procedure done literally: the admin pauses the worker pool, updates
/// the control plane twice, then lets the workers go. With numo's admission policy in force the admin's unpause is
/// refused with a message that says to give numo the go-ahead instead; without it, the unpause is the go-ahead.
async fn eus_to_eus(test: &str, policy: bool) -> anyhow::Result<()> {
    use kube::api::{Patch, PatchParams};
    use kube::Api;
    use numo::openshift::MachineConfigPool;

    let mut setup = Setup::new(test, 2).await?;
    setup.policy = policy;
    let pools: Api<MachineConfigPool> = Api::all(setup.client.clone());
    let pause = |paused: bool| json!({"spec": {"paused": paused}});
    pools.patch("worker", &PatchParams::default(), &Patch::Merge(&pause(true))).await?;
    setup.check_workers("eus", job_spec("1s", false), Some(job_spec("1s", false)), json!({})).await?;
    setup.start_operator().await?;
    setup.wait_phase("eus", RunPhase::Idle, Duration::from_secs(60)).await?;
    let started = SystemTime::now();
    for hop in ["4.17.0", "4.18.0"] {
        setup.upgrade_cluster(hop).await?;
        let what = "held by the admin's pause, saying how to give the go-ahead";
        numo_testkit::wait_until(&setup.run_configs(), "eus", ROLLOUT, what, |rc| {
            rc.status.as_ref().is_some_and(|s| {
                s.target_version.as_deref() == Some(hop)
                    && s.blocked_by.iter().any(|b| {
                        b.check == "AdminHold" && b.message.contains("openshift-optional.skrzypek.io/go-ahead=worker")
                    })
            })
        })
        .await?;
        assert!(setup.jobs().await?.is_empty(), "no worker is gated towards {hop} while the admin holds the pool");
    }
    // At an even minor, workers two minors behind would be three behind after the next minor: the kube-apiserver
    // operator refuses it, and numo says the next minor update waits for its workers.
    let next_minor = "held by kubelet skew, as the kube-apiserver operator says";
    numo_testkit::wait_until(&setup.run_configs(), "eus", ROLLOUT, next_minor, |rc| {
        let conditions = rc.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
        numo::conditions::find(conditions, "NextMinorUpdateHeld")
            .is_some_and(|c| c.status == "True" && c.message.contains("KubeletMinorVersionUnsupportedNextUpgrade"))
    })
    .await?;

    // The admin's last step (where numo's policy is in force: once the API server enforces it).
    if policy {
        let dry_run = PatchParams { dry_run: true, ..Default::default() };
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while pools.patch("worker", &dry_run, &Patch::Merge(&pause(false))).await.is_ok() {
            anyhow::ensure!(tokio::time::Instant::now() < deadline, "numo's policy is not in force");
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
    let unpaused = pools.patch("worker", &PatchParams::default(), &Patch::Merge(&pause(false))).await;
    if policy {
        let refused = unpaused.expect_err("numo's policy refuses the unpause of a pool it holds");
        assert!(refused.to_string().contains("openshift-optional.skrzypek.io/go-ahead=worker"), "{refused}");
        let go_ahead = json!({"metadata": {"annotations": {numo::labels::GO_AHEAD_ANNOTATION: "worker"}}});
        setup.run_configs().patch("eus", &PatchParams::default(), &Patch::Merge(&go_ahead)).await?;
    } else {
        unpaused?;
    }
    let done = setup.wait_phase("eus", RunPhase::Completed, ROLLOUT).await?;
    assert_eq!(done.status.clone().unwrap_or_default().target_version.as_deref(), Some("4.18.0"));
    let versions = setup.node_versions().await?;
    let reboots = setup.world.simulator().expect("the simulator runs").reboots();
    for node in ["worker-0", "worker-1"] {
        assert_eq!(versions[node].as_deref(), Some("4.18.0"), "{node}");
        let during: Vec<_> = reboots.get(node).into_iter().flatten().filter(|r| r.at >= started).collect();
        assert_eq!(during.len(), 1, "{node} rebooted once, straight to the final release: {during:?}");
    }
    let jobs = setup.jobs().await?;
    assert!(
        jobs.iter()
            .all(|j| j.labels().get("openshift-optional.skrzypek.io/target-version").map(String::as_str)
                == Some("4.18.0"))
    );
    assert_eq!(
        jobs.iter()
            .filter(|j| j.labels().get("openshift-optional.skrzypek.io/phase").map(String::as_str) == Some("gate"))
            .count(),
        2
    );
    assert!(!pools.get("worker").await?.spec.paused, "the admin's unpause is kept at the end");
    let said = done.status.unwrap_or_default().conditions;
    let next_minor = numo::conditions::find(&said, "NextMinorUpdateHeld").expect("stated");
    assert_eq!(next_minor.status, "False", "{}", next_minor.message);
    let operators: Api<numo::openshift::ClusterOperator> = Api::all(setup.client.clone());
    let synced = "the kube-apiserver operator allows the next minor update again";
    numo_testkit::wait_until(&operators, "kube-apiserver", Duration::from_secs(60), synced, |co| {
        co.status.as_ref().and_then(|s| s.condition("Upgradeable")).is_some_and(|c| c.status == "True")
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eus_to_eus_done_literally_with_numos_policy_gates_every_worker_once_to_the_final_release() -> anyhow::Result<()>
{
    eus_to_eus("eus-policy", true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eus_to_eus_done_literally_without_the_policy_gates_every_worker_once_to_the_final_release(
) -> anyhow::Result<()> {
    eus_to_eus("eus-no-policy", false).await
}
