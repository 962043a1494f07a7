//! Whether every node numo counts as gated really was: the `desiredConfig` changes a watch saw, against the
//! completion of each node's gate Jobs.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use numo::api::{MutexRunConfig, NodePhase};
use numo::openshift::DESIRED_CONFIG;

use super::Setup;

/// When each node's `desiredConfig` changed, and to what, as a watch saw it.
pub type DesiredSeen = Arc<Mutex<BTreeMap<String, Vec<(SystemTime, String)>>>>;

pub fn record_desired(setup: &mut Setup) -> DesiredSeen {
    let seen: DesiredSeen = Arc::default();
    let nodes = Api::<Node>::all(setup.client.clone());
    let record = seen.clone();
    setup.world.spawn(async move {
        let mut stream = watcher(nodes, watcher::Config::default()).applied_objects().boxed();
        while let Some(Ok(node)) = stream.next().await {
            let Some(desired) = node.annotations().get(DESIRED_CONFIG).cloned() else { continue };
            if let Ok(mut seen) = record.lock() {
                let changes = seen.entry(node.name_any()).or_default();
                if changes.last().is_none_or(|(_, d)| *d != desired) {
                    changes.push((SystemTime::now(), desired));
                }
            }
        }
    });
    seen
}

/// Checks what the user sees at the end: every node numo counts as done had its gate Job succeed before the MCO
/// gave it a new config; every other node the MCO moved is reported Ungated. Returns the Ungated nodes.
pub async fn honest(setup: &Setup, rc: &MutexRunConfig, desired: &DesiredSeen) -> anyhow::Result<Vec<String>> {
    let status = rc.status.clone().unwrap_or_default();
    let jobs = setup.jobs().await?;
    let desired = desired.lock().map(|d| d.clone()).unwrap_or_default();
    let ungated: Vec<String> =
        status.nodes.iter().filter(|e| e.phase == NodePhase::Ungated).map(|e| e.name.clone()).collect();
    let workers: Vec<String> =
        setup.nodes().await?.iter().map(|n| n.name_any()).filter(|n| n.starts_with("worker")).collect();
    for node in &workers {
        let node = node.as_str();
        // The first desiredConfig the watch saw is the one the node had before the rollout.
        let moved = desired.get(node).and_then(|changes| changes.get(1)).map(|(at, _)| *at);
        let moved = moved.ok_or_else(|| anyhow::anyhow!("{node} was never moved: {desired:?}"))?;
        if ungated.iter().any(|n| n == node) {
            continue;
        }
        assert!(status.completed_nodes.iter().any(|n| n == node), "{node} is neither done nor Ungated: {status:?}");
        let gate_done = jobs
            .iter()
            .filter(|j| made_by_numo(j))
            .filter(|j| j.annotations().get("openshift-optional.skrzypek.io/node").map(String::as_str) == Some(node))
            .filter(|j| j.labels().get("openshift-optional.skrzypek.io/phase").map(String::as_str) == Some("gate"))
            .filter_map(|j| j.status.as_ref()?.completion_time.as_ref().map(|t| t.0))
            .min();
        let gate_done = gate_done.ok_or_else(|| anyhow::anyhow!("{node} counts as done without a gate Job"))?;
        let moved_at = k8s_openapi::jiff::Timestamp::try_from(moved)?;
        // completionTime has whole seconds.
        assert!(
            gate_done <= moved_at,
            "{node} counts as gated, but the MCO moved it at {moved_at} before its gate Job completed at {gate_done}"
        );
    }
    Ok(ungated)
}

/// Whether numo created the Job (its first writer is numo's field manager): a Job someone else made with numo's
/// labels gates nothing.
pub fn made_by_numo(job: &k8s_openapi::api::batch::v1::Job) -> bool {
    let first = job.managed_fields().iter().min_by_key(|f| f.time.as_ref().map(|t| t.0));
    first.and_then(|f| f.manager.as_deref()) == Some("numo")
}
