//! What the simulated platform did, for tests to check afterwards: every reboot the daemon performed and every time
//! a node matched two or more custom pools. Both are written where the simulator itself acts or decides (the daemon
//! at its reboot, the controller where it decides membership), so nothing happens between two looks of a test that
//! the record misses. Times are wall-clock ([`SystemTime`]), to compare with the timestamps of Jobs and statuses.
//!
//! - A **reboot** is the daemon's reboot for a change of content: the node rebooted from one rendered config into
//!   another whose spec differs (`pkg/daemon/update.go` `updateOnClusterBuild`/`update` → `finalizeAndReboot`,
//!   release-4.21). A rebootless update (equal content under another name, [`crate::daemon::is_rebootless`]) is
//!   none, nor is an update that fails before it writes anything (the fail-update fault, [`crate::faults`]).
//! - A **multi-pool node** is a node the controller found matched by two or more custom pools
//!   (`pkg/helpers/helpers.go` `GetPoolsForNode`: "node %s belongs to %d custom roles, cannot proceed with this
//!   Node", release-4.21), one entry per stretch of time in which it matched the same set of pools.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use crate::membership::MultipleCustomPools;

/// One reboot of a node by the daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reboot {
    /// The node.
    pub node: String,
    /// When the reboot started (the node went down).
    pub at: SystemTime,
    /// The rendered config the node ran before (its `currentConfig`; empty when it had none).
    pub from: String,
    /// The rendered config it rebooted into (its `desiredConfig`).
    pub to: String,
    /// The pool that managed the node when its update started, if any.
    pub pool: Option<String>,
}

/// A stretch of time in which a node matched two or more custom pools.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiPoolNode {
    /// The node.
    pub node: String,
    /// The custom pools it matched, in name order.
    pub pools: Vec<String>,
    /// When the controller first found it so.
    pub first_seen: SystemTime,
    /// When the controller last found it so.
    pub last_seen: SystemTime,
}

/// The record; shared between the simulator's tasks and its [`crate::SimulatorHandle`].
#[derive(Clone, Debug, Default)]
pub struct Record {
    reboots: BTreeMap<String, Vec<Reboot>>,
    multi_pool: Vec<MultiPoolNode>,
    /// Node → index in `multi_pool` of the stretch still going.
    open: BTreeMap<String, usize>,
}

/// The record as the simulator's tasks hold it.
pub type SharedRecord = Arc<Mutex<Record>>;

impl Record {
    /// Notes a reboot.
    pub fn reboot(&mut self, reboot: Reboot) {
        self.reboots.entry(reboot.node.clone()).or_default().push(reboot);
    }

    /// Notes the outcome of one membership decision over the whole cluster at `now`: the nodes in `conflicts`
    /// match several custom pools; every other node matches at most one (its stretch, if any, ends).
    pub fn membership<'a>(&mut self, now: SystemTime, conflicts: impl IntoIterator<Item = &'a MultipleCustomPools>) {
        let mut still = BTreeMap::new();
        for conflict in conflicts {
            let index = match self.open.get(&conflict.node) {
                Some(&index) if self.multi_pool[index].pools == conflict.pools => {
                    self.multi_pool[index].last_seen = now;
                    index
                }
                _ => {
                    self.multi_pool.push(MultiPoolNode {
                        node: conflict.node.clone(),
                        pools: conflict.pools.clone(),
                        first_seen: now,
                        last_seen: now,
                    });
                    self.multi_pool.len() - 1
                }
            };
            still.insert(conflict.node.clone(), index);
        }
        self.open = still;
    }

    /// Every reboot so far, by node, each node's in order.
    pub fn reboots(&self) -> BTreeMap<String, Vec<Reboot>> {
        self.reboots.clone()
    }

    /// Every stretch so far in which a node matched two or more custom pools, in the order they began.
    pub fn multi_pool_nodes(&self) -> Vec<MultiPoolNode> {
        self.multi_pool.clone()
    }
}

/// Runs `f` on the shared record (a poisoned lock is taken over: the record is only ever appended to).
pub fn with<T>(record: &SharedRecord, f: impl FnOnce(&mut Record) -> T) -> T {
    let mut guard = record.lock().unwrap_or_else(|e| e.into_inner());
    f(&mut guard)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn conflict(node: &str, pools: &[&str]) -> MultipleCustomPools {
        MultipleCustomPools { node: node.into(), pools: pools.iter().map(|p| p.to_string()).collect() }
    }

    #[test]
    fn reboots_are_kept_per_node_in_order() {
        let t0 = SystemTime::UNIX_EPOCH;
        let mut record = Record::default();
        let reboot = |node: &str, secs, from: &str, to: &str| Reboot {
            node: node.into(),
            at: t0 + Duration::from_secs(secs),
            from: from.into(),
            to: to.into(),
            pool: Some("worker".into()),
        };
        record.reboot(reboot("w-0", 1, "r1", "r2"));
        record.reboot(reboot("w-1", 2, "r1", "r2"));
        record.reboot(reboot("w-0", 3, "r2", "r3"));
        let reboots = record.reboots();
        assert_eq!(reboots.len(), 2);
        assert_eq!(reboots["w-0"].iter().map(|r| r.to.as_str()).collect::<Vec<_>>(), ["r2", "r3"]);
        assert_eq!(reboots["w-1"].len(), 1);
    }

    #[test]
    fn a_node_in_two_custom_pools_is_one_entry_per_stretch() {
        let at = |secs| SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        let mut record = Record::default();
        record.membership(at(1), &[]);
        assert!(record.multi_pool_nodes().is_empty());
        record.membership(at(2), &[conflict("w-1", &["a", "b"])]);
        record.membership(at(3), &[conflict("w-1", &["a", "b"]), conflict("w-2", &["a", "b"])]);
        record.membership(at(4), &[conflict("w-1", &["a", "b", "c"])]);
        record.membership(at(5), &[]);
        record.membership(at(6), &[conflict("w-1", &["a", "b"])]);
        let seen: Vec<(&str, usize, SystemTime, SystemTime)> =
            (record.multi_pool.iter()).map(|m| (m.node.as_str(), m.pools.len(), m.first_seen, m.last_seen)).collect();
        assert_eq!(
            seen,
            [("w-1", 2, at(2), at(3)), ("w-2", 2, at(3), at(3)), ("w-1", 3, at(4), at(4)), ("w-1", 2, at(6), at(6)),]
        );
    }
}
