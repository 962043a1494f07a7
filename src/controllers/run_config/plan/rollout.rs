//! Steps 2–7 under `trigger: Upgrade`, and the pieces the config-change rollout shares with it: what the upgrade
//! is, a conflict with another run config, the gating of every node, the start of the restore.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::draft::Draft;
use super::foreign::{self, Ledger};
use super::node_state::{self, History, Inputs, NodeState};
use super::notice::Notice;
use super::resolve::Resolved;
use super::stage::{condition, Failure, Gating, Stage, Upgrade};
use super::target::Target;
use super::{eta, finalize, gate, learn, pools, record};
use crate::api::{Blocker, MutexRunConfigStatus, RunPhase};
use crate::conditions;
use crate::controllers::run_config::snapshot::{JobView, Snapshot};

/// The upgrade as the stage reports it: how many gated nodes still need `target`.
pub fn upgrade_of(snapshot: &Snapshot, resolved: &Resolved<'_>, target: &Target) -> Upgrade {
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

/// A rollout under way (numo holds its pools, some node in its gated turn or waiting) whose target the cluster
/// changed to `version`: the change, with the nodes in their gated turn (they go on in the new rollout).
fn retargeted(previous: &MutexRunConfigStatus, version: &str, holding: bool) -> Option<crate::api::TargetChange> {
    let from =
        previous.target_version.as_deref().filter(|from| *from != version && previous.target_config.is_none())?;
    let under_way = matches!(previous.phase, Some(RunPhase::Upgrading | RunPhase::Waiting | RunPhase::Failed));
    (holding && under_way).then(|| crate::api::TargetChange {
        from: from.to_string(),
        to: version.to_string(),
        at: Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH),
        in_flight: previous.nodes.iter().filter(|e| node_state::carried_on(e)).map(|e| e.name.clone()).collect(),
    })
}

/// The first involved pool that another live run config drives: (pool, that run config).
pub fn conflict(snapshot: &Snapshot, resolved: &Resolved<'_>) -> Option<(String, String)> {
    resolved.involved().into_iter().find_map(|pool| {
        let owner = pool.owner()?;
        (owner != resolved.owner && snapshot.run_configs.contains(owner))
            .then(|| (pool.name.clone(), owner.to_string()))
    })
}

