//! The machine-config operator's MachineConfigNode sync (`pkg/operator/sync.go` `syncMachineConfigNodes`,
//! release-4.20; release-4.21 and release-4.22 alike), run on every sync before the pool sync, as the operator's
//! ServiceAccount:
//! - every node not `Pending` or `Provisioning` gets an object named after it, owned by the Node, with `spec.node`,
//!   `spec.pool` (its primary pool, `pkg/helpers/helpers.go` `GetPrimaryPoolNameForMCN`: [`NOT_YET_SET`] for a node
//!   in no pool, a Windows node) and `spec.configVersion.desired` = [`NOT_YET_SET`]
//!   (`lib/resourceapply/machineconfig.go` `ApplyMachineConfigNode`: a read, then a create, or an update putting back
//!   the node, the pool and the owner);
//! - an object still at [`NOT_YET_SET`] gets the node's `desiredConfig` (`upgrade_monitor.go`
//!   `GenerateAndApplyMachineConfigNodeSpec`, server-side apply, forced);
//! - the objects of nodes that are gone are deleted.
//!
//! [`plan`] decides from the caches, so a sync with nothing to do makes no request; [`apply`] reads each object
//! before it writes, as the operator does, since the cache lags.
//!
//! A node matched by two or more custom pools stops the sync there, as `GetPrimaryPoolNameForMCN` returns
//! `GetPoolsForNode`'s error ("node %s belongs to %d custom roles, cannot proceed with this Node",
//! `pkg/helpers/helpers.go`, release-4.20 to release-4.23) and `syncMachineConfigNodes` returns it: the nodes after
//! it get no object, no object of a gone node is deleted, and the operator's sync stops before its pools (`syncAll`),
//! reporting `machine-config` `Degraded=True`, reason `MachineConfigNodeFailed` ([`crate::operator_sync`]). The
//! real operator lists nodes from its informer's cache, in no set order; the simulator goes in name order. A failed
//! write, on the other hand, never holds anything up here (the real sync would stop at it too): the next sync
//! retries it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use anyhow::Context as _;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::ResourceExt;
use numo::openshift::MachineConfigPool;
use serde_json::json;

use super::write::{node_owner, object, spec};
use super::*;
use crate::membership::{pool_of, MultipleCustomPools};
use crate::node_state;
use crate::operator_sync::OPERATOR_FIELD_MANAGER;

/// One write of the sync.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Create the node's object or put its node, pool and owner back; then give it the node's desired config if it
    /// has none yet.
    Ensure {
        /// The node (and object) name.
        node: String,
        /// The Node's uid, for the owner reference.
        uid: String,
        /// Its primary pool, or [`NOT_YET_SET`].
        pool: String,
        /// Its `desiredConfig` (empty when it has none).
        desired: String,
    },
    /// Delete the object of a node that is gone.
    Delete(String),
}

/// What one sync does: its writes, and the node it stopped at, if any.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// The writes, in order.
    pub actions: Vec<Action>,
    /// The node matched by several custom pools the sync stopped at (after the writes before it).
    pub stopped_at: Option<MultipleCustomPools>,
}

/// The writes that make `objects` what the operator wants for `nodes` and `pools`, up to the first node (in name
/// order) matched by several custom pools.
pub fn plan(nodes: &[Arc<Node>], pools: &[Arc<MachineConfigPool>], objects: &[Arc<MachineConfigNode>]) -> Plan {
    let pools: Vec<&MachineConfigPool> = pools.iter().map(Arc::as_ref).collect();
    let existing: BTreeMap<String, &MachineConfigNode> = objects.iter().map(|o| (o.name_any(), o.as_ref())).collect();
    let mut sorted: Vec<&Node> = nodes.iter().map(Arc::as_ref).collect();
    sorted.sort_by_key(|n| n.name_any());
    let mut actions = Vec::new();
    for node in &sorted {
        let phase = node.status.as_ref().and_then(|s| s.phase.as_deref());
        if matches!(phase, Some("Pending" | "Provisioning")) {
            continue;
        }
        let pool = match pool_of(node, pools.iter().copied()) {
            Ok(pool) => pool.unwrap_or(NOT_YET_SET),
            Err(conflict) => return Plan { actions, stopped_at: Some(conflict) },
        };
        let (name, uid, desired) = (node.name_any(), node.uid().unwrap_or_default(), node_state::desired_config(node));
        let wanted = match existing.get(&name) {
            None => true,
            Some(object) => {
                object.spec.node.name != name
                    || object.spec.pool.name != pool
                    || !owned_by(object, &name, &uid)
                    || (object.spec.config_version.desired == NOT_YET_SET && !desired.is_empty())
            }
        };
        if wanted {
            actions.push(Action::Ensure { node: name, uid, pool: pool.to_string(), desired: desired.to_string() });
        }
    }
    let names: BTreeSet<String> = sorted.iter().map(|n| n.name_any()).collect();
    actions.extend(existing.keys().filter(|name| !names.contains(*name)).map(|name| Action::Delete(name.clone())));
    Plan { actions, stopped_at: None }
}

