//! Trigger `AnyConfigChange`: every change of a target pool's rendered MachineConfig goes through the gate, an
//! upgrade being one such change.
//!
//! - The target pools are claimed and paused for as long as the run config exists (their original `paused` flag and
//!   selector recorded, restored on delete), so the MCO never starts a change on its own.
//! - A rollout starts when a target node runs a config whose content differs from its pool's rendered config (or a
//!   version below the cluster's). It is named once (`status.targetConfig.rollout`); the pools' rendered configs are
//!   re-read on every reconcile, so a change that arrives while it runs is rolled within it: nodes not yet released
//!   get it with their gate, nodes in flight wait for it, nodes already done go through the gate again in the next
//!   rollout. A node that reached its config is held again at once, so the canary never rolls a later change to it.
//! - Between rollouts (standby) the pools are as the admin made them except paused; a target pool whose nodes all
//!   run its content under the canary's name is unpaused until the MCO moved them to its own name (a rename, no
//!   reboot), then paused again.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::draft::Draft;
use super::intent::{Intent, PoolSpec};
use super::node_state::{self, History, Inputs};
use super::notice::Notice;
use super::resolve::Resolved;
use super::shared_steps::{claim_removed, conflict, conflicted, gate_nodes, restoring, upgrade_of};
use super::stage::{Stage, Upgrade};
use super::target::{self, Target};
use super::{finalize, pools};

use crate::api::{MutexRunConfigStatus, RunPhase};
use crate::controllers::run_config::snapshot::{PoolView, Snapshot};
use crate::openshift::config_content;

/// Steps 2–7 for a valid configuration, trigger `AnyConfigChange`.
pub fn rollout(snapshot: &Snapshot, resolved: &Resolved<'_>, version: &str, holding: bool, draft: &mut Draft) -> Stage {
    let previous = &snapshot.run_config.status;
    // What the nodes must reach does not depend on the rollout's name, which is known further down.
    let mut target = Target::config_change("", version, resolved.with_homes());
    let upgrade = upgrade_of(snapshot, resolved, &target);
    // The rollout the status names (a run config switched from `trigger: Upgrade` mid-rollout goes on with the
    // upgrade's), while some node of it has not finished.
    let described = previous.target_config.is_some() || previous.started_at.is_some();
    let running = previous.rollout_key().filter(|key| described && unfinished(snapshot, resolved, &target, key));
    if let Some(conflict) = conflict(snapshot, resolved) {
        return conflicted(snapshot, upgrade, conflict, holding, draft);
    }
    if holding {
        claim_removed(snapshot, resolved, &mut draft.ledger);
    }
    // Pools claimed for an earlier shape of the spec go back first; then the targets are held, whatever happens.
    draft.intents.extend(pools::restore_stale(resolved));
    let claims = pools::claim_targets(resolved, &snapshot.run_config.status.held_pools);
    if !claims.is_empty() {
        draft.intents.extend(claims);
        return Stage::Pausing(upgrade);
    }
    target.key = match running {
        Some(key) => key.to_string(),
        None if upgrade.behind > 0 => start(snapshot, resolved, version, &upgrade, draft),
        None => return standby(snapshot, resolved, upgrade, draft),
    };
    draft.status.target_version = Some(version.to_string());
    let mut config = target::status_of(&target.key, &resolved.targets, previous);
    config.behind_since = config.behind_since.or(Some(Time(snapshot.now)));
    draft.status.target_config = Some(config);
    overdue(snapshot, &upgrade, draft);
    let claims = pools::claim(resolved, &snapshot.run_config.status.held_pools);
    let pausing = pools::pause_targets(resolved);
    if !claims.is_empty() || !pausing.is_empty() {
        draft.intents.extend(claims);
        draft.intents.extend(pausing);
        return Stage::Pausing(upgrade);
    }
    let gated = gate_nodes(snapshot, resolved, &target, upgrade.control_plane_done, draft);
    unreachable(snapshot, resolved, &target, draft);
    if let Some(wait) = until_overdue(snapshot, draft).filter(|_| upgrade.behind > 0) {
        draft.requeue_after = Some(draft.requeue_after.map_or(wait, |r| r.min(wait)));
    }
    match gated.end {
        Some(progress) => {
            // Labels and marks first: a node back in its own (still steered) pool never matches two custom pools.
            restoring(snapshot, resolved, draft);
            draft.intents.extend(settle(snapshot, resolved));
            Stage::Restoring { upgrade, progress, waiting_for: Vec::new(), skipped_behind: Vec::new() }
        }
        None => Stage::Gating(upgrade, gated.summary),
    }
}

/// How long the rollout has kept a node behind, and how long it may (`overdueAfter`).
fn waited(snapshot: &Snapshot, draft: &Draft) -> Option<(std::time::Duration, std::time::Duration)> {
    let since = draft.status.target_config.as_ref()?.behind_since.as_ref()?;
    let waited = std::time::Duration::try_from(snapshot.now.duration_since(since.0)).unwrap_or_default();
    Some((waited, snapshot.run_config.spec.overdue_after()))
}

