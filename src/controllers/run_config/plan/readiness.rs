//! Whether it is a good time to take the next node down: the maintenance and blackout windows, and the health
//! checks of `spec.healthChecks` (ClusterOperators, MachineConfigPools, nodes, PodDisruptionBudgets). Each check
//! that fails becomes a [`Blocker`] naming what holds the rollout; none changes anything in the cluster. A check
//! that cannot read what it checks holds the rollout too, saying so: it never passes silently.

use std::collections::BTreeSet;

use crate::windows::shown;

use super::node_state::{GatedNode, NodeState};
use super::resolve::Resolved;
use super::target::Target;
use crate::api::check;
use crate::api::{Blocker, CustomCheck, HealthChecks};
use crate::cel_check;
use crate::controllers::run_config::snapshot::{NodeView, PoolView, Snapshot};
use crate::windows::{self, Closed, Verdict};

/// What the checks decided.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    /// What holds the next node, in check order.
    pub blockers: Vec<Blocker>,
    /// Nodes that would start while a PodDisruptionBudget allows no disruption, whose pods are not known yet: the
    /// controller lists them and plans again.
    pub needs_budget_pods: Vec<String>,
    /// A node would start and the alert check has not asked Alertmanager yet: the controller asks and plans again.
    pub needs_alerts: bool,
    /// What the checks left out and why, as sentences: a degradation numo reported already and an admin skipped
    /// (the skipped node's pool, and the machine-config operator's wait for it) holds nothing.
    pub left_out: Vec<String>,
}

