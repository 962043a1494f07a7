//! Every node's view, by name, with a record of which names changed: a planner that kept what it worked out from
//! an earlier state of the map ([`NodeMap::stamp`]) asks which nodes changed since ([`NodeMap::changed_since`]) and
//! reads only those, not every node again.
//!
//! Each state of a map has a stamp drawn from one counter for the whole process, so no two states of any maps share
//! one: a stamp found in a map's record is a state that map went through, and the names after it are everything
//! that changed since. A copy carries the record, so a state before the copy is a state of both.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// How many changes a map records; a planner that kept an older state reads every node again.
const RECORDED: usize = 4096;

/// The stamps of every map's states.
static STAMPS: AtomicU64 = AtomicU64::new(1);

fn next_stamp() -> u64 {
    STAMPS.fetch_add(1, Ordering::Relaxed)
}

/// Every node's view `V`, by name (read it as a `BTreeMap`), and the changes that led to it.
#[derive(Clone, Debug)]
pub struct NodeMap<V> {
    map: BTreeMap<String, Arc<V>>,
    /// The stamp of the map as it is.
    stamp: u64,
    /// The oldest state the record starts from: the map as it was made, or the last state it no longer records.
    origin: u64,
    /// The changes since `origin`, oldest first: the stamp of the state each made, and the node's name (None: any
    /// node may have changed).
    record: VecDeque<(u64, Option<String>)>,
}

impl<V> Default for NodeMap<V> {
    fn default() -> Self {
        Self::from(BTreeMap::new())
    }
}

impl<V> From<BTreeMap<String, Arc<V>>> for NodeMap<V> {
    fn from(map: BTreeMap<String, Arc<V>>) -> Self {
        let stamp = next_stamp();
        Self { map, stamp, origin: stamp, record: VecDeque::new() }
    }
}

impl<V> FromIterator<(String, Arc<V>)> for NodeMap<V> {
    fn from_iter<I: IntoIterator<Item = (String, Arc<V>)>>(iter: I) -> Self {
        Self::from(iter.into_iter().collect::<BTreeMap<_, _>>())
    }
}

impl<V> Deref for NodeMap<V> {
    type Target = BTreeMap<String, Arc<V>>;

    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl<V> NodeMap<V> {
    /// The stamp of the map as it is.
    pub fn stamp(&self) -> u64 {
        self.stamp
    }

    /// The names of the nodes that changed since the state `stamp` of this map (added, removed or replaced; a name
    /// may come more than once); None when this map never was in that state, no longer records it, or any node may
    /// have changed since.
    pub fn changed_since(&self, stamp: u64) -> Option<Vec<&str>> {
        if stamp == self.stamp {
            return Some(Vec::new());
        }
        let start = match stamp == self.origin {
            true => 0,
            false => self.record.binary_search_by_key(&stamp, |(s, _)| *s).ok()? + 1,
        };
        self.record.range(start..).map(|(_, name)| name.as_deref()).collect()
    }

    /// Sets the view of node `name`.
    pub fn insert(&mut self, name: String, view: Arc<V>) -> Option<Arc<V>> {
        self.changed(Some(&name));
        self.map.insert(name, view)
    }

    /// Removes node `name`.
    pub fn remove(&mut self, name: &str) -> Option<Arc<V>> {
        self.changed(Some(name));
        self.map.remove(name)
    }

    /// The view of node `name`, to change (`Arc::make_mut`).
    pub fn get_mut(&mut self, name: &str) -> Option<&mut Arc<V>> {
        self.changed(Some(name));
        self.map.get_mut(name)
    }

    /// Every view, to change.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut Arc<V>> {
        self.changed(None);
        self.map.values_mut()
    }

    /// Records a change to node `name` (None: to any node).
    fn changed(&mut self, name: Option<&str>) {
        self.stamp = next_stamp();
        if self.record.len() == RECORDED {
            if let Some((oldest, _)) = self.record.pop_front() {
                self.origin = oldest;
            }
        }
        self.record.push_back((self.stamp, name.map(str::to_string)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::controllers::run_config::snapshot::{NodeView, Nodes};

    fn view(name: &str) -> Arc<NodeView> {
        Arc::new(NodeView { name: name.to_string(), ..Default::default() })
    }

    #[test]
    fn a_map_names_what_changed_since_each_of_its_states_and_only_its_own() {
        let mut nodes: Nodes = ["a", "b"].into_iter().map(|n| (n.to_string(), view(n))).collect();
        let made = nodes.stamp();
        assert_eq!(nodes.changed_since(made), Some(vec![]));
        nodes.insert("c".into(), view("c"));
        let after_c = nodes.stamp();
        nodes.remove("a");
        assert_eq!(nodes.changed_since(made), Some(vec!["c", "a"]));
        assert_eq!(nodes.changed_since(after_c), Some(vec!["a"]));
        // A copy shares the states before it, not those after.
        let mut copy = nodes.clone();
        copy.get_mut("b");
        nodes.insert("d".into(), view("d"));
        assert_eq!(copy.changed_since(after_c), Some(vec!["a", "b"]));
        assert_eq!(copy.changed_since(nodes.stamp()), None);
        assert_eq!(nodes.changed_since(copy.stamp()), None);
        // Another map never was in this one's states; a change to every view names none.
        let other: Nodes = BTreeMap::new().into();
        assert_eq!(other.changed_since(made), None);
        let before = copy.stamp();
        copy.values_mut().count();
        assert_eq!(copy.changed_since(before), None);
    }

    #[test]
    fn a_state_older_than_the_record_is_no_longer_known() {
        let mut nodes = Nodes::default();
        let made = nodes.stamp();
        nodes.insert("a".into(), view("a"));
        let first = nodes.stamp();
        for _ in 0..RECORDED {
            nodes.insert("b".into(), view("b"));
        }
        assert_eq!(nodes.changed_since(made), None);
        assert_eq!(nodes.changed_since(first).map(|c| c.len()), Some(RECORDED));
    }
}
