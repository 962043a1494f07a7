//! How the MCO reads a node: the daemon's annotations (`currentConfig`, `desiredConfig`, `state`) and the node's
//! readiness, as in the MCO's `LayeredNodeState` (non-layered pools).

use k8s_openapi::api::core::v1::Node;
use numo::openshift::{CURRENT_CONFIG, DESIRED_CONFIG, MCD_REASON, MCD_STATE};

/// Daemon state: the node runs its desired config.
pub const STATE_DONE: &str = "Done";
/// Daemon state: the node is updating.
pub const STATE_WORKING: &str = "Working";
/// Daemon state: the update failed.
pub const STATE_DEGRADED: &str = "Degraded";
/// Daemon state: the config cannot be applied at all.
pub const STATE_UNRECONCILABLE: &str = "Unreconcilable";

/// A node annotation, `""` when absent.
pub fn annotation<'a>(node: &'a Node, key: &str) -> &'a str {
    node.metadata.annotations.as_ref().and_then(|a| a.get(key)).map(String::as_str).unwrap_or_default()
}

/// The node's `currentConfig`.
pub fn current_config(node: &Node) -> &str {
    annotation(node, CURRENT_CONFIG)
}

/// The node's `desiredConfig`.
pub fn desired_config(node: &Node) -> &str {
    annotation(node, DESIRED_CONFIG)
}

/// The daemon's `state`.
pub fn state(node: &Node) -> &str {
    annotation(node, MCD_STATE)
}

/// The daemon's `reason` for a Degraded state.
pub fn reason(node: &Node) -> &str {
    annotation(node, MCD_REASON)
}

/// Current and desired config set and equal, and the daemon reports Done.
pub fn is_done(node: &Node) -> bool {
    let current = current_config(node);
    !current.is_empty() && current == desired_config(node) && state(node) == STATE_DONE
}

/// Done, and targeting `target` (the pool's rendered config): the node counts as updated.
pub fn is_updated(node: &Node, target: &str) -> bool {
    is_done(node) && desired_config(node) == target
}

/// Schedulable for workloads: Ready, no disk pressure, network available, not cordoned.
pub fn is_ready(node: &Node) -> bool {
    let conditions = node.status.as_ref().and_then(|s| s.conditions.as_deref()).unwrap_or_default();
    let bad = conditions.iter().any(|c| match c.type_.as_str() {
        "Ready" => c.status != "True",
        "DiskPressure" | "NetworkUnavailable" => c.status != "False",
        _ => false,
    });
    let ready_reported = conditions.iter().any(|c| c.type_ == "Ready");
    let cordoned = node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false);
    ready_reported && !bad && !cordoned
}

/// The daemon failed to reach the desired config (Degraded or Unreconcilable on the way).
pub fn is_failing(node: &Node) -> bool {
    current_config(node) != desired_config(node) && matches!(state(node), STATE_DEGRADED | STATE_UNRECONCILABLE)
}

/// Counts against `maxUnavailable`: not ready, or working towards a config (a failed daemon does not count here,
/// but a failed node is usually cordoned, hence not ready).
pub fn is_unavailable(node: &Node) -> bool {
    !is_ready(node) || (!is_done(node) && !is_failing(node))
}

/// Reported as degraded: a desired config is set and the daemon is Degraded or Unreconcilable.
pub fn is_degraded(node: &Node) -> bool {
    !desired_config(node).is_empty() && matches!(state(node), STATE_DEGRADED | STATE_UNRECONCILABLE)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{NodeCondition, NodeSpec, NodeStatus};
    use kube::api::ObjectMeta;

    /// A node with the daemon annotations, Ready and schedulable.
    pub(crate) fn node(name: &str, current: &str, desired: &str, state: &str) -> Node {
        Node {
            metadata: ObjectMeta {
                name: Some(name.into()),
                annotations: Some(
                    [(CURRENT_CONFIG, current), (DESIRED_CONFIG, desired), (MCD_STATE, state)]
                        .into_iter()
                        .filter(|(_, v)| !v.is_empty())
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect(),
                ),
                ..ObjectMeta::default()
            },
            spec: Some(NodeSpec::default()),
            status: Some(NodeStatus {
                conditions: Some(vec![NodeCondition {
                    type_: "Ready".into(),
                    status: "True".into(),
                    ..NodeCondition::default()
                }]),
                ..NodeStatus::default()
            }),
        }
    }

    pub(crate) fn cordoned(mut n: Node) -> Node {
        n.spec.get_or_insert_with(Default::default).unschedulable = Some(true);
        n
    }

    #[test]
    fn done_updated_and_available() {
        let n = node("a", "r1", "r1", STATE_DONE);
        assert!(is_done(&n) && is_updated(&n, "r1") && !is_updated(&n, "r2"));
        assert!(is_ready(&n) && !is_unavailable(&n) && !is_degraded(&n));
    }

    #[test]
    fn a_node_targeted_at_a_new_config_is_unavailable_before_the_daemon_starts() {
        let n = node("a", "r1", "r2", STATE_DONE);
        assert!(!is_done(&n) && is_unavailable(&n) && !is_failing(&n));
        let working = cordoned(node("a", "r1", "r2", STATE_WORKING));
        assert!(!is_ready(&working) && is_unavailable(&working));
    }

    #[test]
    fn a_failed_node_is_degraded_and_unavailable_while_cordoned() {
        let failed = cordoned(node("a", "r1", "r2", STATE_DEGRADED));
        assert!(is_failing(&failed) && is_degraded(&failed) && is_unavailable(&failed));
        let uncordoned = node("a", "r1", "r2", STATE_DEGRADED);
        assert!(!is_unavailable(&uncordoned), "a failing daemon alone does not count as unavailable");
    }

    #[test]
    fn unready_nodes_are_unavailable() {
        let mut n = node("a", "r1", "r1", STATE_DONE);
        n.status = None;
        assert!(!is_ready(&n) && is_unavailable(&n));
        let mut pressure = node("a", "r1", "r1", STATE_DONE);
        pressure.status.as_mut().unwrap().conditions.as_mut().unwrap().push(NodeCondition {
            type_: "DiskPressure".into(),
            status: "True".into(),
            ..NodeCondition::default()
        });
        assert!(!is_ready(&pressure));
    }
}
