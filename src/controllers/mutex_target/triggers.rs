//! Deciding which watch events should re-gather the targets' node lists: only a change of what a fingerprint
//! covers (a node's labels, a pool's effective node selector), a deletion, or a relist that found something
//! different. Node heartbeats and pool status updates pass by without a reconcile.

use std::collections::{BTreeMap, HashMap};
use std::hash::{DefaultHasher, Hash, Hasher};

use kube::runtime::watcher::Event;
use kube::{Resource, ResourceExt};

/// A hash of `value`, for fingerprints.
pub fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut hasher = DefaultHasher::new();
    value.hash(&mut hasher);
    hasher.finish()
}

/// A hash of the JSON form of `value` (for types that do not implement `Hash`, such as label selectors).
pub fn hash_json<T: serde::Serialize>(value: &T) -> u64 {
    hash_of(&serde_json::to_string(value).unwrap_or_default())
}

/// Remembers each object's fingerprint and says which events change one.
pub struct ChangeFilter<K, F> {
    fingerprint: F,
    seen: HashMap<String, u64>,
    relisted: Option<HashMap<String, u64>>,
    _kind: std::marker::PhantomData<fn(&K)>,
}

impl<K, F> ChangeFilter<K, F>
where
    K: Resource,
    F: Fn(&K) -> u64,
{
    /// A filter comparing objects by `fingerprint`.
    pub fn new(fingerprint: F) -> Self {
        Self { fingerprint, seen: HashMap::new(), relisted: None, _kind: std::marker::PhantomData }
    }

    /// Takes in one watch event; `true` when it changes something the fingerprint covers.
    pub fn observe(&mut self, event: &Event<K>) -> bool {
        match event {
            Event::Apply(obj) => {
                let fingerprint = (self.fingerprint)(obj);
                self.seen.insert(obj.name_any(), fingerprint) != Some(fingerprint)
            }
            Event::Delete(obj) => {
                self.seen.remove(&obj.name_any());
                true
            }
            Event::Init => {
                self.relisted = Some(HashMap::new());
                false
            }
            Event::InitApply(obj) => {
                let fingerprint = (self.fingerprint)(obj);
                self.relisted.get_or_insert_with(HashMap::new).insert(obj.name_any(), fingerprint);
                false
            }
            Event::InitDone => {
                let relisted = self.relisted.take().unwrap_or_default();
                let changed = relisted != self.seen;
                self.seen = relisted;
                changed
            }
        }
    }
}

/// The fingerprint of a label map.
pub fn labels_fingerprint(labels: &BTreeMap<String, String>) -> u64 {
    hash_of(labels)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Node;
    use kube::core::{ObjectMeta, PartialObjectMeta};

    fn node(name: &str, labels: &[(&str, &str)], resource_version: &str) -> PartialObjectMeta<Node> {
        PartialObjectMeta {
            types: None,
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()),
                resource_version: Some(resource_version.into()),
                ..Default::default()
            },
            _phantom: Default::default(),
        }
    }

    fn filter() -> ChangeFilter<PartialObjectMeta<Node>, impl Fn(&PartialObjectMeta<Node>) -> u64> {
        ChangeFilter::new(|n: &PartialObjectMeta<Node>| labels_fingerprint(n.labels()))
    }

    #[test]
    fn heartbeats_pass_and_label_changes_trigger() {
        let mut f = filter();
        assert!(f.observe(&Event::Apply(node("a", &[("w", "")], "1"))), "a new node");
        assert!(!f.observe(&Event::Apply(node("a", &[("w", "")], "2"))), "a heartbeat");
        assert!(f.observe(&Event::Apply(node("a", &[("w", ""), ("x", "")], "3"))), "a label added");
        assert!(f.observe(&Event::Delete(node("a", &[("w", ""), ("x", "")], "4"))), "a deletion");
    }

    #[test]
    fn a_relist_triggers_once_and_only_when_something_changed() {
        let mut f = filter();
        let relist = |f: &mut ChangeFilter<_, _>, nodes: Vec<PartialObjectMeta<Node>>| {
            let mut triggered = f.observe(&Event::Init);
            for n in nodes {
                triggered |= f.observe(&Event::InitApply(n));
            }
            (triggered, f.observe(&Event::InitDone))
        };
        assert_eq!(relist(&mut f, vec![node("a", &[("w", "")], "1"), node("b", &[], "1")]), (false, true));
        assert_eq!(relist(&mut f, vec![node("a", &[("w", "")], "5"), node("b", &[], "5")]), (false, false));
        assert_eq!(relist(&mut f, vec![node("a", &[("w", "")], "6")]), (false, true), "b went away meanwhile");
        assert!(!f.observe(&Event::Apply(node("a", &[("w", "")], "7"))));
    }
}
