//! Failure-domain waves (`spec.topology`) at gate time: which pending nodes may start now (`DomainAtATime`: only
//! those of the domain in progress, and a new domain only once the last one finished and soaked; `Spread`: never two
//! of one domain in flight), and the waves shown in the status. The domains and their order are `domains`', worked
//! out when the configuration is resolved.
//!
//! Everything is derived again on each reconcile from the nodes' labels and states, so a restarted numo resumes in
//! the same domain; only the domains' order and the times they started and finished are kept in the status.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;

use super::domains::Domains;
use super::node_state::{GatedNode, NodeState};
use crate::api::check;
use crate::api::{Blocker, TopologyMode, TopologyStatus, Wave};

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
    let pending = nodes.iter().enumerate().filter(|(_, g)| matches!(g.state, NodeState::Pending));
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
        crate::windows::shown(&crate::windows::utc(&last.0)),
        shown_domain(next, &domains.key),
        crate::windows::shown(&crate::windows::utc(&until)),
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
            .or_else(|| nodes.iter().find(|g| matches!(g.state, NodeState::Pending)))
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
