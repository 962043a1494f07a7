//! The edges of a node's turn, on the simulated OpenShift with numo as installed (`hack/test.sh` runs them as the
//! newest release and again as the oldest, 4.16): a new release asked for while a node cleans up gives that node a
//! gated turn of its own, and every reboot of every node happens inside one of its gated turns; a failed update
//! fails its node at once, with no `nodeTimeout`; after the admin skips it, `Completed` waits until every target
//! pool is Updated, and the status says what holds it.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use kube::ResourceExt;
use numo::api::{NodePhase, RunPhase};
use serde_json::json;
use support::*;

const NEWEST: &str = "4.16.6";

/// A Job's label `key`.
fn label<'a>(job: &'a Job, key: &str) -> Option<&'a str> {
    job.labels().get(key).map(String::as_str)
}

/// When a Kubernetes time was, as a `SystemTime` (the API keeps whole seconds).
fn at(time: &k8s_openapi::apimachinery::pkg::apis::meta::v1::Time) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(time.0.as_second().max(0) as u64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_release_asked_for_while_a_node_cleans_up_gives_it_a_gated_turn_and_no_reboot_falls_outside_one(
) -> anyhow::Result<()> {
    let mut setup = Setup::new("cleanup-retarget", 2).await?;
    // The reference's cleanup takes its time (`sleep 30`): the new release comes while it runs.
    setup.check_workers("rolling", job_spec("1s", false), Some(job_spec("12s", false)), json!({})).await?;
    let foreign = setup.record_statuses("rolling", |status| status.foreign_changes);
    setup.start_operator().await?;
    setup.wait_phase("rolling", RunPhase::Idle, Duration::from_secs(60)).await?;
    let started = SystemTime::now();
    setup.upgrade_cluster(NEW).await?;
    cleanup_started(&setup, "worker-0").await?;
    // The canary renders the new release while worker-0's cleanup Job runs.
    setup.upgrade_cluster(NEWEST).await?;
    let done = setup.wait_phase("rolling", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.unwrap_or_default();
    assert_eq!(status.target_version.as_deref(), Some(NEWEST));
    assert_eq!(status.progress.as_deref(), Some("2/2"));

    let versions = setup.node_versions().await?;
    let jobs = setup.jobs().await?;
    let reboots = setup.world.simulator().expect("the simulator runs").reboots();
    for node in ["worker-0", "worker-1"] {
        assert_eq!(versions[node].as_deref(), Some(NEWEST), "{node}");
        let of = |phase: &str| -> Vec<&Job> {
            let mut of: Vec<&Job> = jobs
                .iter()
                .filter(|j| label(j, "openshift-optional.skrzypek.io/node") == Some(node))
                .filter(|j| label(j, "openshift-optional.skrzypek.io/phase") == Some(phase))
                .collect();
            of.sort_by_key(|j| j.creation_timestamp().map(|t| t.0));
            of
        };
        let (gates, cleanups) = (of("gate"), of("cleanup"));
        let rebooted: Vec<SystemTime> =
            reboots.get(node).into_iter().flatten().filter(|r| r.at >= started).map(|r| r.at).collect();
        // One gated turn per reboot: gate Jobs before it, a cleanup after it.
        assert_eq!(rebooted.len(), gates.len(), "{node}: reboots {rebooted:?}, gate Jobs {}", gates.len());
        assert_eq!(cleanups.len(), gates.len(), "{node}: one cleanup per turn");
        for (reboot, (gate, cleanup)) in rebooted.iter().zip(gates.iter().zip(&cleanups)) {
            let gated = gate.status.as_ref().and_then(|s| s.completion_time.as_ref()).map(at);
            assert!(gated.is_some_and(|g| g <= *reboot), "{node} rebooted before its gate Job ended");
            let cleaned = cleanup.creation_timestamp().map(|t| at(&t) + Duration::from_secs(1));
            assert!(cleaned.is_some_and(|c| *reboot < c), "{node} rebooted after its cleanup Job started");
        }
        // No reboot while any of its cleanup Jobs ran (whole seconds, as the apiserver stamps them: 1 s of slack).
        for cleanup in &cleanups {
            let from = cleanup.creation_timestamp().map(|t| at(&t) + Duration::from_secs(1));
            let to = cleanup.status.as_ref().and_then(|s| s.completion_time.as_ref()).map(at);
            let during: Vec<&SystemTime> =
                rebooted.iter().filter(|r| from.is_some_and(|f| **r > f) && to.is_none_or(|t| **r < t)).collect();
            assert!(during.is_empty(), "{node} rebooted while its cleanup Job {} ran: {during:?}", cleanup.name_any());
        }
        // Its last turn cleaned up at the release it runs.
        let last = cleanups.last().and_then(|j| j.annotations().get(numo::jobs::VERSION_ANNOTATION).cloned());
        assert_eq!(last.as_deref(), Some(NEWEST), "{node}");
    }
    let foreign = foreign.lock().map(|f| f.clone()).unwrap_or_default();
    assert!(foreign.is_empty(), "numo's own writes reported as foreign: {foreign:?}");
    Ok(())
}

/// When the run config's statuses said each phase, and the message with it.
type Said = std::sync::Arc<std::sync::Mutex<Vec<(SystemTime, Option<RunPhase>, Option<String>)>>>;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_update_fails_its_node_at_once_and_after_the_skip_completed_waits_for_the_pools() -> anyhow::Result<()>
{
    // Three workers: with worker-0 cordoned and a Job kept off the node it gates, the next node's Jobs need a third.
    let mut setup = Setup::new("failed-update", 3).await?;
    let nodes = Api::<Node>::all(setup.client.clone());
    // worker-0's update fails: the daemon reports Degraded with its reason, and retries only once it is fixed.
    let broken = json!({"metadata": {"annotations": {numo_simulator::faults::FAIL_UPDATE: "true"}}});
    nodes.patch("worker-0", &PatchParams::default(), &Patch::Merge(&broken)).await?;
    // The reference's run config: no nodeTimeout, wait as long as it takes.
    setup.check_workers("rolling", job_spec("1s", false), Some(job_spec("1s", false)), json!({})).await?;
    let said: Said = setup.record_statuses("rolling", |s| vec![(SystemTime::now(), s.phase, s.message)]);
    setup.start_operator().await?;
    setup.wait_phase("rolling", RunPhase::Idle, Duration::from_secs(60)).await?;
    setup.upgrade_cluster(NEW).await?;

    let degraded = numo_testkit::wait_until(&nodes, "worker-0", ROLLOUT, "worker-0's update failed", |n: &Node| {
        n.annotations().get(numo::openshift::MCD_STATE).map(String::as_str) == Some("Degraded")
    })
    .await?;
    let reason = degraded.annotations().get(numo::openshift::MCD_REASON).cloned().unwrap_or_default();
    let seen = SystemTime::now();
    let failed = setup.wait_phase("rolling", RunPhase::Failed, ROLLOUT).await?;
    println!("numo said Failed {:?} after the test saw the daemon's report", seen.elapsed().unwrap_or_default());
    let status = failed.status.unwrap_or_default();
    let entry = status.nodes.iter().find(|e| e.name == "worker-0").expect("worker-0 has an entry");
    assert_eq!(entry.phase, NodePhase::Failed);
    assert!(entry.message.as_deref().is_some_and(|m| m.contains(&reason)), "{:?} lacks {reason}", entry.message);
    let upgrade = status.conditions.iter().find(|c| c.type_ == "NodeUpgrade").expect("NodeUpgrade");
    assert_eq!((upgrade.status.as_str(), upgrade.reason.as_str()), ("False", "NodeUpdateFailed"));

    // The admin skips it, as docs/status.md says; worker-1 goes, the pools are restored, and `worker` cannot be
    // Updated while worker-0 is Degraded: numo says so, and not Completed.
    let skip = json!({"metadata": {"annotations": {numo::labels::SKIP_ANNOTATION: "worker-0"}}});
    setup.run_configs().patch("rolling", &PatchParams::default(), &Patch::Merge(&skip)).await?;
    let waiting = numo_testkit::wait_until(&setup.run_configs(), "rolling", ROLLOUT, "waiting for worker", |rc| {
        let status = rc.status.as_ref();
        status.and_then(|s| s.phase) == Some(RunPhase::Restoring)
            && status.and_then(|s| s.message.as_deref()).is_some_and(|m| m.contains("worker-0 (skipped)"))
    })
    .await
    .map_err(|e| {
        let said = said.lock().map(|s| s.clone()).unwrap_or_default();
        anyhow::anyhow!("{e}: the statuses said {:?}", &said[said.len().saturating_sub(5)..])
    })?;
    let message = waiting.status.and_then(|s| s.message).unwrap_or_default();
    assert!(message.contains("Degraded") && message.contains("Fix the node"), "{message}");
    let told = |notes: &[(String, String, String)]| {
        notes.iter().any(|(kind, reason, note)| {
            kind == "Warning" && reason == "SkippedNodeNotUpdated" && note.contains("worker-0")
        })
    };
    assert!(told(&setup.events_when("rolling", told).await?), "an Event says what holds the pool");

    // The admin fixes worker-0: the daemon retries, the node updates in its restored pool, worker is Updated.
    let fixed_at = SystemTime::now();
    let fixed = json!({"metadata": {"annotations": {numo_simulator::faults::FAIL_UPDATE: null}}});
    nodes.patch("worker-0", &PatchParams::default(), &Patch::Merge(&fixed)).await?;
    let done = setup.wait_phase("rolling", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.unwrap_or_default();
    assert_eq!(status.skipped_nodes, vec!["worker-0".to_string()]);
    assert_eq!(setup.node_versions().await?["worker-0"].as_deref(), Some(NEW));
    let said = said.lock().map(|s| s.clone()).unwrap_or_default();
    let early: Vec<_> =
        said.iter().filter(|(when, phase, _)| *when < fixed_at && *phase == Some(RunPhase::Completed)).collect();
    assert!(early.is_empty(), "Completed while worker-0 kept worker from Updated: {early:?}");
    let versions: BTreeMap<String, Option<String>> = setup.node_versions().await?;
    assert!(versions.iter().filter(|(n, _)| n.starts_with("worker")).all(|(_, v)| v.as_deref() == Some(NEW)));
    Ok(())
}

/// Waits until `node`'s first cleanup Job exists; returns it.
async fn cleanup_started(setup: &Setup, node: &str) -> anyhow::Result<Job> {
    let deadline = std::time::Instant::now() + ROLLOUT;
    loop {
        let found = setup.jobs().await?.into_iter().find(|j| {
            label(j, "openshift-optional.skrzypek.io/node") == Some(node)
                && label(j, "openshift-optional.skrzypek.io/phase") == Some("cleanup")
        });
        if let Some(job) = found {
            return Ok(job);
        }
        anyhow::ensure!(std::time::Instant::now() < deadline, "{node}'s cleanup Job never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The reboots of `node` while its cleanup Job `name` ran (from a second after its creation, as the apiserver
/// stamps whole seconds, to its completion).
async fn reboots_during_cleanup(setup: &Setup, node: &str, name: &str) -> anyhow::Result<Vec<SystemTime>> {
    let jobs = Api::<Job>::namespaced(setup.client.clone(), &setup.ns);
    let job = numo_testkit::wait_until(&jobs, name, ROLLOUT, "the cleanup Job finished", |j: &Job| {
        j.status.as_ref().is_some_and(|s| s.completion_time.is_some() || s.failed.unwrap_or(0) > 0)
    })
    .await?;
    let from = job.creation_timestamp().map(|t| at(&t) + Duration::from_secs(1)).unwrap_or(SystemTime::UNIX_EPOCH);
    let to = job.status.as_ref().and_then(|s| s.completion_time.as_ref()).map(at).unwrap_or_else(SystemTime::now);
    let reboots = setup.world.simulator().expect("the simulator runs").reboots();
    Ok(reboots.get(node).into_iter().flatten().map(|r| r.at).filter(|at| *at > from && *at < to).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_machine_config_created_while_a_node_cleans_up_never_reboots_it_during_its_cleanup() -> anyhow::Result<()> {
    let mut setup = Setup::new("cleanup-config", 2).await?;
    setup.check_workers("rolling", job_spec("1s", false), Some(job_spec("12s", false)), json!({})).await?;
    setup.start_operator().await?;
    setup.wait_phase("rolling", RunPhase::Idle, Duration::from_secs(60)).await?;
    setup.upgrade_cluster(NEW).await?;
    let cleanup = cleanup_started(&setup, "worker-0").await?;
    // The canary renders the workers' new MachineConfig while worker-0's cleanup Job runs.
    machine_config(&setup.client, "99-worker-chrony", "worker").await?;
    let during = reboots_during_cleanup(&setup, "worker-0", &cleanup.name_any()).await?;
    assert!(during.is_empty(), "worker-0 rebooted while its cleanup Job ran: {during:?}");
    setup.wait_phase("rolling", RunPhase::Completed, ROLLOUT).await?;
    Ok(())
}
