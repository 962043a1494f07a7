//! The ends of a rollout: completion (Idle or Completed once the target pools caught up), deletion (restore every
//! claimed pool, remove every rule label, let go of every Job, then of the run config), and letting go of Jobs whose
//! results the status records.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::draft::Draft;
use super::intent::Intent;
use super::node_state::History;
use super::notice::Notice;
use super::pools;
use super::resolve::Resolved;
use super::stage::{Stage, Upgrade};
use crate::api::{MutexRunConfigStatus, NodePhase, RunPhase};
use crate::controllers::run_config::snapshot::{NodeView, PoolView, Snapshot};
use crate::labels;

/// Removes `labels` from every node that carries one of them, and numo's release mark from every node released
/// into the canary pool `canary`.
pub fn unlabel(snapshot: &Snapshot, labels: &[String], canary: &str) -> Vec<Intent> {
    let mark = labels::released_value(canary);
    snapshot
        .nodes
        .values()
        .filter_map(|n| {
            let mut present: Vec<String> = labels.iter().filter(|k| n.labels.has_rule_label(k)).cloned().collect();
            if n.labels.release_mark() == Some(mark.as_str()) {
                present.push(labels::RELEASED.to_string());
            }
            (!present.is_empty()).then(|| Intent::UnlabelNode { node: n.name.clone(), labels: present })
        })
        .collect()
}

/// Removes the rule labels and the release mark from the nodes this run config gates or held besides (the
/// canary's outsiders, held by numo 0.2), never from another run config's nodes: run configs that share a rule
/// share its label.
pub fn unlabel_own(snapshot: &Snapshot, resolved: &Resolved<'_>) -> Vec<Intent> {
    let labels = resolved.labels();
    let own: std::collections::HashSet<&str> =
        resolved.gated.iter().chain(&resolved.outsiders).map(|n| n.name.as_str()).collect();
    unlabel(snapshot, &labels, &resolved.canary.name)
        .into_iter()
        .filter(|intent| matches!(intent, Intent::UnlabelNode { node, .. } if own.contains(node.as_str())))
        .collect()
}

/// Deletion: remove every rule label (the spec's, and any that a claimed pool's selector still names) and release
/// mark, restore every claimed pool (targets before the canary), let go of every Job, then of the run config. Returns the intents
/// and whether anything is left to restore.
pub fn plan(snapshot: &Snapshot) -> (Vec<Intent>, bool) {
    let owner = snapshot.run_config.key();
    let claimed: Vec<_> = snapshot.pools.values().filter(|p| p.owner() == Some(owner.as_str())).collect();
    let mut labels: Vec<String> = snapshot.rules.iter().map(|r| r.label()).collect();
    for key in claimed.iter().flat_map(|p| crate::selector::rule_labels(p.node_selector.as_ref())) {
        if !labels.iter().any(|l| l == key) {
            labels.push(key.to_string());
        }
    }
    // Labels and marks first: a released node goes back to its own pool, still steered to take it, so it never
    // matches two custom pools (the target restored while the canary still takes it) or none.
    let mut intents = unlabel(snapshot, &labels, &snapshot.run_config.spec.canary.name);
    intents.extend(pools::restore_all(claimed.iter().copied(), &owner, &snapshot.run_config.spec.canary.name));
    let restoring = !intents.is_empty();
    intents.extend(
        snapshot
            .jobs
            .iter()
            .filter(|j| j.holds_result)
            .map(|j| Intent::ReleaseJob { namespace: j.namespace.clone(), name: j.name.clone() }),
    );
    if intents.is_empty() && snapshot.run_config.has_finalizer {
        intents.push(Intent::RemoveFinalizer);
    }
    (intents, restoring)
}

/// Jobs being deleted that still wait for numo: their results are in the status about to be written.
pub fn release_deleted_jobs(snapshot: &Snapshot) -> Vec<Intent> {
    snapshot
        .jobs
        .iter()
        .filter(|j| j.deleting && j.holds_result)
        .map(|j| Intent::ReleaseJob { namespace: j.namespace.clone(), name: j.name.clone() })
        .collect()
}

/// Every gated node of rollout `key` finished (runs its target or is skipped): the status's finished-node lists and
/// progress, counted from the nodes, not from the last status (which a lagging cache may show from before the last
/// node finished), in the order the nodes finished. Returns the progress.
pub fn count_finished(
    snapshot: &Snapshot,
    resolved: &Resolved<'_>,
    key: &str,
    status: &mut MutexRunConfigStatus,
) -> String {
    let skip = &snapshot.run_config.skip;
    let history = History::of(&snapshot.run_config.status, key);
    // A node the MCO upgraded while numo held it never counts as done; its entry stays.
    let ungated = |n: &&&NodeView| history.phase(&n.name) == NodePhase::Ungated && !skip.contains(&n.name);
    let (skipped, completed): (Vec<&&NodeView>, Vec<&&NodeView>) =
        resolved.gated.iter().filter(|n| !ungated(n)).partition(|n| skip.contains(&n.name));
    let names = |nodes: Vec<&&NodeView>| nodes.iter().map(|n| n.name.clone()).collect();
    (status.completed_nodes, status.skipped_nodes) = history.in_finishing_order(names(completed), names(skipped));
    let progress = format!("{}/{}", status.completed_nodes.len() + status.skipped_nodes.len(), resolved.gated.len());
    status.progress = Some(progress.clone());
    progress
}

