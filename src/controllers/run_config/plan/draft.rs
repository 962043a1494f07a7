//! What the steps of one plan write into as they go.

use std::time::Duration;

use super::foreign::Ledger;
use super::intent::Intent;
use super::notice::Notice;
use crate::api::MutexRunConfigStatus;
use crate::controllers::run_config::snapshot::Snapshot;

/// What the steps decided, before the status is put together.
pub struct Draft {
    /// Changes to make, in order.
    pub intents: Vec<Intent>,
    /// Events to publish.
    pub notices: Vec<Notice>,
    /// The status so far.
    pub status: MutexRunConfigStatus,
    /// Whether Jobs deleted after their results were recorded are let go (once the status is written).
    pub release_jobs: bool,
    /// When to look again.
    pub requeue_after: Option<Duration>,
    /// Nodes whose pods the PodDisruptionBudget check needs.
    pub needs_budget_pods: Vec<String>,
    /// Whether the alert check needs Alertmanager's answer.
    pub needs_alerts: bool,
    /// Why a config change is overdue (`ConfigChangeOverdue`), if it is.
    pub overdue: Option<String>,
    /// What others changed of what numo holds.
    pub ledger: Ledger,
    /// The writes that put back what others changed of the pools numo holds (first in the plan).
    pub put_back: Vec<Intent>,
    /// Keys to add to the rollout record (nodes that finished in this plan).
    pub record: Vec<(String, String)>,
    /// The projection of the rest of the rollout, when the estimate was worked out again.
    pub projection: Option<crate::estimate::Projected>,
    /// The finished Jobs of the nodes in flight and of those that finished (see `record::Recorded`).
    pub finished_jobs: Vec<crate::api::JobRecord>,
}

impl Draft {
    /// An empty draft: the previous status carried, the foreign changes it recorded in the ledger.
    pub fn new(snapshot: &Snapshot) -> Self {
        Self {
            intents: Vec::new(),
            notices: Vec::new(),
            status: carried(snapshot),
            release_jobs: false,
            requeue_after: None,
            needs_budget_pods: Vec::new(),
            needs_alerts: false,
            overdue: None,
            ledger: Ledger::of(&snapshot.run_config.status.foreign_changes, snapshot.now),
            put_back: Vec::new(),
            projection: None,
            record: Vec::new(),
            finished_jobs: Vec::new(),
        }
    }
}

/// The parts of the previous status that a stage which does not recount the nodes keeps. Every field is named, so a
/// new one cannot be forgotten (and blink out of the status at every reconcile): each is either carried or worked
/// out anew by every plan.
pub fn carried(snapshot: &Snapshot) -> MutexRunConfigStatus {
    let previous = &snapshot.run_config.status;
    MutexRunConfigStatus {
        target_version: previous.target_version.clone(),
        target_config: previous.target_config.clone(),
        progress: previous.progress.clone(),
        started_at: previous.started_at.clone(),
        finished_at: previous.finished_at.clone(),
        total_nodes: previous.total_nodes,
        completed_nodes: previous.completed_nodes.clone(),
        skipped_nodes: previous.skipped_nodes.clone(),
        pending_nodes: previous.pending_nodes,
        nodes: previous.nodes.clone(),
        restore_started_at: previous.restore_started_at.clone(),
        estimate: previous.estimate.clone(),
        step_durations: previous.step_durations.clone(),
        history: previous.history.clone(),
        held_since: previous.held_since.clone(),
        topology: previous.topology.clone(),
        target_changes: previous.target_changes.clone(),
        // Worked out anew by every plan (`finish`, the gate, the windows).
        observed_generation: None,
        phase: None,
        message: None,
        next_window: None,
        blocked_by: Vec::new(),
        foreign_changes: Vec::new(),
        held_pools: Vec::new(),
        conditions: Vec::new(),
    }
}
