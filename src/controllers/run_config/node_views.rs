//! The planner's view of every node, kept between reconciles: a node's view is worked out again only when the node,
//! its MachineConfigNode, the run config's version source or the rendered configs' versions changed. While 2,000
//! nodes are gated, a reconcile then copies pointers instead of every node's labels and annotations.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::Node;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::ResourceExt;

use super::snapshot::NodeView;
use crate::api::VersionSource;
use crate::guard::Guarded;
use crate::openshift::MachineConfigNode;

/// The node views of earlier snapshots; cloning shares them. Every run config reads the same nodes, so one memo
/// serves all, per version source.
#[derive(Clone, Default)]
pub struct NodeViews {
    memo: Arc<Mutex<HashMap<VersionSource, Memo>>>,
}

/// The views of one version source, valid for the rendered versions they were worked out with.
#[derive(Default)]
struct Memo {
    rendered: BTreeMap<String, String>,
    views: HashMap<String, Kept>,
    /// Bumped at every use; a view not used in the last pass is of a node that is gone.
    pass: u64,
}

/// One node's view, with what it was worked out from.
struct Kept {
    node_version: Option<String>,
    progress_version: Option<String>,
    view: Arc<NodeView>,
    pass: u64,
}

impl NodeViews {
    /// Every decoded node of `nodes`, by name, as `view` sees it (with its MachineConfigNode from `progress`, when
    /// those can be read), reusing the view of a node none of whose inputs changed since the last call.
    pub fn of(
        &self,
        nodes: &Store<Guarded<Node>>,
        progress: Option<&Store<Guarded<MachineConfigNode>>>,
        source: VersionSource,
        rendered: BTreeMap<String, String>,
        view: impl Fn(&Node, Option<&MachineConfigNode>, &BTreeMap<String, String>) -> NodeView,
    ) -> BTreeMap<String, Arc<NodeView>> {
        // A poisoned memo (a panic elsewhere while it was held) is only a cache: start it again.
        let mut memos = self.memo.lock().unwrap_or_else(|poisoned| {
            let mut memos = poisoned.into_inner();
            memos.clear();
            memos
        });
        let memo = memos.entry(source).or_default();
        if memo.rendered != rendered {
            memo.views.clear();
            memo.rendered = rendered;
        }
        memo.pass += 1;
        let pass = memo.pass;
        let mut out = BTreeMap::new();
        for node in nodes.state() {
            let Some(node) = node.decoded() else { continue };
            let name = node.name_any();
            let mcn = progress.and_then(|store| store.get(&ObjectRef::new(&name)));
            let mcn = mcn.as_deref().and_then(Guarded::decoded);
            // A node without a resourceVersion (never so from the API server) is worked out every time.
            let node_version = node.resource_version();
            let progress_version = mcn.and_then(|m| m.resource_version());
            let shared = match memo.views.get_mut(&name) {
                Some(kept)
                    if node_version.is_some()
                        && kept.node_version == node_version
                        && kept.progress_version == progress_version =>
                {
                    kept.pass = pass;
                    Arc::clone(&kept.view)
                }
                _ => {
                    let shared = Arc::new(view(node, mcn, &memo.rendered));
                    let kept = Kept { node_version, progress_version, view: Arc::clone(&shared), pass };
                    memo.views.insert(name.clone(), kept);
                    shared
                }
            };
            out.insert(name, shared);
        }
        memo.views.retain(|_, kept| kept.pass == pass);
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
    fn a_view_is_worked_out_again_only_when_its_node_or_the_rendered_versions_change() {
        let (nodes, mut writer) = reflector::store::<Guarded<Node>>();
        for n in [node("a", Some("1"), "r1"), node("b", Some("1"), "r1"), node("c", None, "r1")] {
            writer.apply_watcher_event(&watcher::Event::Apply(n));
        }
        let memo = NodeViews::default();
        let rendered = BTreeMap::from([("r1".to_string(), "4.16.4".to_string())]);
        let first = memo.of(&nodes, None, VersionSource::Auto, rendered.clone(), view);
        let again = memo.of(&nodes, None, VersionSource::Auto, rendered.clone(), view);
        assert!(Arc::ptr_eq(&first["a"], &again["a"]), "an unchanged node shares its view");
        assert!(!Arc::ptr_eq(&first["c"], &again["c"]), "a node without a resourceVersion is never reused");

        writer.apply_watcher_event(&watcher::Event::Apply(node("b", Some("2"), "r2")));
        writer.apply_watcher_event(&watcher::Event::Delete(node("a", Some("1"), "r1")));
        let changed = memo.of(&nodes, None, VersionSource::Auto, rendered.clone(), view);
        assert_eq!(changed["b"].current_config.as_deref(), Some("r2"), "a changed node is read again");
        assert!(!changed.contains_key("a"), "a deleted node is gone");

        let newer = BTreeMap::from([("r2".to_string(), "4.16.5".to_string())]);
        let released = memo.of(&nodes, None, VersionSource::Auto, newer, view);
        assert_eq!(released["b"].version.as_deref(), Some("4.16.5"), "new rendered versions are read");
    }
}
