//! What a target's status should say, decided purely from the pools and nodes observed: which listed pools are
//! missing, and which nodes belong to the listed pools as the Machine Config Operator decides membership.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};

use crate::conditions::{Desired, Status};
use crate::membership::{self, AmbiguousPools, PoolSelector};

/// Condition: every listed pool exists.
pub const VALID_CONFIG: &str = "ValidConfig";
/// Condition: `status.nodes` lists the nodes of every listed pool.
pub const NODE_LIST_GATHERED: &str = "NodeListGathered";
/// How many node names an Event or message lists before it says "and N more".
const LIST_LIMIT: usize = 10;

/// A pool as observed.
#[derive(Clone, Debug, PartialEq)]
pub enum PoolState {
    /// The pool exists; membership is decided with this selector (see `membership::effective_node_selector`).
    Found(Option<LabelSelector>),
    /// The pool exists but does not parse as a MachineConfigPool; the error says why.
    Unreadable(String),
}

/// What the status should hold.
#[derive(Clone, Debug, PartialEq)]
pub struct TargetPlan {
    /// Sorted names of the nodes in the listed pools.
    pub nodes: Vec<String>,
    /// Listed pools that do not exist, in spec order.
    pub missing: Vec<String>,
    /// Nodes that several custom pools (one of them listed) select, so the MCO manages them in none.
    pub ambiguous: Vec<(String, AmbiguousPools)>,
    /// `ValidConfig` and `NodeListGathered`.
    pub conditions: Vec<Desired>,
}

/// Computes the node list and conditions of a target listing `wanted` pools, given every pool in the cluster and
/// every node's labels.
pub fn plan<'a>(
    wanted: &[String],
    pools: &BTreeMap<String, PoolState>,
    nodes: impl IntoIterator<Item = (&'a str, &'a BTreeMap<String, String>)>,
) -> TargetPlan {
    let mut seen = BTreeSet::new();
    let wanted: Vec<&str> = wanted.iter().map(String::as_str).filter(|p| seen.insert(*p)).collect();
    let missing: Vec<String> = wanted.iter().filter(|p| !pools.contains_key(**p)).map(|p| p.to_string()).collect();
    let unreadable: Vec<(&str, &str)> = wanted
        .iter()
        .filter_map(|p| match pools.get(*p) {
            Some(PoolState::Unreadable(error)) => Some((*p, error.as_str())),
            _ => None,
        })
        .collect();
    let selectors: Vec<PoolSelector<'_>> = pools
        .iter()
        .filter_map(|(name, state)| match state {
            PoolState::Found(selector) => Some(PoolSelector { name, node_selector: selector.as_ref() }),
            PoolState::Unreadable(_) => None,
        })
        .collect();

    let mut members = Vec::new();
    let mut ambiguous = Vec::new();
    for (node, labels) in nodes {
        match membership::pool_of(labels, &selectors) {
            Ok(Some(pool)) if wanted.contains(&pool) => members.push(node.to_string()),
            Ok(_) => {}
            Err(conflict) if conflict.pools.iter().any(|p| wanted.contains(&p.as_str())) => {
                ambiguous.push((node.to_string(), conflict));
            }
            Err(_) => {}
        }
    }
    members.sort();
    members.dedup();
    ambiguous.sort_by(|a, b| a.0.cmp(&b.0));

    let valid = if wanted.contains(&membership::MASTER) {
        Desired::false_(
            VALID_CONFIG,
            "ControlPlanePool",
            format!(
                "spec.machineConfigPools names the {} pool; control-plane nodes cannot be gated (pausing that pool \
                 would stop the control-plane upgrade): remove it and list only worker pools",
                membership::MASTER
            ),
        )
    } else if missing.is_empty() {
        Desired::true_(VALID_CONFIG, "Valid", format!("every MachineConfigPool exists: {}", wanted.join(", ")))
    } else {
        Desired::false_(
            VALID_CONFIG,
            "PoolNotFound",
            format!("MachineConfigPool not found: {} (spec.machineConfigPools)", missing.join(", ")),
        )
    };
    let gathered = gathered_condition(&wanted, &missing, &unreadable, members.len(), &ambiguous);
    TargetPlan { nodes: members, missing, ambiguous, conditions: vec![valid, gathered] }
}

fn gathered_condition(
    wanted: &[&str],
    missing: &[String],
    unreadable: &[(&str, &str)],
    count: usize,
    ambiguous: &[(String, AmbiguousPools)],
) -> Desired {
    if !missing.is_empty() {
        let present: Vec<&str> = wanted.iter().copied().filter(|p| !missing.iter().any(|m| m == p)).collect();
        let covered = if present.is_empty() { "no pool".to_string() } else { present.join(", ") };
        return Desired::false_(
            NODE_LIST_GATHERED,
            "PoolNotFound",
            format!("the node list covers only {covered}; not found: {}", missing.join(", ")),
        );
    }
    if let Some((pool, error)) = unreadable.first() {
        return Desired::false_(
            NODE_LIST_GATHERED,
            "PoolUnreadable",
            format!("MachineConfigPool {pool} cannot be read, so its nodes are unknown: {error}"),
        );
    }
    let mut message = format!("{count} node{} in {}", if count == 1 { "" } else { "s" }, wanted.join(", "));
    if !ambiguous.is_empty() {
        let names: Vec<String> = ambiguous.iter().map(|(node, conflict)| format!("{node} {conflict}")).collect();
        message.push_str(&format!("; not counted: {}", limited(&names)));
    }
    Desired::true_(NODE_LIST_GATHERED, "NodesListed", message)
}

