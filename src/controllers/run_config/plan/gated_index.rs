//! Where every node stands to one run config's pools, kept between its plans and brought up to date from the nodes
//! that changed ([`NodeMap::changed_since`]): the gated nodes in release order, with what their turn needs to know
//! of each node alone ([`Facts`]), and the nodes a target selects that the canary or another pool holds. A plan
//! after one node event works out that node again, not every node: at 2,000 nodes that pass was most of a gated
//! plan.
//!
//! [`NodeMap::changed_since`]: crate::controllers::run_config::node_map::NodeMap::changed_since
//!
//! The index holds while what it was worked out with besides the nodes is the same (the pools' selectors, the
//! targets, the canary, the rule labels, the cluster's target version); else, or when the node map cannot say what
//! changed since (another map, a relist, a change to every view), it is worked out again from every node. In debug
//! builds every index brought up to date is checked against one worked out from every node.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use super::finished::{Finished, KeptFinished, Places};
use super::target::Target;
use crate::controllers::run_config::snapshot::{self, NodeView, PoolView, Snapshot};
use crate::membership::{self, PoolSelector};
use crate::selector;

/// What the planner keeps of one run config between its plans (the controller holds one for each); cloning shares
/// it. A plan that is given none works its index out from every node, and looks up the finished nodes anew.
#[derive(Clone, Default)]
pub struct Kept(Arc<Mutex<KeptState>>);

impl std::fmt::Debug for Kept {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Kept")
    }
}

/// What a [`Kept`] holds.
#[derive(Default)]
struct KeptState {
    /// The index of the last plan.
    index: Option<Arc<GatedIndex>>,
    /// The finished nodes of the last plan's previous status.
    finished: KeptFinished,
}

/// Where the gated nodes' places were last numbered anew: one counter for every index, so that no two numberings
/// share a stamp.
static PLACES_STAMPS: AtomicU64 = AtomicU64::new(0);

fn next_places_stamp() -> u64 {
    PLACES_STAMPS.fetch_add(1, Ordering::Relaxed) + 1
}

/// What an index was worked out with besides the nodes.
#[derive(Clone, Debug, PartialEq)]
struct Inputs {
    /// The fingerprint of every pool's name and selector ([`snapshot::selectors_fingerprint`]).
    selectors: u64,
    /// The target pools, in target order.
    targets: Vec<String>,
    /// The canary pool.
    canary: String,
    /// The rule labels, in rule order.
    rules: Vec<String>,
    /// The cluster's target version.
    version: Option<String>,
}

/// What a gated node's turn needs to know of the node alone, for the cluster's target version.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Facts {
    /// Its version is known.
    pub known: bool,
    /// It is behind the target version ([`Target::behind`]).
    pub behind: bool,
    /// The MCO set out to move it to the target ([`Target::started_ungated`]).
    pub started_ungated: bool,
    /// It carries every rule label and no release mark.
    pub plain: bool,
}

/// Where one node stands to the run config's pools.
enum Standing {
    /// A target pool holds it (the target's index).
    Gated(usize),
    /// A target pool selects it and the canary holds it.
    InCanary,
    /// A target pool selects it and another pool, or none, holds it (who, as the finding says it).
    Elsewhere(String),
    /// No target pool selects it.
    Unselected,
}

/// What an index reads the nodes with: the pools as membership sees them, the targets, the canary, the rules and
/// the target version.
pub struct Reading<'s> {
    /// Every pool as membership sees it.
    selectors: Vec<PoolSelector<'s>>,
    /// Their fingerprint ([`snapshot::selectors_fingerprint`]).
    fingerprint: u64,
    /// The target pools, in target order.
    targets: &'s [&'s PoolView],
    /// The canary pool.
    canary: &'s PoolView,
    /// The canary's own `matchLabels`, without its expressions (see [`super::resolve::Resolved::outsiders`]).
    steered: k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector,
    /// The rule labels, in rule order.
    rules: Vec<String>,
    /// The cluster's target version, as a target under `Upgrade`; None when the cluster has none.
    target: Option<Target>,
}

