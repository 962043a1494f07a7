//! The planner's views of the nodes and of numo's Jobs, kept between reconciles: a view is worked out again only when
//! its object changed (its resourceVersion), or what else it was read with. While 2,000 nodes are gated, a snapshot
//! then shares the views of the earlier one instead of copying every node's labels and every Job's names again; fed
//! by the node watches, it reads only the nodes they said changed, and shares the whole map when none did.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::Node;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::{Resource, ResourceExt};

use super::snapshot::{JobView, NodeView, Nodes};
use crate::api::VersionSource;
use crate::cached_job::CachedJob;
use crate::guard::Guarded;
use crate::openshift::MachineConfigNode;

/// Views by key, each with the versions it was worked out from. One pass ([`Memo::pass`]) reads every object once;
/// the views of objects a pass did not read (deleted ones) are dropped at its end.
struct Memo<V> {
    views: HashMap<String, Kept<V>>,
    pass: u64,
}

struct Kept<V> {
    versions: (Option<String>, Option<String>),
    view: Option<Arc<V>>,
    pass: u64,
}

impl<V> Default for Memo<V> {
    fn default() -> Self {
        Self { views: HashMap::new(), pass: 0 }
    }
}

impl<V> Memo<V> {
    /// Starts a pass.
    fn pass(&mut self) {
        self.pass += 1;
    }

    /// The view of `key` (None: the object has none, e.g. a Job of another run config): the kept one when it was
    /// worked out from the same `version` (the object's resourceVersion; an object without one is worked out every
    /// time) and `other` (what else it was read with), else `make()`'s, kept.
    fn view(
        &mut self,
        key: &str,
        version: Option<&str>,
        other: Option<&str>,
        make: impl FnOnce() -> Option<V>,
    ) -> Option<Arc<V>> {
        let pass = self.pass;
        match self.views.get_mut(key) {
            Some(kept)
                if version.is_some()
                    && kept.versions.0.as_deref() == version
                    && kept.versions.1.as_deref() == other =>
            {
                kept.pass = pass;
                kept.view.clone()
            }
            _ => {
                let view = make().map(Arc::new);
                let versions = (version.map(String::from), other.map(String::from));
                self.views.insert(key.to_string(), Kept { versions, view: view.clone(), pass });
                view
            }
        }
    }

    /// Ends a pass: drops the views of the objects it did not read.
    fn sweep(&mut self) {
        let pass = self.pass;
        self.views.retain(|_, kept| kept.pass == pass);
    }
}

/// Locks a memo; a poisoned one (a panic elsewhere while it was held) is only a cache, so it starts again.
fn lock<T: Default>(memo: &Mutex<T>) -> MutexGuard<'_, T> {
    memo.lock().unwrap_or_else(|poisoned| {
        let mut memo = poisoned.into_inner();
        *memo = T::default();
        memo
    })
}

/// The node views of earlier snapshots; cloning shares them. Every run config reads the same nodes, so one memo
/// serves all, per version source.
///
/// Fed by the node and MachineConfigNode watches ([`NodeViews::fed`], [`NodeViews::saw`]), it knows which nodes
/// changed since the last snapshot and reads only those: a snapshot then costs what changed, not the cluster's
/// size, and shares the map of the one before it when nothing did. Not fed (`numo plan`, tests), it reads every node
/// each time.
#[derive(Clone, Default)]
pub struct NodeViews {
    memo: Arc<Mutex<Memos>>,
}

#[derive(Default)]
struct Memos {
    /// Whether the watches tell every change ([`NodeViews::saw`]).
    fed: bool,
    sources: HashMap<VersionSource, NodeMemo>,
}

/// The node views of one version source, valid for the rendered versions, the pools' selectors (their fingerprint)
/// and whether MachineConfigNodes could be read, as they were worked out with.
#[derive(Default)]
struct NodeMemo {
    inputs: (BTreeMap<String, String>, u64, bool),
    views: Memo<NodeView>,
    /// The map the last snapshot got.
    nodes: Arc<Nodes>,
    /// The nodes changed since `nodes` was made; None: every node is to be read (nothing made yet, a relist, other
    /// inputs, or not fed).
    changed: Option<BTreeSet<String>>,
    /// The nodes of the store that cannot be decoded (none of them has a view), as of `nodes`.
    undecodable: BTreeSet<String>,
}

