//! The per-node part of the status and the Events of node transitions: full entries for nodes in flight or failed
//! (with the results of their gate Jobs until they are released, then of their cleanup Jobs), name lists and counts
//! for the rest.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::node_state::{GatedNode, History, NodeState};
use super::notice::Notice;
use super::untouched::Apart;
use crate::api::{JobRecord, JobResult, MutexRunConfigSpec, NodeNames, NodePhase, NodeProgress};
use crate::jobs::JobPhase;
use crate::labels::{RETRY_ANNOTATION, SKIP_ANNOTATION};

/// What an Ungated node's entry and the rollout's failure say.
pub const UNGATED: &str = "the Machine Config Operator started upgrading the node while numo held it (someone \
     unpaused its pool or removed its rule labels), before its gate Jobs ran; they are not run after the fact";

/// What the entry of a node the MCO had started before numo held its pool says.
pub const UNGATED_BEFORE_HOLD: &str = "Ungated: the Machine Config Operator had started upgrading the node before \
     numo held its pool (the run config was not valid or not in place yet); its gate Jobs are not run after the fact \
     and the rollout goes on";

/// The per-node status of a rollout.
#[derive(Clone, Debug, Default)]
pub struct NodesStatus {
    /// Entries of nodes in flight or failed.
    pub entries: Vec<NodeProgress>,
    /// Nodes done.
    pub completed: NodeNames,
    /// Nodes skipped.
    pub skipped: NodeNames,
    /// Nodes not started.
    pub pending: u32,
    /// Every gated node.
    pub total: u32,
}

impl NodesStatus {
    /// `done/total`.
    pub fn progress(&self) -> String {
        format!("{}/{}", self.completed.len() + self.skipped.len(), self.total)
    }
}

/// What recording decided.
pub struct Recorded {
    /// The per-node status.
    pub nodes: NodesStatus,
    /// Events for the nodes that changed phase.
    pub notices: Vec<Notice>,
    /// When the earliest `nodeTimeout` of a node in flight, or soak, runs out.
    pub requeue_after: Option<Duration>,
    /// The finished Jobs of the nodes in flight and of those that finished in this plan (for the metrics: a
    /// status entry no longer lists a released node's gate Jobs, nor any Job of a node done).
    pub finished_jobs: Vec<JobRecord>,
}

