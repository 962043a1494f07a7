//! The run-config state machine as small pure steps: a [`Snapshot`] of the cluster in, the [`Plan`] (intents to
//! apply, the status to write, the Events to publish, when to look again) out. Every step of SPEC.md's procedure is
//! decided here; `apply` only carries the intents out, idempotently.
//!
//! The steps, each its own module: `resolve` validates into a typed [`resolve::Resolved`] configuration;
//! `node_state` derives each node's state once; `pools` writes the pools (claim, steer, restore); `gate` holds,
//! starts and moves nodes on; `record` writes the per-node status; `stage` says where the rollout is and states
//! every condition; `finalize` handles deletion. This module composes them.
//!
//! The state a rollout needs lives in the cluster, so a restarted operator derives the same plan: which pools numo
//! drives and how they were before (pool annotations), which nodes are held (rule labels), which steps ran (Jobs
//! with deterministic names, and their results recorded in the status).

mod config_change;
mod finalize;
mod foreign;
mod gate;
mod intent;
mod node_state;
mod pools;
mod readiness;
mod record;
mod resolve;
mod stage;
mod target;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::snapshot::{JobView, Snapshot};
use crate::api::{Blocker, MutexRunConfigStatus, RunPhase, Trigger, WindowTimes};
use crate::conditions;
use crate::windows;
use foreign::Ledger;
pub use foreign::{as_is, written_after};
pub use intent::{Intent, PoolPrecondition, PoolSpec, PutBack};
use node_state::{History, Inputs, NodeState};
pub use readiness::check;
use resolve::{Resolved, Verdict};
pub use stage::condition;
use stage::{Failure, Gating, Stage, Upgrade};
use target::Target;

/// A Kubernetes Event to publish about the run config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// Warning (true) or Normal.
    pub warning: bool,
    /// CamelCase reason.
    pub reason: &'static str,
    /// What numo did.
    pub action: &'static str,
    /// A sentence for people.
    pub note: String,
}

impl Notice {
    /// A Normal Event.
    pub fn normal(reason: &'static str, action: &'static str, note: String) -> Self {
        Self { warning: false, reason, action, note }
    }

    /// A Warning Event.
    pub fn warning(reason: &'static str, action: &'static str, note: String) -> Self {
        Self { warning: true, reason, action, note }
    }
}

/// The outcome of planning.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Changes to make before the status is written, in order; apply stops at the first failure.
    pub intents: Vec<Intent>,
    /// The status to write (not written when the run config is let go: [`Intent::RemoveFinalizer`]).
    pub status: MutexRunConfigStatus,
    /// Changes that need the status written first (Jobs let go once their results are recorded).
    pub after_status: Vec<Intent>,
    /// Events to publish.
    pub notices: Vec<Notice>,
    /// When to reconcile again without a change (a node's timeout, the end of a soak, a window's edge).
    pub requeue_after: Option<Duration>,
    /// Nodes that would start while a PodDisruptionBudget allows no disruption: list their pods and plan again.
    pub needs_budget_pods: Vec<String>,
    /// A node would start and the alert check needs Alertmanager's answer: ask and plan again.
    pub needs_alerts: bool,
}

/// What the steps decided, before the status is put together.
struct Draft {
    intents: Vec<Intent>,
    notices: Vec<Notice>,
    status: MutexRunConfigStatus,
    release_jobs: bool,
    requeue_after: Option<Duration>,
    needs_budget_pods: Vec<String>,
    needs_alerts: bool,
    /// Why a config change is overdue (`ConfigChangeOverdue`), if it is.
    overdue: Option<String>,
    /// What others changed of what numo holds.
    ledger: Ledger,
    /// The writes that put back what others changed of the pools numo holds (first in the plan).
    put_back: Vec<Intent>,
}

impl Draft {
    fn new(snapshot: &Snapshot) -> Self {
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
        }
    }
}

