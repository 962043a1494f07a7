//! Which MachineConfigPool manages a node, decided as the MCO's `GetPoolsForNode` decides it. Written here rather
//! than borrowed from the operator so the simulator stays an independent oracle for numo's own membership logic.
//!
//! - A pool takes part only if its `nodeSelector` is usable: missing, empty (`{}`) or invalid selectors match no node.
//! - Windows nodes belong to no pool.
//! - Two or more matching custom pools (neither `master` nor `worker`): the node belongs to none of them, and the MCO
//!   reports `node <name> belongs to <n> custom roles, cannot proceed with this Node`.
//! - Exactly one matching custom pool: `master` if master matches too (custom pools on masters are not supported),
//!   else the custom pool.
//! - Otherwise `master` if it matches, else `worker` if it matches, else no pool.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use numo::openshift::MachineConfigPool;

/// The MCO's control-plane pool.
pub const MASTER: &str = "master";
/// The MCO's default worker pool.
pub const WORKER: &str = "worker";
/// Node label of a node's role, completed by the role name.
pub const ROLE_LABEL_PREFIX: &str = "node-role.kubernetes.io/";
/// Node label naming the operating system (set by the kubelet).
const OS_LABEL: &str = "kubernetes.io/os";

/// A node matched by several custom pools; the MCO manages it in none.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("node {node} belongs to {} custom roles, cannot proceed with this Node", pools.len())]
pub struct MultipleCustomPools {
    /// The node.
    pub node: String,
    /// The matching custom pools, in name order.
    pub pools: Vec<String>,
}

/// Whether a pool's `nodeSelector` takes a node with `labels`, with the MCO's rules: a missing, empty or invalid
/// selector takes none.
pub fn selects(selector: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    let Some(selector) = selector else { return false };
    let no_labels = selector.match_labels.as_ref().is_none_or(BTreeMap::is_empty);
    let no_expressions = selector.match_expressions.as_ref().is_none_or(Vec::is_empty);
    let valid = selector.match_expressions.iter().flatten().all(is_valid);
    !(no_labels && no_expressions) && valid && numo::selector::matches(Some(selector), labels)
}

/// Whether `metav1.LabelSelectorAsSelector` accepts the requirement.
fn is_valid(r: &LabelSelectorRequirement) -> bool {
    let has_values = r.values.as_ref().is_some_and(|v| !v.is_empty());
    match r.operator.as_str() {
        "In" | "NotIn" => has_values,
        "Exists" | "DoesNotExist" => !has_values,
        _ => false,
    }
}

/// Whether `node` is a Windows node (`kubernetes.io/os: windows`, as the MCO's `IsWindows` reads it): the MCO
/// manages it in no pool and runs no daemon on it.
pub fn is_windows(node: &Node) -> bool {
    node.metadata.labels.as_ref().and_then(|l| l.get(OS_LABEL)).is_some_and(|os| os == "windows")
}

/// The name of the pool that manages `node` among `pools`.
pub fn pool_of<'a>(
    node: &Node,
    pools: impl IntoIterator<Item = &'a MachineConfigPool>,
) -> Result<Option<&'a str>, MultipleCustomPools> {
    if is_windows(node) {
        return Ok(None);
    }
    let empty = BTreeMap::new();
    let labels = node.metadata.labels.as_ref().unwrap_or(&empty);
    let (mut master, mut worker, mut custom) = (None, None, Vec::new());
    for pool in pools {
        let Some(name) = pool.metadata.name.as_deref() else { continue };
        if !selects(pool.spec.node_selector.as_ref(), labels) {
            continue;
        }
        match name {
            MASTER => master = Some(name),
            WORKER => worker = Some(name),
            _ => custom.push(name),
        }
    }
    custom.sort_unstable();
    custom.dedup();
    match custom.as_slice() {
        [] => Ok(master.or(worker)),
        [only] => Ok(master.or(Some(*only))),
        _ => Err(MultipleCustomPools {
            node: node.metadata.name.clone().unwrap_or_default(),
            pools: custom.iter().map(|p| p.to_string()).collect(),
        }),
    }
}

/// Pool membership of a whole cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Membership {
    /// Pool name → names of the nodes it manages, sorted.
    pub members: BTreeMap<String, Vec<String>>,
    /// Custom pool name → the conflicts of nodes it matches together with other custom pools.
    pub conflicts: BTreeMap<String, Vec<MultipleCustomPools>>,
}

