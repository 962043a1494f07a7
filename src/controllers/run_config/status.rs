//! Writes a run config's status (server-side apply on the status subresource, skipped when nothing changed) and
//! publishes the plan's Events.

use std::collections::BTreeMap;

use k8s_openapi::jiff::Timestamp;
use kube::api::{Patch, PatchParams};
use kube::{Api, Resource, ResourceExt};
use serde_json::json;

use super::plan::{Notice, Plan};
use crate::api::{JobResult, MutexRunConfig, MutexRunConfigStatus, NodePhase};
use crate::events::Recorder;
use crate::metrics::Metrics;
use crate::{Error, Result};

/// Field manager of the run-config status.
pub const STATUS_MANAGER: &str = "numo-run-config-status";

/// Writes `status` unless the object already has exactly it.
pub async fn write(
    client: &kube::Client,
    metrics: &Metrics,
    rc: &MutexRunConfig,
    status: &MutexRunConfigStatus,
) -> Result<()> {
    if rc.status.as_ref() == Some(status) {
        return Ok(());
    }
    let namespace = rc.namespace().ok_or(Error::MissingField("metadata.namespace"))?;
    let api: Api<MutexRunConfig> = Api::namespaced(client.clone(), &namespace);
    let body = json!({
        "apiVersion": MutexRunConfig::api_version(&()),
        "kind": MutexRunConfig::kind(&()),
        "status": status,
    });
    metrics.status_written(serde_json::to_vec(&body)?.len());
    api.patch_status(&rc.name_any(), &PatchParams::apply(STATUS_MANAGER).force(), &Patch::Apply(&body)).await?;
    Ok(())
}

/// Logs what a person would want to follow at INFO level: each phase change, and each Event's sentence.
pub fn log_transitions(rc: &MutexRunConfig, plan: &Plan) {
    let before = rc.status.as_ref().and_then(|s| s.phase);
    if before != plan.status.phase {
        tracing::info!(from = ?before, to = ?plan.status.phase, message = plan.status.message.as_deref().unwrap_or_default(), "phase changed");
    }
    for notice in &plan.notices {
        if notice.warning {
            tracing::warn!(reason = notice.reason, "{}", notice.note);
        } else {
            tracing::info!(reason = notice.reason, "{}", notice.note);
        }
    }
}

/// Publishes the plan's Events about `rc`.
pub async fn publish(recorder: &Recorder, rc: &MutexRunConfig, notices: &[Notice]) {
    for notice in notices {
        crate::events::publish(recorder, rc, notice.warning, notice.reason, notice.action, notice.note.clone()).await;
    }
}

/// Updates the metrics from the status just planned: nodes by phase, and — each counted once per rollout, however
/// often a lagging cache shows the same transition — Jobs that finished, nodes that finished and how long they took.
pub fn record_metrics(metrics: &Metrics, rc: &MutexRunConfig, status: &MutexRunConfigStatus, now: Timestamp) {
    let key = format!("{}/{}", rc.namespace().unwrap_or_default(), rc.name_any());
    let previous = rc.status.clone().unwrap_or_default();
    let mut counts: BTreeMap<NodePhase, u32> = BTreeMap::new();
    for entry in &status.nodes {
        *counts.entry(entry.phase).or_default() += 1;
    }
    counts.insert(NodePhase::Pending, status.pending_nodes);
    counts.insert(NodePhase::Done, status.completed_nodes.len() as u32);
    counts.insert(NodePhase::Skipped, status.skipped_nodes.len() as u32);
    for phase in NodePhase::ALL {
        metrics.set_nodes_by_phase(&key, phase, counts.get(&phase).copied().unwrap_or(0));
    }
    let rollout = status.target_version.as_deref();
    for job in status.nodes.iter().flat_map(|e| &e.jobs) {
        let what = format!("job {} {:?}", job.name, job.result);
        if job.result != JobResult::Running && metrics.first_count(&key, rollout, &what) {
            metrics.job_finished(if job.phase == "gate" { "gate" } else { "cleanup" }, job.result);
        }
    }
    if previous.target_version != status.target_version {
        return;
    }
    let seconds = |name: &str| {
        previous
            .nodes
            .iter()
            .find(|e| e.name == name)
            .and_then(|e| e.started_at.as_ref())
            .and_then(|t| std::time::Duration::try_from(now.duration_since(t.0)).ok())
            .map_or(0.0, |d| d.as_secs_f64())
    };
    for entry in &previous.nodes {
        let outcome = if status.completed_nodes.contains(&entry.name) {
            "done"
        } else if status.skipped_nodes.contains(&entry.name) {
            "skipped"
        } else {
            continue;
        };
        if metrics.first_count(&key, rollout, &format!("node {} {outcome}", entry.name)) {
            metrics.node_finished(outcome, seconds(&entry.name));
        }
    }
    for entry in status.nodes.iter().filter(|e| e.phase == NodePhase::Failed) {
        let failure = format!("node {} failed {:?}", entry.name, entry.finished_at);
        if metrics.first_count(&key, rollout, &failure) {
            metrics.node_finished("failed", seconds(&entry.name));
        }
    }
}
