//! Which nodes of an unpaused pool the MCO targets next, as the MCO's node controller decides
//! (`maxUnavailable`, `getAllCandidateMachines`, `sortNodeList`): pure functions of the pool's nodes.

use std::cmp::Ordering;

use k8s_openapi::api::core::v1::{Node, Taint};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use crate::node_state::{desired_config, is_failing, is_ready, is_unavailable};

/// Node label of the zone; the MCO updates nodes zone by zone.
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";
/// Key of the `PreferNoSchedule` taint the MCO keeps on the nodes of an unpaused pool that are not yet targeted at
/// the pool's config, so workloads prefer nodes that will not reboot soon.
pub const UPDATE_IN_PROGRESS_TAINT: &str = "UpdateInProgress";
/// Effect of [`UPDATE_IN_PROGRESS_TAINT`].
pub const UPDATE_IN_PROGRESS_EFFECT: &str = "PreferNoSchedule";

/// Whether `node` carries the [`UPDATE_IN_PROGRESS_TAINT`].
pub fn has_update_taint(node: &Node) -> bool {
    let taints = node.spec.as_ref().and_then(|s| s.taints.as_deref()).unwrap_or_default();
    taints.iter().any(|t| t.key == UPDATE_IN_PROGRESS_TAINT && t.effect == UPDATE_IN_PROGRESS_EFFECT)
}

/// Whether the MCO wants the [`UPDATE_IN_PROGRESS_TAINT`] on `node`, a node of an unpaused pool targeting `target`:
/// while the node is not targeted at it.
pub fn wants_update_taint(node: &Node, target: &str) -> bool {
    desired_config(node) != target
}

/// `node` with the [`UPDATE_IN_PROGRESS_TAINT`] added or removed.
pub fn with_update_taint(mut node: Node, tainted: bool) -> Node {
    let spec = node.spec.get_or_insert_with(Default::default);
    let mut taints = spec.taints.take().unwrap_or_default();
    taints.retain(|t| !(t.key == UPDATE_IN_PROGRESS_TAINT && t.effect == UPDATE_IN_PROGRESS_EFFECT));
    if tainted {
        taints.push(Taint {
            key: UPDATE_IN_PROGRESS_TAINT.into(),
            effect: UPDATE_IN_PROGRESS_EFFECT.into(),
            ..Taint::default()
        });
    }
    spec.taints = (!taints.is_empty()).then_some(taints);
    node
}

/// How many nodes of a pool of `total` may be unavailable: an integer, or a percentage of `total` rounded down;
/// 0 (or a percentage that rounds to 0) means 1; unset means 1. A string that is not a percentage is an error.
pub fn max_unavailable(value: Option<&IntOrString>, total: usize) -> Result<i64, String> {
    let scaled = match value {
        None => 1,
        Some(IntOrString::Int(n)) => i64::from(*n),
        Some(IntOrString::String(s)) => {
            let digits = s.strip_suffix('%').ok_or_else(|| {
                format!("invalid value for IntOrString: invalid type: string is not a percentage: {s:?}")
            })?;
            let percent: i64 = digits.parse().map_err(|e| format!("invalid value for IntOrString: {s:?}: {e}"))?;
            // Floor division, like math.Floor on the product (also for negative percentages).
            (percent * total as i64).div_euclid(100)
        }
    };
    Ok(if scaled == 0 { 1 } else { scaled })
}

/// The nodes (names) to target at `target` now: at most `maxUnavailable` minus the pool's unavailable nodes minus
/// its nodes failing on `target`; chosen among the ready nodes not yet targeting `target`, zone by zone, oldest
/// first (ties by name).
pub fn next_targets(nodes: &[&Node], target: &str, max_unavailable: i64) -> Vec<String> {
    let unavailable = nodes.iter().filter(|n| is_unavailable(n)).count() as i64;
    if unavailable >= max_unavailable {
        return Vec::new();
    }
    let mut capacity = max_unavailable - unavailable;
    let failing_this_config = nodes.iter().filter(|n| desired_config(n) == target && is_failing(n)).count() as i64;
    if failing_this_config >= capacity {
        return Vec::new();
    }
    capacity -= failing_this_config;
    let mut candidates: Vec<&Node> =
        nodes.iter().copied().filter(|n| desired_config(n) != target && is_ready(n)).collect();
    candidates.sort_by(|a, b| update_order(a, b));
    candidates.into_iter().take(capacity as usize).filter_map(|n| n.metadata.name.clone()).collect()
}

