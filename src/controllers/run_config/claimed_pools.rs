//! numo reads its own pool claims. A plan records a pool it claims in `status.heldPools`, and the next plan reads
//! that status at once (`status::Written`), while the pool cache may still show the pool as it was before the claim.
//! Such a pool reads as one whose claim someone dropped ("replaced") and would be reported as another writer's
//! change. This remembers each pool numo claimed, with the resourceVersion the claim was made on (its precondition),
//! until the cache shows the pool past that version (or for [`REMEMBERED`] at most).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::plan::Intent;
use super::snapshot::PoolView;

/// How long a claimed pool that the cache still shows as before the claim is taken as the cache being behind.
pub const REMEMBERED: Duration = Duration::from_secs(60);

/// The pools numo claimed that its cache may not show claimed yet: pool → (the resourceVersion the claim was made
/// on, when).
#[derive(Debug, Default)]
pub struct ClaimedPools(Mutex<HashMap<String, (String, Instant)>>);

impl ClaimedPools {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, (String, Instant)>) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Remembers the pools `intents` claimed (all of them were carried out).
    pub fn claimed(&self, intents: &[Intent], now: Instant) {
        self.with(|claimed| {
            for intent in intents {
                if let Intent::ClaimPool { pool, resource_version, .. } = intent {
                    claimed.insert(pool.clone(), (resource_version.clone(), now));
                }
            }
        });
    }

    /// The pools the cache (`pools`) still shows at the version numo claimed them on: it is behind numo's claim. Forgets
    /// the pools the cache shows past it, and those remembered for longer than [`REMEMBERED`].
    pub fn behind(&self, pools: &BTreeMap<String, PoolView>, now: Instant) -> BTreeSet<String> {
        self.with(|claimed| {
            claimed.retain(|name, (version, at)| {
                now.saturating_duration_since(*at) < REMEMBERED
                    && pools.get(name).is_some_and(|p| p.resource_version == *version)
            });
            claimed.keys().cloned().collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pool(name: &str, version: &str) -> (String, PoolView) {
        (name.to_string(), PoolView { name: name.into(), resource_version: version.into(), ..Default::default() })
    }

    fn claim(pool: &str, version: &str) -> Intent {
        Intent::ClaimPool {
            pool: pool.into(),
            resource_version: version.into(),
            owner: "ops/example".into(),
            original: Default::default(),
            spec: Default::default(),
        }
    }

    #[test]
    fn a_claimed_pool_is_behind_until_the_cache_shows_it_past_the_version_claimed_on() {
        let t0 = Instant::now();
        let claimed = ClaimedPools::default();
        claimed.claimed(&[claim("worker", "10"), claim("canary", "20")], t0);
        let cache = BTreeMap::from([pool("worker", "10"), pool("canary", "20")]);
        assert_eq!(claimed.behind(&cache, t0), BTreeSet::from(["canary".into(), "worker".into()]));
        // The cache shows worker's claim (or anyone's later write): worker is no longer behind, for good.
        let cache = BTreeMap::from([pool("worker", "11"), pool("canary", "20")]);
        assert_eq!(claimed.behind(&cache, t0), BTreeSet::from(["canary".into()]));
        let cache = BTreeMap::from([pool("worker", "10"), pool("canary", "20")]);
        assert_eq!(claimed.behind(&cache, t0), BTreeSet::from(["canary".into()]), "worker is forgotten");
        // Never shown past that version (the claim did not land after all): forgotten after a while.
        assert!(claimed.behind(&cache, t0 + REMEMBERED).is_empty());
    }
}
