//! Which run configs a node event wakes. Every node event used to wake every run config, and each reconcile reads
//! every node: at 2,000 nodes the MCO's walk that moves restored nodes back into their pools (thousands of
//! config-annotation changes, none of which changes what numo does) cost numo a third of a core. A run config now
//! says, with each plan, what of the nodes its next plan reads ([`NodeReads`]); a node event wakes it only when that
//! changed. Deciding costs one node's labels, whatever the size of the cluster.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::Node;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};

use super::observe;
use super::plan::NodeReads;
use crate::api::MutexRunConfig;
use crate::guard::Guarded;
use crate::openshift::MachineConfig;

/// What each run config's next plan reads of the nodes, and what of each node it saw last.
#[derive(Clone, Default)]
pub struct NodeInterest(Arc<Mutex<HashMap<String, Interest>>>);

/// One run config's interest.
#[derive(Default)]
struct Interest {
    /// What its next plan reads (everything until it planned once).
    reads: NodeReads,
    /// Each node's membership and version, as last seen (a digest), to tell which events changed them.
    seen: HashMap<String, u64>,
}

impl NodeInterest {
    fn with<T>(&self, f: impl FnOnce(&mut HashMap<String, Interest>) -> T) -> T {
        f(&mut self.0.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Records what run config `key` (`namespace/name`) reads of the nodes from now on.
    pub fn planned(&self, key: &str, reads: NodeReads) {
        self.with(|all| all.entry(key.to_string()).or_default().reads = reads);
    }

    /// Forgets run config `key` (it is gone).
    pub fn forget(&self, key: &str) {
        self.with(|all| all.remove(key));
    }

    /// Whether this event of `node` can change what run config `key` plans; `version` is the node's release
    /// version as that run config reads it. A node that cannot be decoded, is new, is being deleted or is gone
    /// always wakes it.
    pub fn wakes(&self, key: &str, node: &Guarded<Node>, version: Option<&str>) -> bool {
        let name = node.meta().name.clone().unwrap_or_default();
        let gone = node.meta().deletion_timestamp.is_some();
        let digest = membership(node, version);
        self.with(|all| {
            let interest = all.entry(key.to_string()).or_default();
            let before = if gone { interest.seen.remove(&name) } else { interest.seen.insert(name, digest) };
            let changed = gone || node.0.is_err() || before != Some(digest);
            interest.reads == NodeReads::Everything || changed
        })
    }

    /// The run configs whose next plan this event of `node` can change; a run config numo cannot decode hears of
    /// every one. `configs`: the cache of MachineConfigs (a node's version may be its rendered config's).
    pub fn woken_by(
        &self,
        run_configs: &Store<Guarded<MutexRunConfig>>,
        configs: &Store<Guarded<PartialObjectMeta<MachineConfig>>>,
        node: &Guarded<Node>,
    ) -> Vec<ObjectRef<Guarded<MutexRunConfig>>> {
        run_configs
            .state()
            .iter()
            .filter(|guard| match &guard.0 {
                Ok(rc) => {
                    let key = format!("{}/{}", rc.namespace().unwrap_or_default(), rc.name_any());
                    let version = node.decoded().and_then(|n| {
                        observe::node_version(n, rc.spec.version_source, |c| observe::rendered_version(configs, c))
                    });
                    self.wakes(&key, node, version.as_deref())
                }
                Err(_) => true,
            })
            .map(|rc| ObjectRef::from_obj(rc.as_ref()))
            .collect()
    }
}

/// What [`NodeReads::MembershipAndVersion`] reads of a node, as a digest: which node it is, its labels, its version.
fn membership(node: &Guarded<Node>, version: Option<&str>) -> u64 {
    let mut hasher = DefaultHasher::new();
    node.meta().uid.hash(&mut hasher);
    node.meta().labels.hash(&mut hasher);
    version.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn node(labels: serde_json::Value, annotations: serde_json::Value, ready: &str) -> Guarded<Node> {
        serde_json::from_value(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "worker-0", "uid": "u0", "labels": labels, "annotations": annotations},
            "status": {"conditions": [{"type": "Ready", "status": ready}]}}))
        .expect("a node")
    }

    fn worker(config: &str, ready: &str) -> Guarded<Node> {
        node(
            json!({"node-role.kubernetes.io/worker": ""}),
            json!({"machineconfiguration.openshift.io/currentConfig": config}),
            ready,
        )
    }

    #[test]
    fn between_rollouts_only_membership_and_version_wake_a_run_config() {
        let interest = NodeInterest::default();
        interest.planned("ops/rc", NodeReads::MembershipAndVersion);
        assert!(interest.wakes("ops/rc", &worker("rendered-canary-1", "True"), Some("4.16.5")), "a node first seen");
        assert!(!interest.wakes("ops/rc", &worker("rendered-worker-1", "True"), Some("4.16.5")), "the MCO's walk");
        assert!(!interest.wakes("ops/rc", &worker("rendered-worker-1", "False"), Some("4.16.5")), "readiness");
        assert!(interest.wakes("ops/rc", &worker("rendered-worker-1", "False"), Some("4.16.4")), "its version");
        let relabelled = node(json!({"node-role.kubernetes.io/infra": ""}), json!({}), "True");
        assert!(interest.wakes("ops/rc", &relabelled, Some("4.16.4")), "another pool");
        let mut deleted = relabelled.clone();
        deleted.meta_mut().deletion_timestamp =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
        assert!(interest.wakes("ops/rc", &deleted, Some("4.16.4")), "a node deleted");
        assert!(interest.wakes("ops/rc", &relabelled, Some("4.16.4")), "the same name again is a new node");
    }

    #[test]
    fn during_a_rollout_every_change_wakes_it_and_each_run_config_has_its_own_view() {
        let interest = NodeInterest::default();
        interest.planned("ops/rc", NodeReads::Everything);
        interest.planned("ops/other", NodeReads::MembershipAndVersion);
        for config in ["rendered-canary-1", "rendered-worker-1"] {
            assert!(interest.wakes("ops/rc", &worker(config, "True"), Some("4.16.5")));
        }
        assert!(interest.wakes("ops/other", &worker("rendered-worker-1", "True"), Some("4.16.5")));
        assert!(!interest.wakes("ops/other", &worker("rendered-canary-1", "True"), Some("4.16.5")));
        assert!(interest.wakes("ops/unknown", &worker("rendered-canary-1", "True"), Some("4.16.5")), "not planned yet");
        interest.forget("ops/other");
        assert!(interest.wakes("ops/other", &worker("rendered-canary-1", "True"), Some("4.16.5")), "forgotten");
    }

    #[test]
    fn a_node_numo_cannot_decode_always_wakes_it() {
        let interest = NodeInterest::default();
        interest.planned("ops/rc", NodeReads::MembershipAndVersion);
        let broken: Guarded<Node> = serde_json::from_value(json!({"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "worker-0", "uid": "u0"}, "spec": {"unschedulable": "yes"}}))
        .expect("a guard decodes any object");
        assert!(broken.0.is_err());
        assert!(interest.wakes("ops/rc", &broken, None));
        assert!(interest.wakes("ops/rc", &broken, None));
    }
}