impl<'s> Reading<'s> {
    /// How `snapshot`'s nodes are read for a configuration of these `targets`, `canary` and rule `labels`.
    pub fn new(snapshot: &'s Snapshot, targets: &'s [&'s PoolView], canary: &'s PoolView, rules: Vec<String>) -> Self {
        let selectors = snapshot::pool_selectors(&snapshot.pools);
        let fingerprint = snapshot::selectors_fingerprint(&selectors);
        let version = snapshot.cluster.as_ref().and_then(|c| c.target_version.as_deref());
        Self {
            selectors,
            fingerprint,
            targets,
            canary,
            steered: selector::with_expressions_replaced(canary.effective_selector(), &[]),
            rules,
            target: version.map(Target::upgrade),
        }
    }

    fn inputs(&self) -> Inputs {
        Inputs {
            selectors: self.fingerprint,
            targets: self.targets.iter().map(|t| t.name.clone()).collect(),
            canary: self.canary.name.clone(),
            rules: self.rules.clone(),
            version: self.target.as_ref().map(|t| t.version.clone()),
        }
    }

    /// Where `node` stands, and whether the canary's own `matchLabels` select it (see
    /// [`super::resolve::Resolved::outsiders`]; only asked of nodes no target holds).
    fn standing(&self, node: &NodeView) -> (Standing, bool) {
        let owner = node.pool_among(&self.selectors, self.fingerprint);
        if let Ok(Some(pool)) = owner {
            // The pool's name is the one of its view (the same string): most nodes are found without comparing.
            let home = self.targets.iter().position(|t| std::ptr::eq(t.name.as_str(), pool) || t.name == pool);
            if let Some(home) = home {
                return (Standing::Gated(home), false);
            }
        }
        let outsider = selector::matches(Some(&self.steered), &node.labels);
        if !self.targets.iter().any(|t| membership::selects(t.effective_selector(), &node.labels)) {
            return (Standing::Unselected, outsider);
        }
        let standing = match owner {
            Ok(Some(pool)) if pool == self.canary.name => Standing::InCanary,
            Ok(Some(pool)) => Standing::Elsewhere(format!("pool {pool}")),
            Ok(None) => Standing::Elsewhere("no pool".into()),
            Err(ambiguous) => Standing::Elsewhere(format!("no pool ({ambiguous})")),
        };
        (standing, outsider)
    }

    fn facts(&self, node: &NodeView) -> Facts {
        let labels = &node.labels;
        Facts {
            known: node.version.is_some(),
            behind: self.target.as_ref().is_some_and(|t| t.behind(node)),
            started_ungated: self.target.as_ref().is_some_and(|t| t.started_ungated(node)),
            plain: labels.release_mark().is_none() && self.rules.iter().all(|r| labels.has_rule_label(r)),
        }
    }
}

/// Where every node stands to one run config's pools, as of one state of the node map.
#[derive(Clone, Debug)]
pub struct GatedIndex {
    inputs: Inputs,
    /// The state of the node map it reflects ([`crate::controllers::run_config::node_map::NodeMap::stamp`]).
    stamp: u64,
    /// The gated nodes in release order (target order, then name), each with its target's index.
    gated: Vec<(usize, Arc<NodeView>)>,
    /// Each gated node's facts, in the order of `gated`.
    facts: Vec<Facts>,
    /// Each gated node's place in `gated`, by name.
    places: foldhash::HashMap<String, usize>,
    /// Stands for `places`: a new one each time they are numbered anew (a gated node added or taken away).
    places_stamp: u64,
    /// The nodes no target holds that the canary's own `matchLabels` select, by name.
    outsiders: BTreeMap<String, Arc<NodeView>>,
    /// The nodes a target selects that the canary holds.
    in_canary: BTreeSet<String>,
    /// The nodes a target selects that another pool, or none, holds, by who holds them.
    elsewhere: BTreeMap<String, BTreeSet<String>>,
    /// What the gated nodes add up to.
    counts: Counts,
}

/// What the gated nodes add up to.
#[derive(Clone, Debug, Default, PartialEq)]
struct Counts {
    /// How many gated nodes carry each rule label that no rule has.
    stale: BTreeMap<String, usize>,
    /// How many gated nodes have a known version and are behind the target version.
    behind: usize,
    /// How many gated nodes have no known version.
    unknown: usize,
}

impl Counts {
    /// Adds (`by` 1) or takes away (`by` -1) a gated node with `facts`, under the rule labels `rules`.
    fn count(&mut self, rules: &[String], facts: &Facts, node: &NodeView, by: isize) {
        let add = |n: &mut usize| *n = n.saturating_add_signed(by);
        if facts.known && facts.behind {
            add(&mut self.behind);
        }
        if !facts.known {
            add(&mut self.unknown);
        }
        for label in node.labels.rule_labels().iter().filter(|l| !rules.contains(l)) {
            let count = self.stale.entry(label.clone()).or_default();
            add(count);
            if *count == 0 {
                self.stale.remove(label);
            }
        }
    }
}

impl Kept {
    /// The index of `snapshot`'s nodes read with `reading`: the one kept, brought up to date from the nodes that
    /// changed since, when it can be; else worked out from every node. Kept for the next plan.
    pub fn updated(&self, snapshot: &Snapshot, reading: &Reading<'_>) -> Arc<GatedIndex> {
        let mut state = self.state();
        let slot = &mut state.index;
        let inputs = reading.inputs();
        let since = slot.as_ref().filter(|index| index.inputs == inputs).map(|index| index.stamp);
        let changed = since.and_then(|stamp| snapshot.nodes.changed_since(stamp));
        let index = match (slot.take(), changed) {
            (Some(mut index), Some(mut names)) => {
                names.sort_unstable();
                names.dedup();
                let kept = Arc::make_mut(&mut index);
                for name in names {
                    kept.update(name, snapshot.nodes.get(name), reading);
                }
                kept.stamp = snapshot.nodes.stamp();
                #[cfg(debug_assertions)]
                {
                    let whole = GatedIndex::of(snapshot, reading);
                    assert_eq!(index.told(), whole.told(), "the kept index strayed from the nodes");
                }
                index
            }
            _ => Arc::new(GatedIndex::of(snapshot, reading)),
        };
        *slot = Some(Arc::clone(&index));
        index
    }

