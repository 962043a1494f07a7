//! The pool writes of a rollout: claiming (recording each pool as it was, pausing the targets), steering the
//! selectors (the canary takes only nodes numo marked released, custom targets only unmarked ones, the built-in
//! pools' selectors stay the machine-config operator's; the canary's `maxUnavailable` follows
//! `spec.concurrency`, its `machineConfigSelector` the MachineConfigs of the pool it serves), and restoring exactly
//! what was recorded, once no node carries numo's release mark.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::foreign::{self, Ledger};
use super::held;
use super::intent::{Intent, PoolPrecondition, PoolSpec};
use super::resolve::Resolved;
use crate::api::HeldPool;
use crate::controllers::run_config::snapshot::PoolView;
use crate::pool_claim::{ClaimAnnotations, PoolOriginal, RecordedStream};
use crate::{labels, membership, selector};

/// Claims every involved pool not yet claimed by this run config, pausing the targets. `held`: numo's own record of
/// the pools it holds (`status.heldPools`), whose originals come first.
pub fn claim(resolved: &Resolved<'_>, held: &[HeldPool]) -> Vec<Intent> {
    claim_pools(resolved, resolved.involved(), held)
}

/// Claims the target pools not yet claimed by this run config, pausing them (`trigger: AnyConfigChange` holds them
/// for as long as the run config exists; the canary is claimed only while a rollout runs).
pub fn claim_targets(resolved: &Resolved<'_>, held: &[HeldPool]) -> Vec<Intent> {
    let mut targets = resolved.targets.clone();
    targets.sort_by(|a, b| a.name.cmp(&b.name));
    claim_pools(resolved, targets, held)
}

fn claim_pools(resolved: &Resolved<'_>, pools: Vec<&PoolView>, held: &[HeldPool]) -> Vec<Intent> {
    let mut intents = Vec::new();
    for pool in pools {
        if pool.owner() == Some(resolved.owner.as_str()) {
            continue;
        }
        // numo's own record of a pool it holds comes first (a pool replaced or created again has lost its
        // annotations); a stale claim (its run config is gone) keeps the original it recorded, and so does a claim
        // someone removed while leaving numo's other annotations.
        let original = match (held::original(held, &pool.name), &pool.claim, pool.claim.claim().map(|c| &c.original)) {
            (Some(recorded), _, _) => recorded,
            (None, _, Some(Ok(original))) | (None, ClaimAnnotations::Leftover { original: Some(original), .. }, _) => {
                original.clone()
            }
            _ => PoolOriginal {
                paused: pool.paused,
                node_selector: pool.node_selector.as_ref().map(selector::without_rule_labels),
                max_unavailable: pool.max_unavailable.clone(),
                // The canary's, which numo points at the MachineConfigs of the pool whose nodes it takes.
                machine_config_selector: pool
                    .machine_config_selector
                    .clone()
                    .filter(|_| pool.name == resolved.canary.name),
                // The canary's, which numo points at the OS image stream of the pool whose nodes it takes.
                os_image_stream: (pool.name == resolved.canary.name)
                    .then(|| RecordedStream { name: pool.os_image_stream.clone() }),
            },
        };
        intents.push(Intent::ClaimPool {
            pool: pool.name.clone(),
            resource_version: pool.resource_version.clone(),
            owner: resolved.owner.clone(),
            original,
            spec: PoolSpec { paused: resolved.is_target(&pool.name) || pool.paused, ..Default::default() },
        });
    }
    intents
}

/// The canary's `maxUnavailable` during a rollout: at least `concurrency`, so the MCO updates every released node
/// at once (numo decides how many are released).
fn canary_max_unavailable(original: Option<&IntOrString>, concurrency: u32) -> Option<IntOrString> {
    let wanted = i32::try_from(concurrency).unwrap_or(i32::MAX);
    match original {
        Some(IntOrString::Int(n)) if *n >= wanted => Some(IntOrString::Int(*n)),
        None if wanted <= 1 => None,
        _ => Some(IntOrString::Int(wanted)),
    }
}