/// `a, b, c` with at most [`LIST_LIMIT`] items, then `and N more`.
pub fn limited(items: &[String]) -> String {
    let shown = items.iter().take(LIST_LIMIT).cloned().collect::<Vec<_>>().join(", ");
    match items.len().saturating_sub(LIST_LIMIT) {
        0 => shown,
        more => format!("{shown} and {more} more"),
    }
}

/// An Event to publish: `(warning, reason, note)`.
pub type EventNote = (bool, &'static str, String);

/// The Events a status change deserves: `ValidConfig` becoming True (Normal) or False / False for another reason
/// (Warning), and the node list changing (Normal, naming the nodes added and removed).
pub fn events(
    previous_conditions: &[Condition],
    previous_nodes: Option<&[String]>,
    plan: &TargetPlan,
) -> Vec<EventNote> {
    let mut out = Vec::new();
    let previous = crate::conditions::find(previous_conditions, VALID_CONFIG);
    if let Some(valid) = plan.conditions.iter().find(|c| c.type_ == VALID_CONFIG) {
        let was_true = previous.is_some_and(|c| c.status == "True");
        if valid.status == Status::True && !was_true {
            out.push((false, "Valid", valid.message.clone()));
        }
        let same = previous.is_some_and(|c| c.status == "False" && c.message == valid.message);
        if valid.status == Status::False && !same {
            let reason = if valid.reason == "ControlPlanePool" { "ControlPlanePool" } else { "PoolNotFound" };
            out.push((true, reason, valid.message.clone()));
        }
    }
    let before: BTreeSet<&str> = previous_nodes.unwrap_or_default().iter().map(String::as_str).collect();
    let after: BTreeSet<&str> = plan.nodes.iter().map(String::as_str).collect();
    let added: Vec<String> = after.difference(&before).map(|n| n.to_string()).collect();
    let removed: Vec<String> = before.difference(&after).map(|n| n.to_string()).collect();
    if !added.is_empty() || !removed.is_empty() {
        let mut parts = Vec::new();
        if !added.is_empty() {
            parts.push(format!("added {}", limited(&added)));
        }
        if !removed.is_empty() {
            parts.push(format!("removed {}", limited(&removed)));
        }
        out.push((false, "NodesChanged", format!("{} nodes now; {}", plan.nodes.len(), parts.join("; "))));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selector::requirement;

    const W: &str = "node-role.kubernetes.io/worker";
    const I: &str = "node-role.kubernetes.io/infra";
    const G: &str = "node-role.kubernetes.io/gpu";

    fn selector(key: &str) -> PoolState {
        PoolState::Found(Some(LabelSelector {
            match_labels: Some(BTreeMap::from([(key.to_string(), String::new())])),
            match_expressions: None,
        }))
    }

    fn cluster() -> BTreeMap<String, PoolState> {
        BTreeMap::from([
            ("master".to_string(), selector("node-role.kubernetes.io/master")),
            ("worker".to_string(), selector(W)),
            ("infra".to_string(), selector(I)),
            ("gpu".to_string(), selector(G)),
        ])
    }

    fn nodes(list: &[(&str, &[&str])]) -> Vec<(String, BTreeMap<String, String>)> {
        list.iter()
            .map(|(name, keys)| (name.to_string(), keys.iter().map(|k| (k.to_string(), String::new())).collect()))
            .collect()
    }

    fn run(
        wanted: &[&str],
        pools: &BTreeMap<String, PoolState>,
        nodes: &[(String, BTreeMap<String, String>)],
    ) -> TargetPlan {
        let wanted: Vec<String> = wanted.iter().map(|p| p.to_string()).collect();
        plan(&wanted, pools, nodes.iter().map(|(n, l)| (n.as_str(), l)))
    }

    fn condition<'a>(plan: &'a TargetPlan, type_: &str) -> &'a Desired {
        plan.conditions.iter().find(|c| c.type_ == type_).unwrap_or_else(|| panic!("no {type_}"))
    }

    #[test]
    fn nodes_are_the_sorted_members_of_the_listed_pools() {
        let n = nodes(&[("w2", &[W]), ("w1", &[W]), ("i1", &[W, I]), ("m1", &["node-role.kubernetes.io/master", W])]);
        let plan = run(&["worker"], &cluster(), &n);
        assert_eq!(plan.nodes, ["w1", "w2"], "infra and master nodes are not worker members");
        let plan = run(&["worker", "infra"], &cluster(), &n);
        assert_eq!(plan.nodes, ["i1", "w1", "w2"]);
        assert_eq!(condition(&plan, VALID_CONFIG).status, Status::True);
        assert_eq!(condition(&plan, NODE_LIST_GATHERED).message, "3 nodes in worker, infra");
    }

    #[test]
    fn missing_pools_are_named_and_the_list_says_it_is_partial() {
        let n = nodes(&[("w1", &[W])]);
        let plan = run(&["worker", "nope", "gone"], &cluster(), &n);
        assert_eq!(plan.missing, ["nope", "gone"]);
        assert_eq!(plan.nodes, ["w1"]);
        let valid = condition(&plan, VALID_CONFIG);
        assert_eq!(valid.status, Status::False);
        assert_eq!(valid.reason, "PoolNotFound");
        assert!(valid.message.contains("nope, gone"), "{}", valid.message);
        let gathered = condition(&plan, NODE_LIST_GATHERED);
        assert_eq!(gathered.status, Status::False);
        assert!(gathered.message.contains("covers only worker"), "{}", gathered.message);
    }

    #[test]
    fn a_target_naming_the_master_pool_is_invalid_at_the_target_itself() {
        let n = nodes(&[("w1", &[W]), ("m1", &["node-role.kubernetes.io/master"])]);
        let plan = run(&["worker", "master"], &cluster(), &n);
        let valid = condition(&plan, VALID_CONFIG);
        assert_eq!(valid.status, Status::False);
        assert_eq!(valid.reason, "ControlPlanePool");
        assert!(valid.message.contains("control-plane nodes cannot be gated"), "{}", valid.message);
        let events = events(&[], None, &plan);
        assert!(events.iter().any(|(warning, reason, _)| *warning && *reason == "ControlPlanePool"), "{events:?}");
    }

    #[test]
    fn nodes_in_two_custom_pools_are_left_out_and_named() {
        let n = nodes(&[("both", &[W, I, G]), ("w1", &[W])]);
        let plan = run(&["infra", "worker"], &cluster(), &n);
        assert_eq!(plan.nodes, ["w1"]);
        assert_eq!(plan.ambiguous.len(), 1);
        let message = &condition(&plan, NODE_LIST_GATHERED).message;
        assert!(message.contains("not counted: both matches 2 custom MachineConfigPools (gpu, infra)"), "{message}");
    }

    #[test]
    fn a_pool_selector_with_expressions_counts() {
        let mut pools = cluster();
        pools.insert(
            "canary".into(),
            PoolState::Found(Some(LabelSelector {
                match_labels: Some(BTreeMap::from([(W.to_string(), String::new())])),
                match_expressions: Some(vec![requirement("isCanary", "Exists")]),
            })),
        );
        let n = nodes(&[("c1", &[W, "isCanary"]), ("w1", &[W])]);
        assert_eq!(run(&["canary"], &pools, &n).nodes, ["c1"]);
        assert_eq!(run(&["worker"], &pools, &n).nodes, ["w1"]);
    }

    #[test]
    fn an_unreadable_pool_exists_but_its_nodes_are_unknown() {
        let mut pools = cluster();
        pools.insert("infra".into(), PoolState::Unreadable("spec.paused: invalid type".into()));
        let plan = run(&["infra"], &pools, &nodes(&[("i1", &[W, I])]));
        assert_eq!(condition(&plan, VALID_CONFIG).status, Status::True);
        let gathered = condition(&plan, NODE_LIST_GATHERED);
        assert_eq!((gathered.status, gathered.reason.as_str()), (Status::False, "PoolUnreadable"));
    }

    #[test]
    fn repeated_pool_names_count_once() {
        let plan = run(&["worker", "worker"], &cluster(), &nodes(&[("w1", &[W])]));
        assert_eq!(plan.nodes, ["w1"]);
        assert_eq!(condition(&plan, NODE_LIST_GATHERED).message, "1 node in worker");
    }

    #[test]
    fn events_name_added_and_removed_nodes_and_validity_flips() {
        let plan = run(&["worker"], &cluster(), &nodes(&[("w1", &[W]), ("w3", &[W])]));
        let previous = vec!["w1".to_string(), "w2".to_string()];
        let notes = events(&[], Some(&previous), &plan);
        assert!(notes.iter().any(|(warning, reason, _)| !warning && *reason == "Valid"));
        let change = notes.iter().find(|(_, reason, _)| *reason == "NodesChanged").map(|n| n.2.clone());
        assert_eq!(change.as_deref(), Some("2 nodes now; added w3; removed w2"));
        let invalid = run(&["nope"], &cluster(), &[]);
        let notes = events(&[], None, &invalid);
        assert_eq!(notes.iter().map(|n| (n.0, n.1)).collect::<Vec<_>>(), [(true, "PoolNotFound")]);
    }

    #[test]
    fn long_lists_are_cut() {
        let names: Vec<String> = (0..25).map(|i| format!("n{i}")).collect();
        assert!(limited(&names).ends_with("and 15 more"));
    }
}
