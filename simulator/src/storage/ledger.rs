//! What the storage world saw, for tests and benchmarks: per failure domain, the longest stretch in which at least
//! one of its nodes was down (not Ready or cordoned) and the most of its nodes down at once; and every drain that
//! waited because the API server refused an eviction (which budgets refused, for how long).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use tokio::time::Instant;

/// One failure domain's record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DomainRecord {
    /// The longest stretch in which the domain had a node down (a stretch still going counts up to now).
    pub longest_down: Duration,
    /// The most of its nodes down at the same time.
    pub most_down_at_once: usize,
}

/// A drain that waited: the API server refused at least one of its evictions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DrainWait {
    /// The node drained.
    pub node: String,
    /// The budgets the refusals named.
    pub budgets: BTreeSet<String>,
    /// Whether a refusing budget was a blocking one (`maxUnavailable: 0`), not just the default one at zero allowed
    /// disruptions.
    pub blocking: bool,
    /// From the first refusal until the node's OSD pods were evicted (until now while it still waits).
    pub waited: Duration,
    /// Whether the drain finished.
    pub done: bool,
}

/// A snapshot of the record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StorageReport {
    /// By failure domain.
    pub domains: BTreeMap<String, DomainRecord>,
    /// Every drain that waited, in the order they first waited.
    pub drain_waits: Vec<DrainWait>,
    /// Drains of nodes with OSDs, started.
    pub drains: usize,
}

impl StorageReport {
    /// The longest stretch any domain had a node down.
    pub fn longest_domain_down(&self) -> Duration {
        self.domains.values().map(|d| d.longest_down).max().unwrap_or_default()
    }

    /// Drains that waited on a blocking budget (`maxUnavailable: 0`).
    pub fn drains_blocked(&self) -> usize {
        self.drain_waits.iter().filter(|w| w.blocking).count()
    }

    /// The most nodes of any one domain down at once.
    pub fn most_down_in_a_domain(&self) -> usize {
        self.domains.values().map(|d| d.most_down_at_once).max().unwrap_or_default()
    }
}

#[derive(Clone, Debug, Default)]
struct Domain {
    record: DomainRecord,
    down_since: Option<Instant>,
}

#[derive(Clone, Debug)]
struct Wait {
    wait: DrainWait,
    since: Instant,
}

/// The running record.
#[derive(Clone, Debug, Default)]
pub struct Ledger {
    domains: BTreeMap<String, Domain>,
    waits: Vec<Wait>,
    drains: usize,
}

impl Ledger {
    /// Notes, `now`, how many nodes of each domain are down (every domain named, zero for none).
    pub fn observe(&mut self, now: Instant, down: &BTreeMap<String, usize>) {
        for (name, count) in down {
            let domain = self.domains.entry(name.clone()).or_default();
            domain.record.most_down_at_once = domain.record.most_down_at_once.max(*count);
            match (domain.down_since, *count > 0) {
                (None, true) => domain.down_since = Some(now),
                (Some(since), false) => {
                    domain.record.longest_down = domain.record.longest_down.max(now.saturating_duration_since(since));
                    domain.down_since = None;
                }
                _ => {}
            }
        }
    }

    /// A drain of a node with OSDs started.
    pub fn drain_started(&mut self) {
        self.drains += 1;
    }

    /// The drain of `node` had an eviction refused by `budget` (`blocking`: a budget at `maxUnavailable: 0`).
    pub fn refused(&mut self, now: Instant, node: &str, budget: Option<&str>, blocking: bool) {
        let index = match self.waits.iter().position(|w| w.wait.node == node && !w.wait.done) {
            Some(index) => index,
            None => {
                let wait = DrainWait { node: node.to_string(), ..DrainWait::default() };
                self.waits.push(Wait { wait, since: now });
                self.waits.len() - 1
            }
        };
        let wait = &mut self.waits[index].wait;
        wait.budgets.extend(budget.map(str::to_string));
        wait.blocking |= blocking;
    }

    /// The drain of `node` evicted its OSD pods.
    pub fn drained(&mut self, now: Instant, node: &str) {
        for entry in self.waits.iter_mut().filter(|w| w.wait.node == node && !w.wait.done) {
            entry.wait.done = true;
            entry.wait.waited = now.saturating_duration_since(entry.since);
        }
    }

    /// The record as of `now`.
    pub fn report(&self, now: Instant) -> StorageReport {
        let domains = self
            .domains
            .iter()
            .map(|(name, d)| {
                let mut record = d.record.clone();
                if let Some(since) = d.down_since {
                    record.longest_down = record.longest_down.max(now.saturating_duration_since(since));
                }
                (name.clone(), record)
            })
            .collect();
        let drain_waits = self
            .waits
            .iter()
            .map(|w| {
                let mut wait = w.wait.clone();
                if !wait.done {
                    wait.waited = now.saturating_duration_since(w.since);
                }
                wait
            })
            .collect();
        StorageReport { domains, drain_waits, drains: self.drains }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn down(counts: &[(&str, usize)]) -> BTreeMap<String, usize> {
        counts.iter().map(|(d, c)| (d.to_string(), *c)).collect()
    }

    #[test]
    fn a_domain_is_down_from_its_first_node_down_to_its_last_back() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut ledger = Ledger::default();
        ledger.observe(t0, &down(&[("rack0", 1), ("rack1", 0)]));
        ledger.observe(t0 + s(5), &down(&[("rack0", 2), ("rack1", 0)]));
        ledger.observe(t0 + s(8), &down(&[("rack0", 1), ("rack1", 1)]));
        ledger.observe(t0 + s(12), &down(&[("rack0", 0), ("rack1", 0)]));
        ledger.observe(t0 + s(20), &down(&[("rack0", 1), ("rack1", 0)]));
        let report = ledger.report(t0 + s(23));
        assert_eq!(report.domains["rack0"], DomainRecord { longest_down: s(12), most_down_at_once: 2 });
        assert_eq!(report.domains["rack1"], DomainRecord { longest_down: s(4), most_down_at_once: 1 });
        assert_eq!(report.longest_domain_down(), s(12));
        assert_eq!(report.most_down_in_a_domain(), 2);
        let later = ledger.report(t0 + s(40));
        assert_eq!(later.domains["rack0"].longest_down, s(20), "a stretch still going counts up to now");
    }

    #[test]
    fn a_drain_waits_from_its_first_refusal_until_its_evictions_pass() {
        let t0 = Instant::now();
        let s = Duration::from_secs;
        let mut ledger = Ledger::default();
        ledger.drain_started();
        ledger.drain_started();
        ledger.refused(t0, "w-1", Some("rook-ceph-osd"), false);
        ledger.refused(t0 + s(5), "w-1", Some("rook-ceph-osd-rack-rack1"), true);
        assert_eq!(ledger.report(t0 + s(7)).drain_waits[0].waited, s(7));
        ledger.drained(t0 + s(30), "w-1");
        let report = ledger.report(t0 + s(60));
        assert_eq!(report.drains, 2);
        assert_eq!(report.drains_blocked(), 1);
        let wait = &report.drain_waits[0];
        assert_eq!((wait.waited, wait.done, wait.blocking), (s(30), true, true));
        assert_eq!(wait.budgets.len(), 2);
    }
}