/// Steers every involved pool so that a node leaves its paused pool only on numo's release mark
/// ([`labels::RELEASED`]): the canary selects only the nodes numo released into it (`<mark> In [<canary>]`,
/// replacing its own expressions), a custom target pool only nodes without a mark (`<mark> DoesNotExist`). The
/// built-in pools' selectors are the machine-config operator's ([`membership::is_built_in`]) and stay as they are:
/// a released node matches `worker` and the canary, and the MCO gives it to the one custom pool. Only a built-in
/// pool that still carries numo 0.2's steering gets its own selector back. The canary renders the MachineConfigs of
/// `serving`, the pool whose nodes it takes ([`serving`]), so a released node runs its own pool's config. Returns
/// the writes still needed (none: steered). A field numo stopped fighting over (`ledger`) is left as it is.
pub fn steer(resolved: &Resolved<'_>, concurrency: u32, ledger: &Ledger, serving: Option<&PoolView>) -> Vec<Intent> {
    let mut intents = Vec::new();
    for pool in resolved.involved() {
        let original = match pool.claim.claim().map(|c| &c.original) {
            Some(Ok(original)) => original.clone(),
            _ => PoolOriginal { paused: pool.paused, node_selector: pool.node_selector.clone(), ..Default::default() },
        };
        let is_canary = pool.name == resolved.canary.name;
        let (selector, max_unavailable) = if is_canary {
            let exprs = [selector::requirement_in(labels::RELEASED, &resolved.release_mark)];
            (
                Some(selector::with_expressions_replaced(original.node_selector.as_ref(), &exprs)),
                canary_max_unavailable(original.max_unavailable.as_ref(), concurrency),
            )
        } else if membership::is_built_in(&pool.name) {
            (handed_over_selector(pool), None)
        } else {
            let exprs = [selector::requirement(labels::RELEASED, "DoesNotExist")];
            (Some(selector::with_requirements(original.node_selector.as_ref(), &exprs)), None)
        };
        let paused = !is_canary || pool.paused;
        let object = format!("MachineConfigPool/{}", pool.name);
        let max_unavailable = max_unavailable
            .filter(|m| pool.max_unavailable.as_ref() != Some(m))
            .filter(|_| !ledger.conceded(&object, foreign::MAX_UNAVAILABLE));
        let selector = selector
            .filter(|s| pool.node_selector.as_ref() != Some(s))
            .filter(|_| !ledger.conceded(&object, foreign::NODE_SELECTOR));
        // Only where the claim recorded the canary's own selector, to put it back at the end.
        let machine_config_selector = serving
            .filter(|_| is_canary && original.machine_config_selector.is_some())
            .and_then(|p| p.machine_config_selector.clone())
            .filter(|s| pool.machine_config_selector.as_ref() != Some(s));
        let os_image_stream = serving
            .filter(|_| is_canary && original.os_image_stream.is_some())
            .and_then(|p| os_image_stream_for(pool, p));
        // A claim without the record of what numo wrote (numo 0.1's) gets it with this write.
        let unrecorded = pool.claim.claim().is_some_and(|c| c.written.is_none());
        let changes = selector.is_some()
            || max_unavailable.is_some()
            || machine_config_selector.is_some()
            || os_image_stream.is_some();
        if changes || pool.paused != paused || unrecorded {
            intents.push(Intent::SteerPool {
                pool: pool.name.clone(),
                owner: resolved.owner.clone(),
                spec: PoolSpec {
                    paused,
                    node_selector: selector,
                    max_unavailable,
                    machine_config_selector,
                    os_image_stream,
                },
            });
        }
    }
    intents
}

/// What the canary's `spec.osImageStream` must become for it to boot the OS image stream `serving`'s nodes boot;
/// None when it boots that stream already. `Some(None)` removes the canary's own: `serving` boots the default
/// stream, so `worker` does too, and the canary, a custom pool, inherits it (the machine-config operator's
/// `GetEffectiveOSImageStreamName`).
fn os_image_stream_for(canary: &PoolView, serving: &PoolView) -> Option<Option<String>> {
    (canary.effective_os_image_stream != serving.effective_os_image_stream)
        .then(|| serving.effective_os_image_stream.clone())
}

/// The only selector numo writes to a built-in pool: its own back, when it still carries numo 0.2's steering (a
/// rollout handed over from numo 0.2); None otherwise, the selector is the machine-config operator's.
pub fn handed_over_selector(pool: &PoolView) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector> {
    selector::is_steered(pool.node_selector.as_ref())
        .then(|| pool.node_selector.as_ref().map(selector::without_rule_labels))
        .flatten()
}

/// Pauses again every claimed target pool that is not paused (numo unpaused it for a rename, or someone else did:
/// a claim numo 0.1 made records nothing to put back).
pub fn pause_targets(resolved: &Resolved<'_>) -> Vec<Intent> {
    resolved
        .targets
        .iter()
        .filter(|t| !t.paused && t.owner() == Some(resolved.owner.as_str()))
        // Where numo recorded it paused the pool, the put-back of `foreign` pauses it first.
        .filter(|t| !t.claim.claim().and_then(|c| c.written.as_ref()).is_some_and(|w| w.paused))
        .map(|t| Intent::SteerPool {
            pool: t.name.clone(),
            owner: resolved.owner.clone(),
            spec: PoolSpec { paused: true, ..Default::default() },
        })
        .collect()
}

