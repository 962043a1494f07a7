//! A MachineConfigPool's status as the MCO computes it (`calculateStatus` of the node controller, plus the render
//! controller's `RenderDegraded`): machine counts, conditions, and `status.configuration`, which moves to the pool's
//! target only once every machine is updated and ready.

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use numo::openshift::{MachineConfigPool, MachineConfigPoolCondition, MachineConfigPoolStatus, RenderedConfiguration};

use crate::membership::MultipleCustomPools;
use crate::node_state::{is_degraded, is_ready, is_unavailable, is_updated, reason};

/// Condition: every machine runs the target config and is ready.
pub const UPDATED: &str = "Updated";
/// Condition: an unpaused pool has machines not yet on the target config.
pub const UPDATING: &str = "Updating";
/// Condition: the pool cannot make progress (a node failed, rendering failed, or membership is ambiguous).
pub const DEGRADED: &str = "Degraded";
/// Condition: at least one node's daemon reports Degraded or Unreconcilable.
pub const NODE_DEGRADED: &str = "NodeDegraded";
/// Condition: the pool's configuration cannot be rendered.
pub const RENDER_DEGRADED: &str = "RenderDegraded";

/// What a pool's status is computed from.
#[derive(Clone, Copy, Debug)]
pub struct Inputs<'a> {
    /// The pool (generation, `paused`, current status).
    pub pool: &'a MachineConfigPool,
    /// The rendered config the pool targets (`spec.configuration.name`), if rendering ever succeeded.
    pub target: Option<&'a str>,
    /// The nodes the pool manages.
    pub members: &'a [&'a Node],
    /// Nodes the pool matches together with other custom pools.
    pub conflicts: &'a [MultipleCustomPools],
    /// Why rendering failed, if it did.
    pub render_error: Option<&'a str>,
}

/// The machine counts of a pool.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Nodes in the pool.
    pub machines: i32,
    /// Nodes Done on the target config.
    pub updated: i32,
    /// Updated nodes that are ready.
    pub ready: i32,
    /// Nodes not ready or working towards a config.
    pub unavailable: i32,
    /// Nodes whose daemon is Degraded or Unreconcilable.
    pub degraded: i32,
}

/// Counts the machines of a pool targeting `target`.
pub fn counts(members: &[&Node], target: &str) -> Counts {
    let count = |f: &dyn Fn(&Node) -> bool| members.iter().filter(|n| f(n)).count() as i32;
    Counts {
        machines: members.len() as i32,
        updated: count(&|n| is_updated(n, target)),
        ready: count(&|n| is_updated(n, target) && is_ready(n)),
        unavailable: count(&|n| is_unavailable(n)),
        degraded: count(&|n| is_degraded(n)),
    }
}

/// The pool's status now, keeping each condition's `lastTransitionTime` unless its status flips.
pub fn compute(inputs: Inputs<'_>, now: &Time) -> MachineConfigPoolStatus {
    let existing = inputs.pool.status.clone().unwrap_or_default();
    let target = inputs.target.unwrap_or_default();
    let c = counts(inputs.members, target);
    let mut status = MachineConfigPoolStatus {
        observed_generation: inputs.pool.metadata.generation.unwrap_or_default(),
        configuration: existing.configuration.clone(),
        machine_count: c.machines,
        updated_machine_count: c.updated,
        ready_machine_count: c.ready,
        unavailable_machine_count: c.unavailable,
        degraded_machine_count: c.degraded,
        conditions: existing.conditions.clone(),
    };
    let mut set = |type_: &str, holds: bool, reason: String, message: String| {
        set_condition(&mut status.conditions, type_, holds, reason, message, now);
    };

    match inputs.render_error {
        Some(err) => {
            let name = inputs.pool.metadata.name.as_deref().unwrap_or_default();
            set(RENDER_DEGRADED, true, String::new(), format!("Failed to render configuration for pool {name}: {err}"));
        }
        None => set(RENDER_DEGRADED, false, String::new(), String::new()),
    }

    let all_updated = inputs.target.is_some() && c.updated == c.machines && c.ready == c.machines && c.unavailable == 0;
    if all_updated {
        set(UPDATED, true, String::new(), format!("All nodes are updated with MachineConfig {target}"));
        set(UPDATING, false, String::new(), String::new());
    } else {
        set(UPDATED, false, String::new(), String::new());
        if inputs.target.is_none() {
            set(UPDATING, false, String::new(), String::new());
        } else if inputs.pool.spec.paused {
            set(UPDATING, false, String::new(), format!("Pool is paused; will not update to MachineConfig {target}"));
        } else {
            set(UPDATING, true, String::new(), format!("All nodes are updating to MachineConfig {target}"));
        }
    }

    let degraded_nodes: Vec<&&Node> = inputs.members.iter().filter(|n| is_degraded(n)).collect();
    let node_degraded_message = degraded_nodes
        .iter()
        .filter(|n| !reason(n).is_empty())
        .map(|n| format!("Node {} is reporting: {:?}", n.metadata.name.as_deref().unwrap_or_default(), reason(n)))
        .collect::<Vec<_>>()
        .join(", ");
    if degraded_nodes.is_empty() {
        set(NODE_DEGRADED, false, String::new(), String::new());
    } else {
        let reason = format!("{} nodes are reporting degraded status on sync", degraded_nodes.len());
        set(NODE_DEGRADED, true, reason, node_degraded_message.clone());
    }

    let conflict_message = inputs.conflicts.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
    if !degraded_nodes.is_empty() {
        set(DEGRADED, true, String::new(), node_degraded_message);
    } else if !inputs.conflicts.is_empty() {
        set(DEGRADED, true, String::new(), conflict_message);
    } else if inputs.render_error.is_some() {
        set(DEGRADED, true, String::new(), String::new());
    } else {
        set(DEGRADED, false, String::new(), String::new());
    }

    if all_updated {
        // As the MCO reports it: the rendered config with the MachineConfigs it was merged from.
        let source = (inputs.pool.spec.configuration.as_ref())
            .filter(|c| c.name.as_deref() == Some(target))
            .map(|c| c.source.clone())
            .unwrap_or_default();
        status.configuration = Some(RenderedConfiguration { name: Some(target.to_string()), source });
    }
    status
}

