//! Failure-domain waves (`spec.topology`): which domain each gated node is in, the order the domains go in, which
//! pending nodes may start now (`DomainAtATime`: only those of the domain in progress, and a new domain only once the
//! last one finished and soaked; `Spread`: never two of one domain in flight), and the waves shown in the status.
//!
//! Everything is derived again on each reconcile from the nodes' labels and states, so a restarted numo resumes in
//! the same domain; only the domains' order and the times they started and finished are kept in the status.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::node_state::{GatedNode, NodeState};
use crate::api::check;
use crate::api::{Blocker, KeySource, Topology, TopologyMode, TopologyStatus, Wave};
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
    fn waves_index(&self) -> BTreeMap<&str, usize> {
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
fn domain_of<'n>(node: &'n NodeView, key: &str) -> &'n str {
    node.labels.get(key).map_or("", String::as_str)
}

/// Whether a node keeps its domain busy: in flight, or failed (a failed node may be down; the next domain waits
/// until it is retried or skipped).
fn busy(state: &NodeState) -> bool {
    state.in_flight() || state.holds()
}

/// Which pending nodes may start now, at most `free` of them, in release order (indices into `nodes`); and what
/// holds the next domain, when its domain soak does.
pub struct Startable {
    /// Indices into the gated nodes.
    pub nodes: Vec<usize>,
    /// The domain soak that holds the first node of the next domain.
    pub blocker: Option<Blocker>,
    /// When that soak ends.
    pub requeue_after: Option<Duration>,
}