/// Assesses the windows and health checks before the nodes `next` start (none when no slot is free: the checks
/// that depend on the next node are then not made).
pub fn assess(snapshot: &Snapshot, verdict: &Verdict, nodes: &[GatedNode<'_>], next: &[&NodeView]) -> Readiness {
    let mut out = Readiness::default();
    out.blockers.extend(verdict.closed.iter().map(|closed| window_blocker(closed, verdict)));
    let Some(checks) = &snapshot.run_config.spec.health_checks else { return out };
    let skipped = skipped_down(snapshot);
    out.blockers.extend(cluster_operators(snapshot, checks, &skipped, &mut out.left_out));
    if checks.machine_config_pools.enabled {
        let mut degraded = Vec::new();
        for pool in snapshot.pools.values() {
            let Some(why) = &pool.degraded else { continue };
            if !skipped.is_empty() && pool.render_failure.is_none() {
                out.left_out.push(format!(
                    "MachineConfigPool {} is degraded while {} (numo reported the failure; the machine-config \
                     daemon keeps retrying the update)",
                    pool.name,
                    skipped_nodes(&skipped)
                ));
            } else {
                degraded.push(format!("MachineConfigPool {} is {why}", pool.name));
            }
        }
        if !degraded.is_empty() {
            out.blockers.push(blocker(check::MACHINE_CONFIG_POOLS, listed(&degraded)));
        }
    }
    if checks.nodes.enabled {
        out.blockers.extend(nodes_outside(snapshot, nodes));
    }
    if checks.pod_disruption_budgets.enabled && !next.is_empty() {
        match budgets(snapshot, next) {
            Budgets::Clear => {}
            Budgets::Unknown => out.needs_budget_pods = next.iter().map(|n| n.name.clone()).collect(),
            Budgets::Blocked(message) => out.blockers.push(blocker(check::POD_DISRUPTION_BUDGETS, message)),
        }
    }
    let custom: Vec<String> =
        checks.custom.iter().enumerate().flat_map(|(i, c)| custom_check(snapshot, i, c)).collect();
    if !custom.is_empty() {
        out.blockers.push(blocker(check::CUSTOM, listed(&custom)));
    }
    if let Some(alerts) = checks.alerts.as_ref().filter(|a| a.enabled && !next.is_empty()) {
        match &snapshot.health.alerts {
            None => out.needs_alerts = true,
            Some(Err(why)) => out.blockers.push(blocker(check::ALERTS, format!("{why}; alerts are unknown"))),
            Some(Ok(firing)) => {
                let firing: Vec<String> = firing
                    .iter()
                    .filter(|a| !alerts.ignore.contains(&a.name))
                    .map(|a| format!("alert {} fires", a.describe()))
                    .collect();
                if !firing.is_empty() {
                    out.blockers.push(blocker(check::ALERTS, listed(&firing)));
                }
            }
        }
    }
    out
}

fn blocker(check: &str, message: String) -> Blocker {
    Blocker { check: check.to_string(), message }
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

/// Up to five sentences, then how many more.
fn listed(problems: &[String]) -> String {
    let shown: Vec<&str> = problems.iter().take(5).map(String::as_str).collect();
    match problems.len() - shown.len() {
        0 => shown.join("; "),
        more => format!("{}; and {more} more", shown.join("; ")),
    }
}

/// The skipped nodes the machine-config daemon reports `Degraded` or `Unreconcilable`, when every node it reports
/// so is skipped (else none: a degradation of another node is not excused).
fn skipped_down(snapshot: &Snapshot) -> Vec<&str> {
    let down = |n: &&NodeView| matches!(n.mcd_state.as_deref(), Some("Degraded" | "Unreconcilable"));
    let (skipped, others): (Vec<&NodeView>, Vec<&NodeView>) =
        snapshot.nodes.values().map(|n| &**n).filter(down).partition(|n| snapshot.run_config.skip.contains(&n.name));
    if others.is_empty() {
        skipped.iter().map(|n| n.name.as_str()).collect()
    } else {
        Vec::new()
    }
}

fn skipped_nodes(skipped: &[&str]) -> String {
    match skipped {
        [one] => format!("node {one}, which an admin skipped, fails its update"),
        many => format!("nodes {}, which an admin skipped, fail their update", many.join(", ")),
    }
}

/// Whether the machine-config operator's problem is only its wait for pools that a skipped node degrades
/// (`Degraded=True` `RequiredPoolsFailed`: openshift/machine-config-operator `pkg/operator/sync.go`
/// `syncRequiredMachineConfigPools` waits while any pool is degraded).
fn waits_for_skipped(name: &str, why: &str, skipped: &[&str]) -> bool {
    name == "machine-config"
        && !skipped.is_empty()
        && why.contains("RequiredPoolsFailed")
        && !why.contains("not Available")
}

fn cluster_operators(
    snapshot: &Snapshot,
    checks: &HealthChecks,
    skipped: &[&str],
    left_out: &mut Vec<String>,
) -> Option<Blocker> {
    let config = &checks.cluster_operators;
    if !config.enabled {
        return None;
    }
    let message = match &snapshot.health.cluster_operators {
        Err(why) => format!("ClusterOperators cannot be read, so their health is unknown: {why}"),
        Ok(unhealthy) => {
            let mut problems = Vec::new();
            for (name, why) in unhealthy.iter().filter(|(name, _)| !config.ignore.contains(name)) {
                if waits_for_skipped(name, why, skipped) {
                    left_out.push(format!("ClusterOperator {name} {why}, while {}", skipped_nodes(skipped)));
                } else {
                    problems.push(format!("ClusterOperator {name} {why}"));
                }
            }
            if problems.is_empty() {
                return None;
            }
            listed(&problems)
        }
    };
    Some(blocker(check::CLUSTER_OPERATORS, message))
}

/// Nodes this rollout is not taking down right now (not in flight, soaking, failed or skipped) that are not Ready
/// or are cordoned: another node is down already.
fn nodes_outside(snapshot: &Snapshot, nodes: &[GatedNode<'_>]) -> Option<Blocker> {
    let ours: BTreeSet<&str> = nodes
        .iter()
        .filter(|g| g.state.takes_slot() || matches!(g.state, NodeState::Failed { .. } | NodeState::Skipped))
        .map(|g| g.node.name.as_str())
        .collect();
    let problems: Vec<String> = snapshot
        .nodes
        .values()
        .filter(|n| !ours.contains(n.name.as_str()))
        .filter_map(|n| match (n.ready, n.cordoned) {
            (true, false) => None,
            (false, false) => Some(format!("node {} is not Ready", n.name)),
            (true, true) => Some(format!("node {} is cordoned", n.name)),
            (false, true) => Some(format!("node {} is not Ready and cordoned", n.name)),
        })
        .collect();
    (!problems.is_empty()).then(|| blocker(check::NODES, listed(&problems)))
}

/// What custom check `index` finds wrong: its expression false, or not evaluable, for a selected object; no object
/// selected; or its objects unreadable.
fn custom_check(snapshot: &Snapshot, index: usize, check: &CustomCheck) -> Vec<String> {
    let what = format!("{} {}", check.kind, check.api_version);
    let objects = match snapshot.health.custom.get(index) {
        None => return vec![format!("custom check {index} ({what}) was not read")],
        Some(Err(why)) => return vec![format!("custom check {index} cannot read {what}: {why}")],
        Some(Ok(objects)) => objects,
    };
    if objects.is_empty() {
        let name = check.name.as_deref().map(|n| format!(" named {n}")).unwrap_or_default();
        let namespace = check.namespace.as_deref().map(|n| format!(" in namespace {n}")).unwrap_or_default();
        return vec![format!("custom check {index} selects no {what} object{name}{namespace}")];
    }
    let results = match cel_check::evaluate(&check.expression, objects) {
        Err(why) => return vec![format!("custom check {index}: its expression does not compile: {why}")],
        Ok(results) => results,
    };
    objects
        .iter()
        .zip(results)
        .filter_map(|(object, result)| {
            let meta = &object["metadata"];
            let name = match meta["namespace"].as_str() {
                Some(ns) => format!("{ns}/{}", meta["name"].as_str().unwrap_or_default()),
                None => meta["name"].as_str().unwrap_or_default().to_string(),
            };
            match result {
                Ok(true) => None,
                Ok(false) => Some(format!("{} ({} {name})", check.message, check.kind)),
                Err(why) => Some(format!("custom check {index} cannot be evaluated on {} {name}: {why}", check.kind)),
            }
        })
        .collect()
}

enum Budgets {
    Clear,
    Unknown,
    Blocked(String),
}

/// Whether a PodDisruptionBudget that allows no disruption covers a pod on one of the `next` nodes.
fn budgets(snapshot: &Snapshot, next: &[&NodeView]) -> Budgets {
    let at_zero = match &snapshot.health.budgets_at_zero {
        Err(why) => {
            return Budgets::Blocked(format!("PodDisruptionBudgets cannot be read, so a drain may stall: {why}"))
        }
        Ok(at_zero) if at_zero.is_empty() => return Budgets::Clear,
        Ok(at_zero) => at_zero,
    };
    let placed = match &snapshot.health.budget_pods {
        None => return Budgets::Unknown,
        Some(Err(why)) => {
            return Budgets::Blocked(format!("the pods PodDisruptionBudgets cover cannot be read: {why}"))
        }
        Some(Ok(placed)) => placed,
    };
    let next: BTreeSet<&str> = next.iter().map(|n| n.name.as_str()).collect();
    let problems: Vec<String> = at_zero
        .iter()
        .flat_map(|budget| {
            let pods = placed.get(&budget.key()).map(Vec::as_slice).unwrap_or_default();
            pods.iter().filter(|(_, node)| next.contains(node.as_str())).map(move |(pod, node)| {
                format!(
                    "PodDisruptionBudget {} allows no disruption and covers pod {}/{pod} on {node}",
                    budget.key(),
                    budget.namespace
                )
            })
        })
        .collect();
    if problems.is_empty() {
        Budgets::Clear
    } else {
        Budgets::Blocked(listed(&problems))
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
pub fn canary_blocker(resolved: &Resolved<'_>, target: &Target, next: &[&str]) -> Option<Blocker> {
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
    for node in next {
        let Some(pool) = resolved.home_pool(node) else { continue };
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
