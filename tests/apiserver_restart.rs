//! The kube-apiserver killed and started again in the middle of a rollout: numo's watches list again on their own,
//! `/readyz` says not ready while they fail and ready once they are back, and the rollout goes on from what happened
//! meanwhile, with nothing done twice.

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use kube::ResourceExt;
use numo::api::{NodePhase, RunPhase};
use serde_json::json;
use support::*;
use tokio::sync::watch;

/// How long the apiserver stays down: longer than any watch's patience, as in the outage this test replays.
const OUTAGE: Duration = Duration::from_secs(20);
/// How long readiness may take to follow the watches (generous: the machine is shared).
const READINESS: Duration = Duration::from_secs(60);
/// How long after the apiserver's return numo may take to see what happened meanwhile. numo's watches retry every
/// few seconds; with kube's back-offs (the controller's on top of each watch's) the Job was not seen after 400 s.
const CATCH_UP: Duration = Duration::from_secs(60);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_goes_on_after_an_apiserver_restart_and_readyz_reports_the_outage() -> anyhow::Result<()> {
    let mut setup = Setup::new("apiserver-restart", 3).await?;
    // The gate Job's pod runs 3s: it finishes while the apiserver is down.
    setup.rule("check", job_spec("3s", false), Some(job_spec("1s", false))).await?;
    setup.target("workers", &["worker"]).await?;
    // No nodeTimeout: nothing but the Jobs' own completion may move a node on.
    setup.run_config("steady", &["check"], &["workers"], json!({})).await?;
    let before = setup.pools().await?;
    setup.start_operator().await?;
    let mut ready = setup.readiness.subscribe();
    wait_readiness(&mut ready, true, "ready before the restart").await?;
    setup.upgrade_cluster(NEW).await?;
    setup.wait_node_phase("steady", "worker-0", NodePhase::Gating).await?;

    let cluster = numo_testkit::cluster().await?;
    let down = cluster.stop_apiserver().await?;
    wait_readiness(&mut ready, false, "not ready while the apiserver is down").await?;
    let report = setup.readiness.report();
    assert!(report.contains("watches failing"), "/readyz says why: {report}");
    tokio::time::sleep(OUTAGE).await;
    down.start().await?;
    wait_readiness(&mut ready, true, "ready again once the watches listed again").await?;

    // The gate Job completed around the restart: the status shows worker-0 past its gate soon after.
    numo_testkit::wait_until(
        &setup.run_configs(),
        "steady",
        CATCH_UP,
        "worker-0 past its gate",
        |rc: &numo::api::MutexRunConfig| {
            rc.status.as_ref().is_some_and(|s| {
                s.nodes
                    .iter()
                    .any(|e| e.name == "worker-0" && !matches!(e.phase, NodePhase::Pending | NodePhase::Gating))
            })
        },
    )
    .await?;
    let done = setup.wait_phase("steady", RunPhase::Completed, ROLLOUT).await?;

    let status = done.status.unwrap_or_default();
    assert_eq!(status.completed_nodes, ["worker-0", "worker-1", "worker-2"], "every node done");
    assert_eq!(status.progress.as_deref(), Some("3/3"));
    assert!(status.skipped_nodes.is_empty(), "no node skipped: {:?}", status.skipped_nodes);
    let mut jobs_per_step: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    for job in setup.jobs().await? {
        let node = job.annotations().get(numo::labels::JOB_NODE).cloned().unwrap_or_default();
        let label = |key: &str| job.labels().get(key).cloned().unwrap_or_default();
        let step = (node, label(numo::labels::JOB_RULE), label(numo::labels::JOB_PHASE));
        *jobs_per_step.entry(step).or_default() += 1;
    }
    assert_eq!(jobs_per_step.len(), 6, "a gate and a cleanup Job per node: {jobs_per_step:?}");
    assert!(jobs_per_step.values().all(|count| *count == 1), "a Job created twice: {jobs_per_step:?}");
    assert_eq!(setup.pools().await?, before, "pools restored exactly");
    Ok(())
}

/// Waits until readiness is `wanted`, failing after [`READINESS`].
async fn wait_readiness(ready: &mut watch::Receiver<bool>, wanted: bool, what: &str) -> anyhow::Result<()> {
    match tokio::time::timeout(READINESS, ready.wait_for(|ready| *ready == wanted)).await {
        Ok(Ok(_)) => Ok(()),
        Ok(Err(_)) => anyhow::bail!("readiness stopped being reported while waiting for: {what}"),
        Err(_) => anyhow::bail!("timed out after {READINESS:?} waiting for readiness: {what}"),
    }
}