/// A rollout that has run longer than `overdueAfter`: the `ConfigChangeOverdue` condition, and a Warning Event when it
/// becomes overdue. A held rollout delays the MachineConfig changes waiting in it (not the kubelet CA: the
/// machine-config daemon writes that to every node from the ControllerConfig, paused pool or not).
fn overdue(snapshot: &Snapshot, upgrade: &Upgrade, draft: &mut Draft) {
    let spec = &snapshot.run_config.spec;
    let Some((waited, limit)) = waited(snapshot, draft) else { return };
    if waited < limit || upgrade.behind == 0 {
        return;
    }
    let since = draft.status.target_config.as_ref().and_then(|t| t.behind_since.as_ref()).map(|t| t.0);
    let message = format!(
        "{} of {} target nodes have waited for {} since {} (longer than overdueAfter {}): see what holds the \
         rollout.",
        upgrade.behind,
        upgrade.total,
        upgrade.goal,
        since.unwrap_or(snapshot.now),
        spec.overdue_after.as_deref().unwrap_or("24h"),
    );
    let previous = &snapshot.run_config.status.conditions;
    if !crate::conditions::is_true(previous, super::stage::condition::CONFIG_CHANGE_OVERDUE) {
        draft.notices.push(Notice::warning("ConfigChangeOverdue", "Gate", message.clone()));
    }
    draft.overdue = Some(message);
}

/// How long until the rollout becomes overdue (numo looks again then: nothing else may happen meanwhile).
fn until_overdue(snapshot: &Snapshot, draft: &Draft) -> Option<std::time::Duration> {
    let (waited, limit) = waited(snapshot, draft)?;
    (waited < limit).then(|| limit - waited + std::time::Duration::from_millis(50))
}

/// Whether some gated node has not finished rollout `key` (as the status and its Jobs record it) towards `target`.
fn unfinished(snapshot: &Snapshot, resolved: &Resolved<'_>, target: &Target, key: &str) -> bool {
    let history = History::of(&snapshot.run_config.status, key).with_jobs(&snapshot.jobs, key);
    let inputs = Inputs::of(snapshot, resolved, target, &history);
    resolved.gated.iter().any(|node| !node_state::gated(&inputs, node).state.finished())
}

/// A new rollout: named, its status started afresh (its `targetConfig` is written by the caller), an Event saying
/// what changed. Returns its name; its nodes are gated in the same reconcile (nothing else would wake numo when the
/// pools need no write).
fn start(snapshot: &Snapshot, resolved: &Resolved<'_>, version: &str, upgrade: &Upgrade, draft: &mut Draft) -> String {
    let key = target::new_rollout_key(version, &resolved.targets, &snapshot.now);
    let total = resolved.gated.len() as u32;
    let mut note =
        format!("{} of {} target nodes do not run {}; gating them.", upgrade.behind, upgrade.total, upgrade.goal);
    let changed = target::changed_machine_configs(&resolved.targets);
    if !changed.is_empty() {
        note.push_str(&format!(" MachineConfigs changed: {}.", changed.join(", ")));
    }
    draft.notices.push(Notice::normal("ConfigChangeDetected", "Gate", note));
    draft.status = MutexRunConfigStatus {
        target_version: Some(version.to_string()),
        started_at: Some(Time(snapshot.now)),
        total_nodes: total,
        pending_nodes: total,
        progress: Some(format!("0/{total}")),
        ..Default::default()
    };
    key
}

/// The pools between rollouts: no rule label or release mark left (first: a node leaves the canary for its own
/// pool, still steered to take it, and never matches two custom pools or none), each target as recorded but paused
/// (or unpaused for a rename), then the canary restored.
fn settle(snapshot: &Snapshot, resolved: &Resolved<'_>) -> Vec<Intent> {
    let labelled = snapshot.nodes.values().any(|n| resolved.rules.iter().any(|r| n.labels.has_rule_label(&r.label)));
    let canary_claimed = resolved.canary.owner() == Some(resolved.owner.as_str());
    let mut intents = finalize::unlabel(snapshot, &resolved.labels(), &resolved.canary.name);
    for pool in &resolved.targets {
        let Some(Ok(original)) = pool.claim.claim().map(|c| &c.original) else { continue };
        let paused = !(renames(resolved, pool) && !labelled && !canary_claimed);
        let selector = match crate::membership::is_built_in(&pool.name) {
            true => pools::handed_over_selector(pool),
            false => original.node_selector.clone().filter(|s| pool.node_selector.as_ref() != Some(s)),
        };
        if selector.is_some() || pool.paused != paused {
            intents.push(Intent::SteerPool {
                pool: pool.name.clone(),
                owner: resolved.owner.clone(),
                spec: PoolSpec { paused, node_selector: selector, ..Default::default() },
            });
        }
    }
    if canary_claimed {
        intents.push(pools::restore(resolved.canary, &resolved.owner));
    }
    intents
}

