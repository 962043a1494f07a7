//! Step 1, validation: every referenced rule and target exists and is valid, the canary is usable, and no node a
//! target pool selects sits in the canary. A valid configuration comes out as a [`Resolved`] value that every later
//! step takes as input: the rules with their labels, the target pools in order, the canary, the gated nodes in
//! release order, and what numo still holds from an earlier shape of the spec.

use std::cell::OnceCell;
use std::collections::BTreeSet;
use std::sync::Arc;

use super::super::snapshot::{FoundRule, NodeView, PoolView, RuleView, Snapshot, Unusable};
use super::gated_index::{GatedIndex, Kept, Reading};
use crate::membership;
use crate::selector;
use crate::windows::Schedule;

/// A rule of a valid configuration.
#[derive(Clone, Debug)]
pub struct Rule<'a> {
    /// The rule as observed.
    pub view: &'a RuleView,
    /// The rule's spec.
    pub found: &'a FoundRule,
    /// The node label that holds nodes for this rule.
    pub label: String,
    /// `namespace/name`.
    pub key: String,
}

/// A valid configuration, resolved against the cluster.
#[derive(Clone, Debug)]
pub struct Resolved<'a> {
    /// `namespace/name` of the run config: the value of its pool claims.
    pub owner: String,
    /// The rules, in spec order.
    pub rules: Vec<Rule<'a>>,
    /// The target pools in target order, without repeats.
    pub targets: Vec<&'a PoolView>,
    /// The canary pool.
    pub canary: &'a PoolView,
    /// The value of numo's release mark ([`crate::labels::RELEASED`]) on the nodes it releases into the canary.
    pub release_mark: String,
    /// The gated nodes in release order (target order, then name).
    pub gated: Vec<&'a NodeView>,
    /// Each gated node's target pool (in the order of `gated`), as an index into `targets`.
    pub homes: Vec<usize>,
    /// Nodes outside the targets that the canary's own `matchLabels` select: the steered canary takes none of them
    /// (it takes only nodes numo marked released), but numo 0.2 held them with the rule labels, which numo removes
    /// when the rollout ends.
    pub outsiders: Vec<&'a NodeView>,
    /// Pools this run config still claims that the spec no longer involves (a changed canary, a removed target).
    pub stale_pools: Vec<&'a PoolView>,
    /// Rule labels on the gated nodes, or in the selectors of pools this run config claims, that no rule of the spec
    /// has any more.
    pub stale_labels: Vec<String>,
    /// Nodes a target pool selects that another pool owns, as sentences (they are not gated).
    pub findings: Vec<String>,
    /// The maintenance and blackout windows.
    pub schedule: Schedule,
    /// Under `spec.topology`: the failure domains, in the order the rollout takes them.
    pub domains: Option<super::domains::Domains>,
    /// The index the gated nodes were read from, when it was kept between plans and `gated` is in its order (not
    /// under `spec.topology`): its facts and counts stand for reading every gated node again.
    pub index: Option<&'a GatedIndex>,
    /// What the run config's plans keep between them, with `index` (see [`Kept`]).
    pub kept: Option<&'a Kept>,
}

impl<'a> Resolved<'a> {
    /// Every pool the rollout writes, sorted by name (claims are taken in this order, so two run configs never
    /// deadlock).
    pub fn involved(&self) -> Vec<&PoolView> {
        let mut pools: Vec<&PoolView> = self.targets.iter().copied().chain([self.canary]).collect();
        pools.sort_by(|a, b| a.name.cmp(&b.name));
        pools
    }

    /// The rule labels, in rule order.
    pub fn labels(&self) -> Vec<String> {
        self.rules.iter().map(|r| r.label.clone()).collect()
    }

    /// Whether `pool` is a target pool.
    pub fn is_target(&self, pool: &str) -> bool {
        self.targets.iter().any(|t| t.name == pool)
    }