/// A watch event as the memo takes it: a node (or its MachineConfigNode) changed, or the watch listed anew.
pub enum Seen<'a> {
    /// The object of this name was applied or deleted.
    Changed(&'a str),
    /// The watch (re)lists: any node may have changed.
    Relisted,
}

impl<'a, K: Resource> From<&'a watcher::Event<K>> for Seen<'a> {
    fn from(event: &'a watcher::Event<K>) -> Self {
        match event {
            watcher::Event::Apply(object) | watcher::Event::Delete(object) => {
                object.meta().name.as_deref().map_or(Seen::Relisted, Seen::Changed)
            }
            watcher::Event::Init | watcher::Event::InitApply(_) | watcher::Event::InitDone => Seen::Relisted,
        }
    }
}

impl NodeViews {
    /// A memo the node and MachineConfigNode watches feed with every event, through [`NodeViews::saw`].
    pub fn fed() -> Self {
        let views = Self::default();
        lock(&views.memo).fed = true;
        views
    }

    /// Takes in a node or MachineConfigNode watch event, after the cache took it.
    pub fn saw(&self, seen: Seen<'_>) {
        let mut memos = lock(&self.memo);
        for memo in memos.sources.values_mut() {
            match (&seen, &mut memo.changed) {
                (Seen::Changed(name), Some(changed)) => {
                    changed.insert(name.to_string());
                }
                (Seen::Relisted, changed) => *changed = None,
                (Seen::Changed(_), None) => {}
            }
        }
    }

    /// Every decoded node of `nodes`, by name, as `view` sees it (with its MachineConfigNode from `progress`, when
    /// those can be read), reusing the view of a node none of whose inputs changed since the last call: the node,
    /// its MachineConfigNode, the `rendered` versions and the fingerprint of the `pools`' selectors.
    pub fn of(
        &self,
        nodes: &Store<Guarded<Node>>,
        progress: Option<&Store<Guarded<MachineConfigNode>>>,
        source: VersionSource,
        (rendered, pools): (BTreeMap<String, String>, u64),
        view: impl Fn(&Node, Option<&MachineConfigNode>, &BTreeMap<String, String>) -> NodeView,
    ) -> Arc<Nodes> {
        let mut memos = lock(&self.memo);
        let fed = memos.fed;
        let memo = memos.sources.entry(source).or_default();
        let inputs = (rendered, pools, progress.is_some());
        if memo.inputs != inputs {
            *memo = NodeMemo { inputs, ..Default::default() };
        }
        let rendered = &memo.inputs.0;
        let read = |views: &mut Memo<NodeView>, node: &Node| {
            let name = node.meta().name.as_deref().unwrap_or_default();
            let mcn = progress.and_then(|store| store.get(&ObjectRef::new(name)));
            let mcn = mcn.as_deref().and_then(Guarded::decoded);
            let other = mcn.and_then(|m| m.meta().resource_version.as_deref());
            let version = node.meta().resource_version.as_deref();
            views.view(name, version, other, || Some(view(node, mcn, rendered)))
        };
        match memo.changed.take().filter(|_| fed) {
            Some(changed) => {
                if !changed.is_empty() {
                    let map = Arc::make_mut(&mut memo.nodes);
                    for name in changed {
                        let node = nodes.get(&ObjectRef::new(&name));
                        match node.as_deref().is_some_and(|n| n.decoded().is_none()) {
                            true => memo.undecodable.insert(name.clone()),
                            false => memo.undecodable.remove(&name),
                        };
                        match node.as_deref().and_then(Guarded::decoded).and_then(|n| read(&mut memo.views, n)) {
                            Some(shared) => map.insert(name, shared),
                            None => {
                                memo.views.views.remove(&name);
                                map.remove(&name)
                            }
                        };
                    }
                }
            }
            None => {
                memo.views.pass();
                memo.undecodable.clear();
                let mut out = BTreeMap::new();
                for node in nodes.state() {
                    let Some(node) = node.decoded() else {
                        memo.undecodable.insert(node.name_any());
                        continue;
                    };
                    if let Some(shared) = read(&mut memo.views, node) {
                        out.insert(node.name_any(), shared);
                    }
                }
                memo.views.sweep();
                memo.nodes = Arc::new(Nodes::from(out));
            }
        }
        memo.changed = fed.then(BTreeSet::new);
        Arc::clone(&memo.nodes)
    }

