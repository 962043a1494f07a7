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
    setup.rule("check", job_spec("2s", false), Some(job_spec("1s", false))).await?;
    setup.target("workers", &["worker"]).await?;
    setup.run_config("rolling", &["check"], &["workers"], json!({})).await?;
    // Every node entry of every status numo wrote.
    let entries = setup.record_statuses("rolling", |status| status.nodes);
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
    let notes = setup.events_about("rolling").await?;
    assert!(notes.iter().any(|(_, reason, note)| reason == "TargetChanged" && note.contains(NEWEST)), "{notes:?}");

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
