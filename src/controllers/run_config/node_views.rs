//! The planner's views of the nodes and of numo's Jobs, kept between reconciles: a view is worked out again only when
//! its object changed (its resourceVersion), or what else it was read with. While 2,000 nodes are gated, a snapshot
//! then shares the views of the earlier one instead of copying every node's labels and every Job's names again.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::Node;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};

use super::snapshot::{JobView, NodeView};
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
#[derive(Clone, Default)]
pub struct NodeViews {
    memo: Arc<Mutex<HashMap<VersionSource, NodeMemo>>>,
}

/// The node views of one version source, valid for the rendered versions and the pools' selectors (their
/// fingerprint) they were worked out with.
#[derive(Default)]
struct NodeMemo {
    rendered: BTreeMap<String, String>,
    pools: u64,
    views: Memo<NodeView>,
}

impl NodeViews {
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
    ) -> BTreeMap<String, Arc<NodeView>> {
        let mut memos = lock(&self.memo);
        let memo = memos.entry(source).or_default();
        if memo.rendered != rendered || memo.pools != pools {
            memo.views = Memo::default();
            (memo.rendered, memo.pools) = (rendered, pools);
        }
        memo.views.pass();
        let mut out = BTreeMap::new();
        for node in nodes.state() {
            let Some(node) = node.decoded() else { continue };
            let name = node.name_any();
            let mcn = progress.and_then(|store| store.get(&ObjectRef::new(&name)));
            let mcn = mcn.as_deref().and_then(Guarded::decoded);
            let (version, other) = (node.resource_version(), mcn.and_then(|m| m.resource_version()));
            let rendered = &memo.rendered;
            let make = || Some(view(node, mcn, rendered));
            if let Some(shared) = memo.views.view(&name, version.as_deref(), other.as_deref(), make) {
                out.insert(name, shared);
            }
        }
        memo.views.sweep();
        out
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