/// The pending nodes that may start now, within `free` slots.
pub fn startable(
    domains: Option<&Domains>,
    nodes: &[GatedNode<'_>],
    waves: &[Wave],
    free: usize,
    now: Timestamp,
) -> Startable {
    let pending = nodes.iter().enumerate().filter(|(_, g)| g.state == NodeState::Pending);
    let mut out = Startable { nodes: Vec::new(), blocker: None, requeue_after: None };
    let Some(domains) = domains.filter(|d| d.mode.is_some()) else {
        out.nodes = pending.take(free).map(|(i, _)| i).collect();
        return out;
    };
    match domains.mode {
        Some(TopologyMode::Spread) => {
            let mut taken: BTreeSet<&str> =
                nodes.iter().filter(|g| busy(&g.state)).map(|g| domains.domain(g.node)).collect();
            for (i, gated) in pending {
                if out.nodes.len() == free {
                    break;
                }
                if taken.insert(domains.domain(gated.node)) {
                    out.nodes.push(i);
                }
            }
        }
        _ => {
            let active: BTreeSet<&str> = nodes
                .iter()
                .filter(|g| g.state.takes_slot() || g.state.holds())
                .map(|g| domains.domain(g.node))
                .collect();
            let current = match active.len() {
                0 => match pending.clone().next() {
                    Some((_, first)) => domains.domain(first.node),
                    None => return out,
                },
                // A domain label changed under a node in flight: nothing starts until one domain is left.
                2.. => return out,
                1 => active.into_iter().next().unwrap_or_default(),
            };
            // The first node of a domain waits for the last domain's soak; the rest of the domain does not.
            let opening = !nodes.iter().any(|g| domains.domain(g.node) == current && started(&g.state));
            if opening {
                if let Some((blocker, wait)) = soaking(domains, waves, current, now) {
                    out.blocker = Some(blocker);
                    out.requeue_after = Some(wait);
                    return out;
                }
            }
            let in_domain = nodes.iter().filter(|g| domains.domain(g.node) == current && busy(&g.state)).count();
            let room = free.min(domains.per_domain.saturating_sub(in_domain));
            out.nodes = pending.filter(|(_, g)| domains.domain(g.node) == current).take(room).map(|(i, _)| i).collect();
        }
    }
    out
}

/// Whether this rollout started the node (it is not pending, and did not need or get skipped without a start).
fn started(state: &NodeState) -> bool {
    !matches!(state, NodeState::Pending | NodeState::Done { already: true } | NodeState::Skipped)
}

/// The domain soak that holds domain `next` from starting: the last domain that finished, until `domainSoakTime`
/// after it did. None when there is no soak, or it is over.
fn soaking(domains: &Domains, waves: &[Wave], next: &str, now: Timestamp) -> Option<(Blocker, Duration)> {
    let soak = domains.soak?;
    let last = waves
        .iter()
        .filter(|w| w.domain != next)
        .filter_map(|w| Some((w.finished_at.as_ref()?.0, w)))
        .max_by_key(|(at, _)| *at)?;
    let until = last.0 + soak;
    let wait = Duration::try_from(until.duration_since(now)).ok().filter(|w| !w.is_zero())?;
    let message = format!(
        "domain {} finished at {}; the first node of domain {} starts when its soak ends, at {}",
        shown_domain(&last.1.domain, &domains.key),
        super::readiness::shown(&crate::windows::utc(&last.0)),
        shown_domain(next, &domains.key),
        super::readiness::shown(&crate::windows::utc(&until)),
    );
    Some((Blocker { check: check::DOMAIN_SOAK.to_string(), message }, wait + Duration::from_millis(50)))
}

/// A domain as messages name it.
pub fn shown_domain(domain: &str, key: &str) -> String {
    if domain.is_empty() {
        format!("(nodes without the {key} label)")
    } else {
        domain.to_string()
    }
}

/// The waves as the status shows them: each domain's nodes and how many finished, when it started (its first node
/// left Pending) and when it finished (its last node finished), the times kept from the previous status.
pub fn waves(
    domains: &Domains,
    nodes: &[GatedNode<'_>],
    previous: Option<&TopologyStatus>,
    now: Timestamp,
) -> Vec<Wave> {
    let before: BTreeMap<&str, &Wave> =
        previous.into_iter().flat_map(|p| &p.waves).map(|w| (w.domain.as_str(), w)).collect();
    // One pass over the nodes: (nodes, done, started) per domain.
    let mut counts: BTreeMap<&str, (usize, usize, bool)> = BTreeMap::new();
    for gated in nodes {
        let entry = counts.entry(domains.domain(gated.node)).or_default();
        entry.0 += 1;
        entry.1 += usize::from(gated.state.finished());
        entry.2 |= started(&gated.state);
    }
    domains
        .order
        .iter()
        .map(|domain| {
            let (members, done, started) = counts.get(domain.as_str()).copied().unwrap_or_default();
            let earlier = before.get(domain.as_str());
            let finished = done == members && started;
            Wave {
                domain: domain.clone(),
                nodes: members as u32,
                done: done as u32,
                started_at: started.then(|| earlier.and_then(|w| w.started_at.clone()).unwrap_or(Time(now))),
                finished_at: finished.then(|| earlier.and_then(|w| w.finished_at.clone()).unwrap_or(Time(now))),
            }
        })
        .collect()
}

/// The status's topology: the key, the waves, the domain in progress (or next) and those done, in the order they
/// finished.
pub fn status(domains: &Domains, waves: Vec<Wave>, nodes: &[GatedNode<'_>]) -> TopologyStatus {
    let mut finished: Vec<&Wave> =
        waves.iter().filter(|w| w.finished_at.is_some() || (w.nodes > 0 && w.done == w.nodes)).collect();
    finished.sort_by_key(|w| w.finished_at.as_ref().map(|t| t.0));
    let done: Vec<String> = finished.iter().map(|w| w.domain.clone()).collect();
    let current = match domains.mode {
        Some(TopologyMode::DomainAtATime) => nodes
            .iter()
            .find(|g| g.state.takes_slot() || g.state.holds())
            .or_else(|| nodes.iter().find(|g| g.state == NodeState::Pending))
            .map(|g| domains.domain(g.node).to_string()),
        _ => None,
    };
    TopologyStatus {
        key: domains.key.clone(),
        key_source: Some(domains.source),
        mode: domains.mode,
        current,
        done,
        waves,
    }
}

/// The Events of domains that started or finished since the previous status.
pub fn news(previous: Option<&TopologyStatus>, now: &TopologyStatus) -> Vec<super::notice::Notice> {
    let before: BTreeMap<&str, &Wave> =
        previous.into_iter().flat_map(|p| &p.waves).map(|w| (w.domain.as_str(), w)).collect();
    let mut notices = Vec::new();
    for wave in &now.waves {
        let earlier = before.get(wave.domain.as_str()).copied();
        let domain = shown_domain(&wave.domain, &now.key);
        if wave.started_at.is_some() && earlier.is_none_or(|w| w.started_at.is_none()) {
            notices.push(super::notice::Notice::normal(
                "DomainStarted",
                "Topology",
                format!("The first node of failure domain {domain} ({} node(s), {}) started.", wave.nodes, now.key),
            ));
        }
        if wave.finished_at.is_some() && earlier.is_none_or(|w| w.finished_at.is_none()) {
            notices.push(super::notice::Notice::normal(
                "DomainFinished",
                "Topology",
                format!("Every node of failure domain {domain} finished ({} node(s)).", wave.nodes),
            ));
        }
    }
    notices
}