/// Whether the MCO moved a restored target pool's nodes back to its rendered config: it says Updated, and counts
/// as many machines as the pool's gated nodes. Reported Updated with fewer, it has not taken them back yet (the MCO
/// looked at it before the canary's restore, while the canary still held them): its walk is still to come.
fn walked(pool: &PoolView, resolved: &Resolved<'_>) -> bool {
    pool.updated && pool.machine_count.is_none_or(|count| count as usize >= resolved.members(&pool.name).count())
}

/// The skipped nodes that do not run `version` yet, each as a sentence: what it runs and what its machine-config
/// daemon says.
fn skipped_behind(resolved: &Resolved<'_>, version: &str, skip: &std::collections::BTreeSet<String>) -> Vec<String> {
    let behind = |n: &&&NodeView| {
        skip.contains(&n.name) && crate::controllers::run_config::version::is_behind(n.version.as_deref(), version)
    };
    resolved
        .gated
        .iter()
        .filter(behind)
        .map(|node| {
            let mut said = format!(
                "node {} (skipped) runs {}",
                node.name,
                node.version.as_deref().unwrap_or("a version numo cannot read")
            );
            if let Some(state) = node.mcd_state.as_deref().filter(|s| *s != "Done") {
                said.push_str(&format!(", its machine-config daemon is {state}"));
                if let Some(reason) = node.mcd_reason.as_deref().filter(|r| !r.is_empty()) {
                    said.push_str(&format!(": {reason}"));
                }
            }
            if node.cordoned {
                said.push_str(", it is cordoned");
            }
            if !node.ready {
                said.push_str(", it is not Ready");
            }
            said
        })
        .collect()
}

/// No pool is claimed and no node is behind: Completed if a rollout to this version ran (once the target pools
/// moved every node to their own rendered config: until then still Restoring), else Idle.
pub fn completion(snapshot: &Snapshot, resolved: &Resolved<'_>, upgrade: Upgrade, draft: &mut Draft) -> Stage {
    let previous = &snapshot.run_config.status;
    let rolled_out = previous.target_version.as_deref() == Some(upgrade.version.as_str())
        && matches!(previous.phase, Some(RunPhase::Restoring | RunPhase::Completed | RunPhase::Upgrading));
    let status = &mut draft.status;
    status.nodes.retain(|e| e.phase == NodePhase::Ungated);
    status.pending_nodes = 0;
    status.total_nodes = upgrade.total as u32;
    draft.release_jobs = true;
    if !rolled_out {
        status.completed_nodes = resolved.gated.iter().map(|n| n.name.clone()).collect();
        status.skipped_nodes.clear();
        return Stage::Idle(upgrade);
    }
    let progress = count_finished(snapshot, resolved, &upgrade.version, status);
    // Completed means done: every target pool Updated, skipped nodes included. A skipped node upgrades ungated in
    // its own pool once it is restored, and may never get there (that is often why it was skipped): the status then
    // names it, and what to do, for as long as it keeps its pool from Updated.
    let waiting_for: Vec<String> =
        resolved.targets.iter().filter(|p| !p.paused && !walked(p, resolved)).map(|p| p.name.clone()).collect();
    if previous.phase == Some(RunPhase::Restoring) && !waiting_for.is_empty() {
        let skipped_behind = skipped_behind(resolved, &upgrade.version, &snapshot.run_config.skip);
        use super::stage::condition::{NODE_UPGRADE, SKIPPED_NODE_NOT_UPDATED};
        let told = crate::conditions::find(&previous.conditions, NODE_UPGRADE)
            .is_some_and(|c| c.reason == SKIPPED_NODE_NOT_UPDATED);
        let stage = Stage::Restoring { upgrade, progress, waiting_for, skipped_behind };
        if let (false, Stage::Restoring { skipped_behind, .. }) = (told, &stage) {
            if !skipped_behind.is_empty() {
                draft.notices.push(Notice::warning(SKIPPED_NODE_NOT_UPDATED, "Restore", stage.phase_and_message().1));
            }
        }
        return stage;
    }
    if status.finished_at.is_none() {
        status.finished_at = Some(Time(snapshot.now));
    }
    let stage = Stage::Completed { upgrade, progress };
    if previous.phase != Some(RunPhase::Completed) {
        draft.notices.push(Notice::normal("RolloutCompleted", "Complete", stage.phase_and_message().1));
    }
    stage
}