/// Whether `pool` may be unpaused so the MCO renames its nodes' configs: it rendered a config from exactly the
/// MachineConfigs it selects now (no render pending), some node it owns runs that content under another name (the
/// canary's), and every node it owns runs that content already with the daemon Done — so the MCO has nothing to apply
/// but the name. Judged from the nodes, not from the pool's `Updated`
/// condition, which lags every write of the pool's spec.
fn renames(resolved: &Resolved<'_>, pool: &PoolView) -> bool {
    let Some(wanted) = pool.configuration.as_deref() else { return false };
    if pool.render_failure.is_some() || pool.degraded.is_some() || pool.render_pending {
        return false;
    }
    let members: Vec<_> = resolved.members(&pool.name).collect();
    let same = |config: Option<&str>| config.map(config_content) == Some(config_content(wanted));
    members.iter().any(|n| n.current_config.as_deref() != Some(wanted))
        && members.iter().all(|n| {
            n.mcd_state.as_deref() == Some("Done")
                && same(n.current_config.as_deref())
                && same(n.desired_config.as_deref())
        })
}

/// No rollout runs: the pools are settled, and the run config says every target node runs its pool's config.
fn standby(snapshot: &Snapshot, resolved: &Resolved<'_>, upgrade: Upgrade, draft: &mut Draft) -> Stage {
    let previous = &snapshot.run_config.status;
    let intents = settle(snapshot, resolved);
    // A pool whose nodes do not all run its own rendered config by name is not finished: the MCO still has to rename
    // (numo unpauses the pool for that once it is safe), like a pool that is not Updated after an upgrade.
    let renaming: Vec<String> = resolved
        .targets
        .iter()
        .filter(|t| {
            !t.paused
                || intents
                    .iter()
                    .any(|i| matches!(i, Intent::SteerPool { pool, spec, .. } if *pool == t.name && !spec.paused))
                || t.configuration
                    .as_ref()
                    .is_some_and(|wanted| resolved.members(&t.name).any(|n| n.current_config.as_ref() != Some(wanted)))
        })
        .map(|t| t.name.clone())
        .collect();
    let settling = intents.iter().any(|i| !matches!(i, Intent::SteerPool { spec, .. } if spec.node_selector.is_none()));
    draft.intents.extend(intents);
    draft.release_jobs = true;
    let status = &mut draft.status;
    status.target_version = Some(upgrade.version.clone());
    status.target_config = previous.target_config.clone().map(|mut t| {
        t.pools = target::status_of(&t.rollout, &resolved.targets, previous).pools;
        t.behind_since = None;
        t
    });
    status.nodes.clear();
    status.pending_nodes = 0;
    status.total_nodes = upgrade.total as u32;
    let rolled = previous.target_config.is_some();
    if let Some(key) = previous.rollout_key().filter(|_| rolled) {
        finalize::count_finished(snapshot, resolved, key, status);
    }
    let settled = !settling && renaming.is_empty();
    if rolled && status.finished_at.is_none() && settled {
        status.finished_at = Some(Time(snapshot.now));
    }
    let stage = Stage::Standby { upgrade, rolled, settling, renaming };
    if rolled && settled && previous.phase != Some(RunPhase::Completed) {
        draft.notices.push(Notice::normal("RolloutCompleted", "Complete", stage.phase_and_message().1));
    }
    stage
}

/// Says so when a released node waits for a config the canary does not render (a MachineConfig the canary does not
/// select arrived after the node's release, or a pool cannot render): the node would wait until `nodeTimeout`
/// without a word otherwise. Its entry says why, and a Warning Event says it once.
fn unreachable(snapshot: &Snapshot, resolved: &Resolved<'_>, target: &Target, draft: &mut Draft) {
    let canary = resolved.canary;
    let offered = canary.configuration.as_deref().unwrap_or_default();
    for entry in draft.status.nodes.iter_mut().filter(|e| e.phase == crate::api::NodePhase::Upgrading) {
        let Some(wanted) = target.config_of(&entry.name) else { continue };
        let why = match &canary.render_failure {
            Some(failure) => format!("the canary MachineConfigPool {} cannot render: {failure}", canary.name),
            None if config_content(offered) != config_content(wanted) => format!(
                "the canary MachineConfigPool {} renders {offered}, whose content differs, so the node cannot get \
                 there; make the canary select the MachineConfigs its pool selects, or retry or skip the node",
                canary.name
            ),
            None => continue,
        };
        let message = format!("Waiting for the node to run {wanted}, but {why}.");
        let before = snapshot.run_config.status.nodes.iter().find(|e| e.name == entry.name);
        if before.and_then(|e| e.message.as_deref()) != Some(message.as_str()) {
            let note = format!("Node {}: {message}", entry.name);
            draft.notices.push(Notice::warning("ConfigUnreachable", "Gate", note));
        }
        entry.message = Some(message);
    }
}
