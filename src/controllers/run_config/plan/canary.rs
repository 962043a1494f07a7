//! The canary serves one target pool's config at a time. numo points the canary's `machineConfigSelector` at the
//! MachineConfigs of the pool whose nodes it takes (`pools::steer`), so a released node boots its own pool's config
//! (an `infra` pool's kernel arguments, a per-pool KubeletConfig, a worker-cnf pool's real-time kernel), and its way
//! home is a rename that reboots nothing. Nodes of a pool whose config differs wait until the canary is empty: a
//! switch of the canary's MachineConfigs under a node in it would reboot that node into another pool's config.

use super::node_state::GatedNode;
use super::resolve::Resolved;
use crate::api::{check, Blocker};
use crate::controllers::run_config::snapshot::PoolView;
use crate::openshift::config_content;

/// What the canary must render for a node of `pool`: its rendered config's content, else (nothing rendered yet) the
/// pool itself.
fn content_key(pool: &PoolView) -> &str {
    pool.configuration.as_deref().map(config_content).unwrap_or(pool.name.as_str())
}

/// Whether `gated` is in the canary or on its way there: gating, released, upgrading, cleaning up or soaking, or
/// still carrying numo's release mark (a node that failed in the canary stays there until it is retried or skipped).
fn committed(resolved: &Resolved<'_>, gated: &GatedNode<'_>) -> bool {
    gated.state.takes_slot() || gated.node.labels.release_mark() == Some(resolved.release_mark.as_str())
}

/// The target pool whose config the canary renders now: that of the first node committed to the canary (see
/// [`committed`]), else that of the first node of `next` (indices into `nodes`, in start order); None when no node
/// needs the canary.
pub fn serving<'a>(resolved: &Resolved<'a>, nodes: &[GatedNode<'_>], next: &[usize]) -> Option<&'a PoolView> {
    let first_committed = nodes.iter().position(|g| committed(resolved, g));
    let first_next = next.first().copied().filter(|i| *i < nodes.len());
    first_committed.or(first_next).and_then(|i| resolved.home_pool(i))
}

/// Keeps in `next` only the nodes whose pool renders what `serving` renders; returns why the others wait.
pub fn keep_compatible(
    resolved: &Resolved<'_>,
    nodes: &[GatedNode<'_>],
    serving: Option<&PoolView>,
    next: &mut Vec<usize>,
) -> Option<Blocker> {
    let serving = serving?;
    let wanted = content_key(serving);
    let mut waiting = Vec::new();
    next.retain(|i| {
        let Some(gated) = nodes.get(*i) else { return false };
        match resolved.home_pool(*i) {
            Some(pool) if content_key(pool) != wanted => {
                waiting.push(format!("node {} of MachineConfigPool {}", gated.node.name, pool.name));
                false
            }
            _ => true,
        }
    });
    let first = waiting.first()?;
    let mut in_canary: Vec<&str> =
        nodes.iter().filter(|g| committed(resolved, g)).map(|g| g.node.name.as_str()).take(5).collect();
    if in_canary.is_empty() {
        // Nothing in the canary yet: the nodes that start now take it.
        in_canary = next.iter().filter_map(|i| nodes.get(*i)).map(|g| g.node.name.as_str()).take(5).collect();
    }
    Some(Blocker {
        check: check::CANARY_CONFIG.to_string(),
        message: format!(
            "the canary MachineConfigPool {} serves the config of MachineConfigPool {} to {}; {first}, whose config \
             differs, starts once they are done, so that every node boots its own pool's config",
            resolved.canary.name,
            serving.name,
            in_canary.join(", "),
        ),
    })
}