/// Whether `object` carries the owner reference to the Node `node` of `uid`.
fn owned_by(object: &MachineConfigNode, node: &str, uid: &str) -> bool {
    object.owner_references().iter().any(|o| o.kind == "Node" && o.name == node && o.uid == uid)
}

/// How many of the sync's writes are under way at once.
const CONCURRENT_WRITES: usize = 8;

/// Carries out `actions` through `client` (the operator's), a few at a time (they concern different objects); the
/// first error, after trying them all.
pub async fn apply(client: &kube::Client, actions: Vec<Action>) -> anyhow::Result<()> {
    let api: Api<MachineConfigNode> = Api::all(client.clone());
    let results: Vec<anyhow::Result<()>> = futures::stream::iter(actions)
        .map(|action| {
            let api = api.clone();
            async move {
                let result = match &action {
                    Action::Ensure { node, uid, pool, desired } => ensure(&api, node, uid, pool, desired).await,
                    Action::Delete(name) => delete(&api, name).await,
                };
                if let Err(error) = &result {
                    tracing::warn!(?action, error = %format!("{error:#}"), "machine-config operator: MachineConfigNode sync");
                }
                result
            }
        })
        .buffer_unordered(CONCURRENT_WRITES)
        .collect()
        .await;
    results.into_iter().collect()
}

async fn ensure(api: &Api<MachineConfigNode>, node: &str, uid: &str, pool: &str, desired: &str) -> anyhow::Result<()> {
    let required = object(node, Some(uid), pool, NOT_YET_SET);
    let params = PostParams { field_manager: Some(OPERATOR_FIELD_MANAGER.into()), ..PostParams::default() };
    let stored = match api.get_opt(node).await.with_context(|| format!("reading MachineConfigNode {node}"))? {
        None => {
            let created = api.create(&params, &required).await;
            let created = created.with_context(|| format!("creating MachineConfigNode {node}"))?;
            tracing::info!(%node, %pool, "machine-config operator: created the node's MachineConfigNode");
            created
        }
        Some(mut existing) => {
            let mut modified = false;
            if existing.spec.node != required.spec.node || existing.spec.pool != required.spec.pool {
                existing.spec.node = required.spec.node.clone();
                existing.spec.pool = required.spec.pool.clone();
                modified = true;
            }
            if !owned_by(&existing, node, uid) {
                existing.metadata.owner_references.get_or_insert_with(Vec::new).push(node_owner(node, uid));
                modified = true;
            }
            if modified {
                api.replace(node, &params, &existing)
                    .await
                    .with_context(|| format!("updating MachineConfigNode {node}"))?
            } else {
                existing
            }
        }
    };
    if stored.spec.config_version.desired == NOT_YET_SET && !desired.is_empty() {
        let body = json!({
            "apiVersion": "machineconfiguration.openshift.io/v1",
            "kind": "MachineConfigNode",
            "metadata": {"name": node},
            "spec": spec(node, pool, desired),
        });
        api.patch(node, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&body))
            .await
            .with_context(|| format!("applying the spec of MachineConfigNode {node}"))?;
    }
    Ok(())
}

