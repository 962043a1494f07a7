//! The health checks of `spec.healthChecks`, one file each, and [`ALL`], the one list every reader iterates: the
//! planner asks each check that the spec switches on what holds the next node, and the snapshot reads the
//! conditions each one names ([`Check::reads`]) from numo's caches, which keep them and wake the checking run
//! configs when they change. A check of what numo watches already is its own file, its switch in
//! [`HealthChecks`] and its name and description in [`crate::api::check::ABOUT`]; the documentation's parts on the
//! checks are generated from those (`cargo xtask docs`).
//!
//! Each check that fails becomes a [`Blocker`] naming what holds the rollout; none changes anything in the cluster.
//! A check that cannot read what it checks holds the rollout too, saying so: it never passes silently.

mod alerts;
mod budgets;
mod cluster_operators;
mod custom;
mod machine_config_nodes;
mod machine_config_pools;
mod nodes;

use std::collections::BTreeSet;

use super::snapshot::{ConditionFacts, NodeView, Snapshot, Watched};
use crate::api::{Blocker, HealthChecks};

/// A health check.
pub trait Check: Sync {
    /// Its name, as `status.blockedBy` gives it ([`crate::api::check`]).
    fn name(&self) -> &'static str;

    /// Whether the run config's `healthChecks` switch it on.
    fn enabled(&self, checks: &HealthChecks) -> bool;

    /// Its switch, as the API reference describes it (`cargo xtask docs` writes docs/api.md's table of checks).
    fn switch(&self) -> Switch;

    /// The conditions of watched objects it reads (the snapshot gathers them into
    /// [`crate::controllers::run_config::snapshot::HealthFacts::conditions`]); none by default.
    fn reads(&self) -> &'static [ConditionRead] {
        &[]
    }

    /// What holds the next node, as far as this check sees, added to `out`.
    fn assess(&self, input: &Input<'_>, out: &mut Readiness);
}

/// A check's switch under `spec.healthChecks`, as the API reference describes it; what holds the next node comes
/// from the check's [`crate::api::check::About`].
#[derive(Clone, Copy, Debug)]
pub struct Switch {
    /// The field under `spec.healthChecks`, e.g. `machineConfigNodes`.
    pub field: &'static str,
    /// The field's shape, e.g. "`{enabled}`".
    pub shape: &'static str,
    /// What it is when `healthChecks` is present without it.
    pub default: &'static str,
    /// More of what the check does (Markdown), said after what holds the next node; may be empty.
    pub more: &'static str,
}

/// A condition of objects of a watched kind that a check reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ConditionRead {
    /// The kind.
    pub kind: Watched,
    /// The condition type, e.g. `NodeDegraded`.
    pub condition: &'static str,
}

/// Every health check, in the order their blockers are listed.
pub const ALL: [&dyn Check; 7] = [
    &cluster_operators::ClusterOperators,
    &machine_config_pools::MachineConfigPools,
    &machine_config_nodes::MachineConfigNodes,
    &nodes::Nodes,
    &budgets::PodDisruptionBudgets,
    &custom::Custom,
    &alerts::Alerts,
];

/// The condition types of `kind` the checks read (whether or not a run config switches them on: one cache serves
/// every run config), worked out once.
pub fn conditions_read(kind: Watched) -> &'static [&'static str] {
    static READ: std::sync::OnceLock<std::collections::BTreeMap<Watched, Vec<&'static str>>> =
        std::sync::OnceLock::new();
    let read = READ.get_or_init(|| {
        let mut read: std::collections::BTreeMap<Watched, Vec<&'static str>> = Default::default();
        for r in ALL.iter().flat_map(|c| c.reads()) {
            let types = read.entry(r.kind).or_default();
            if !types.contains(&r.condition) {
                types.push(r.condition);
            }
        }
        read
    });
    read.get(&kind).map(Vec::as_slice).unwrap_or_default()
}