    /// The nodes of the store that cannot be decoded, as the last [`NodeViews::of`] for `source` found them (found
    /// with the views, so that a snapshot need not go through every node to learn that none is malformed).
    pub fn undecodable(&self, source: VersionSource) -> BTreeSet<String> {
        lock(&self.memo).sources.get(&source).map(|memo| memo.undecodable.clone()).unwrap_or_default()
    }
}

/// The views of numo's Jobs in earlier snapshots, each with the values of its run-config labels; cloning shares
/// them. One memo serves every run config: each reads the views of its own Jobs.
#[derive(Clone, Default)]
pub struct JobViews {
    memo: Arc<Mutex<Memo<OwnedJob>>>,
}

/// A Job's view with the values of its run-config labels ([`crate::cached_job::run_config_labels`]).
type OwnedJob = ((String, String), Arc<JobView>);

impl JobViews {
    /// The views of the Jobs of `jobs` whose run-config labels are `own`, as `view` gives them with their labels,
    /// reusing the view of a Job that did not change since the last call.
    pub fn of(
        &self,
        jobs: &Store<Guarded<CachedJob>>,
        own: &(String, String),
        view: impl Fn(&Guarded<CachedJob>) -> Option<((String, String), JobView)>,
    ) -> Vec<Arc<JobView>> {
        let mut memo = lock(&self.memo);
        memo.pass();
        let mut out = Vec::new();
        for job in jobs.state() {
            let meta = job.meta();
            // Keyed by uid; a Job without one (never so from the API server) is worked out every time.
            let key = meta.uid.as_deref().unwrap_or_default();
            let version = meta.resource_version.as_deref().filter(|_| !key.is_empty());
            let make = || view(&job).map(|(owner, view)| (owner, Arc::new(view)));
            if let Some(kept) = memo.view(key, version, None, make) {
                if kept.0 == *own {
                    out.push(Arc::clone(&kept.1));
                }
            }
        }
        memo.sweep();
        out
    }
}

#[cfg(test)]
mod tests {
    use kube::runtime::reflector;
    use kube::runtime::watcher;
    use serde_json::json;

    use super::*;

