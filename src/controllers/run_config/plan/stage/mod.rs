//! Where a rollout is, as one value, and everything the status says about it: the phase, the message and every
//! condition type the controller owns (`conditions`). Every reconcile states every condition, so none keeps a stale
//! truth.

mod conditions;

pub use conditions::Besides;

use crate::api::{Blocker, RunPhase};
use crate::labels::{RETRY_ANNOTATION, SKIP_ANNOTATION};

/// Condition types: the reference's, plus `Conflict`, `ReadyForNextNode`, `ConfigChangeOverdue`, `Contested`,
/// `ForeignWritesRefused`, `NextMinorUpdateHeld` and `OtherOperatorWaits`.
pub mod condition {
    /// Every rule, target and the canary are valid.
    pub const CONFIG_VALIDATED: &str = "ConfigValidated";
    /// The ClusterVersion was read.
    pub const UPGRADE_CHECKED: &str = "UpgradeChecked";
    /// Some target node is below the cluster's target version (or a rollout is under way).
    pub const UPGRADE_AVAILABLE: &str = "UpgradeAvailable";
    /// The control plane completed its upgrade to the target version.
    pub const UPGRADE_READY: &str = "UpgradeReady";
    /// Every target pool is paused by numo.
    pub const TARGET_POOLS_PAUSED: &str = "TargetPoolsPaused";
    /// Every held node carries the rule labels.
    pub const MUTEX_RULES_APPLIED: &str = "MutexRulesApplied";
    /// The target and canary pool selectors are steered.
    pub const MCP_UPDATED: &str = "MCPUpdated";
    /// No Job of the rollout failed.
    pub const JOB_RUN: &str = "JobRun";
    /// No node failed.
    pub const NODE_UPGRADE: &str = "NodeUpgrade";
    /// Another run config drives one of this run config's pools.
    pub const CONFLICT: &str = "Conflict";
    /// No maintenance window, blackout, health check or soak holds the next node (False names what does).
    pub const READY_FOR_NEXT_NODE: &str = "ReadyForNextNode";
    /// Under `trigger: AnyConfigChange`: a target node has been behind its pool's rendered config for longer than
    /// `overdueAfter`.
    pub const CONFIG_CHANGE_OVERDUE: &str = "ConfigChangeOverdue";

    /// Someone other than numo changed what numo holds, and it is not resolved yet, or the changes keep coming.
    pub const CONTESTED: &str = "Contested";
    /// numo's ValidatingAdmissionPolicy refuses other writers' changes to what numo holds.
    pub const FOREIGN_WRITES_REFUSED: &str = "ForeignWritesRefused";
    /// The kube-apiserver operator refuses the cluster's next minor update until the kubelets of the nodes numo
    /// holds behind catch up (kubelet version skew); a notice, it holds nothing.
    pub const NEXT_MINOR_UPDATE_HELD: &str = "NextMinorUpdateHeld";
    /// Another operator that pauses pools (the SR-IOV network operator) waits to unpause a target pool numo holds,
    /// which numo's admission policy refuses while the pool has a new config pending; a notice, it holds nothing.
    pub const OTHER_OPERATOR_WAITS: &str = "OtherOperatorWaits";

    /// The reason of `NodeUpgrade=False` while a skipped node keeps its restored pool from `Updated` (the rollout
    /// stays `Restoring`); the Warning Event that says so first carries it too.
    pub const SKIPPED_NODE_NOT_UPDATED: &str = "SkippedNodeNotUpdated";

    /// Every type the run-config controller owns; each reconcile states them all.
    pub const ALL: [&str; 16] = [
        CONFIG_VALIDATED,
        UPGRADE_CHECKED,
        UPGRADE_AVAILABLE,
        UPGRADE_READY,
        TARGET_POOLS_PAUSED,
        MUTEX_RULES_APPLIED,
        MCP_UPDATED,
        JOB_RUN,
        NODE_UPGRADE,
        CONFLICT,
        READY_FOR_NEXT_NODE,
        CONFIG_CHANGE_OVERDUE,
        CONTESTED,
        FOREIGN_WRITES_REFUSED,
        NEXT_MINOR_UPDATE_HELD,
        OTHER_OPERATOR_WAITS,
    ];
}

/// The cluster's upgrade as far as the target nodes are concerned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Upgrade {
    /// The version the nodes go to.
    pub version: String,
    /// What the nodes go to, for messages: the version, or under `AnyConfigChange` the rendered configs.
    pub goal: String,
    /// Whether the control plane completed its upgrade to it.
    pub control_plane_done: bool,
    /// Gated nodes below the version (skipped ones not counted).
    pub behind: usize,
    /// Gated nodes.
    pub total: usize,
    /// Gated nodes whose version cannot be read.
    pub unknown: Vec<String>,
    /// How versions are read (`spec.versionSource`).
    pub version_source: String,
}

