//! The failure domains of a valid configuration (`spec.topology`), as `resolve` works them out: the key label, the
//! domains' order (the spec's, then the order the status recorded, then the smallest first) and the release order
//! of the gated nodes. What may start now and the waves the status shows are `topology`'s, at gate time.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use crate::api::{KeySource, Topology, TopologyMode};
use crate::controllers::run_config::snapshot::{NodeView, Snapshot};

/// The failure domains of a valid configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Domains {
    /// The node label that names a node's domain.
    pub key: String,
    /// Where the key came from.
    pub source: KeySource,
    /// How the rollout moves through the domains; None: target and name order.
    pub mode: Option<TopologyMode>,
    /// Under `DomainAtATime`: at most this many nodes of the domain in flight at once.
    pub per_domain: usize,
    /// How long the next domain waits after the last one finished.
    pub soak: Option<Duration>,
    /// The domains in the order the rollout takes them; `""` (nodes without the label) last.
    pub order: Vec<String>,
}

impl Domains {
    /// Works the domains of `gated` out from the spec, the StorageCluster's key, and the order the previous status
    /// recorded (kept, so that nodes joining or leaving never reorder the domains under way).
    pub fn of(topology: &Topology, snapshot: &Snapshot, gated: &[&NodeView]) -> Self {
        let (key, source) = match (&topology.key, &snapshot.storage_domain_key) {
            (Some(key), _) => (key.clone(), KeySource::Spec),
            (None, Some(key)) => (key.clone(), KeySource::StorageCluster),
            (None, None) => (crate::api::topology::ZONE_LABEL.to_string(), KeySource::Default),
        };
        let mut sizes: BTreeMap<String, usize> = BTreeMap::new();
        for node in gated {
            *sizes.entry(domain_of(node, &key).to_string()).or_default() += 1;
        }
        let recorded = snapshot.run_config.status.topology.as_ref().filter(|t| t.key == key);
        let mut order: Vec<String> = Vec::new();
        let mut placed: BTreeSet<&str> = BTreeSet::new();
        let listed = topology.domains.iter();
        let kept = recorded.into_iter().flat_map(|t| t.waves.iter().map(|w| &w.domain));
        for domain in listed.chain(kept) {
            if sizes.contains_key(domain) && !domain.is_empty() && placed.insert(domain) {
                order.push(domain.clone());
            }
        }
        let mut rest: Vec<(&usize, &String)> =
            sizes.iter().filter(|(d, _)| !d.is_empty() && !placed.contains(d.as_str())).map(|(d, n)| (n, d)).collect();
        rest.sort();
        order.extend(rest.into_iter().map(|(_, d)| d.clone()));
        if sizes.contains_key("") {
            order.push(String::new());
        }
        let per_domain = match topology.mode {
            Some(TopologyMode::Spread) => 1,
            _ => topology.max_nodes_per_domain.map_or(usize::MAX, |n| n.max(1) as usize),
        };
        Domains { key, source, mode: topology.mode, per_domain, soak: topology.domain_soak(), order }
    }

    /// The domain of `node`: the value of its key label, `""` without one.
    pub fn domain<'n>(&self, node: &'n NodeView) -> &'n str {
        domain_of(node, &self.key)
    }

    /// Each domain's position in the order (one domain per node when the key is the host name: an index, not a
    /// search per node).
    pub(super) fn waves_index(&self) -> BTreeMap<&str, usize> {
        self.order.iter().enumerate().map(|(i, d)| (d.as_str(), i)).collect()
    }

    /// Puts the gated nodes (each with the index of its target pool, in target then name order) in release order:
    /// `DomainAtATime`, domain by domain; `Spread`, the first node of each domain, then the second of each, and so
    /// on, so that the domains take turns. Without a mode the order is kept.
    pub fn release_order(&self, gated: &mut [(usize, &NodeView)]) {
        let index = self.waves_index();
        let wave = |domain: &str| index.get(domain).copied().unwrap_or(self.order.len());
        match self.mode {
            None => {}
            Some(TopologyMode::DomainAtATime) => gated.sort_by_key(|(_, n)| wave(self.domain(n))),
            Some(TopologyMode::Spread) => {
                let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
                let mut turn: BTreeMap<String, usize> = BTreeMap::new();
                for (_, node) in gated.iter() {
                    let count = seen.entry(domain_of(node, &self.key)).or_default();
                    turn.insert(node.name.clone(), *count);
                    *count += 1;
                }
                gated.sort_by_key(|(_, n)| (turn[&n.name], wave(self.domain(n))));
            }
        }
    }
}

/// The value of `node`'s label `key`, `""` without one.
pub(super) fn domain_of<'n>(node: &'n NodeView, key: &str) -> &'n str {
    node.labels.get(key).map_or("", String::as_str)
}
