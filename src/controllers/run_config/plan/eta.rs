//! The estimate in the status: worked out again when a node finishes, a hold starts or ends, or a node fails, and
//! kept as it is on every other reconcile (so the end a user reads does not jitter with each event).

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::node_state::{GatedNode, NodeState};
use super::resolve::Resolved;
use crate::api::{MutexRunConfigStatus, NodePhase, NodeProgress, RunPhase, Step};
use crate::controllers::run_config::snapshot::Snapshot;
use crate::estimate::{self, InFlight, Projected, Projection, RestoreWalk, Waves};
use crate::windows::utc;

/// While a hold with no known end holds the next node (a failing health check), the estimate is worked out again
/// from now at least this often, so that the end it gives never falls behind now; the ends of windows, blackouts
/// and soaks are in the projection already.
pub const DURING_A_HOLD: std::time::Duration = std::time::Duration::from_secs(60);

/// How the estimate of a paused run config begins: it is counted as if the run config were resumed when it was
/// worked out, so that a pending rollout can be reviewed before it starts.
pub const PAUSED: &str = "The run config is paused: counted as if it were resumed now.";

/// The names of the Pending nodes among `gated`, in release order.
pub fn pending(gated: &[GatedNode<'_>]) -> Vec<String> {
    gated.iter().filter(|g| matches!(g.state, NodeState::Pending)).map(|g| g.node.name.clone()).collect()
}

/// The projection of the rest of the rollout from what the plan recorded in `status`; `pending` names the nodes
/// not started, in release order.
pub fn projected(
    snapshot: &Snapshot,
    resolved: &Resolved<'_>,
    gated: &[GatedNode<'_>],
    pending: &dyn Fn() -> Vec<String>,
    status: &MutexRunConfigStatus,
) -> (Projected, estimate::Durations) {
    let now = utc(&snapshot.now);
    let spec = &snapshot.run_config.spec;
    let soak = spec.soak_time().map(|d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX));
    let cleanup_jobs = resolved.rules.iter().any(|rule| rule.found.cleanup.is_some());
    let durations = estimate::figures::durations(&status.step_durations, &status.history, soak, cleanup_jobs);
    let in_flight = status.nodes.iter().filter_map(|entry| in_flight(entry, now)).collect();
    let pending = pending();
    let restore = RestoreWalk { nodes: status.total_nodes, at_once: at_once(resolved, status.total_nodes) };
    let waves = resolved.domains.as_ref().and_then(|d| waves(d, gated, status));
    let input = Projection {
        now,
        schedule: &resolved.schedule,
        concurrency: spec.concurrency,
        durations: &durations,
        in_flight,
        pending,
        restore,
        waves: waves.as_ref(),
    };
    (estimate::project(&input), durations)
}

/// The failure domains as the projection needs them: each node's domain, and the domain that finished last (its
/// soak may still hold the next one) unless the next domain has started already.
fn waves(domains: &super::domains::Domains, gated: &[GatedNode<'_>], status: &MutexRunConfigStatus) -> Option<Waves> {
    let mode = domains.mode?;
    let domain_of = gated.iter().map(|g| (g.node.name.clone(), domains.domain(g.node).to_string())).collect();
    let shown = status.topology.as_ref().map(|t| t.waves.as_slice()).unwrap_or_default();
    let last_finished = shown
        .iter()
        .filter_map(|w| Some((w.domain.clone(), utc(&w.finished_at.as_ref()?.0))))
        .max_by_key(|(_, at)| *at);
    let soak = domains.soak.and_then(|s| chrono::Duration::from_std(s).ok()).unwrap_or_default();
    Some(Waves { mode, per_domain: domains.per_domain, soak, domain_of, last_finished })
}

/// Works the estimate out again when something it rests on changed since the previous status, and gives the
/// projection it rests on; else keeps it, and gives the projection only when the snapshot asks for it
/// ([`Snapshot::project`]). `pending` names the nodes not started, in release order (see [`projected`]).
pub fn refresh(
    snapshot: &Snapshot,
    resolved: &Resolved<'_>,
    gated: &[GatedNode<'_>],
    pending: &dyn Fn() -> Vec<String>,
    status: &mut MutexRunConfigStatus,
) -> Option<Projected> {
    let previous = &snapshot.run_config.status;
    let done = |s: &MutexRunConfigStatus| s.completed_nodes.len() + s.skipped_nodes.len();
    let failed = |s: &MutexRunConfigStatus| {
        s.nodes
            .iter()
            .filter(|e| matches!(e.phase, NodePhase::Failed | NodePhase::Ungated) && e.accepted_at.is_none())
            .count()
    };
    let holds = |s: &MutexRunConfigStatus| s.blocked_by.iter().map(|b| b.check.clone()).collect::<Vec<_>>();
    let paused = snapshot.run_config.spec.paused;
    let counted_paused = |s: &MutexRunConfigStatus| s.estimate.as_ref().is_some_and(|e| e.assumes.starts_with(PAUSED));
    let now = utc(&snapshot.now);
    let held_and_old = open_ended(&status.blocked_by)
        && previous.estimate.as_ref().is_some_and(|e| {
            now - utc(&e.computed_at.0) >= chrono::Duration::from_std(DURING_A_HOLD).unwrap_or_default()
        });
    let unchanged = previous.estimate.is_some()
        && !held_and_old
        && counted_paused(previous) == paused
        && status.estimate.is_some()
        && status.rollout_key() == previous.rollout_key()
        && done(status) == done(previous)
        && failed(status) == failed(previous)
        && holds(status) == holds(previous);
    if unchanged {
        return snapshot.project.then(|| projected(snapshot, resolved, gated, pending, status).0);
    }
    let (projected, durations) = projected(snapshot, resolved, gated, pending, status);
    let remaining = status.total_nodes.saturating_sub(done(status) as u32);
    let mut estimate =
        estimate::estimate(&projected, &durations, remaining, &status.blocked_by, failed(status), utc(&snapshot.now));
    if paused {
        estimate.assumes = format!("{PAUSED} {}", estimate.assumes);
    }
    if let Some(change) = status.target_changes.last() {
        estimate.assumes.push_str(&format!(
            " The target changed from {} to {} at {}: every node still to go goes to {}.",
            change.from, change.to, change.at.0, change.to
        ));
    }
    status.estimate = Some(estimate);
    Some(projected)
}

/// A node in flight, with the step it is in and since when.
fn in_flight(entry: &NodeProgress, now: DateTime<Utc>) -> Option<InFlight> {
    let at = |t: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| t.as_ref().map(|t| utc(&t.0));
    let turn = entry.phase.in_turn()?;
    let (step, since) = match (turn.step, (turn.began)(entry)) {
        // Released and not yet seen upgrading: still waiting for the Machine Config Operator.
        (Step::Upgrade, None) => (Step::WaitForMco, at(&entry.released_at)),
        (step, began) => (step, began.map(|t| utc(&t.0))),
    };
    let drained = at(&entry.drained_at).filter(|_| step == Step::Upgrade);
    Some(InFlight { node: entry.name.clone(), step, since: since.unwrap_or(now), drained })
}

/// How many nodes the Machine Config Operator moves back at once in the restore walk: the first target pool's
/// `maxUnavailable` (a count, or a percentage of the rollout's nodes, rounded up), 1 when unset.
fn at_once(resolved: &Resolved<'_>, nodes: u32) -> u32 {
    let max = resolved.targets.first().and_then(|pool| pool.max_unavailable.as_ref());
    match max {
        Some(IntOrString::Int(n)) => u32::try_from(*n).unwrap_or(1).max(1),
        Some(IntOrString::String(text)) => text
            .strip_suffix('%')
            .and_then(|p| p.trim().parse::<u32>().ok())
            .map_or(1, |p| (nodes * p).div_ceil(100).max(1)),
        None => 1,
    }
}

/// Whether a hold with no known end holds the next node (a health check, a foreign change): the projection counts
/// the ends of windows, blackouts and soaks, not theirs, so the estimate moves with the clock while one lasts.
fn open_ended(blockers: &[crate::api::Blocker]) -> bool {
    use crate::api::check;
    let known = [check::MAINTENANCE_WINDOW, check::BLACKOUT_WINDOW, check::SOAK, check::DOMAIN_SOAK];
    blockers.iter().any(|b| !known.contains(&b.check.as_str()))
}

/// While a hold lasts, when to work the estimate out again ([`DURING_A_HOLD`] after it last was).
pub fn hold_refresh(snapshot: &Snapshot, status: &MutexRunConfigStatus) -> Option<std::time::Duration> {
    let estimate = status.estimate.as_ref().filter(|_| open_ended(&status.blocked_by))?;
    let age = utc(&snapshot.now) - utc(&estimate.computed_at.0);
    let left = chrono::Duration::from_std(DURING_A_HOLD).ok()? - age;
    Some(left.to_std().unwrap_or_default() + std::time::Duration::from_millis(50))
}

/// Says `Slow` in the message of a rollout that runs past its estimated end by the margin; else, while it may
/// still, how long until it would.
pub fn slow(snapshot: &Snapshot, status: &mut MutexRunConfigStatus) -> Option<std::time::Duration> {
    let in_progress = matches!(status.phase, Some(RunPhase::Pausing | RunPhase::Upgrading | RunPhase::Restoring));
    let (Some(estimate), Some(started), true) = (&status.estimate, &status.started_at, in_progress) else {
        return None;
    };
    let now = utc(&snapshot.now);
    let end = utc(&estimate.end.0);
    let after = estimate::slow_after(utc(&started.0), end);
    if now < after {
        return (after - now).to_std().ok().map(|wait| wait + std::time::Duration::from_millis(50));
    }
    let message = status.message.get_or_insert_with(String::new);
    message.push_str(&format!(
        " Slow: the rollout runs past its estimated end ({}); status.estimate says what it assumed.",
        crate::windows::shown(&end)
    ));
    None
}