/// Plans one reconcile.
pub fn plan(snapshot: &Snapshot) -> Plan {
    if snapshot.run_config.deleting {
        let (intents, restoring) = finalize::plan(snapshot);
        let draft = Draft { intents, ledger: Ledger::default(), ..Draft::new(snapshot) };
        return finish(snapshot, draft, Stage::Deleting { restoring }, "");
    }
    let previous = &snapshot.run_config.status;
    let mut draft = Draft::new(snapshot);
    if !snapshot.run_config.has_finalizer {
        draft.intents.push(Intent::AddFinalizer);
    }
    let owner = snapshot.run_config.key();
    let holding = snapshot.pools.values().any(|p| p.owner() == Some(owner.as_str()));
    // Whatever else happens, what others changed of the pools numo holds goes back first.
    draft.put_back = foreign::pools(snapshot, &owner, &mut draft.ledger);
    let resolved = match resolve::resolve(snapshot) {
        Verdict::Valid(resolved) => resolved,
        Verdict::Awaiting(message) => return finish(snapshot, draft, Stage::Awaiting { message, holding }, ""),
        Verdict::Invalid(problems) => {
            let stage = Stage::Invalid { message: problems.join("; "), holding };
            if previous.phase != Some(RunPhase::Invalid) {
                draft.notices.push(Notice::warning("InvalidConfig", "Validate", stage.phase_and_message().1));
            }
            return finish(snapshot, draft, stage, "");
        }
    };
    let mut validated =
        "Every MutexRule and MutexTarget exists and is valid, and the canary pool is usable.".to_string();
    for finding in &resolved.findings {
        validated.push(' ');
        validated.push_str(finding);
        validated.push('.');
    }
    let Some(version) = snapshot.cluster.as_ref().and_then(|c| c.target_version.clone()) else {
        return finish(snapshot, draft, Stage::NoClusterVersion { holding }, &validated);
    };
    let stage = match snapshot.run_config.spec.trigger {
        Trigger::Upgrade => rollout(snapshot, &resolved, &Target::upgrade(&version), holding, &mut draft),
        Trigger::AnyConfigChange => config_change::rollout(snapshot, &resolved, &version, holding, &mut draft),
    };
    // The windows are shown (and numo wakes at their edges) whatever the stage.
    let verdict = readiness::windows_now(snapshot, &resolved.schedule);
    draft.status.next_window = verdict.next.as_ref().map(|(start, end)| WindowTimes {
        start: Time(windows::to_api(start)),
        end: end.as_ref().map(|end| Time(windows::to_api(end))),
    });
    if let Some(edge) = verdict.changes_at {
        let wait = (edge - windows::utc(&snapshot.now)).to_std().unwrap_or_default() + Duration::from_millis(50);
        draft.requeue_after = Some(draft.requeue_after.map_or(wait, |r| r.min(wait)));
    }
    finish(snapshot, draft, stage, &validated)
}

/// The upgrade as the stage reports it: how many gated nodes still need `target`.
fn upgrade_of(snapshot: &Snapshot, resolved: &Resolved<'_>, target: &Target) -> Upgrade {
    let skip = &snapshot.run_config.skip;
    // A node whose version cannot be read starts no rollout (it would be gated towards a version it may already
    // run); the UpgradeChecked condition names it. Once a rollout runs, it is gated like the rest.
    let unknown: Vec<String> = resolved.gated.iter().filter(|n| n.version.is_none()).map(|n| n.name.clone()).collect();
    let behind = resolved.gated.iter().filter(|n| n.version.is_some() && target.behind(n) && !skip.contains(&n.name));
    Upgrade {
        version: target.version.clone(),
        goal: target.describe(),
        control_plane_done: snapshot.cluster.as_ref().is_some_and(|c| c.control_plane_completed),
        behind: behind.count(),
        total: resolved.gated.len(),
        unknown,
        version_source: format!("{:?}", snapshot.run_config.spec.version_source),
    }
}

/// The first involved pool that another live run config drives: (pool, that run config).
fn conflict(snapshot: &Snapshot, resolved: &Resolved<'_>) -> Option<(String, String)> {
    resolved.involved().into_iter().find_map(|pool| {
        let owner = pool.owner()?;
        (owner != resolved.owner && snapshot.run_configs.contains(owner))
            .then(|| (pool.name.clone(), owner.to_string()))
    })
}