    /// The previous status's finished nodes (see [`KeptFinished::of`]).
    pub fn finished(&self, status: &crate::api::MutexRunConfigStatus) -> Arc<Finished> {
        self.state().finished.of(status)
    }

    /// Where `index` places the nodes of `finished` (see [`KeptFinished::places`]).
    pub fn finished_places(&self, finished: &Arc<Finished>, index: &GatedIndex) -> Places {
        self.state().finished.places(finished, index.places_stamp, |name| index.place(name))
    }

    /// What is kept; all of it forgotten if a plan panicked while holding it.
    fn state(&self) -> MutexGuard<'_, KeptState> {
        self.0.lock().unwrap_or_else(|poisoned| {
            let mut state = poisoned.into_inner();
            *state = KeptState::default();
            state
        })
    }
}

impl GatedIndex {
    /// All the index says, in an order of its own (its table of places is not ordered): two indexes that say the
    /// same are the same.
    #[cfg(any(test, debug_assertions))]
    pub fn told(&self) -> String {
        let gated: Vec<(usize, &str, *const NodeView)> =
            self.gated.iter().map(|(home, node)| (*home, node.name.as_str(), Arc::as_ptr(node))).collect();
        let places: BTreeMap<&String, &usize> = self.places.iter().collect();
        let outsiders: Vec<*const NodeView> = self.outsiders.values().map(Arc::as_ptr).collect();
        format!(
            "{:?} {} {gated:?} {:?} {places:?} {outsiders:?} {:?} {:?} {:?}",
            self.inputs, self.stamp, self.facts, self.in_canary, self.elsewhere, self.counts
        )
    }

    /// The index worked out from every node of `snapshot`.
    pub fn of(snapshot: &Snapshot, reading: &Reading<'_>) -> Self {
        let mut index = Self {
            inputs: reading.inputs(),
            stamp: snapshot.nodes.stamp(),
            gated: Vec::new(),
            facts: Vec::new(),
            places: Default::default(),
            places_stamp: next_places_stamp(),
            outsiders: BTreeMap::new(),
            in_canary: BTreeSet::new(),
            elsewhere: BTreeMap::new(),
            counts: Counts::default(),
        };
        for node in snapshot.nodes.values() {
            if let Some(home) = index.stand(node, reading) {
                index.gated.push((home, Arc::clone(node)));
            }
        }
        // By pool, and by name within a pool: the nodes come in name order, and the sort is stable.
        index.gated.sort_by_key(|(home, _)| *home);
        for (place, (_, node)) in index.gated.iter().enumerate() {
            index.places.insert(node.name.clone(), place);
        }
        index.facts = index.gated.iter().map(|(_, node)| reading.facts(node)).collect();
        for (facts, (_, node)) in index.facts.iter().zip(&index.gated) {
            index.counts.count(&index.inputs.rules, facts, node, 1);
        }
        index
    }

