//! Steps 2–7 under `trigger: Upgrade`: what the upgrade is, a target the cluster changed mid-way, then the shared
//! steps (`shared_steps`) until the restore.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::draft::Draft;
use super::node_state;
use super::notice::Notice;
use super::resolve::Resolved;
use super::shared_steps::{claim_removed, conflict, conflicted, gate_nodes, restoring, upgrade_of};
use super::stage::Stage;
use super::target::Target;
use super::{finalize, pools};
use crate::api::{MutexRunConfigStatus, RunPhase};
use crate::controllers::run_config::snapshot::Snapshot;

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
        return Stage::Restoring { upgrade, progress, waiting_for: Vec::new(), skipped_behind: Vec::new() };
    }
    claim_removed(snapshot, resolved, &mut draft.ledger);
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
            Stage::Restoring { upgrade, progress, waiting_for: Vec::new(), skipped_behind: Vec::new() }
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
