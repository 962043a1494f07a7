//! What a rollout learns about its own pace: each node's step durations once it is done (kept as the latest samples
//! of each step), the restore walk's start, and, when the rollout completes, its figures added to the history that
//! the next rollout starts from.

use std::collections::HashSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::intent::Intent;
use crate::api::{MutexRunConfigStatus, NodePhase, RolloutFigures, RunPhase, Step, StepFigure};
use crate::controllers::run_config::snapshot::Snapshot;
use crate::estimate::{figures, measured};
use crate::rollout_record;
use crate::windows::utc;

/// How many rollouts' figures the history keeps.
pub const HISTORY: usize = 5;

/// Adds the step durations of the nodes that became done in this plan (their entries leave `status.nodes`), and
/// gives the rollout record's entries of the nodes that finished (done or skipped).
pub fn node_durations(snapshot: &Snapshot, status: &mut MutexRunConfigStatus) -> Vec<(String, String)> {
    let previous = &snapshot.run_config.status;
    if status.rollout_key() != previous.rollout_key() {
        return Vec::new();
    }
    let still: HashSet<&str> = status.nodes.iter().map(|e| e.name.as_str()).collect();
    let left: Vec<_> = previous.nodes.iter().filter(|e| !still.contains(e.name.as_str())).collect();
    if left.is_empty() {
        return Vec::new();
    }
    let done: HashSet<&str> = status.completed_nodes.iter().map(String::as_str).collect();
    let skipped: HashSet<&str> = status.skipped_nodes.iter().map(String::as_str).collect();
    let now = utc(&snapshot.now);
    let mut record = Vec::new();
    for entry in left {
        if done.contains(entry.name.as_str()) {
            for (step, seconds) in measured::durations(entry, now) {
                figures::add(&mut status.step_durations, step, seconds);
            }
            record.push(rollout_record::node_entry(entry, NodePhase::Done, now));
        } else if skipped.contains(entry.name.as_str()) {
            record.push(rollout_record::node_entry(entry, NodePhase::Skipped, now));
        }
    }
    record
}

/// Notes since when something holds the next node, and gives the rollout record's entry of a hold that ended.
pub fn holds(snapshot: &Snapshot, status: &mut MutexRunConfigStatus) -> Option<(String, String)> {
    let previous = &snapshot.run_config.status;
    if !status.blocked_by.is_empty() {
        status.held_since = previous.held_since.clone().or(Some(Time(snapshot.now)));
        return None;
    }
    status.held_since = None;
    let since = previous.held_since.as_ref()?;
    let checks: Vec<&str> = previous.blocked_by.iter().map(|b| b.check.as_str()).collect();
    let messages: Vec<&str> = previous.blocked_by.iter().map(|b| b.message.as_str()).collect();
    Some(rollout_record::hold_entry(utc(&since.0), utc(&snapshot.now), &checks.join(","), &messages.join("; ")))
}

/// The write of the rollout record this plan asks for, if any: a fresh record when a rollout started, and the
/// entries of nodes and holds that ended.
pub fn record(
    snapshot: &Snapshot,
    status: &MutexRunConfigStatus,
    mut entries: Vec<(String, String)>,
) -> Option<Intent> {
    let previous = &snapshot.run_config.status;
    let fresh = status.started_at.is_some() && status.started_at != previous.started_at;
    let rollout = status.rollout_key()?.to_string();
    if !fresh && entries.is_empty() {
        return None;
    }
    entries.sort();
    Some(Intent::RecordRollout { rollout, entries, fresh })
}

/// Keeps the history whatever the stage did to the status, notes when the restore walk began, and adds the
/// rollout's figures to the history when it completes.
pub fn rollout_end(snapshot: &Snapshot, status: &mut MutexRunConfigStatus, phase: RunPhase) {
    let previous = &snapshot.run_config.status;
    if status.history.is_empty() {
        status.history = previous.history.clone();
    }
    let same = status.rollout_key().is_some() && status.rollout_key() == previous.rollout_key();
    status.restore_started_at = match phase {
        RunPhase::Restoring | RunPhase::Completed if same => {
            previous.restore_started_at.clone().or(Some(Time(snapshot.now)))
        }
        RunPhase::Restoring | RunPhase::Completed => Some(Time(snapshot.now)),
        _ => status.restore_started_at.clone(),
    };
    if phase != RunPhase::Completed || previous.phase == Some(RunPhase::Completed) {
        return;
    }
    let Some(rollout) = status.rollout_key().map(str::to_string) else { return };
    let mut steps = figures::figures(&status.step_durations);
    let walked = previous.phase == Some(RunPhase::Restoring);
    let walk =
        status.restore_started_at.as_ref().filter(|_| walked).map(|start| {
            std::time::Duration::try_from(snapshot.now.duration_since(start.0)).unwrap_or_default().as_secs()
        });
    let rounds = previous.estimate.as_ref().map_or(status.total_nodes, |e| e.restore_rounds).max(1);
    if let (Some(walk), true) = (walk, status.total_nodes > 0) {
        let per_round = u32::try_from(walk / u64::from(rounds)).unwrap_or(u32::MAX);
        steps.push(StepFigure {
            step: Step::Restore,
            count: rounds,
            median_seconds: per_round,
            p90_seconds: per_round,
        });
    }
    status.history.retain(|r| r.rollout != rollout);
    status.history.push(RolloutFigures {
        rollout,
        started_at: status.started_at.clone(),
        finished_at: status.finished_at.clone().or(Some(Time(snapshot.now))),
        nodes: status.total_nodes,
        steps,
    });
    let excess = status.history.len().saturating_sub(HISTORY);
    status.history.drain(..excess);
    status.estimate = None;
}