/// The Conflict stage, with its Event when the run config was not waiting for that already.
fn conflicted(
    snapshot: &Snapshot,
    upgrade: Upgrade,
    (pool, owner): (String, String),
    holding: bool,
    draft: &mut Draft,
) -> Stage {
    let previous = &snapshot.run_config.status;
    let stage = Stage::Conflict { upgrade, pool, owner, holding };
    let was_waiting =
        previous.phase == Some(RunPhase::Waiting) && conditions::is_true(&previous.conditions, condition::CONFLICT);
    if !was_waiting {
        draft.notices.push(Notice::warning("WaitingForOtherRunConfig", "Wait", stage.phase_and_message().1));
    }
    stage
}

/// Steps 2–7 for a valid configuration, trigger `Upgrade`.
fn rollout(snapshot: &Snapshot, resolved: &Resolved<'_>, target: &Target, holding: bool, draft: &mut Draft) -> Stage {
    let previous = &snapshot.run_config.status;
    let version = target.version.as_str();
    if previous.target_version.as_deref() != Some(version) || previous.target_config.is_some() {
        draft.status = MutexRunConfigStatus { target_version: Some(version.to_string()), ..Default::default() };
    }
    let upgrade = upgrade_of(snapshot, resolved, target);
    let conflict = conflict(snapshot, resolved);
    if !holding {
        // Leftover rule labels (a restore cut short) go.
        draft.intents.extend(finalize::unlabel(snapshot, &resolved.labels()));
        if upgrade.behind == 0 {
            return finalize::completion(snapshot, resolved, upgrade, draft);
        }
    }
    if let Some(conflict) = conflict {
        return conflicted(snapshot, upgrade, conflict, holding, draft);
    }
    if !holding {
        draft.intents.extend(pools::claim(resolved));
        let targets: Vec<&str> = resolved.targets.iter().map(|t| t.name.as_str()).collect();
        draft.notices.push(Notice::normal(
            "PausingPools",
            "Pause",
            format!("Upgrade to {version} available; pausing {}.", targets.join(", ")),
        ));
        let total = resolved.gated.len() as u32;
        let status = &mut draft.status;
        (status.started_at, status.finished_at) = (Some(Time(snapshot.now)), None);
        (status.total_nodes, status.pending_nodes, status.progress) = (total, total, Some(format!("0/{total}")));
        (status.completed_nodes, status.skipped_nodes, status.nodes) = Default::default();
        return Stage::Pausing(upgrade);
    }
    claim_removed(resolved, &mut draft.ledger);
    // Pools claimed for an earlier shape of the spec (another canary, a removed target) go back first.
    draft.intents.extend(pools::restore_all(
        resolved.stale_pools.iter().copied(),
        &resolved.owner,
        &resolved.canary.name,
    ));
    let claims = pools::claim(resolved);
    if !claims.is_empty() || !resolved.targets.iter().all(|t| t.paused) {
        draft.intents.extend(claims);
        return Stage::Pausing(upgrade);
    }
    let gate = gate(snapshot, resolved, target, upgrade.control_plane_done, draft);
    match gate.end {
        Some(progress) => {
            draft.intents.extend(pools::restore_all(snapshot.pools.values(), &resolved.owner, &resolved.canary.name));
            restoring(snapshot, resolved, draft);
            Stage::Restoring { upgrade, progress, waiting_for: Vec::new() }
        }
        None => Stage::Gating(upgrade, gate.summary),
    }
}

/// Notes, while numo holds a rollout's pools, each involved pool whose claim someone removed (numo's other
/// annotations left): it is claimed again with the original those annotations recorded.
fn claim_removed(resolved: &Resolved<'_>, ledger: &mut Ledger) {
    for pool in resolved.involved() {
        if matches!(pool.claim, crate::pool_claim::ClaimAnnotations::Leftover { .. }) {
            let who = "an unknown writer (Kubernetes keeps no record of who removes an annotation)";
            ledger.saw(&format!("MachineConfigPool/{}", pool.name), foreign::CLAIM, who, false);
        }
    }
}

/// The Events and label removals of a rollout whose every node finished, once its pools are restored.
fn restoring(snapshot: &Snapshot, resolved: &Resolved<'_>, draft: &mut Draft) {
    let owner = resolved.owner.as_str();
    draft.intents.extend(finalize::unlabel(snapshot, &resolved.labels()));
    for problem in pools::unreadable_originals(snapshot.pools.values(), owner) {
        draft.notices.push(Notice::warning("PoolOriginalUnreadable", "Restore", problem));
    }
    if snapshot.run_config.status.phase != Some(RunPhase::Restoring) {
        let note = "Every node finished; restoring the pools exactly as they were.".to_string();
        draft.notices.push(Notice::normal("RestoringPools", "Restore", note));
    }
}