/// A node failure that decides the status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// The node.
    pub node: String,
    /// Why.
    pub message: String,
    /// What failed.
    pub cause: FailureCause,
}

/// What failed a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureCause {
    /// One of its gate or cleanup Jobs failed.
    Job,
    /// `nodeTimeout` ran out.
    Timeout,
    /// The machine-config daemon failed its update (`Degraded` or `Unreconcilable`).
    Update,
}

impl FailureCause {
    /// The reason of the `NodeUpgrade` condition while a node failed so.
    pub fn reason(self) -> &'static str {
        match self {
            FailureCause::Job => "NodeFailed",
            FailureCause::Timeout => "NodeTimedOut",
            FailureCause::Update => "NodeUpdateFailed",
        }
    }
}

/// The gating of nodes, summarised.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Gating {
    /// Every held node carries the rule labels.
    pub labels_applied: bool,
    /// Every pool is steered.
    pub steered: bool,
    /// Nodes in flight.
    pub in_flight: usize,
    /// Nodes not started.
    pub pending: usize,
    /// The first failed node, if any.
    pub failed: Option<Failure>,
    /// The first failed Job's message, if any (a timeout is not a Job failure).
    pub job_failure: Option<String>,
    /// `onFailure: Hold`.
    pub hold: bool,
    /// `spec.paused`.
    pub paused_by_spec: bool,
    /// `done/total`.
    pub progress: String,
    /// What holds the next node (empty: nothing); None when no node waits to start.
    pub blockers: Option<Vec<Blocker>>,
    /// What the health checks left out and why (a degradation of a skipped node).
    pub left_out: Vec<String>,
}

/// Where the rollout is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The run config is being deleted; `restoring` while pools or labels are left.
    Deleting {
        /// Pools or labels are still being restored.
        restoring: bool,
    },
    /// A rule or target was not judged by its own controller yet.
    Awaiting {
        /// Which.
        message: String,
        /// numo holds pools of a rollout in progress.
        holding: bool,
    },
    /// The configuration is invalid; `holding` when a rollout is held with its pools paused.
    Invalid {
        /// Every problem.
        message: String,
        /// numo holds pools of an interrupted rollout.
        holding: bool,
    },
    /// The ClusterVersion names no version.
    NoClusterVersion {
        /// numo holds pools of an interrupted rollout.
        holding: bool,
    },
    /// No node needs the version.
    Idle(Upgrade),
    /// Another run config drives one of the pools.
    Conflict {
        /// The upgrade.
        upgrade: Upgrade,
        /// The contested pool.
        pool: String,
        /// The run config that drives it.
        owner: String,
        /// Whether this run config holds pools already.
        holding: bool,
    },
    /// The target pools are being claimed and paused.
    Pausing(Upgrade),
    /// The target pools are paused; nodes are being labelled, steered and gated.
    Gating(Upgrade, Gating),
    /// Every node finished; the pools are restored, then the target pools move their nodes to their own config.
    Restoring {
        /// The upgrade.
        upgrade: Upgrade,
        /// `done/total`.
        progress: String,
        /// Target pools not Updated yet (after the restore).
        waiting_for: Vec<String>,
        /// Skipped nodes not at the target, each as a sentence (which node, what it runs, what its daemon says):
        /// they keep their pool from Updated until fixed, or taken out of the pool.
        skipped_behind: Vec<String>,
    },
    /// Trigger `AnyConfigChange` between rollouts: every target node runs its pool's config; the target pools stay
    /// claimed and paused.
    Standby {
        /// The nodes' target.
        upgrade: Upgrade,
        /// Whether a rollout ran (Completed) or none did (Idle).
        rolled: bool,
        /// The selectors and labels of the last rollout are still being restored.
        settling: bool,
        /// Target pools unpaused while the MCO renames their nodes' configs (same content, no reboot).
        renaming: Vec<String>,
    },
    /// The rollout finished and the target pools are Updated.
    Completed {
        /// The upgrade.
        upgrade: Upgrade,
        /// `done/total`.
        progress: String,
    },
}

impl Stage {
    /// The upgrade whose gated nodes numo holds while some are still behind (claiming the pools or gating).
    pub fn held_behind(&self) -> Option<&Upgrade> {
        match self {
            Stage::Pausing(upgrade) | Stage::Gating(upgrade, _) if upgrade.behind > 0 => Some(upgrade),
            _ => None,
        }
    }