/// The conditions of `kind` that the checks `checks` switch on read.
pub fn reads_of(checks: &HealthChecks) -> Vec<ConditionRead> {
    let read: BTreeSet<ConditionRead> =
        ALL.iter().filter(|c| c.enabled(checks)).flat_map(|c| c.reads()).copied().collect();
    read.into_iter().collect()
}

/// What the checks decided.
#[derive(Clone, Debug, Default)]
pub struct Readiness {
    /// What holds the next node, in check order.
    pub blockers: Vec<Blocker>,
    /// What the checks need to know and numo only asks when a node would start (never watched): the controller
    /// asks, keeps the answers in the snapshot and plans again (`on_demand`).
    pub asks: Vec<Question>,
    /// What the checks left out and why, as sentences: a degradation numo reported already and an admin skipped
    /// (the skipped node's pool, and the machine-config operator's wait for it) holds nothing.
    pub left_out: Vec<String>,
}

/// A question a check asks only when a node would start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Question {
    /// Which pods on these nodes (those that would start) the PodDisruptionBudgets at zero cover.
    BudgetPods(Vec<String>),
    /// Which alerts matching the alert check's matchers fire.
    FiringAlerts,
}

/// What a check assesses.
pub struct Input<'a> {
    /// The cluster as observed.
    pub snapshot: &'a Snapshot,
    /// The run config's `healthChecks`.
    pub checks: &'a HealthChecks,
    /// The nodes this rollout takes down right now (in flight, soaking), or that failed or were skipped.
    pub ours: BTreeSet<&'a str>,
    /// The nodes about to start (none when no slot is free: the checks of the next node are then not made).
    pub next: &'a [&'a NodeView],
    /// The skipped nodes the machine-config daemon reports `Degraded` or `Unreconcilable`, when every node it reports
    /// so is skipped (else none: a degradation of another node is not excused).
    pub skipped: Vec<&'a str>,
}

impl<'a> Input<'a> {
    /// The input of the checks of `snapshot`'s run config, whose `healthChecks` are `checks`.
    pub fn new(
        snapshot: &'a Snapshot,
        checks: &'a HealthChecks,
        ours: BTreeSet<&'a str>,
        next: &'a [&'a NodeView],
    ) -> Self {
        Input { snapshot, checks, ours, next, skipped: skipped_down(snapshot) }
    }

    /// What the snapshot read of condition `condition` of `kind`'s objects.
    pub fn conditions(&self, kind: Watched, condition: &str) -> Option<&ConditionFacts> {
        self.snapshot.health.conditions.iter().find(|(read, _)| read.0 == kind && read.1 == condition).map(|(_, f)| f)
    }

    /// The sentence for the skipped nodes that fail their update.
    pub fn skipped_nodes(&self) -> String {
        match self.skipped.as_slice() {
            [one] => format!("node {one}, which an admin skipped, fails its update"),
            many => format!("nodes {}, which an admin skipped, fail their update", many.join(", ")),
        }
    }
}

/// Runs every check `checks` switch on, in order.
pub fn assess(input: &Input<'_>, out: &mut Readiness) {
    for check in ALL.iter().filter(|c| c.enabled(input.checks)) {
        check.assess(input, out);
    }
}

/// A blocker of check `check`.
pub fn blocker(check: &str, message: String) -> Blocker {
    Blocker { check: check.to_string(), message }
}

/// Up to five sentences, then how many more.
pub fn listed(problems: &[String]) -> String {
    let shown: Vec<&str> = problems.iter().take(5).map(String::as_str).collect();
    match problems.len() - shown.len() {
        0 => shown.join("; "),
        more => format!("{}; and {more} more", shown.join("; ")),
    }
}

/// See [`Input::skipped`].
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_check_has_its_own_name_among_the_api_s_checks() {
        let names: BTreeSet<&str> = ALL.iter().map(|c| c.name()).collect();
        assert_eq!(names.len(), ALL.len(), "two checks share a name");
        for name in names {
            assert!(crate::api::check::ALL.contains(&name), "{name} is not in crate::api::check::ALL");
        }
    }
}