    /// The gated nodes target pool `pool` owns.
    pub fn members<'s>(&'s self, pool: &'s str) -> impl Iterator<Item = &'a NodeView> + 's {
        let homes = self.homes.iter().map(|i| self.targets.get(*i).map(|t| t.name.as_str()));
        self.gated.iter().copied().zip(homes).filter(move |(_, home)| *home == Some(pool)).map(|(n, _)| n)
    }

    /// This configuration gating only its nodes at `places` (indices into `gated`, in release order).
    pub fn only(&self, places: &[usize]) -> Self {
        Self {
            owner: self.owner.clone(),
            rules: self.rules.clone(),
            targets: self.targets.clone(),
            canary: self.canary,
            release_mark: self.release_mark.clone(),
            gated: places.iter().map(|i| self.gated[*i]).collect(),
            homes: places.iter().map(|i| self.homes[*i]).collect(),
            outsiders: self.outsiders.clone(),
            stale_pools: self.stale_pools.clone(),
            stale_labels: self.stale_labels.clone(),
            findings: self.findings.clone(),
            schedule: self.schedule.clone(),
            domains: self.domains.clone(),
            index: None,
            kept: None,
        }
    }

    /// Each gated node, in release order, with its target pool.
    pub fn with_homes(&self) -> impl Iterator<Item = (&'a NodeView, Option<&'a PoolView>)> + '_ {
        self.gated.iter().enumerate().map(|(i, node)| (*node, self.home_pool(i)))
    }

    /// The target pool of the gated node at `index` (in the order of `gated`).
    pub fn home_pool(&self, index: usize) -> Option<&'a PoolView> {
        self.homes.get(index).and_then(|i| self.targets.get(*i)).copied()
    }
}

/// What validation decided.
#[derive(Clone, Debug)]
pub enum Verdict<'a> {
    /// Usable.
    Valid(Box<Resolved<'a>>),
    /// Some rule or target was not judged by its own controller yet: a sentence naming them.
    Awaiting(String),
    /// Invalid: every problem, as sentences.
    Invalid(Vec<String>),
}