/// Records every gated node: those of `gated` one by one, those set `apart` as counted and listed; `reached` says
/// whether a node runs the target.
pub fn record(
    gated: &[GatedNode<'_>],
    apart: Apart<'_, '_>,
    history: &History<'_>,
    version: &str,
    now: &Time,
    spec: &MutexRunConfigSpec,
    reached: &dyn Fn(&crate::controllers::run_config::snapshot::NodeView) -> bool,
) -> Recorded {
    let (timeout, soak) = (spec.node_timeout(), spec.soak_time());
    let mut out = NodesStatus {
        total: (gated.len() + apart.waiting + apart.finished.len()) as u32,
        pending: apart.waiting as u32,
        ..Default::default()
    };
    // The nodes read one by one that are done or skipped, in release order.
    let (mut completed, mut skipped) = (Vec::new(), Vec::new());
    let mut notices = Vec::new();
    let mut requeue_after: Option<Duration> = None;
    let mut finished_jobs = Vec::new();
    for GatedNode { node, state, records, timer_reset, released, previous, previous_phase, .. } in gated {
        let finished = || records.values().filter(|r| r.result != JobResult::Running).cloned();
        if matches!(state, NodeState::Pending) {
            out.pending += 1;
            continue;
        }
        let name = node.name.as_str();
        let phase = state.phase();
        match state {
            NodeState::Done { already } => {
                completed.push(name.to_string());
                if !already && *previous_phase != NodePhase::Done {
                    finished_jobs.extend(finished());
                    notices.push(Notice::normal(
                        "NodeUpgraded",
                        "Complete",
                        format!("Node {name} runs {version}; its gate and cleanup Jobs succeeded."),
                    ));
                }
                continue;
            }
            NodeState::Skipped => {
                skipped.push(name.to_string());
                if *previous_phase != NodePhase::Skipped {
                    notices.push(Notice::warning(
                        "NodeSkipped",
                        "Skip",
                        format!("Node {name} is skipped as the skip annotation asks; it is not gated."),
                    ));
                }
                // The machine-config daemon retries a failed update wherever the node is (openshift/
                // machine-config-operator `pkg/daemon/daemon.go`): a skipped node may finish it during the rollout,
                // with no gate and no cleanup Job. Said once, and kept in the node's entry.
                // A node skipped after it started keeps its entry: the record of its Jobs, which stay numo's own.
                let previous = *previous;
                let upgraded_before = previous.is_some_and(|e| e.upgraded_at.is_some());
                let mut entry = previous.cloned().map(|e| NodeProgress { phase: NodePhase::Skipped, ..e });
                if *released && !upgraded_before && reached(node) {
                    let message = format!(
                        "Node {name}, skipped, now runs {version}: the machine-config daemon finished the update it \
                         had failed. numo ran no cleanup Job for it; run them by hand if the node needs them."
                    );
                    notices.push(Notice::warning("SkippedNodeUpgraded", "Skip", message.clone()));
                    let base = entry.take().unwrap_or_else(|| NodeProgress {
                        name: name.to_string(),
                        phase: NodePhase::Skipped,
                        ..Default::default()
                    });
                    entry = Some(NodeProgress { upgraded_at: Some(now.clone()), message: Some(message), ..base });
                }
                out.entries.extend(entry);
                continue;
            }
            _ => {}
        }
        // A node that starts again (a retry) keeps its record; one that starts fresh gets a new one.
        let previous = previous.filter(|e| e.phase != NodePhase::Pending);
        let started_at = match (timer_reset, previous.and_then(|e| e.started_at.clone())) {
            (false, Some(started)) => started,
            _ => now.clone(),
        };
        let released_at = previous.and_then(|e| e.released_at.clone()).or_else(|| {
            matches!(
                state,
                NodeState::Releasing | NodeState::Upgrading | NodeState::CleaningUp { .. } | NodeState::Soaking { .. }
            )
            .then(|| now.clone())
        });
        let mco_started =
            node.desired_config != node.current_config || node.mcd_state.as_deref() == Some("Working") || node.cordoned;
        let upgraded = matches!(state, NodeState::CleaningUp { .. } | NodeState::Soaking { .. });
        let upgrading_at = previous.and_then(|e| e.upgrading_at.clone()).or_else(|| {
            (released_at.is_some() && (upgraded || (matches!(state, NodeState::Upgrading) && mco_started)))
                .then(|| now.clone())
        });
        let upgraded_at = previous.and_then(|e| e.upgraded_at.clone()).or_else(|| upgraded.then(|| now.clone()));
        // The drain's end, as the node's MachineConfigNode tells it while the node upgrades (it is reset once the
        // node is Updated); kept once seen.
        let was_upgrading = previous.is_some_and(|e| e.upgraded_at.is_none());
        let drained_at = previous.and_then(|e| e.drained_at.clone()).or_else(|| {
            (upgrading_at.is_some() && (was_upgrading || previous.is_none())).then(|| node.drained_at.clone())?
        });
        if let (None, Some(drained)) = (previous.and_then(|e| e.drained_at.as_ref()), &drained_at) {
            let took = upgrading_at.as_ref().map(|since| drained.0.duration_since(since.0));
            let took = took.and_then(|d| Duration::try_from(d).ok()).map(|d| format!(" in {}s", d.as_secs()));
            notices.push(Notice::normal(
                "NodeDrained",
                "Gate",
                format!(
                    "Node {name} was drained for its upgrade{}; it reboots into {}.",
                    took.unwrap_or_default(),
                    node.desired_config.as_deref().unwrap_or("its new configuration")
                ),
            ));
        }
        let finished_at = match state {
            NodeState::Failed { .. } | NodeState::Ungated { .. } if !timer_reset => {
                previous.and_then(|e| e.finished_at.clone()).or_else(|| Some(now.clone()))
            }
            NodeState::Soaking { .. } => previous
                .filter(|e| e.phase == NodePhase::Soaking)
                .and_then(|e| e.finished_at.clone())
                .or_else(|| Some(now.clone())),
            _ => None,
        };
        let soak_started_at = match state {
            NodeState::Soaking { since, .. } => since.map(Time),
            _ => None,
        };
        let soak_until = soak_started_at.as_ref().and_then(|since| soak.map(|soak| (since, soak)));
        let message = match state {
            NodeState::Gating { .. } => "Running gate Jobs.".to_string(),
            NodeState::Releasing => "Gate Jobs succeeded; releasing the node to the canary pool.".to_string(),
            NodeState::Upgrading => format!("Waiting for the node to run {version} and be Ready."),
            NodeState::CleaningUp { .. } => "Running cleanup Jobs.".to_string(),
            NodeState::Soaking { problem: Some(problem), .. } => {
                format!("Soaking; the soak starts again once the node is healthy: {problem}.")
            }
            NodeState::Soaking { .. } => {
                let until = soak_until
                    .map(|(since, soak)| {
                        let until =
                            crate::windows::utc(&since.0) + chrono::Duration::from_std(soak).unwrap_or_default();
                        crate::windows::shown(&until)
                    })
                    .unwrap_or_default();
                format!("Done; soaking until {until}, its slot taken while it must stay Ready, schedulable and Done.")
            }
            NodeState::Failed { message, .. } => message.clone(),
            NodeState::Ungated { accepted: false } => format!(
                "Ungated: {UNGATED}. Annotate {RETRY_ANNOTATION}={name} to let the rollout go on past it, or \
                 {SKIP_ANNOTATION}={name}"
            ),
            NodeState::Ungated { accepted: true } => {
                let before_hold = match previous {
                    Some(entry) => entry.message.as_deref().is_some_and(|m| m.starts_with(UNGATED_BEFORE_HOLD)),
                    None => !history.held,
                };
                if before_hold {
                    UNGATED_BEFORE_HOLD.to_string()
                } else {
                    format!("Ungated: {UNGATED}. The retry annotation let the rollout go on past it")
                }
            }
            _ => String::new(),
        };
        if *previous_phase != phase {
            notices.push(transition(name, phase, &message));
        }
        let was_soaking_healthy =
            previous.is_some_and(|e| e.phase == NodePhase::Soaking && e.soak_started_at.is_some());
        if let (true, NodeState::Soaking { problem: Some(problem), .. }) = (was_soaking_healthy, state) {
            notices.push(Notice::warning(
                "SoakRestarted",
                "Soak",
                format!("The soak of node {name} starts again once it is healthy: {problem}."),
            ));
        }
        if let Some((since, soak)) = soak_until {
            let soaked = Duration::try_from(now.0.duration_since(since.0)).unwrap_or_default();
            let left = soak.saturating_sub(soaked) + Duration::from_millis(50);
            requeue_after = Some(requeue_after.map_or(left, |r| r.min(left)));
        }
        if let (Some(timeout), true) = (timeout, state.in_flight()) {
            let elapsed = Duration::try_from(now.0.duration_since(started_at.0)).unwrap_or_default();
            let left = timeout.saturating_sub(elapsed) + Duration::from_millis(50);
            requeue_after = Some(requeue_after.map_or(left, |r| r.min(left)));
        }
        // Once the node is released, its entry says so (`releasedAt`, its phase) and its gate Jobs' records go, so
        // that a hundred nodes in flight keep the run config small. The Jobs themselves stay until their TTL.
        finished_jobs.extend(finished());
        let gate_recorded = released_at.is_none();
        out.entries.push(NodeProgress {
            name: name.to_string(),
            phase,
            jobs: records.values().filter(|r| gate_recorded || r.phase != JobPhase::Gate.as_str()).cloned().collect(),
            started_at: Some(started_at),
            released_at,
            upgrading_at,
            drained_at,
            upgraded_at,
            finished_at,
            soak_started_at,
            // What a node in flight does is its phase; its entry says more only when there is more to say (the
            // Event of its transition says it all the same).
            message: (!matches!(
                state,
                NodeState::Gating { .. } | NodeState::Releasing | NodeState::Upgrading | NodeState::CleaningUp { .. }
            ))
            .then_some(message),
            accepted_at: match state {
                NodeState::Ungated { accepted: true } => {
                    previous.and_then(|e| e.accepted_at.clone()).or_else(|| Some(now.clone()))
                }
                _ => None,
            },
        });
    }
    (out.completed, out.skipped) = history.finished_lists(apart.finished, completed, skipped);
    Recorded { nodes: out, notices, requeue_after, finished_jobs }
}

/// The Event of a node entering `phase`.
fn transition(name: &str, phase: NodePhase, message: &str) -> Notice {
    let reason = phase.event_reason();
    if phase == NodePhase::Ungated {
        return Notice::warning(reason, "Gate", format!("Node {name}: {message}."));
    }
    if phase == NodePhase::Failed {
        return Notice::warning(
            reason,
            "Gate",
            format!(
                "{message}. The target pools stay paused. Fix the cause, then annotate the run config with \
                 {RETRY_ANNOTATION}={name} to retry, or {SKIP_ANNOTATION}={name} to skip the node, or delete the run \
                 config to restore the pools."
            ),
        );
    }
    Notice::normal(reason, "Gate", format!("Node {name}: {message}"))
}