/// What restoring `pool` writes: the recorded original, or — when the record is unreadable — the pool unpaused
/// with numo's rule-label requirements taken out of its selector (the rest cannot be known). A built-in pool's
/// selector is the machine-config operator's: it is written only to take out numo 0.2's steering.
pub fn restore(pool: &PoolView, owner: &str) -> Intent {
    let mut spec = match pool.claim.claim().map(|c| &c.original) {
        Some(Ok(original)) => PoolSpec {
            paused: original.paused,
            node_selector: original.node_selector.clone(),
            max_unavailable: original.max_unavailable.clone(),
            machine_config_selector: original
                .machine_config_selector
                .clone()
                .filter(|s| pool.machine_config_selector.as_ref() != Some(s)),
            os_image_stream: original
                .os_image_stream
                .as_ref()
                .map(|recorded| recorded.name.clone())
                .filter(|name| *name != pool.os_image_stream),
        },
        _ => PoolSpec {
            paused: false,
            node_selector: pool.node_selector.as_ref().map(selector::without_rule_labels),
            max_unavailable: pool.max_unavailable.clone(),
            machine_config_selector: None,
            os_image_stream: None,
        },
    };
    if membership::is_built_in(&pool.name) {
        spec.node_selector = handed_over_selector(pool);
    }
    let precondition = match pool.owner() {
        Some(_) => PoolPrecondition::ClaimedBy(owner.to_string()),
        None => PoolPrecondition::ResourceVersion(pool.resource_version.clone()),
    };
    let mut remove = Vec::new();
    if spec.node_selector.is_none() && pool.node_selector.is_some() && !membership::is_built_in(&pool.name) {
        remove.push("/spec/nodeSelector");
    }
    if spec.max_unavailable.is_none() && pool.max_unavailable.is_some() {
        remove.push("/spec/maxUnavailable");
    }
    Intent::RestorePool { pool: pool.name.clone(), precondition, spec, remove, annotations: pool.claim.present_keys() }
}

/// Restores every pool in `pools` that this run config claims: target pools first, the canary last. The caller
/// removes numo's release marks first, so no node is in the canary when its target's selector is restored (it would
/// match two custom pools) or when the canary's is (it would match none of them).
pub fn restore_all<'p>(pools: impl IntoIterator<Item = &'p PoolView>, owner: &str, canary: &str) -> Vec<Intent> {
    let mut claimed: Vec<&PoolView> = pools.into_iter().filter(|p| p.owner() == Some(owner)).collect();
    claimed.sort_by_key(|p| (p.name == canary, p.name.clone()));
    claimed.into_iter().map(|p| restore(p, owner)).collect()
}

/// Puts back the pools numo claimed for an earlier shape of the spec (another canary, a removed target): they go
/// back first, before the current targets are held.
pub fn restore_stale(resolved: &Resolved<'_>) -> Vec<Intent> {
    restore_all(resolved.stale_pools.iter().copied(), &resolved.owner, &resolved.canary.name)
}

/// Sentences for the pools whose recorded original cannot be read.
pub fn unreadable_originals<'p>(pools: impl IntoIterator<Item = &'p PoolView>, owner: &str) -> Vec<String> {
    pools
        .into_iter()
        .filter(|p| p.owner() == Some(owner))
        .filter_map(|p| {
            let why = p.claim.claim()?.original.as_ref().err()?;
            Some(format!(
                "MachineConfigPool {}: {why}; numo unpaused it and removed its rule-label requirements, check its \
                 nodeSelector and paused flag by hand",
                p.name
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_canary_takes_as_many_nodes_at_once_as_the_rollout_releases() {
        assert_eq!(canary_max_unavailable(None, 1), None);
        assert_eq!(canary_max_unavailable(None, 5), Some(IntOrString::Int(5)));
        assert_eq!(canary_max_unavailable(Some(&IntOrString::Int(10)), 5), Some(IntOrString::Int(10)));
        assert_eq!(canary_max_unavailable(Some(&IntOrString::Int(2)), 5), Some(IntOrString::Int(5)));
        assert_eq!(canary_max_unavailable(Some(&IntOrString::String("10%".into())), 3), Some(IntOrString::Int(3)));
    }
}