/// Validates the run config's references against the snapshot. The nodes are read through the index `kept` holds,
/// brought up to date (with none, one worked out from every node), which `slot` then holds for the configuration;
/// the configuration gives it to the later steps only when `kept` is given.
pub fn resolve<'a>(snapshot: &'a Snapshot, kept: Option<&'a Kept>, slot: &'a OnceCell<Arc<GatedIndex>>) -> Verdict<'a> {
    let mut problems = Vec::new();
    let mut unjudged = Vec::new();
    let mut rules = Vec::new();
    for rule in &snapshot.rules {
        match &rule.found {
            None => problems.push(format!("MutexRule {} not found", rule.key())),
            Some(found) => match &found.valid {
                Ok(()) => rules.push(Rule { view: rule, found, label: rule.label(), key: rule.key() }),
                Err(Unusable::NotValidatedYet) => unjudged.push(format!("MutexRule {}", rule.key())),
                Err(Unusable::Invalid(why)) => problems.push(format!("MutexRule {} is invalid: {why}", rule.key())),
            },
        }
    }
    let mut targets: Vec<&PoolView> = Vec::new();
    for target in &snapshot.targets {
        let key = format!("{}/{}", target.namespace, target.name);
        match &target.found {
            None => problems.push(format!("MutexTarget {key} not found")),
            Some(Err(Unusable::NotValidatedYet)) => unjudged.push(format!("MutexTarget {key}")),
            Some(Err(Unusable::Invalid(why))) => problems.push(format!("MutexTarget {key} is invalid: {why}")),
            Some(Ok(pools)) => {
                for name in pools {
                    match snapshot.pools.get(name) {
                        None => problems.push(format!("MachineConfigPool {name} of MutexTarget {key} not found")),
                        Some(_) if name == membership::MASTER || name == membership::ARBITER => problems.push(format!(
                            "MutexTarget {key} names the {name} pool; control-plane nodes cannot be gated \
                                 (pausing them would stop the control-plane upgrade)"
                        )),
                        Some(pool) if !targets.iter().any(|t| t.name == *name) => targets.push(pool),
                        Some(_) => {}
                    }
                }
            }
        }
    }
    let canary_name = &snapshot.run_config.spec.canary.name;
    let canary = snapshot.pools.get(canary_name);
    match canary {
        None => problems.push(format!("canary MachineConfigPool {canary_name} not found")),
        Some(pool) => {
            // Paused by the SR-IOV network operator for its drain: its turn, which it ends itself.
            if pool.paused && !pool.sriov_turn(false) {
                problems.push(format!(
                    "canary MachineConfigPool {canary_name} is paused; the canary must be unpaused so it can \
                     upgrade released nodes"
                ));
            }
            if membership::is_built_in(canary_name) {
                problems.push(format!(
                    "the canary cannot be the {canary_name} pool: the machine-config operator keeps its selectors, \
                     so numo cannot steer it; create a custom pool for the canary"
                ));
            }
        }
    }
    problems.extend(image_mode_mismatch(snapshot, &targets, canary_name));
    if targets.iter().any(|t| &t.name == canary_name) {
        problems.push(format!(
            "canary MachineConfigPool {canary_name} is also a target pool; choose a canary that no MutexTarget names"
        ));
    }
    let spec = &snapshot.run_config.spec;
    let schedule = Schedule::parse(&spec.maintenance_windows, &spec.blackout_windows).unwrap_or_else(|bad| {
        problems.extend(bad);
        Schedule::default()
    });
    for (i, custom) in spec.health_checks.iter().flat_map(|h| h.custom.iter()).enumerate() {
        if let Err(why) = crate::cel_check::check(&custom.expression) {
            problems.push(format!("healthChecks.custom[{i}].expression does not compile: {why}"));
        }
        let type_meta = kube::api::TypeMeta { api_version: custom.api_version.clone(), kind: custom.kind.clone() };
        if let Err(why) = kube::api::GroupVersionKind::try_from(&type_meta) {
            problems.push(format!("healthChecks.custom[{i}].apiVersion {:?} is not valid: {why}", custom.api_version));
        }
        if let Some(why) = crate::cel_check::reserved(&custom.api_version, &custom.kind) {
            problems.push(format!("healthChecks.custom[{i}]: {why}"));
        }
    }
    if let Some(text) = spec.overdue_after.as_deref().filter(|t| crate::api::parse_duration(t).is_none()) {
        problems.push(format!("overdueAfter {text:?} is not a duration"));
    }
    if spec.soak_time.is_some() && spec.soak_time().is_none() {
        problems.push(format!("soakTime {:?} is not a duration", spec.soak_time.as_deref().unwrap_or_default()));
    }
    problems.extend(spec.topology.as_ref().map(topology_problems).unwrap_or_default());
    if problems.is_empty() && !unjudged.is_empty() {
        return Verdict::Awaiting(format!(
            "{}: not validated yet; nothing is changed until they are.",
            unjudged.join(", ")
        ));
    }
    let Some(canary) = canary.filter(|_| problems.is_empty()) else { return Verdict::Invalid(problems) };
    let labels = rules.iter().map(|r| r.label.clone()).collect();
    let reading = Reading::new(snapshot, &targets, canary, labels);
    let index = slot.get_or_init(|| match kept {
        Some(kept) => kept.updated(snapshot, &reading),
        None => Arc::new(GatedIndex::of(snapshot, &reading)),
    });
    let mut membership = Membership::of(index);
    if !membership.in_canary.is_empty() {
        return Verdict::Invalid(vec![format!(
            "canary MachineConfigPool {} holds {} of the nodes the target pools select ({}); the canary would \
             upgrade them ungated. Give the canary a node selector that no target node matches (the reference's \
             canary adds `isCanary Exists` to the worker labels)",
            canary.name,
            membership.in_canary.len(),
            sample(&membership.in_canary)
        )]);
    }
    let domains = spec.topology.as_ref().map(|topology| {
        let gated: Vec<&NodeView> = membership.gated.iter().map(|(_, n)| *n).collect();
        let domains = super::domains::Domains::of(topology, snapshot, &gated);
        domains.release_order(&mut membership.gated);
        domains
    });
    let owner = snapshot.run_config.key();
    let involved: BTreeSet<&str> = targets.iter().map(|t| t.name.as_str()).chain([canary.name.as_str()]).collect();
    let claimed: Vec<&PoolView> = snapshot.pools.values().filter(|p| p.owner() == Some(owner.as_str())).collect();
    // Rule labels of rules the spec no longer has: on the nodes this run config gates, and in the selectors of the
    // pools it claims (numo 0.2 steered by them).
    let on_nodes = index.stale_labels();
    let stale_labels: BTreeSet<String> = claimed
        .iter()
        .flat_map(|p| selector::rule_labels(p.node_selector.as_ref()))
        .chain(on_nodes)
        .filter(|k| !rules.iter().any(|r| r.label == *k))
        .map(String::from)
        .collect();
    Verdict::Valid(Box::new(Resolved {
        rules,
        stale_pools: claimed.into_iter().filter(|p| !involved.contains(p.name.as_str())).collect(),
        stale_labels: stale_labels.into_iter().collect(),
        owner,
        targets,
        canary,
        release_mark: crate::labels::released_value(&canary.name),
        homes: membership.gated.iter().map(|(i, _)| *i).collect(),
        gated: membership.gated.into_iter().map(|(_, n)| n).collect(),
        outsiders: membership.outsiders,
        findings: membership.findings,
        schedule,
        index: kept.and(domains.is_none().then_some(&**index)),
        kept: kept.filter(|_| domains.is_none()),
        domains,
    }))
}