/// Sets condition `type_` in place (appended when new); `lastTransitionTime` moves only when the status flips.
fn set_condition(
    conditions: &mut Vec<MachineConfigPoolCondition>,
    type_: &str,
    holds: bool,
    reason: String,
    message: String,
    now: &Time,
) {
    let status = if holds { "True" } else { "False" }.to_string();
    let wanted = |last_transition_time| MachineConfigPoolCondition {
        type_: type_.to_string(),
        status: status.clone(),
        last_transition_time,
        reason: Some(reason.clone()),
        message: Some(message.clone()),
    };
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) if existing.status == status => *existing = wanted(existing.last_transition_time.clone()),
        Some(existing) => *existing = wanted(Some(now.clone())),
        None => conditions.push(wanted(Some(now.clone()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_state::tests::{cordoned, node};
    use crate::node_state::{STATE_DEGRADED, STATE_DONE, STATE_WORKING};
    use k8s_openapi::jiff::Timestamp;
    use numo::openshift::{MachineConfigPoolSpec, MCD_REASON};

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).unwrap_or_default())
    }

    fn pool(paused: bool) -> MachineConfigPool {
        let mut p =
            MachineConfigPool::new("worker", MachineConfigPoolSpec { paused, ..MachineConfigPoolSpec::default() });
        p.metadata.generation = Some(3);
        p
    }

    fn inputs<'a>(pool: &'a MachineConfigPool, members: &'a [&'a Node]) -> Inputs<'a> {
        Inputs { pool, target: Some("new"), members, conflicts: &[], render_error: None }
    }

    fn condition<'a>(s: &'a MachineConfigPoolStatus, type_: &str) -> &'a MachineConfigPoolCondition {
        s.conditions.iter().find(|c| c.type_ == type_).unwrap()
    }

    #[test]
    fn an_updated_pool_reports_every_count_and_moves_its_configuration() {
        let a = node("a", "new", "new", STATE_DONE);
        let b = node("b", "new", "new", STATE_DONE);
        let mut p = pool(false);
        p.spec.configuration = Some(RenderedConfiguration {
            name: Some("new".into()),
            source: vec![numo::openshift::ConfigSource::machine_config("00-worker")],
        });
        let s = compute(inputs(&p, &[&a, &b]), &at(10));
        assert_eq!(
            (s.machine_count, s.updated_machine_count, s.ready_machine_count, s.unavailable_machine_count),
            (2, 2, 2, 0)
        );
        assert_eq!(s.observed_generation, 3);
        assert_eq!(s.configuration.as_ref().and_then(|c| c.name.as_deref()), Some("new"));
        // With the MachineConfigs it was merged from, as the MCO reports them.
        assert_eq!(s.configuration.as_ref().map(|c| c.source_names()), Some(vec!["00-worker".to_string()]));
        assert_eq!(condition(&s, UPDATED).status, "True");
        assert_eq!(condition(&s, UPDATED).message.as_deref(), Some("All nodes are updated with MachineConfig new"));
        assert_eq!(condition(&s, UPDATING).status, "False");
        assert_eq!(condition(&s, DEGRADED).status, "False");
    }

    #[test]
    fn a_rolling_pool_is_updating_and_keeps_its_old_configuration() {
        let mut p = pool(false);
        p.status = Some(MachineConfigPoolStatus {
            configuration: Some(RenderedConfiguration { name: Some("old".into()), ..Default::default() }),
            ..MachineConfigPoolStatus::default()
        });
        let a = cordoned(node("a", "old", "new", STATE_WORKING));
        let b = node("b", "new", "new", STATE_DONE);
        let c = node("c", "old", "old", STATE_DONE);
        let s = compute(inputs(&p, &[&a, &b, &c]), &at(10));
        assert_eq!((s.updated_machine_count, s.ready_machine_count, s.unavailable_machine_count), (1, 1, 1));
        assert_eq!(s.configuration.as_ref().and_then(|c| c.name.as_deref()), Some("old"));
        assert_eq!(condition(&s, UPDATED).status, "False");
        assert_eq!(condition(&s, UPDATING).status, "True");
    }

    #[test]
    fn a_paused_pool_behind_its_target_is_not_updating() {
        let a = node("a", "old", "old", STATE_DONE);
        let p = pool(true);
        let s = compute(inputs(&p, &[&a]), &at(10));
        assert_eq!(condition(&s, UPDATED).status, "False");
        assert_eq!(condition(&s, UPDATING).status, "False");
        assert_eq!(
            condition(&s, UPDATING).message.as_deref(),
            Some("Pool is paused; will not update to MachineConfig new")
        );
    }

    #[test]
    fn a_node_on_another_pools_config_of_equal_content_is_not_updated() {
        // The MCO compares names: equal hashes in other pools' names do not make a node updated.
        let mut p = pool(true);
        p.status = Some(MachineConfigPoolStatus {
            configuration: Some(RenderedConfiguration {
                name: Some("rendered-worker-abc".into()),
                ..Default::default()
            }),
            ..MachineConfigPoolStatus::default()
        });
        let a = node("a", "rendered-worker-abc", "rendered-worker-abc", STATE_DONE);
        let s = compute(Inputs { target: Some("rendered-canary-abc"), ..inputs(&p, &[&a]) }, &at(10));
        assert_eq!(counts(&[&a], "rendered-canary-abc").updated, 0);
        assert_eq!((s.machine_count, s.updated_machine_count, s.ready_machine_count), (1, 0, 0));
        assert_eq!(condition(&s, UPDATED).status, "False");
        assert_eq!(s.configuration.as_ref().and_then(|c| c.name.as_deref()), Some("rendered-worker-abc"));
    }

    #[test]
    fn a_failed_node_degrades_the_pool_with_its_reason() {
        let mut failed = cordoned(node("a", "old", "new", STATE_DEGRADED));
        failed.metadata.annotations.as_mut().unwrap().insert(MCD_REASON.into(), "disk on fire".into());
        let p = pool(false);
        let s = compute(inputs(&p, &[&failed]), &at(10));
        assert_eq!((s.degraded_machine_count, s.unavailable_machine_count), (1, 1));
        let nd = condition(&s, NODE_DEGRADED);
        assert_eq!(nd.status, "True");
        assert_eq!(nd.reason.as_deref(), Some("1 nodes are reporting degraded status on sync"));
        assert_eq!(nd.message.as_deref(), Some("Node a is reporting: \"disk on fire\""));
        assert_eq!(condition(&s, DEGRADED).message, nd.message);
    }

    #[test]
    fn ambiguous_membership_and_render_failures_degrade_the_pool() {
        let p = pool(false);
        let conflict = MultipleCustomPools { node: "w-1".into(), pools: vec!["a".into(), "b".into()] };
        let s = compute(Inputs { conflicts: &[conflict], ..inputs(&p, &[]) }, &at(10));
        assert_eq!(condition(&s, DEGRADED).status, "True");
        assert_eq!(
            condition(&s, DEGRADED).message.as_deref(),
            Some("node w-1 belongs to 2 custom roles, cannot proceed with this Node")
        );
        let s = compute(Inputs { target: None, render_error: Some("no configs"), ..inputs(&p, &[]) }, &at(10));
        assert_eq!(condition(&s, RENDER_DEGRADED).status, "True");
        assert_eq!(condition(&s, DEGRADED).status, "True");
        assert_eq!(condition(&s, UPDATED).status, "False");
    }

    #[test]
    fn transition_times_move_only_on_flips() {
        let a = node("a", "new", "new", STATE_DONE);
        let mut p = pool(false);
        let first = compute(inputs(&p, &[&a]), &at(10));
        p.status = Some(first.clone());
        let same = compute(inputs(&p, &[&a]), &at(20));
        assert_eq!(same, first, "nothing changed, nothing to write");
        let behind = node("a", "old", "old", STATE_DONE);
        let flipped = compute(inputs(&p, &[&behind]), &at(30));
        assert_eq!(condition(&flipped, UPDATED).last_transition_time, Some(at(30)));
        assert_eq!(condition(&flipped, DEGRADED).last_transition_time, Some(at(10)));
    }
}