    fn node(name: &str, version: Option<&str>, config: &str) -> Guarded<Node> {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "resourceVersion": version,
                "annotations": {"machineconfiguration.openshift.io/currentConfig": config}}}))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    /// The view the memo works out: the node's config and the release the rendered versions give it.
    fn view(node: &Node, _: Option<&MachineConfigNode>, rendered: &BTreeMap<String, String>) -> NodeView {
        let config = node.annotations().get(crate::openshift::CURRENT_CONFIG).cloned();
        NodeView {
            name: node.name_any(),
            version: config.as_ref().and_then(|c| rendered.get(c)).cloned(),
            current_config: config,
            ..Default::default()
        }
    }

    #[test]
    fn a_node_view_is_worked_out_again_only_when_its_node_the_rendered_versions_or_the_pools_change() {
        let (nodes, mut writer) = reflector::store::<Guarded<Node>>();
        for n in [node("a", Some("1"), "r1"), node("b", Some("1"), "r1"), node("c", None, "r1")] {
            writer.apply_watcher_event(&watcher::Event::Apply(n));
        }
        let memo = NodeViews::default();
        let rendered = BTreeMap::from([("r1".to_string(), "4.16.4".to_string())]);
        let first = memo.of(&nodes, None, VersionSource::Auto, (rendered.clone(), 0), view);
        let again = memo.of(&nodes, None, VersionSource::Auto, (rendered.clone(), 0), view);
        assert!(Arc::ptr_eq(&first["a"], &again["a"]), "an unchanged node shares its view");
        assert!(!Arc::ptr_eq(&first["c"], &again["c"]), "a node without a resourceVersion is never reused");

        writer.apply_watcher_event(&watcher::Event::Apply(node("b", Some("2"), "r2")));
        writer.apply_watcher_event(&watcher::Event::Delete(node("a", Some("1"), "r1")));
        let changed = memo.of(&nodes, None, VersionSource::Auto, (rendered.clone(), 0), view);
        assert_eq!(changed["b"].current_config.as_deref(), Some("r2"), "a changed node is read again");
        assert!(!changed.contains_key("a"), "a deleted node is gone");

        let newer = BTreeMap::from([("r2".to_string(), "4.16.5".to_string())]);
        let released = memo.of(&nodes, None, VersionSource::Auto, (newer.clone(), 0), view);
        assert_eq!(released["b"].version.as_deref(), Some("4.16.5"), "new rendered versions are read");
        let kept = memo.of(&nodes, None, VersionSource::Auto, (newer.clone(), 0), view);
        assert!(Arc::ptr_eq(&released["b"], &kept["b"]), "the same inputs share the view");
        let steered = memo.of(&nodes, None, VersionSource::Auto, (newer, 1), view);
        assert!(!Arc::ptr_eq(&kept["b"], &steered["b"]), "other pool selectors work every view out again");
    }

    #[test]
    fn fed_by_the_watches_a_snapshot_reads_only_the_nodes_they_say_changed() {
        let (nodes, mut writer) = reflector::store::<Guarded<Node>>();
        let memo = NodeViews::fed();
        let mut apply = |event: watcher::Event<Guarded<Node>>| {
            writer.apply_watcher_event(&event);
            memo.saw((&event).into());
        };
        for n in [node("a", Some("1"), "r1"), node("b", Some("1"), "r1")] {
            apply(watcher::Event::Apply(n));
        }
        let rendered = BTreeMap::from([("r1".to_string(), "4.16.4".to_string())]);
        let of = |memo: &NodeViews| memo.of(&nodes, None, VersionSource::Auto, (rendered.clone(), 0), view);
        let first = of(&memo);
        assert_eq!(first.keys().collect::<Vec<_>>(), ["a", "b"], "the first snapshot reads every node");
        assert!(Arc::ptr_eq(&first, &of(&memo)), "nothing changed: the same map, not a copy of it");

        apply(watcher::Event::Apply(node("b", Some("2"), "r2")));
        apply(watcher::Event::Apply(node("c", Some("1"), "r1")));
        apply(watcher::Event::Delete(node("a", Some("1"), "r1")));
        let changed = of(&memo);
        assert_eq!(changed.keys().collect::<Vec<_>>(), ["b", "c"], "a new node is in, a deleted one out");
        assert_eq!(changed["b"].current_config.as_deref(), Some("r2"), "a changed node is read again");
        assert_eq!(first["b"].current_config.as_deref(), Some("r1"), "an earlier snapshot keeps what it read");

        // A watch that lists anew may have missed anything: every node is read.
        writer.apply_watcher_event(&watcher::Event::Apply(node("c", Some("3"), "r2")));
        assert_eq!(of(&memo)["c"].current_config.as_deref(), Some("r1"), "what the watch did not tell is not read");
        memo.saw(Seen::Relisted);
        assert_eq!(of(&memo)["c"].current_config.as_deref(), Some("r2"), "a relist reads every node");
    }

    #[test]
    fn fed_by_the_watches_the_memo_knows_the_nodes_that_cannot_be_decoded() {
        let (nodes, mut writer) = reflector::store::<Guarded<Node>>();
        let memo = NodeViews::fed();
        let mut apply = |event: watcher::Event<Guarded<Node>>| {
            writer.apply_watcher_event(&event);
            memo.saw((&event).into());
        };
        let rendered = BTreeMap::from([("r1".to_string(), "4.16.4".to_string())]);
        let of = |memo: &NodeViews| memo.of(&nodes, None, VersionSource::Auto, (rendered.clone(), 0), view);
        apply(watcher::Event::Apply(node("a", Some("1"), "r1")));
        assert!(of(&memo).contains_key("a") && memo.undecodable(VersionSource::Auto).is_empty());

        // A node that turns malformed has no view, and is named among the nodes that cannot be decoded, until it
        // is fixed or gone.
        let malformed: Guarded<Node> = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "b", "resourceVersion": "3"}, "status": {"conditions": "not a list"}}))
        .unwrap_or_else(|e| panic!("{e}"));
        apply(watcher::Event::Apply(malformed.clone()));
        assert!(!of(&memo).contains_key("b"), "a malformed node has no view");
        assert_eq!(memo.undecodable(VersionSource::Auto), BTreeSet::from(["b".to_string()]));
        apply(watcher::Event::Apply(node("b", Some("4"), "r2")));
        assert!(of(&memo).contains_key("b") && memo.undecodable(VersionSource::Auto).is_empty(), "fixed");
        apply(watcher::Event::Apply(malformed.clone()));
        apply(watcher::Event::Delete(malformed));
        assert!(!of(&memo).contains_key("b") && memo.undecodable(VersionSource::Auto).is_empty(), "gone");
        apply(watcher::Event::Apply(
            serde_json::from_value(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "d"}, "spec": {"taints": 1}}))
            .unwrap_or_else(|e| panic!("{e}")),
        ));
        memo.saw(Seen::Relisted);
        of(&memo);
        assert_eq!(memo.undecodable(VersionSource::Auto), BTreeSet::from(["d".to_string()]), "found by a relist");
    }

    fn job(name: &str, version: &str) -> Guarded<CachedJob> {
        serde_json::from_value(json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name, "namespace": "ops", "uid": format!("uid-{name}"), "resourceVersion": version}}))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    fn owner(name: &str) -> (String, String) {
        ("ops".to_string(), name.to_string())
    }

    /// The view of a Job of run config `ops/example` (any but `other`'s), its name carrying its resourceVersion.
    fn job_view(job: &Guarded<CachedJob>) -> Option<((String, String), JobView)> {
        let owner = owner(if job.name_any() == "other" { "another" } else { "example" });
        let view = JobView {
            name: format!("{}@{}", job.name_any(), job.resource_version().unwrap_or_default()),
            namespace: "ops".into(),
            node: String::new(),
            rule: String::new(),
            phase: crate::jobs::JobPhase::Gate,
            attempt: 1,
            target_version: String::new(),
            result: crate::api::JobResult::Running,
            message: None,
            deleting: false,
            holds_result: true,
            uid: String::new(),
            creator: String::new(),
        };
        Some((owner, view))
    }

    #[test]
    fn a_job_view_is_worked_out_again_only_when_its_job_changes() {
        let (jobs, mut writer) = reflector::store::<Guarded<CachedJob>>();
        for j in [job("a", "1"), job("b", "1"), job("other", "1")] {
            writer.apply_watcher_event(&watcher::Event::Apply(j));
        }
        let memo = JobViews::default();
        let names = |views: &[Arc<JobView>]| {
            let mut names: Vec<String> = views.iter().map(|v| v.name.clone()).collect();
            names.sort();
            names
        };
        let first = memo.of(&jobs, &owner("example"), job_view);
        assert_eq!(names(&first), ["a@1", "b@1"], "only the run config's own Jobs");
        let theirs = memo.of(&jobs, &owner("another"), job_view);
        assert_eq!(names(&theirs), ["other@1"], "another run config reads its own from the same memo");
        writer.apply_watcher_event(&watcher::Event::Apply(job("b", "2")));
        writer.apply_watcher_event(&watcher::Event::Delete(job("a", "1")));
        let again = memo.of(&jobs, &owner("example"), job_view);
        assert_eq!(names(&again), ["b@2"], "a changed Job is read again, a deleted one is gone");
        let same = memo.of(&jobs, &owner("example"), job_view);
        assert!(Arc::ptr_eq(&again[0], &same[0]), "an unchanged Job shares its view");
    }
}