/// What is wrong with `spec.topology`, as sentences.
fn topology_problems(topology: &crate::api::Topology) -> Vec<String> {
    let mut problems = Vec::new();
    if let Some(key) = &topology.key {
        if let Err(why) = selector::valid_label_key(key) {
            problems.push(format!("topology.key {key:?} is not a label key: {why}"));
        }
    }
    if let Some(text) = topology.domain_soak_time.as_deref().filter(|_| topology.domain_soak().is_none()) {
        problems.push(format!("topology.domainSoakTime {text:?} is not a duration"));
    }
    let mut seen = BTreeSet::new();
    for domain in &topology.domains {
        if !seen.insert(domain) {
            problems.push(format!("topology.domains lists {domain:?} twice"));
        }
    }
    let mode = topology.mode.map(crate::api::TopologyMode::as_str);
    if mode != Some("DomainAtATime") {
        if topology.max_nodes_per_domain.is_some() {
            problems.push(format!(
                "topology.maxNodesPerDomain applies only to mode DomainAtATime (the mode is {})",
                mode.unwrap_or("unset")
            ));
        }
        if topology.domain_soak_time.is_some() {
            problems.push(format!(
                "topology.domainSoakTime applies only to mode DomainAtATime (the mode is {})",
                mode.unwrap_or("unset")
            ));
        }
    }
    problems
}

/// Target pools in image mode (a MachineOSConfig builds their OS image on the cluster). A released node boots the
/// canary's build, and two builds never share a digest (the MCO compares a node's image with its pool's build by
/// digest), so going home at the restore reboots it a second time, outside its gated turn: refused unless the spec
/// accepts that second reboot (`acceptImageModeSecondReboot`). Accepted, the canary needs a MachineOSConfig of its
/// own that builds the same image (that it does is the admin's to keep, docs/install.md); without one a released
/// node would boot the canary's plain OS.
fn image_mode_mismatch(snapshot: &Snapshot, targets: &[&PoolView], canary: &str) -> Vec<String> {
    let layered: Vec<(&str, &String)> =
        targets.iter().filter_map(|t| Some((t.name.as_str(), snapshot.image_builds.get(&t.name)?))).collect();
    if !snapshot.run_config.spec.accept_image_mode_second_reboot {
        return layered
            .iter()
            .map(|(pool, build)| {
                format!(
                    "target MachineConfigPool {pool} builds its own OS image on the cluster (MachineOSConfig \
                     {build}): a node released into the canary boots the canary's image and reboots a second time, \
                     ungated, into its own pool's image when it goes home at the restore (two builds never share a \
                     digest). Take {pool} out of the targets, or accept that second reboot per node with \
                     spec.acceptImageModeSecondReboot: true and give the canary a MachineOSConfig that builds the \
                     same image"
                )
            })
            .collect();
    }
    if snapshot.image_builds.contains_key(canary) {
        return Vec::new();
    }
    layered
        .iter()
        .map(|(pool, build)| {
            format!(
                "target MachineConfigPool {pool} builds its own OS image on the cluster (MachineOSConfig {build}), \
                 but canary MachineConfigPool {canary} has no MachineOSConfig: a node released into the canary \
                 would boot the canary's image instead of its own. Give the canary a MachineOSConfig that builds the \
                 same image (a copy of {build} with spec.machineConfigPool.name: {canary}) and let it build before \
                 the rollout, or choose a canary that has one"
            )
        })
        .collect()
}

/// The target nodes as the MCO assigns them.
struct Membership<'a> {
    /// Nodes the target pools own, in release order, with the index of their pool.
    gated: Vec<(usize, &'a NodeView)>,
    /// Nodes a target pool selects that the canary owns.
    in_canary: Vec<&'a str>,
    /// Nodes a target pool selects that another pool owns, summarised per pool.
    findings: Vec<String>,
    /// The other nodes the canary's own `matchLabels` select (see [`Resolved::outsiders`]).
    outsiders: Vec<&'a NodeView>,
}

impl<'a> Membership<'a> {
    fn of(index: &'a GatedIndex) -> Self {
        let findings = index
            .elsewhere()
            .map(|(owner, nodes)| {
                format!(
                    "{} node(s) the target pools select belong to {owner} and are not gated: {}",
                    nodes.len(),
                    sample(&nodes)
                )
            })
            .collect();
        Self { gated: index.gated().collect(), in_canary: index.in_canary(), findings, outsiders: index.outsiders() }
    }
}

/// Up to five names, then how many more.
fn sample(names: &[&str]) -> String {
    let shown: Vec<&str> = names.iter().take(5).copied().collect();
    match names.len().saturating_sub(shown.len()) {
        0 => shown.join(", "),
        more => format!("{}, and {more} more", shown.join(", ")),
    }
}
