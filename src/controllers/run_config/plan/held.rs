//! numo's own record of the pools it holds (`status.heldPools`): each pool's uid and how it was before numo changed
//! it, kept where only numo writes. A pool's claim annotations can be dropped by anyone who replaces the pool (a
//! `kubectl replace`, a GitOps tool's replace sync) or deletes it (the machine-config operator then creates `worker`
//! again, unpaused); the record keeps numo holding it: the pool is claimed and paused again at once with the original
//! recorded before the rollout (never with what the other writer left), and the writer is reported.

use std::collections::BTreeSet;

use super::foreign::{self, Ledger};
use super::intent::Intent;
use super::resolve::Resolved;
use crate::api::HeldPool;
use crate::controllers::run_config::snapshot::{PoolView, Snapshot};
use crate::pool_claim::{ClaimAnnotations, PoolOriginal};

/// The field `status.foreignChanges` names for a pool deleted and created again.
pub const RECREATED: &str = "metadata.uid";

/// The original the record keeps for `pool`, if it keeps one that can be read.
pub fn original<'a>(held: &'a [HeldPool], pool: &str) -> Option<PoolOriginal> {
    let entry: &'a HeldPool = held.iter().find(|h| h.name == pool)?;
    serde_json::from_str(&entry.original).ok()
}

/// The record after this plan: a pool claimed in it is added with the original it was claimed with (an entry that
/// exists keeps its original, and takes the pool's current uid once the pool carries the claim again); a pool restored
/// in it leaves; a pool this run config claims that the record lacks (claimed by an earlier numo) is added from its
/// annotations. Kept in name order.
pub fn track(previous: &[HeldPool], snapshot: &Snapshot, owner: &str, intents: &[Intent]) -> Vec<HeldPool> {
    let mut held: Vec<HeldPool> = previous.to_vec();
    let uid_of = |pool: &str| snapshot.pools.get(pool).map(|p| p.uid.clone()).unwrap_or_default();
    for intent in intents {
        match intent {
            Intent::ClaimPool { pool, original, .. } if !held.iter().any(|h| h.name == *pool) => {
                let original = serde_json::to_string(original).unwrap_or_default();
                held.push(HeldPool { name: pool.clone(), uid: uid_of(pool), original });
            }
            Intent::RestorePool { pool, .. } => held.retain(|h| h.name != *pool),
            // The admin's go-ahead: the pool is restored as the admin now wants it.
            Intent::TakeOverHold { pool, original, .. } => {
                if let Some(entry) = held.iter_mut().find(|h| h.name == *pool) {
                    entry.original = serde_json::to_string(original).unwrap_or_default();
                }
            }
            _ => {}
        }
    }
    let restored = |name: &str| intents.iter().any(|i| matches!(i, Intent::RestorePool { pool, .. } if pool == name));
    for pool in snapshot.pools.values().filter(|p| p.owner() == Some(owner) && !restored(&p.name)) {
        match held.iter_mut().find(|h| h.name == pool.name) {
            // The pool carries numo's claim: this is the pool numo holds (one created again gets its new uid).
            Some(entry) => entry.uid.clone_from(&pool.uid),
            None => {
                let Some(Ok(original)) = pool.claim.claim().map(|c| &c.original) else { continue };
                let original = serde_json::to_string(original).unwrap_or_default();
                held.push(HeldPool { name: pool.name.clone(), uid: pool.uid.clone(), original });
            }
        }
    }
    held.sort_by(|a, b| a.name.cmp(&b.name));
    held
}

/// Notes each involved pool numo holds by its record whose claim is gone: replaced (its annotations dropped: the
/// claim and the record of the original with it) or deleted and created again (another uid). Each is claimed again
/// (see `pools::claim`) with the recorded original. A pool the cache shows as before numo's own claim (`behind`) lost
/// nothing: the cache is behind.
pub fn lost(resolved: &Resolved<'_>, held: &[HeldPool], behind: &BTreeSet<String>, ledger: &mut Ledger) {
    for pool in resolved.involved() {
        let Some(entry) = held.iter().find(|h| h.name == pool.name) else { continue };
        // Carrying numo's claim, or not yet shown with the claim numo just made.
        if pool.owner() == Some(resolved.owner.as_str()) || behind.contains(&pool.name) {
            continue;
        }
        let object = format!("MachineConfigPool/{}", pool.name);
        let writer = writer(pool);
        if !entry.uid.is_empty() && entry.uid != pool.uid {
            ledger.saw(&object, RECREATED, &format!("{writer} (deleted and created again)"), false);
        } else if matches!(pool.claim, ClaimAnnotations::None) {
            ledger.saw(&object, foreign::CLAIM, &format!("{writer} (replaced, numo's annotations dropped)"), false);
        }
    }
}

/// Who last wrote the pool's spec, as its managed fields tell.
fn writer(pool: &PoolView) -> String {
    let writers = &pool.writers;
    let named = [&writers.paused, &writers.node_selector, &writers.max_unavailable];
    match named.into_iter().flatten().next() {
        Some(w) => w.manager.clone(),
        None => "an unknown writer".to_string(),
    }
}
