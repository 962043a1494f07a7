//! A node whose turn of an earlier rollout is still finishing: its cleanup Job for the release it reached still
//! runs when the cluster's target changes (the new release asked for during its cleanup). Its gated turn for the new
//! target starts only once that Job ended, so no gate of the new turn, and no reboot, overlaps the cleanup of the
//! last one (`EarlierTurn`).

use std::collections::BTreeSet;

use super::node_state::GatedNode;
use super::target::Target;
use crate::api::{check, Blocker};
use crate::controllers::run_config::snapshot::Snapshot;
use crate::jobs::JobPhase;

/// Takes out of `startable` (indices into `nodes`) each node with a Job of another rollout of this run config that
/// still runs; returns the blocker that says so when no node is left to start.
pub fn keep_finishing(
    snapshot: &Snapshot,
    target: &Target,
    nodes: &[GatedNode<'_>],
    startable: &mut Vec<usize>,
) -> Option<Blocker> {
    if startable.is_empty() {
        return None;
    }
    let finishing: BTreeSet<(&str, &str, JobPhase)> = snapshot
        .jobs
        .iter()
        .filter(|j| j.result == crate::api::JobResult::Running && !j.deleting && j.target_version != target.key)
        .map(|j| (j.node.as_str(), j.target_version.as_str(), j.phase))
        .collect();
    if finishing.is_empty() {
        return None;
    }
    let mut waiting = Vec::new();
    startable.retain(|i| {
        let name = nodes[*i].node.name.as_str();
        let running: Vec<String> = finishing
            .iter()
            .filter(|(node, _, _)| *node == name)
            .map(|(_, rollout, phase)| format!("its {} Job for {rollout}", phase.as_str()))
            .collect();
        if running.is_empty() {
            return true;
        }
        waiting.push(format!("node {name} finishes its turn of the earlier rollout first ({})", running.join(", ")));
        false
    });
    (startable.is_empty() && !waiting.is_empty())
        .then(|| Blocker { check: check::EARLIER_TURN.to_string(), message: waiting.join("; ") })
}
