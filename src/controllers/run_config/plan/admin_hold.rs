//! An admin's own hold of a target pool: a pool that was paused before numo held it (OpenShift's EUS-to-EUS
//! procedure pauses the worker pools, updates the control plane twice, then unpauses them). numo releases none of its
//! nodes, so no worker is given an intermediate release, and says so (`AdminHold`). The admin's go-ahead — the
//! go-ahead annotation on the run config, or, where numo's admission policy is not in force, unpausing the pool —
//! lets numo gate its nodes straight to the cluster's release; numo keeps the pool paused meanwhile and leaves it
//! unpaused at the end, as the admin's last step wanted.

use super::intent::Intent;
use super::node_state::GatedNode;
use super::notice::Notice;
use super::resolve::Resolved;
use crate::api::{check, Blocker};
use crate::controllers::run_config::snapshot::{PoolView, Snapshot};
use crate::pool_claim::PoolOriginal;

/// The original numo recorded for `pool`, when it says the pool was paused before numo held it.
fn held_by_admin(pool: &PoolView) -> Option<&PoolOriginal> {
    pool.claim.claim()?.original.as_ref().ok().filter(|original| original.paused)
}

/// Whether `pool` is a target pool that an admin had paused before numo held it and has not let go yet.
pub fn holds(pool: &PoolView) -> bool {
    held_by_admin(pool).is_some()
}

/// The admin's go-ahead for the target pools they held: the pools the go-ahead annotation names, and — where numo's
/// admission policy let the write through — a held pool the admin unpaused (numo pauses it again at once). Returns
/// the writes (the pool kept paused, its recorded original unpaused) and the Events; the annotation goes once acted
/// on.
pub fn go_ahead(snapshot: &Snapshot, resolved: &Resolved<'_>) -> (Vec<Intent>, Vec<Notice>) {
    let mut intents = Vec::new();
    let mut notices = Vec::new();
    for pool in &resolved.targets {
        let Some(original) = held_by_admin(pool) else { continue };
        let written_paused = pool.claim.claim().and_then(|c| c.written.as_ref()).is_some_and(|w| w.paused);
        let annotated = snapshot.run_config.go_ahead.contains(&pool.name);
        let unpaused = written_paused && !pool.paused;
        if !annotated && !unpaused {
            continue;
        }
        intents.push(Intent::TakeOverHold {
            pool: pool.name.clone(),
            owner: resolved.owner.clone(),
            original: PoolOriginal { paused: false, ..original.clone() },
        });
        let how = if annotated { "the go-ahead annotation" } else { "unpausing it" };
        notices.push(Notice::normal(
            "AdminGoAhead",
            "GoAhead",
            format!(
                "The admin let numo roll MachineConfigPool {}, paused before numo held it, by {how}: numo keeps it \
                 paused while it gates its nodes to the cluster's release, and leaves it unpaused at the end.",
                pool.name
            ),
        ));
    }
    let named = !snapshot.run_config.go_ahead.is_empty();
    if named {
        let unknown: Vec<&str> = snapshot
            .run_config
            .go_ahead
            .iter()
            .filter(|name| !resolved.targets.iter().any(|t| &t.name == *name && held_by_admin(t).is_some()))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            notices.push(Notice::warning(
                "NothingToGoAhead",
                "GoAhead",
                format!(
                    "The go-ahead annotation names {}, which is no target pool an admin paused before numo held \
                     it; ignored.",
                    unknown.join(", ")
                ),
            ));
        }
        intents.push(Intent::ClearGoAhead);
    }
    (intents, notices)
}

/// Keeps in `next` only the nodes whose pool no admin holds; returns what holds the others (shown when no node may
/// start).
pub fn keep_released(resolved: &Resolved<'_>, nodes: &[GatedNode<'_>], next: &mut Vec<usize>) -> Option<Blocker> {
    let mut held: Vec<&str> = Vec::new();
    next.retain(|i| {
        if nodes.get(*i).is_none() {
            return false;
        }
        match resolved.home_pool(*i) {
            Some(pool) if holds(pool) => {
                if !held.contains(&pool.name.as_str()) {
                    held.push(pool.name.as_str());
                }
                false
            }
            _ => true,
        }
    });
    if held.is_empty() {
        return None;
    }
    let annotate = format!(
        "oc annotate mutexrunconfig -n {} {} {}={}",
        resolved.owner.split_once('/').map_or("", |(ns, _)| ns),
        resolved.owner.split_once('/').map_or(resolved.owner.as_str(), |(_, name)| name),
        crate::labels::GO_AHEAD_ANNOTATION,
        held.join(",")
    );
    Some(Blocker {
        check: check::ADMIN_HOLD.to_string(),
        message: format!(
            "MachineConfigPool {} was paused before numo held it: the admin's own hold (an EUS-to-EUS update?), so \
             numo releases none of its nodes. To let numo gate them to the cluster's release, run `{annotate}`{}; \
             numo then leaves the pool unpaused at the end",
            held.join(", "),
            " (or, where numo's admission policy is not in force, unpause the pool)"
        ),
    })
}