/// Nodes with a zone first, by zone; then by age, oldest first; then by name.
fn update_order(a: &Node, b: &Node) -> Ordering {
    let zone = |n: &Node| n.metadata.labels.as_ref().and_then(|l| l.get(ZONE_LABEL)).cloned();
    let by_zone = match (zone(a), zone(b)) {
        (Some(za), Some(zb)) => za.cmp(&zb),
        (Some(_), None) => Ordering::Less,
        (None, Some(_)) => Ordering::Greater,
        (None, None) => Ordering::Equal,
    };
    let created = |n: &Node| n.metadata.creation_timestamp.as_ref().map(|t| t.0);
    by_zone.then_with(|| created(a).cmp(&created(b))).then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_state::tests::{cordoned, node};
    use crate::node_state::{STATE_DEGRADED, STATE_DONE, STATE_WORKING};

    #[test]
    fn max_unavailable_is_an_int_or_a_floored_percentage_and_never_zero() {
        assert_eq!(max_unavailable(None, 10), Ok(1));
        assert_eq!(max_unavailable(Some(&IntOrString::Int(3)), 10), Ok(3));
        assert_eq!(max_unavailable(Some(&IntOrString::Int(0)), 10), Ok(1));
        assert_eq!(max_unavailable(Some(&IntOrString::String("50%".into())), 5), Ok(2));
        assert_eq!(max_unavailable(Some(&IntOrString::String("10%".into())), 5), Ok(1), "0 means 1");
        assert_eq!(max_unavailable(Some(&IntOrString::String("100%".into())), 7), Ok(7));
        assert!(max_unavailable(Some(&IntOrString::String("2".into())), 5).is_err());
        assert!(max_unavailable(Some(&IntOrString::String("x%".into())), 5).is_err());
    }

    #[test]
    fn targets_fill_the_room_left_by_unavailable_nodes() {
        let a = node("a", "old", "old", STATE_DONE);
        let b = node("b", "old", "old", STATE_DONE);
        let c = node("c", "old", "old", STATE_DONE);
        let d = node("d", "new", "new", STATE_DONE);
        assert_eq!(next_targets(&[&a, &b, &c, &d], "new", 2), ["a", "b"]);
        let working = cordoned(node("a", "old", "new", STATE_WORKING));
        assert_eq!(next_targets(&[&working, &b, &c, &d], "new", 2), ["b"]);
        assert!(next_targets(&[&working, &b, &c, &d], "new", 1).is_empty());
        assert!(next_targets(&[&d], "new", 1).is_empty(), "nothing left to update");
    }

    #[test]
    fn a_node_that_was_targeted_but_has_not_started_still_counts() {
        let targeted = node("a", "old", "new", STATE_DONE);
        let b = node("b", "old", "old", STATE_DONE);
        assert!(next_targets(&[&targeted, &b], "new", 1).is_empty());
    }

    #[test]
    fn a_node_failing_on_the_target_blocks_further_updates() {
        let failed = node("a", "old", "new", STATE_DEGRADED);
        let b = node("b", "old", "old", STATE_DONE);
        let c = node("c", "old", "old", STATE_DONE);
        assert!(next_targets(&[&failed, &b, &c], "new", 1).is_empty());
        assert_eq!(next_targets(&[&failed, &b, &c], "new", 2), ["b"]);
        let failed_cordoned = cordoned(node("a", "old", "new", STATE_DEGRADED));
        assert!(next_targets(&[&failed_cordoned, &b, &c], "new", 2).is_empty(), "cordoned and failing: counted twice");
    }

    #[test]
    fn nodes_not_yet_targeted_carry_the_update_taint() {
        let behind = node("a", "old", "old", STATE_DONE);
        assert!(wants_update_taint(&behind, "new"));
        let targeted = node("a", "old", "new", STATE_WORKING);
        assert!(!wants_update_taint(&targeted, "new"), "removed once targeted, before the update ends");
        let tainted = with_update_taint(behind, true);
        assert!(has_update_taint(&tainted));
        assert!(has_update_taint(&with_update_taint(tainted.clone(), true)), "added once");
        assert_eq!(tainted.spec.as_ref().and_then(|s| s.taints.as_ref()).map(Vec::len), Some(1));
        assert!(!has_update_taint(&with_update_taint(tainted, false)));
    }

    #[test]
    fn cordoned_nodes_are_not_chosen_and_zones_go_first() {
        let mut z2 = node("a", "old", "old", STATE_DONE);
        z2.metadata.labels = Some([(ZONE_LABEL.to_string(), "z2".to_string())].into());
        let mut z1 = node("b", "old", "old", STATE_DONE);
        z1.metadata.labels = Some([(ZONE_LABEL.to_string(), "z1".to_string())].into());
        let plain = node("c", "old", "old", STATE_DONE);
        assert_eq!(next_targets(&[&plain, &z2, &z1], "new", 3), ["b", "a", "c"]);
        let held = cordoned(node("c", "old", "old", STATE_DONE));
        assert_eq!(next_targets(&[&held, &z2, &z1], "new", 3), ["b", "a"], "a cordoned node is skipped and counts");
    }
}