    /// Files `node` where it stands, unless a target holds it: then its target's index.
    fn stand(&mut self, node: &Arc<NodeView>, reading: &Reading<'_>) -> Option<usize> {
        let (standing, outsider) = reading.standing(node);
        if outsider {
            self.outsiders.insert(node.name.clone(), Arc::clone(node));
        }
        match standing {
            Standing::Gated(home) => return Some(home),
            Standing::InCanary => drop(self.in_canary.insert(node.name.clone())),
            Standing::Elsewhere(owner) => drop(self.elsewhere.entry(owner).or_default().insert(node.name.clone())),
            Standing::Unselected => {}
        }
        None
    }

    /// Works node `name` out again: as `now` shows it, or gone.
    fn update(&mut self, name: &str, now: Option<&Arc<NodeView>>, reading: &Reading<'_>) {
        if let (Some(&place), Some(node)) = (self.places.get(name), now) {
            // Still held by the same target: it keeps its place.
            if matches!(reading.standing(node).0, Standing::Gated(home) if home == self.gated[place].0) {
                let before = std::mem::replace(&mut self.gated[place].1, Arc::clone(node));
                let facts = reading.facts(node);
                self.counts.count(&self.inputs.rules, &self.facts[place], &before, -1);
                self.counts.count(&self.inputs.rules, &facts, node, 1);
                self.facts[place] = facts;
                return;
            }
        }
        self.remove(name);
        let Some(node) = now else { return };
        let Some(home) = self.stand(node, reading) else { return };
        let place = self.gated.partition_point(|(h, n)| (*h, n.name.as_str()) < (home, name));
        let facts = reading.facts(node);
        self.counts.count(&self.inputs.rules, &facts, node, 1);
        self.gated.insert(place, (home, Arc::clone(node)));
        self.facts.insert(place, facts);
        self.renumber(place);
    }

    /// Takes node `name` out of wherever it stands.
    fn remove(&mut self, name: &str) {
        self.outsiders.remove(name);
        self.in_canary.remove(name);
        self.elsewhere.retain(|_, names| {
            names.remove(name);
            !names.is_empty()
        });
        if let Some(place) = self.places.remove(name) {
            let (_, node) = self.gated.remove(place);
            let facts = self.facts.remove(place);
            self.counts.count(&self.inputs.rules, &facts, &node, -1);
            self.renumber(place);
        }
    }

    /// Numbers the gated nodes' places again from `from` on.
    fn renumber(&mut self, from: usize) {
        self.places_stamp = next_places_stamp();
        for (place, (_, node)) in self.gated.iter().enumerate().skip(from) {
            self.places.insert(node.name.clone(), place);
        }
    }

    /// The gated nodes in release order, each with its target's index.
    pub fn gated(&self) -> impl Iterator<Item = (usize, &NodeView)> {
        self.gated.iter().map(|(home, node)| (*home, &**node))
    }

    /// The nodes a target selects that the canary holds, by name.
    pub fn in_canary(&self) -> Vec<&str> {
        self.in_canary.iter().map(String::as_str).collect()
    }

    /// The nodes a target selects that another pool, or none, holds, by who holds them, each by name.
    pub fn elsewhere(&self) -> impl Iterator<Item = (&str, Vec<&str>)> {
        self.elsewhere.iter().map(|(owner, names)| (owner.as_str(), names.iter().map(String::as_str).collect()))
    }

    /// The nodes no target holds that the canary's own `matchLabels` select, by name.
    pub fn outsiders(&self) -> Vec<&NodeView> {
        self.outsiders.values().map(|node| &**node).collect()
    }

    /// The rule labels on gated nodes that no rule has, in key order.
    pub fn stale_labels(&self) -> impl Iterator<Item = &str> {
        self.counts.stale.keys().map(String::as_str)
    }

    /// Each gated node's facts, in release order, for `target`; None when they were worked out for another
    /// (a config change, another version).
    pub fn facts_for(&self, target: &Target) -> Option<&[Facts]> {
        let same = !target.is_config_change() && self.inputs.version.as_deref() == Some(target.version.as_str());
        same.then_some(self.facts.as_slice())
    }

    /// The place of gated node `name` in release order.
    pub fn place(&self, name: &str) -> Option<usize> {
        self.places.get(name).copied()
    }

    /// How many gated nodes have a known version behind the target version, and how many have no known version.
    pub fn behind_and_unknown(&self) -> (usize, usize) {
        (self.counts.behind, self.counts.unknown)
    }
}