/// The Conflict stage, with its Event when the run config was not waiting for that already.
pub fn conflicted(
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
pub fn rollout(
    snapshot: &Snapshot,
    resolved: &Resolved<'_>,
    target: &Target,
    holding: bool,
    draft: &mut Draft,
) -> Stage {
    let previous = &snapshot.run_config.status;
    let version = target.version.as_str();
    let carried = retargeted(previous, version, holding);
    let target = &target.carrying(carried.as_ref().map(|c| c.from.clone()));
    if previous.target_version.as_deref() != Some(version) || previous.target_config.is_some() {
        draft.status = MutexRunConfigStatus { target_version: Some(version.to_string()), ..Default::default() };
        if let Some(change) = carried {
            // The same rollout goes on to the new target: its start, its record of target changes.
            draft.status.started_at = previous.started_at.clone();
            draft.status.target_changes = previous.target_changes.clone();
            let at = Time(snapshot.now);
            let note = format!(
                "The cluster's target changed from {} to {} at {}; {}the other nodes go straight to {}.",
                change.from,
                change.to,
                crate::windows::shown(&crate::windows::utc(&snapshot.now)),
                match change.in_flight.as_slice() {
                    [] => String::new(),
                    nodes => format!("{} in its gated turn goes on to {} inside it; ", nodes.join(", "), change.to),
                },
                change.to
            );
            draft.notices.push(Notice::normal("TargetChanged", "Retarget", note));
            draft.status.target_changes.push(crate::api::TargetChange { at, ..change });
        }
    }
    let upgrade = upgrade_of(snapshot, resolved, target);
    let conflict = conflict(snapshot, resolved);
    if !holding && conflict.is_none() {
        // Leftover rule labels (a restore cut short) go; not while another run config holds these nodes.
        draft.intents.extend(finalize::unlabel_own(snapshot, resolved));
    }
    if !holding && upgrade.behind == 0 {
        return finalize::completion(snapshot, resolved, upgrade, draft);
    }
    if let Some(conflict) = conflict {
        return conflicted(snapshot, upgrade, conflict, holding, draft);
    }
    if !holding {
        draft.intents.extend(pools::claim(resolved, &snapshot.run_config.status.held_pools));
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
    if restored_by_numo(previous, version) {
        // numo restored every pool it held in an earlier plan of this rollout (its record keeps none): a pool that
        // still shows numo's claim is its cache behind those writes, and a target that shows none while the canary
        // still does was restored first. Each claimed one is restored again, and nothing is claimed.
        draft.intents.extend(pools::restore_all(snapshot.pools.values(), &resolved.owner, &resolved.canary.name));
        let progress = previous.progress.clone().unwrap_or_default();
        return Stage::Restoring { upgrade, progress, waiting_for: Vec::new() };
    }
    claim_removed(resolved, &snapshot.run_config.status.held_pools, &mut draft.ledger);
    // Pools claimed for an earlier shape of the spec (another canary, a removed target) go back first.
    draft.intents.extend(pools::restore_stale(resolved));
    let claims = pools::claim(resolved, &snapshot.run_config.status.held_pools);
    if !claims.is_empty() || !resolved.targets.iter().all(|t| t.paused) {
        draft.intents.extend(claims);
        draft.intents.extend(pools::pause_targets(resolved));
        return Stage::Pausing(upgrade);
    }
    let gate = gate_nodes(snapshot, resolved, target, upgrade.control_plane_done, draft);
    match gate.end {
        Some(progress) => {
            // Labels and marks first: a node back in its own (still steered) pool never matches two custom pools.
            restoring(snapshot, resolved, draft);
            draft.intents.extend(pools::restore_all(snapshot.pools.values(), &resolved.owner, &resolved.canary.name));
            Stage::Restoring { upgrade, progress, waiting_for: Vec::new() }
        }
        None => Stage::Gating(upgrade, gate.summary),
    }
}

/// Whether the previous status says numo restored the pools of the rollout to `version` itself: Restoring, with no
/// pool left in its record of the pools it holds.
fn restored_by_numo(previous: &MutexRunConfigStatus, version: &str) -> bool {
    previous.phase == Some(RunPhase::Restoring)
        && previous.held_pools.is_empty()
        && previous.target_version.as_deref() == Some(version)
        && previous.target_config.is_none()
}

/// Notes, while numo holds a rollout's pools, each involved pool whose claim someone removed (numo's other
/// annotations left, or all of them with the pool replaced, or the pool created again): it is claimed again with the
/// original numo recorded (`held`, else those annotations).
pub fn claim_removed(resolved: &Resolved<'_>, held: &[crate::api::HeldPool], ledger: &mut Ledger) {
    super::held::lost(resolved, held, ledger);
    for pool in resolved.involved() {
        if matches!(pool.claim, crate::pool_claim::ClaimAnnotations::Leftover { .. }) {
            let who = "an unknown writer (Kubernetes keeps no record of who removes an annotation)";
            ledger.saw(&format!("MachineConfigPool/{}", pool.name), foreign::CLAIM, who, false);
        }
    }
}

/// The label removals and Events of a rollout whose every node finished, before its pools are restored.
pub fn restoring(snapshot: &Snapshot, resolved: &Resolved<'_>, draft: &mut Draft) {
    let owner = resolved.owner.as_str();
    draft.intents.extend(finalize::unlabel_own(snapshot, resolved));
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
pub struct Gated {
    pub summary: Gating,
    pub end: Option<String>,
}

/// The Jobs of rollout `key`, by node, and those its `history` records (a node that went on from a rollout whose
/// target changed keeps the Jobs of its gated turn).
pub fn jobs_of<'a>(snapshot: &'a Snapshot, key: &str, history: &History<'_>) -> BTreeMap<&'a str, Vec<&'a JobView>> {
    let mut jobs: BTreeMap<&str, Vec<&JobView>> = BTreeMap::new();
    let recorded = |job: &JobView| history.entry(&job.node).is_some_and(|e| e.jobs.iter().any(|r| r.name == job.name));
    for job in snapshot.jobs.iter().filter(|j| j.target_version == key || recorded(j)) {
        jobs.entry(job.node.as_str()).or_default().push(job);
    }
    jobs
}

/// Steps 4–6 once every target pool is claimed and paused.
pub fn gate_nodes(
    snapshot: &Snapshot,
    resolved: &Resolved<'_>,
    target: &Target,
    control_plane_done: bool,
    draft: &mut Draft,
) -> Gated {
    let history = History::of_carrying(&snapshot.run_config.status, &target.key, target.carried.as_deref());
    let jobs = jobs_of(snapshot, &target.key, &history);
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
        &|node| !target.behind(node),
    );
    draft.intents.extend(gate.intents);
    draft.notices.extend(gate.notices);
    draft.notices.extend(recorded.notices);
    draft.requeue_after = [recorded.requeue_after, gate.requeue_after].into_iter().flatten().min();
    draft.finished_jobs = recorded.finished_jobs;
    draft.release_jobs = true;
    let blockers = gate.readiness.as_ref().map(|r| r.blockers.clone());
    draft.needs_budget_pods = gate.readiness.as_ref().map(|r| r.needs_budget_pods.clone()).unwrap_or_default();
    draft.needs_alerts = gate.readiness.as_ref().is_some_and(|r| r.needs_alerts);
    draft.notices.extend(held_or_resumed(&snapshot.run_config.status, blockers.as_deref()));
    draft.status.blocked_by = blockers.clone().unwrap_or_default();
    draft.status.topology = gate.topology;
    let nodes = recorded.nodes;
    let progress = nodes.progress();
    let status = &mut draft.status;
    (status.nodes, status.completed_nodes, status.skipped_nodes) = (nodes.entries, nodes.completed, nodes.skipped);
    (status.pending_nodes, status.total_nodes, status.progress) = (nodes.pending, nodes.total, Some(progress.clone()));
    draft.record = learn::node_durations(snapshot, status);
    draft.projection = eta::refresh(snapshot, resolved, &gate.nodes, status);

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
        left_out: gate.readiness.as_ref().map(|r| r.left_out.clone()).unwrap_or_default(),
    };
    Gated { summary, end }
}

/// The Events of the next node becoming held (or held by other checks) and of it no longer being held; nothing
/// while the same checks keep holding it.
pub fn held_or_resumed(previous: &MutexRunConfigStatus, blockers: Option<&[Blocker]>) -> Vec<Notice> {
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
