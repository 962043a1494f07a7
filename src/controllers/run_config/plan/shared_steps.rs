//! The steps both triggers' rollouts take (`rollout` for `Upgrade`, `config_change` for `AnyConfigChange`): the
//! upgrade's figures, a conflict with another run config, the claims others removed, the gating of every node
//! (steps 4–6) and the start of the restore.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::draft::Draft;
use super::foreign::{self, Ledger};
use super::node_state::{History, Inputs, NodeState};
use super::notice::Notice;
use super::resolve::Resolved;
use super::stage::{condition, Failure, FailureCause, Gating, Stage, Upgrade};
use super::target::Target;
use super::untouched::{self, Narrowed};
use super::{eta, finalize, gate, learn, pools, record};
use crate::api::{Blocker, MutexRunConfigStatus, RunPhase};
use crate::conditions;
use crate::controllers::run_config::snapshot::{NodeView, Snapshot};

/// The upgrade as the stage reports it: how many gated nodes still need `target`.
pub fn upgrade_of(snapshot: &Snapshot, resolved: &Resolved<'_>, target: &Target) -> Upgrade {
    let skip = &snapshot.run_config.skip;
    // A node whose version cannot be read starts no rollout (it would be gated towards a version it may already
    // run); the UpgradeChecked condition names it. Once a rollout runs, it is gated like the rest.
    let unknown = |gated: &[&NodeView]| gated.iter().filter(|n| n.version.is_none()).map(|n| n.name.clone()).collect();
    let counted = resolved.index.and_then(|index| Some((index, index.facts_for(target)?)));
    let (behind, unknown) = match counted {
        // The index counted them: only the skipped nodes are looked up, and the unknown ones when there are any.
        Some((index, facts)) => {
            let (behind, unknown_count) = index.behind_and_unknown();
            let skipped = skip.iter().filter_map(|n| index.place(n)).filter(|p| facts[*p].known && facts[*p].behind);
            let unknown = if unknown_count == 0 { Vec::new() } else { unknown(&resolved.gated) };
            (behind - skipped.count(), unknown)
        }
        None => {
            let behind = resolved.gated.iter().filter(|n| n.version.is_some() && target.behind(n));
            (behind.filter(|n| !skip.contains(&n.name)).count(), unknown(&resolved.gated))
        }
    };
    Upgrade {
        version: target.version.clone(),
        goal: target.describe(),
        control_plane_done: snapshot.cluster.as_ref().is_some_and(|c| c.control_plane_completed),
        behind,
        total: resolved.gated.len(),
        unknown,
        version_source: format!("{:?}", snapshot.run_config.spec.version_source),
    }
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

/// Notes, while numo holds a rollout's pools, each involved pool whose claim someone removed (numo's other
/// annotations left, or all of them with the pool replaced, or the pool created again): it is claimed again with the
/// original numo recorded (`held`, else those annotations).
pub fn claim_removed(snapshot: &Snapshot, resolved: &Resolved<'_>, ledger: &mut Ledger) {
    super::held::lost(resolved, &snapshot.run_config.status.held_pools, &snapshot.pools_behind, ledger);
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

/// Steps 4–6 once every target pool is claimed and paused.
pub fn gate_nodes(
    snapshot: &Snapshot,
    resolved: &Resolved<'_>,
    target: &Target,
    control_plane_done: bool,
    draft: &mut Draft,
) -> Gated {
    let status = &snapshot.run_config.status;
    let history = History::of_carrying(status, &target.key, target.carried.as_deref(), resolved.kept)
        .with_jobs(&snapshot.jobs, &target.key);
    // The nodes nothing has touched yet, past those that may start now, and the nodes done are counted and listed,
    // not read one by one.
    let narrowed = (!draft.every_node).then(|| untouched::set_apart(snapshot, resolved, target, &history)).flatten();
    let resolved = narrowed.as_ref().map_or(resolved, |n| &n.resolved);
    let apart = narrowed.as_ref().map(Narrowed::apart).unwrap_or_default();
    let inputs = Inputs::of(snapshot, resolved, target, &history);
    let spec = &snapshot.run_config.spec;
    let gate = gate::plan(snapshot, &inputs, control_plane_done, &mut draft.ledger);
    let recorded =
        record::record(&gate.nodes, apart, &history, &target.describe(), &Time(snapshot.now), spec, &|node| {
            !target.behind(node)
        });
    draft.intents.extend(gate.intents);
    draft.notices.extend(gate.notices);
    draft.notices.extend(recorded.notices);
    draft.requeue_after = [recorded.requeue_after, gate.requeue_after].into_iter().flatten().min();
    draft.finished_jobs = recorded.finished_jobs;
    draft.release_jobs = true;
    let blockers = gate.readiness.as_ref().map(|r| r.blockers.clone());
    draft.asks = gate.readiness.as_ref().map(|r| r.asks.clone()).unwrap_or_default();
    draft.notices.extend(held_or_resumed(&snapshot.run_config.status, blockers.as_deref()));
    draft.status.blocked_by = blockers.clone().unwrap_or_default();
    draft.status.topology = gate.topology;
    let nodes = recorded.nodes;
    let progress = nodes.progress();
    let status = &mut draft.status;
    (status.nodes, status.completed_nodes, status.skipped_nodes) = (nodes.entries, nodes.completed, nodes.skipped);
    (status.pending_nodes, status.total_nodes, status.progress) = (nodes.pending, nodes.total, Some(progress.clone()));
    draft.record = learn::node_durations(snapshot, status);
    let pending = || match &narrowed {
        Some(narrowed) => narrowed.pending(&gate.nodes),
        None => eta::pending(&gate.nodes),
    };
    draft.projection = eta::refresh(snapshot, resolved, &gate.nodes, &pending, status);

    let finished = apart.waiting == 0 && gate.nodes.iter().all(|g| g.state.finished());
    let end = (gate.steered && finished).then(|| progress.clone());
    let failed = gate.nodes.iter().find_map(|g| match &g.state {
        NodeState::Failed { message, cause, .. } => {
            Some(Failure { node: g.node.name.clone(), message: message.clone(), cause: *cause })
        }
        NodeState::Ungated { accepted: false } => {
            Some(Failure { node: g.node.name.clone(), message: record::UNGATED.to_string(), cause: FailureCause::Job })
        }
        _ => None,
    });
    let job_failure = gate.nodes.iter().find_map(|g| match &g.state {
        NodeState::Failed { message, cause: FailureCause::Job, .. } => Some(message.clone()),
        _ => None,
    });
    let summary = Gating {
        labels_applied: gate.labels_applied,
        steered: gate.steered,
        in_flight: gate.nodes.iter().filter(|g| g.state.in_flight()).count(),
        pending: gate.nodes.iter().filter(|g| matches!(g.state, NodeState::Pending)).count() + apart.waiting,
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
