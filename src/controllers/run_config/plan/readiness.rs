//! Whether it is a good time to take the next node down: the maintenance and blackout windows, the health checks of
//! `spec.healthChecks` (each its own file in `run_config::checks`), and whether the canary brings the next node its
//! pool's config. Each that fails becomes a [`Blocker`] naming what holds the rollout; none changes anything in the
//! cluster.

use std::collections::BTreeSet;

use crate::windows::shown;

use super::node_state::{GatedNode, NodeState};
use super::resolve::Resolved;
use super::target::Target;
use crate::api::check;
use crate::api::Blocker;
pub use crate::controllers::run_config::checks::Readiness;
use crate::controllers::run_config::checks::{self, blocker};
use crate::controllers::run_config::snapshot::{NodeView, PoolView, Snapshot};
use crate::windows::{self, Closed, Verdict};

/// Assesses the windows and health checks before the nodes `next` start (none when no slot is free: the checks
/// that depend on the next node are then not made).
pub fn assess(snapshot: &Snapshot, verdict: &Verdict, nodes: &[GatedNode<'_>], next: &[&NodeView]) -> Readiness {
    let mut out = Readiness::default();
    out.blockers.extend(verdict.closed.iter().map(|closed| window_blocker(closed, verdict)));
    let Some(checks) = &snapshot.run_config.spec.health_checks else { return out };
    // The nodes this rollout takes down right now, or that failed or were skipped.
    let ours: BTreeSet<&str> = nodes
        .iter()
        .filter(|g| g.state.takes_slot() || matches!(g.state, NodeState::Failed { .. } | NodeState::Skipped))
        .map(|g| g.node.name.as_str())
        .collect();
    checks::assess(&checks::Input::new(snapshot, checks, ours, next), &mut out);
    out
}

fn window_blocker(closed: &Closed, verdict: &Verdict) -> Blocker {
    let next = match &verdict.next {
        Some((start, _)) => format!("the next opens {}", shown(start)),
        None => "no window opens in the year ahead".to_string(),
    };
    match closed {
        Closed::OutsideWindow => blocker(check::MAINTENANCE_WINDOW, format!("outside the maintenance window; {next}")),
        Closed::Blackout { end, reason } => {
            let why = reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default();
            blocker(check::BLACKOUT_WINDOW, format!("in a blackout window{why} until {}; {next}", shown(end)))
        }
    }
}

/// The window verdict for the snapshot's time.
pub fn windows_now(snapshot: &Snapshot, schedule: &windows::Schedule) -> Verdict {
    schedule.at(windows::utc(&snapshot.now))
}

/// Holds the next node while the canary cannot bring it the config its pool renders: the canary's rendered config
/// has other content (numo pointed the canary at the pool's MachineConfigs and the machine-config operator has not
/// rendered them yet; or, under a claim that did not record the canary's own selector, the canary selects other
/// MachineConfigs), the canary boots another OS image stream, the canary has a render to do, or a target pool cannot
/// render at all. For an upgrade and a config change alike: a node released into a canary of other content would
/// boot a config that is not its pool's, and reboot again, ungated, on its way home.
pub fn canary_blocker(resolved: &Resolved<'_>, target: &Target, next: &[usize]) -> Option<Blocker> {
    let mut problems = Vec::new();
    if target.is_config_change() {
        for pool in &resolved.targets {
            if let Some(why) = &pool.render_failure {
                problems.push(format!("MachineConfigPool {} cannot render its config: {why}", pool.name));
            }
        }
    }
    let canary = resolved.canary;
    let original = canary.claim.claim().and_then(|c| c.original.as_ref().ok());
    let steered = original.is_some_and(|o| o.machine_config_selector.is_some());
    // A claim made before numo steered the canary's stream leaves it to the admin.
    let stream_steered = original.is_some_and(|o| o.os_image_stream.is_some());
    for (i, node) in next.iter().filter_map(|i| Some((*i, resolved.gated.get(*i)?.name.as_str()))) {
        let Some(pool) = resolved.home_pool(i) else { continue };
        let Some(wanted) = target.config_of(node).or(pool.configuration.as_deref()) else { continue };
        let offered = canary.configuration.as_deref().unwrap_or_default();
        let same = crate::openshift::config_content(offered) == crate::openshift::config_content(wanted);
        // Rendered from the same MachineConfigs, the two carry the same content once both rendered the release: a
        // pool that renders the new release a moment after the canary (an upgrade) is no reason to hold.
        // ... and booted from the same OS image stream (4.23+): each stream is its own OS image.
        let same_stream = canary.effective_os_image_stream == pool.effective_os_image_stream;
        let same_sources = !canary.sources.is_empty()
            && sources(canary) == sources(pool)
            && same_stream
            && !pool.render_pending
            && !target.is_config_change();
        let stream = |p: &PoolView| p.effective_os_image_stream.clone().unwrap_or_else(|| "the default".into());
        let problem = match ((same || same_sources) && !canary.render_pending, steered) {
            (true, _) => continue,
            (false, _) if !same_stream => format!(
                "the canary MachineConfigPool {} boots OS image stream {} and MachineConfigPool {} boots {}: the next \
                 node starts once the canary boots its pool's stream ({})",
                canary.name,
                stream(canary),
                pool.name,
                stream(pool),
                if stream_steered {
                    "numo points the canary's spec.osImageStream at it"
                } else {
                    "set the canary's spec.osImageStream to it: numo claimed the canary before it steered streams"
                }
            ),
            (false, true) => format!(
                "numo pointed the canary MachineConfigPool {} at the MachineConfigs of MachineConfigPool {}; the next \
                 node starts once the canary renders them (it renders {offered}, {} renders {wanted})",
                canary.name, pool.name, pool.name
            ),
            (false, false) => format!(
                "the canary MachineConfigPool {} renders {offered}, whose content differs from {wanted} of {}: a node \
                 released into the canary would not get its pool's config. Make the canary select exactly the \
                 MachineConfigs {} selects (its machineConfigSelector), or wait if a render is under way",
                canary.name, pool.name, pool.name
            ),
        };
        if !problems.contains(&problem) {
            problems.push(problem);
        }
    }
    (!problems.is_empty()).then(|| Blocker { check: check::CANARY_CONFIG.to_string(), message: problems.join("; ") })
}

/// The MachineConfigs a pool's rendered config was merged from.
fn sources(pool: &PoolView) -> BTreeSet<&str> {
    pool.sources.iter().map(String::as_str).collect()
}