async fn delete(api: &Api<MachineConfigNode>, name: &str) -> anyhow::Result<()> {
    match api.delete(name, &DeleteParams::default()).await {
        Ok(_) => {
            tracing::info!(node = %name, "machine-config operator: node removed, deleted its MachineConfigNode");
            Ok(())
        }
        Err(kube::Error::Api(status)) if status.is_not_found() => Ok(()),
        Err(error) => Err(error).with_context(|| format!("deleting MachineConfigNode {name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operator_sync::manifest_pool;
    use k8s_openapi::api::core::v1::NodeStatus;
    use numo::openshift::DESIRED_CONFIG;

    fn node(name: &str, role: &str, desired: &str) -> Arc<Node> {
        let mut node = Node::default();
        node.metadata.name = Some(name.into());
        node.metadata.uid = Some(format!("uid-{name}"));
        node.labels_mut().insert(format!("node-role.kubernetes.io/{role}"), String::new());
        if !desired.is_empty() {
            node.annotations_mut().insert(DESIRED_CONFIG.into(), desired.into());
        }
        Arc::new(node)
    }

    fn pools() -> Vec<Arc<MachineConfigPool>> {
        vec![Arc::new(manifest_pool("master")), Arc::new(manifest_pool("worker"))]
    }

    fn stored(node: &str, pool: &str, desired: &str) -> Arc<MachineConfigNode> {
        let mut object = object(node, Some(&format!("uid-{node}")), pool, NOT_YET_SET);
        object.spec.config_version.desired = desired.into();
        Arc::new(object)
    }

    #[test]
    fn every_node_gets_an_object_in_its_primary_pool() {
        let nodes = [node("master-0", "master", "rendered-master-1"), node("worker-0", "worker", "")];
        let actions = plan(&nodes, &pools(), &[]).actions;
        assert_eq!(
            actions,
            [
                Action::Ensure {
                    node: "master-0".into(),
                    uid: "uid-master-0".into(),
                    pool: "master".into(),
                    desired: "rendered-master-1".into()
                },
                Action::Ensure {
                    node: "worker-0".into(),
                    uid: "uid-worker-0".into(),
                    pool: "worker".into(),
                    desired: String::new()
                },
            ]
        );
    }

    #[test]
    fn a_node_in_no_pool_is_not_yet_set_and_a_pending_one_waits() {
        let mut pending = Node::clone(&node("new-0", "worker", ""));
        pending.status = Some(NodeStatus { phase: Some("Pending".into()), ..NodeStatus::default() });
        let actions = plan(&[node("odd-0", "infra", ""), Arc::new(pending)], &pools(), &[]).actions;
        assert!(matches!(&actions[..], [Action::Ensure { node, pool, .. }] if node == "odd-0" && pool == NOT_YET_SET));
    }

    #[test]
    fn objects_as_wanted_need_nothing_and_those_of_gone_nodes_go() {
        let nodes = [node("worker-0", "worker", "rendered-worker-1")];
        let objects = [stored("worker-0", "worker", "rendered-worker-1"), stored("worker-9", "worker", "r")];
        assert_eq!(plan(&nodes, &pools(), &objects).actions, [Action::Delete("worker-9".into())]);
    }

    #[test]
    fn a_moved_node_or_a_missing_desired_config_is_put_right() {
        let nodes = [node("worker-0", "worker", "rendered-worker-1")];
        assert_eq!(plan(&nodes, &pools(), &[stored("worker-0", "infra", "rendered-worker-1")]).actions.len(), 1);
        assert_eq!(plan(&nodes, &pools(), &[stored("worker-0", "worker", NOT_YET_SET)]).actions.len(), 1);
        let mut orphan = MachineConfigNode::clone(&stored("worker-0", "worker", "rendered-worker-1"));
        orphan.metadata.owner_references = None;
        assert_eq!(plan(&nodes, &pools(), &[Arc::new(orphan)]).actions.len(), 1, "the owner goes back");
    }

    #[test]
    fn a_node_in_two_custom_pools_stops_the_sync_there() {
        let mut both = Node::clone(&node("worker-1", "worker", ""));
        both.labels_mut().insert("node-role.kubernetes.io/infra".into(), String::new());
        both.labels_mut().insert("node-role.kubernetes.io/gpu".into(), String::new());
        let custom = |name: &str| {
            let mut pool = manifest_pool("worker");
            pool.metadata.name = Some(name.into());
            pool.spec.node_selector = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                match_labels: Some([(format!("node-role.kubernetes.io/{name}"), String::new())].into()),
                match_expressions: None,
            });
            Arc::new(pool)
        };
        let mut pools = pools();
        pools.extend([custom("infra"), custom("gpu")]);
        let nodes = [node("worker-0", "worker", ""), Arc::new(both), node("worker-2", "worker", "")];
        let gone = [stored("worker-9", "worker", "r")];
        let plan = plan(&nodes, &pools, &gone);
        assert!(matches!(&plan.actions[..], [Action::Ensure { node, .. }] if node == "worker-0"), "{plan:?}");
        let stopped = plan.stopped_at.unwrap_or_else(|| panic!("the sync stops"));
        assert_eq!(stopped.to_string(), "node worker-1 belongs to 2 custom roles, cannot proceed with this Node");
    }
}
