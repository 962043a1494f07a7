//! A drain's end wakes the run config upgrading that node, so that numo records the node's `drainedAt` and tells
//! `NodeDrained` while the node reboots. Nothing numo decides waits on it (it is shown, and it splits a measured
//! upgrade into its drain and its reboot), so the wake comes [`LATE_BY`] after the drain ended, and only when no
//! reconcile in that time recorded the drain already. In a busy rollout (tens of nodes in flight, a reconcile every
//! few hundred milliseconds for the other nodes' Jobs and updates) the drain is recorded by one of those instead of
//! costing a reconcile of its own; with one node in flight it is recorded a second later.

use std::time::Duration;

use futures::{Stream, StreamExt};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use kube::ResourceExt;

use crate::api::{MutexRunConfig, NodePhase};
use crate::guard::Guarded;
use crate::openshift::MachineConfigNode;

/// How long a drain's wake waits for another reconcile to record the drain.
pub const LATE_BY: Duration = Duration::from_secs(1);

/// At most this many drain wakes wait at once (a rollout of every node at once, on the largest clusters).
const WAITING: usize = 4096;

/// A drain that ended: the node, and when (the `Drained` condition's time, as numo records it); no time for a
/// MachineConfigNode numo cannot decode, which wakes every run config.
#[derive(Clone, Debug, PartialEq)]
struct Drain {
    node: String,
    at: Option<k8s_openapi::jiff::Timestamp>,
}

/// The wakes of the run configs upgrading the nodes whose drain ended, each [`LATE_BY`] after the MachineConfigNode
/// event that told it, and only for the run configs whose status does not record that drain by then. `drains` are
/// the MachineConfigNode events that passed `predicates::drain_predicate`; one numo cannot decode wakes every run
/// config, as late.
pub fn late<S>(
    drains: S,
    run_configs: Store<Guarded<MutexRunConfig>>,
) -> impl Stream<Item = ObjectRef<Guarded<MutexRunConfig>>>
where
    S: Stream<Item = Result<Guarded<MachineConfigNode>, watcher::Error>> + Send + 'static,
{
    drains
        .filter_map(|event| std::future::ready(event.ok().and_then(|progress| drain_of(&progress))))
        .map(|drain| async move {
            tokio::time::sleep(LATE_BY).await;
            drain
        })
        .buffer_unordered(WAITING)
        .flat_map(move |drain| {
            let woken: Vec<_> = run_configs
                .state()
                .iter()
                .filter(|rc| match &rc.0 {
                    Ok(rc) => unrecorded(rc, &drain),
                    // One numo cannot decode is woken, so that its status says why.
                    Err(_) => true,
                })
                .map(|rc| ObjectRef::from_obj(rc.as_ref()))
                .collect();
            futures::stream::iter(woken)
        })
}

/// The drain a MachineConfigNode tells, when it tells one that ended (`Drained=True`), or that it cannot be read.
fn drain_of(progress: &Guarded<MachineConfigNode>) -> Option<Drain> {
    let Some(decoded) = progress.decoded() else { return Some(Drain { node: progress.name_any(), at: None }) };
    let drained = decoded.condition(crate::openshift::machine_config_node::DRAINED).filter(|c| c.status == "True")?;
    Some(Drain { node: progress.name_any(), at: Some(drained.last_transition_time.0) })
}

/// Whether `rc` upgrades the drained node and its status does not record that drain yet.
fn unrecorded(rc: &MutexRunConfig, drain: &Drain) -> bool {
    let Some(drained) = drain.at else { return true };
    let entry = rc.status.as_ref().and_then(|s| s.nodes.iter().find(|n| n.name == drain.node));
    entry.is_some_and(|e| e.phase == NodePhase::Upgrading && e.drained_at.as_ref().is_none_or(|at| at.0 < drained))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run_config(phase: &str, drained_at: Option<&str>) -> MutexRunConfig {
        let mut entry = json!({"name": "worker-0", "phase": phase});
        if let Some(at) = drained_at {
            entry["drainedAt"] = at.into();
        }
        serde_json::from_value(json!({
            "apiVersion": "openshift-optional.skrzypek.io/v1alpha1", "kind": "MutexRunConfig",
            "metadata": {"name": "rc", "namespace": "ops"},
            "spec": {"canary": {"name": "canary"}, "mutexRules": [], "mutexTargets": []},
            "status": {"nodes": [entry]}
        }))
        .expect("a run config")
    }

    fn drain(at: &str) -> Drain {
        Drain { node: "worker-0".into(), at: Some(at.parse().expect("a time")) }
    }

    #[test]
    fn a_drain_wakes_only_the_run_config_upgrading_the_node_that_has_not_recorded_it() {
        let at = "2026-11-27T10:01:00Z";
        assert!(unrecorded(&run_config("Upgrading", None), &drain(at)), "not recorded yet");
        assert!(!unrecorded(&run_config("Upgrading", Some(at)), &drain(at)), "another reconcile recorded it");
        let earlier = "2026-11-27T09:00:00Z";
        assert!(unrecorded(&run_config("Upgrading", Some(earlier)), &drain(at)), "an earlier drain recorded");
        assert!(!unrecorded(&run_config("CleaningUp", None), &drain(at)), "the node is past its upgrade");
        let other = Drain { node: "worker-1".into(), ..drain(at) };
        assert!(!unrecorded(&run_config("Upgrading", None), &other), "another node");
        let unreadable = Drain { node: "worker-1".into(), at: None };
        assert!(unrecorded(&run_config("CleaningUp", None), &unreadable), "one numo cannot read wakes every one");
    }
}