impl Membership {
    /// Decides membership for every node.
    pub fn of<'a>(nodes: impl IntoIterator<Item = &'a Node>, pools: &[&MachineConfigPool]) -> Self {
        let mut out = Membership::default();
        for pool in pools {
            if let Some(name) = &pool.metadata.name {
                out.members.entry(name.clone()).or_default();
            }
        }
        for node in nodes {
            let name = node.metadata.name.clone().unwrap_or_default();
            match pool_of(node, pools.iter().copied()) {
                Ok(Some(pool)) => out.members.entry(pool.to_string()).or_default().push(name),
                Ok(None) => {}
                Err(conflict) => {
                    for pool in &conflict.pools {
                        out.conflicts.entry(pool.clone()).or_default().push(conflict.clone());
                    }
                }
            }
        }
        out.members.values_mut().for_each(|names| names.sort());
        out
    }

    /// The nodes `pool` manages.
    pub fn members_of(&self, pool: &str) -> &[String] {
        self.members.get(pool).map(Vec::as_slice).unwrap_or_default()
    }

    /// The pool that manages `node`, if any.
    pub fn pool_managing(&self, node: &str) -> Option<&str> {
        let manages = |names: &Vec<String>| names.binary_search_by(|n| n.as_str().cmp(node)).is_ok();
        self.members.iter().find(|(_, names)| manages(names)).map(|(pool, _)| pool.as_str())
    }

    /// Every node matched by several custom pools, once each (in the order of its first pool's name).
    pub fn multi_pool_nodes(&self) -> impl Iterator<Item = &MultipleCustomPools> {
        (self.conflicts.iter())
            .flat_map(|(pool, conflicts)| conflicts.iter().filter(move |c| c.pools.first() == Some(pool)))
    }

    /// The conflicts that keep nodes out of `pool`.
    pub fn conflicts_of(&self, pool: &str) -> &[MultipleCustomPools] {
        self.conflicts.get(pool).map(Vec::as_slice).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::api::ObjectMeta;
    use numo::openshift::MachineConfigPoolSpec;

    fn node(name: &str, labels: &[&str]) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: Some(labels.iter().map(|l| (l.to_string(), String::new())).collect()),
                ..ObjectMeta::default()
            },
            ..Node::default()
        }
    }

    fn pool(name: &str, role_label: &str) -> MachineConfigPool {
        let selector = LabelSelector {
            match_labels: Some(BTreeMap::from([(role_label.to_string(), String::new())])),
            match_expressions: None,
        };
        MachineConfigPool::new(
            name,
            MachineConfigPoolSpec { node_selector: Some(selector), ..MachineConfigPoolSpec::default() },
        )
    }

    const W: &str = "node-role.kubernetes.io/worker";
    const M: &str = "node-role.kubernetes.io/master";
    const INFRA: &str = "node-role.kubernetes.io/infra";
    const GPU: &str = "node-role.kubernetes.io/gpu";

    fn pools() -> Vec<MachineConfigPool> {
        vec![pool("master", M), pool("worker", W), pool("infra", INFRA), pool("gpu", GPU)]
    }

    #[test]
    fn master_then_one_custom_pool_then_worker() {
        let pools = pools();
        assert_eq!(pool_of(&node("w", &[W]), &pools), Ok(Some("worker")));
        assert_eq!(pool_of(&node("i", &[W, INFRA]), &pools), Ok(Some("infra")));
        assert_eq!(pool_of(&node("i", &[INFRA]), &pools), Ok(Some("infra")));
        assert_eq!(pool_of(&node("m", &[M, W]), &pools), Ok(Some("master")));
        assert_eq!(pool_of(&node("m", &[M, INFRA]), &pools), Ok(Some("master")));
        assert_eq!(pool_of(&node("x", &["other"]), &pools), Ok(None));
    }

    #[test]
    fn two_custom_pools_take_the_node_out_of_every_pool_with_the_mco_message() {
        let pools = pools();
        let err = pool_of(&node("w-1", &[W, INFRA, GPU]), &pools).unwrap_err();
        assert_eq!(err.pools, ["gpu", "infra"]);
        assert_eq!(err.to_string(), "node w-1 belongs to 2 custom roles, cannot proceed with this Node");
        let refs: Vec<&MachineConfigPool> = pools.iter().collect();
        let m = Membership::of(&[node("w-1", &[W, INFRA, GPU]), node("w-2", &[W])], &refs);
        assert_eq!(m.members_of("worker"), ["w-2"]);
        assert_eq!((m.pool_managing("w-2"), m.pool_managing("w-1")), (Some("worker"), None));
        assert!(m.members_of("infra").is_empty() && m.members_of("gpu").is_empty());
        assert_eq!(m.conflicts_of("infra").len(), 1);
        assert_eq!(m.conflicts_of("gpu").len(), 1);
        assert!(m.conflicts_of("worker").is_empty());
        assert_eq!(m.multi_pool_nodes().map(|c| c.node.as_str()).collect::<Vec<_>>(), ["w-1"], "once");
    }

    #[test]
    fn missing_empty_and_invalid_selectors_select_nothing() {
        let labels = BTreeMap::from([(W.to_string(), String::new())]);
        assert!(!selects(None, &labels));
        assert!(!selects(Some(&LabelSelector::default()), &labels));
        let in_without_values = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: W.into(),
                operator: "Exists".into(),
                values: Some(vec!["x".into()]),
            }]),
            match_labels: None,
        };
        assert!(!selects(Some(&in_without_values), &labels));
        let exists = LabelSelector {
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: W.into(),
                operator: "Exists".into(),
                values: None,
            }]),
            match_labels: None,
        };
        assert!(selects(Some(&exists), &labels));
    }

    #[test]
    fn windows_nodes_belong_to_no_pool() {
        let mut win = node("win", &[W]);
        win.metadata.labels.as_mut().unwrap().insert(OS_LABEL.into(), "windows".into());
        assert!(is_windows(&win));
        assert_eq!(pool_of(&win, &pools()), Ok(None));
        let mut linux = node("lin", &[W]);
        linux.metadata.labels.as_mut().unwrap().insert(OS_LABEL.into(), "linux".into());
        let pools = pools();
        let refs: Vec<&MachineConfigPool> = pools.iter().collect();
        let m = Membership::of(&[win, linux], &refs);
        assert_eq!(m.members_of("worker"), ["lin"], "the Windows worker is no member");
    }
}