    /// The phase and the status message.
    pub fn phase_and_message(&self) -> (RunPhase, String) {
        match self {
            Stage::Deleting { .. } => {
                (RunPhase::Restoring, "Deleting: restoring the pools and removing the rule labels.".into())
            }
            Stage::Awaiting { message, .. } => (RunPhase::Waiting, message.clone()),
            Stage::Invalid { message, holding: false } => {
                (RunPhase::Invalid, format!("Invalid configuration, nothing was changed: {message}"))
            }
            Stage::Invalid { message, holding: true } => (
                RunPhase::Invalid,
                format!("Invalid configuration; the rollout is held with the target pools paused: {message}"),
            ),
            Stage::NoClusterVersion { holding } => (
                if *holding { RunPhase::Waiting } else { RunPhase::Idle },
                "Waiting for the ClusterVersion 'version' to name a version.".into(),
            ),
            Stage::Idle(u) => (RunPhase::Idle, format!("No upgrade: every target node runs {}.", u.goal)),
            Stage::Conflict { pool, owner, .. } => (
                RunPhase::Waiting,
                format!(
                    "MachineConfigPool {pool} is driven by MutexRunConfig {owner}; waiting until its rollout is \
                     finished."
                ),
            ),
            Stage::Pausing(u) => {
                (RunPhase::Pausing, format!("Upgrade to {} available: pausing the target pools.", u.goal))
            }
            Stage::Gating(u, g) => gating_phase(u, g),
            Stage::Restoring { waiting_for, .. } if waiting_for.is_empty() => {
                (RunPhase::Restoring, "Every node finished; restoring the pools.".into())
            }
            Stage::Restoring { waiting_for, skipped_behind, .. } if skipped_behind.is_empty() => (
                RunPhase::Restoring,
                format!(
                    "The pools were restored; waiting for {} to move every node to its own rendered config.",
                    waiting_for.join(", ")
                ),
            ),
            Stage::Restoring { waiting_for, skipped_behind, .. } => (
                RunPhase::Restoring,
                format!(
                    "The pools were restored; waiting for {} to be Updated, which {}: {}. The rollout is not Completed \
                     until every target pool is Updated. Fix the node (the machine-config daemon retries its update \
                     by itself) or take it out of its pool; numo says Completed once the pool is Updated.",
                    waiting_for.join(", "),
                    if skipped_behind.len() == 1 { "a skipped node keeps from it" } else { "skipped nodes keep from it" },
                    skipped_behind.join("; ")
                ),
            ),
            Stage::Standby { upgrade, rolled, settling, renaming } => {
                let phase = match (*settling || !renaming.is_empty(), *rolled) {
                    (true, _) => RunPhase::Restoring,
                    (false, true) => RunPhase::Completed,
                    (false, false) => RunPhase::Idle,
                };
                let mut message = format!(
                    "Every target node runs {}; the target pools stay paused (trigger AnyConfigChange), so the next \
                     config change is gated.",
                    upgrade.goal
                );
                if *settling {
                    message = "Every node finished; restoring the pool selectors and removing the rule labels; the \
                               target pools stay paused (trigger AnyConfigChange)."
                        .to_string();
                }
                if !renaming.is_empty() {
                    message.push_str(&format!(
                        " Waiting for the MCO to move the nodes of {} to the pool's own rendered config (same content, \
                         no reboot; numo unpauses the pool for it once every node there is Done).",
                        renaming.join(", ")
                    ));
                }
                (phase, message)
            }
            Stage::Completed { upgrade, .. } => {
                (RunPhase::Completed, format!("Every target node runs {}; the pools were restored.", upgrade.goal))
            }
        }
    }
}

fn gating_phase(u: &Upgrade, g: &Gating) -> (RunPhase, String) {
    if let Some(f) = &g.failed {
        if g.hold || (g.in_flight == 0 && g.pending == 0) {
            return (
                RunPhase::Failed,
                format!(
                    "Node {} failed: {}. Target pools stay paused. Annotate {RETRY_ANNOTATION}={} to retry or \
                     {SKIP_ANNOTATION}={} to skip.",
                    f.node, f.message, f.node, f.node
                ),
            );
        }
    }
    if !u.control_plane_done && g.in_flight == 0 {
        let message =
            format!("Target pools paused; waiting for the control plane to complete its upgrade to {}.", u.version);
        return (RunPhase::Waiting, message);
    }
    if !g.labels_applied || !g.steered {
        return (RunPhase::Upgrading, "Labelling the target nodes and steering the pools.".into());
    }
    if g.paused_by_spec && g.in_flight == 0 {
        return (RunPhase::Waiting, "Paused (spec.paused); no node starts until it is unset.".into());
    }
    let held = g.blockers.as_deref().unwrap_or_default();
    let held: Vec<&str> = held.iter().map(|b| b.message.as_str()).collect();
    if !held.is_empty() && g.in_flight == 0 {
        return (
            RunPhase::Waiting,
            format!("Upgrading to {}: {} nodes done; the next node waits: {}.", u.goal, g.progress, held.join("; ")),
        );
    }
    let mut message = format!("Upgrading to {}: {} nodes done, {} in flight.", u.goal, g.progress, g.in_flight);
    if !held.is_empty() {
        message.push_str(&format!(" The next node waits: {}.", held.join("; ")));
    }
    (RunPhase::Upgrading, message)
}
