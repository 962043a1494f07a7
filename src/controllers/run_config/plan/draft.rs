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
    /// What the checks ask before a node starts.
    pub asks: Vec<crate::controllers::run_config::checks::Question>,
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
    /// Whether gating reads every gated node one by one, none set apart (`untouched`): the plan it makes is the
    /// same, which the planner's tests check on every plan they make.
    pub every_node: bool,
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
            asks: Vec::new(),
            overdue: None,
            ledger: Ledger::of(&snapshot.run_config.status.foreign_changes, snapshot.now),
            put_back: Vec::new(),
            projection: None,
            record: Vec::new(),
            finished_jobs: Vec::new(),
            every_node: false,
        }
    }
}

/// The previous status as the steps of a plan start from it: every field carried (so a field added to the status
/// is kept from one reconcile to the next without a word here), except those every plan works out anew, which start
/// empty (`finish`, the gate, the windows fill them).
pub fn carried(snapshot: &Snapshot) -> MutexRunConfigStatus {
    MutexRunConfigStatus {
        observed_generation: None,
        phase: None,
        message: None,
        next_window: None,
        blocked_by: Vec::new(),
        foreign_changes: Vec::new(),
        held_pools: Vec::new(),
        conditions: Vec::new(),
        ..snapshot.run_config.status.clone()
    }
}