/// What gating decided: the summary of the nodes, or — when every node finished and the pools are steered — that
/// the rollout ends, with its progress.
struct Gated {
    summary: Gating,
    end: Option<String>,
}

/// The Jobs of rollout `key`, by node.
fn jobs_of<'a>(snapshot: &'a Snapshot, key: &str) -> BTreeMap<&'a str, Vec<&'a JobView>> {
    let mut jobs: BTreeMap<&str, Vec<&JobView>> = BTreeMap::new();
    for job in snapshot.jobs.iter().filter(|j| j.target_version == key) {
        jobs.entry(job.node.as_str()).or_default().push(job);
    }
    jobs
}

/// Steps 4–6 once every target pool is claimed and paused.
fn gate(
    snapshot: &Snapshot,
    resolved: &Resolved<'_>,
    target: &Target,
    control_plane_done: bool,
    draft: &mut Draft,
) -> Gated {
    let history = History::of(&snapshot.run_config.status, &target.key);
    let jobs = jobs_of(snapshot, &target.key);
    let inputs = Inputs::of(snapshot, resolved, target, &history, &jobs);
    let spec = &snapshot.run_config.spec;
    let gate = gate::plan(snapshot, &inputs, control_plane_done, &mut draft.ledger);
    let recorded = record::record(
        &gate.nodes,
        &history,
        &target.describe(),
        &Time(snapshot.now),
        spec.node_timeout(),
        spec.soak_time(),
    );
    draft.intents.extend(gate.intents);
    draft.notices.extend(gate.notices);
    draft.notices.extend(recorded.notices);
    draft.requeue_after = recorded.requeue_after;
    draft.release_jobs = true;
    let blockers = gate.readiness.as_ref().map(|r| r.blockers.clone());
    draft.needs_budget_pods = gate.readiness.as_ref().map(|r| r.needs_budget_pods.clone()).unwrap_or_default();
    draft.needs_alerts = gate.readiness.as_ref().is_some_and(|r| r.needs_alerts);
    draft.notices.extend(held_or_resumed(&snapshot.run_config.status, blockers.as_deref()));
    draft.status.blocked_by = blockers.clone().unwrap_or_default();
    let nodes = recorded.nodes;
    let progress = nodes.progress();
    let status = &mut draft.status;
    (status.nodes, status.completed_nodes, status.skipped_nodes) = (nodes.entries, nodes.completed, nodes.skipped);
    (status.pending_nodes, status.total_nodes, status.progress) = (nodes.pending, nodes.total, Some(progress.clone()));

    let end = (gate.steered && gate.nodes.iter().all(|g| g.state.finished())).then(|| progress.clone());
    let failed = gate.nodes.iter().find_map(|g| match &g.state {
        NodeState::Failed { message, timed_out, .. } => {
            Some(Failure { node: g.node.name.clone(), message: message.clone(), timed_out: *timed_out })
        }
        NodeState::Ungated { accepted: false } => {
            Some(Failure { node: g.node.name.clone(), message: record::UNGATED.to_string(), timed_out: false })
        }
        _ => None,
    });
    let job_failure = gate.nodes.iter().find_map(|g| match &g.state {
        NodeState::Failed { message, timed_out: false, .. } => Some(message.clone()),
        _ => None,
    });
    let summary = Gating {
        labels_applied: gate.labels_applied,
        steered: gate.steered,
        in_flight: gate.nodes.iter().filter(|g| g.state.in_flight()).count(),
        pending: gate.nodes.iter().filter(|g| g.state == NodeState::Pending).count(),
        failed,
        job_failure,
        hold: spec.on_failure == crate::api::FailurePolicy::Hold,
        paused_by_spec: spec.paused,
        progress,
        blockers,
    };
    Gated { summary, end }
}

/// The Events of the next node becoming held (or held by other checks) and of it no longer being held; nothing
/// while the same checks keep holding it.
fn held_or_resumed(previous: &MutexRunConfigStatus, blockers: Option<&[Blocker]>) -> Vec<Notice> {
    let checks = |list: &[Blocker]| list.iter().map(|b| b.check.clone()).collect::<Vec<_>>();
    let before = checks(&previous.blocked_by);
    let now = checks(blockers.unwrap_or_default());
    if before == now {
        return Vec::new();
    }
    match blockers {
        Some(list) if !list.is_empty() => {
            let what: Vec<String> = list.iter().map(|b| format!("{}: {}", b.check, b.message)).collect();
            vec![Notice::warning("RolloutHeld", "Hold", format!("The next node waits. {}.", what.join("; ")))]
        }
        _ => vec![Notice::normal(
            "RolloutResumed",
            "Resume",
            format!("Nothing holds the next node any more (was: {}).", before.join(", ")),
        )],
    }
}

/// The parts of the previous status that a stage which does not recount the nodes keeps.
fn carried(snapshot: &Snapshot) -> MutexRunConfigStatus {
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
        ..Default::default()
    }
}

/// Puts the status together from the stage: phase, message, every condition, and the Events of a phase change.
fn finish(snapshot: &Snapshot, mut draft: Draft, stage: Stage, validated: &str) -> Plan {
    let previous = &snapshot.run_config.status;
    let (phase, message) = stage.phase_and_message();
    if previous.phase != Some(phase) && phase != RunPhase::Invalid {
        draft.notices.push(Notice::normal("PhaseChanged", "Reconcile", format!("{phase:?}: {message}")));
    }
    let generation = snapshot.run_config.generation;
    let now = Time(snapshot.now);
    // Put-backs go first, but for pools this plan restores anyway.
    let restored: Vec<String> = draft
        .intents
        .iter()
        .filter_map(|i| match i {
            Intent::RestorePool { pool, .. } => Some(pool.clone()),
            _ => None,
        })
        .collect();
    let put_back = draft.put_back.into_iter().filter(|i| match i {
        Intent::PutBackPool { pool, .. } => !restored.contains(pool),
        _ => true,
    });
    let intents: Vec<Intent> = put_back.chain(draft.intents).collect();
    let settled = draft.ledger.finish();
    let mut notices = settled.notices;
    notices.append(&mut draft.notices);
    let requeue_after = match (draft.requeue_after, settled.requeue_after) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    let mut status = draft.status;
    status.observed_generation = generation;
    status.phase = Some(phase);
    status.message = Some(message);
    status.foreign_changes = settled.records;
    let policy = snapshot.policy.clone();
    if let (Some(Err(why)), false) = (
        &policy,
        conditions::find(&previous.conditions, condition::FOREIGN_WRITES_REFUSED)
            .is_some_and(|c| c.reason == "PolicyUnavailable"),
    ) {
        notices.push(Notice::warning(
            "AdmissionPolicyUnavailable",
            "Guard",
            format!("{why}; numo notices other writers' changes to what it holds and puts them back instead."),
        ));
    }
    let besides = stage::Besides {
        overdue: draft.overdue,
        contested: settled.blocker.clone().map(|b| {
            let fight = status.foreign_changes.iter().any(|r| r.changes >= foreign::FIGHT_CHANGES);
            (if fight { "ChangedBackRepeatedly" } else { "ForeignChange" }, b.message)
        }),
        policy,
    };
    let mut desired = stage.conditions(validated, &besides);
    // Whatever the stage, an unresolved foreign change holds the next node.
    if let Some(blocker) = settled.blocker {
        let ready = desired.iter_mut().find(|d| d.type_ == condition::READY_FOR_NEXT_NODE && d.status);
        if let Some(ready) = ready {
            *ready =
                conditions::Desired::false_(condition::READY_FOR_NEXT_NODE, "ForeignChange", blocker.message.clone());
        }
        if !status.blocked_by.iter().any(|b| b.check == blocker.check) {
            status.blocked_by.push(blocker);
        }
    }
    status.conditions = conditions::merge(&previous.conditions, &desired, generation, &now);
    let after_status = if draft.release_jobs { finalize::release_deleted_jobs(snapshot) } else { Vec::new() };
    Plan {
        intents,
        status,
        after_status,
        notices,
        requeue_after,
        needs_budget_pods: draft.needs_budget_pods,
        needs_alerts: draft.needs_alerts,
    }
}

#[cfg(test)]
mod tests;
