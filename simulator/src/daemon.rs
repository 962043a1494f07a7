//! The simulated machine-config daemon: one task per node update, started when a node's `desiredConfig` differs
//! from its `currentConfig` (or its state is not Done). Like the real daemon it reads the node and both rendered
//! configs from the API, sets `state=Working`, cordons, drains (a timer: no pod is evicted), "reboots" (a timer),
//! then writes `currentConfig`, `state=Done` and uncordons. With the storage world ([`crate::storage`]) the drain
//! first evicts the node's OSD pods through the Eviction API, waiting while a PodDisruptionBudget refuses. It labels nothing: a node's release is read from its
//! current rendered config (or from the label of the NFD stand-in, [`crate::nfd`]). When the two rendered configs
//! have the same content there is nothing to reboot for: no cordon, no drain, no wait (a rebootless update). Like
//! the real daemon (a DaemonSet for `kubernetes.io/os: linux`), it never runs on Windows nodes.
//!
//! On a release that has them ([`crate::OpenShiftRelease::writes_machine_config_nodes`]) it also writes the node's
//! MachineConfigNode at each stage, as the daemon and the drain controller ([`crate::machine_config_nodes::steps`]);
//! those writes never change the node's annotations or timing beyond their own requests, and never fail the update.
//!
//! Faults ([`crate::faults`]) are read from the node at the moment they matter, so a test that annotates a node
//! before releasing it never races the simulator.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use anyhow::Context as _;
use k8s_openapi::api::core::v1::Node;
use kube::api::{Api, Patch, PatchParams};
use numo::openshift::{MachineConfig, CURRENT_CONFIG, DESIRED_CONFIG, MCD_REASON, MCD_STATE};
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::faults;
use crate::machine_config_nodes::steps::{steps, Stage, Update};
use crate::machine_config_nodes::{MachineConfigNodes, NodeReport};
use crate::membership::is_windows;
use crate::node_state::{self, STATE_DEGRADED, STATE_DONE, STATE_UNRECONCILABLE, STATE_WORKING};
use crate::platform::FIELD_MANAGER;
use crate::reconcile::reason_prefix;
use crate::record::{self, Reboot, SharedRecord};

/// How an update ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The node needed nothing.
    Nothing,
    /// The node now runs `config`.
    Updated {
        /// The rendered config applied.
        config: String,
    },
    /// The update to `config` failed; the node is Degraded.
    Failed {
        /// The rendered config that could not be applied.
        config: String,
    },
}

/// Whether the daemon has work on `node`: a desired config is set and differs from the current one, or the state
/// is not Done; a node Degraded by the fail-update fault waits until the fault is removed. No daemon runs on a
/// Windows node.
pub fn has_work(node: &Node) -> bool {
    let desired = node_state::desired_config(node);
    if desired.is_empty() || is_windows(node) {
        return false;
    }
    let state = node_state::state(node);
    let annotations = node.metadata.annotations.clone().unwrap_or_default();
    if matches!(state, STATE_DEGRADED | STATE_UNRECONCILABLE) && faults::fails_updates(&annotations) {
        return false;
    }
    // Found unreconcilable: the same move fails the same way until the desired config changes.
    let current = node_state::current_config(node);
    if state == STATE_UNRECONCILABLE && node_state::reason(node).starts_with(&reason_prefix(current, desired)) {
        return false;
    }
    desired != node_state::current_config(node) || state != STATE_DONE
}

/// Whether moving a node from `source` (its current rendered config, if it still exists) to `target` needs no
/// reboot: their content is equal, whatever their names (two pools' rendered configs of equal content), as the
/// real daemon finds an empty diff.
pub fn is_rebootless(source: Option<&MachineConfig>, target: &MachineConfig) -> bool {
    source.is_some_and(|s| s.spec == target.spec)
}

/// What the daemons of a simulator work with.
#[derive(Clone)]
pub struct Context {
    /// The client of the daemon's node and MachineConfig reads and node writes.
    pub client: kube::Client,
    /// How long drains and reboots take unless a node says otherwise ([`faults::drain_time`],
    /// [`faults::reboot_time`]).
    pub timing: Timing,
    /// The MachineConfigNode writers, on a release that has them.
    pub machine_config_nodes: Option<MachineConfigNodes>,
    /// The drain controller's evictions of OSD pods, when the storage world is played ([`crate::storage`]).
    pub drainer: Option<crate::storage::drain::Drainer>,
    /// Where the reboots are recorded ([`crate::record`]).
    pub record: SharedRecord,
}

/// The default drain and reboot times.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Timing {
    /// After the cordon ([`crate::SimConfig::drain`]).
    pub drain: Duration,
    /// After the drain ([`crate::SimConfig::reboot`]).
    pub reboot: Duration,
}

/// Runs one update of node `name`, whose primary pool is `pool`.
pub async fn update(context: Context, name: String, pool: Option<String>) -> anyhow::Result<Outcome> {
    let nodes: Api<Node> = Api::all(context.client.clone());
    let configs: Api<MachineConfig> = Api::all(context.client.clone());
    let node = nodes.get(&name).await.with_context(|| format!("reading node {name}"))?;
    if !has_work(&node) {
        return Ok(Outcome::Nothing);
    }
    let current = node_state::current_config(&node).to_string();
    let desired = node_state::desired_config(&node).to_string();
    let was_cordoned = node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false);
    let recovering = matches!(node_state::state(&node), STATE_DEGRADED | STATE_UNRECONCILABLE);
    let annotations = node.metadata.annotations.clone().unwrap_or_default();
    let mut report = context.machine_config_nodes.as_ref().and_then(|m| m.report(&node, pool.as_deref()));

    let Some(target) = configs.get_opt(&desired).await.with_context(|| format!("reading MachineConfig {desired}"))?
    else {
        let reason = format!("machineconfig.machineconfiguration.openshift.io \"{desired}\" not found");
        patch(&nodes, &name, degraded(&reason)).await?;
        let plan = Update { node: &name, current: &current, desired: &desired, ..Update::default() };
        reach(&mut report, &plan, Stage::Failed(reason), &current).await;
        return Ok(Outcome::Failed { config: desired });
    };
    let source = match current.as_str() {
        "" => None,
        c => configs.get_opt(c).await.with_context(|| format!("reading MachineConfig {c}"))?,
    };
    let rebootless = is_rebootless(source.as_ref(), &target);
    if let Some(reason) = source.as_ref().and_then(|s| crate::reconcile::unreconcilable_reason(s, &target)) {
        // Nothing is applied: no cordon, no drain, no reboot (`update.go` `update`, `daemon.go` `updateErrorState`).
        tracing::info!(node = %name, %reason, "node update unreconcilable");
        let error = reason.split_once(": ").map(|(_, e)| e.to_string()).unwrap_or_default();
        let plan = Update { node: &name, current: &current, desired: &desired, ..Update::default() };
        reach(&mut report, &plan, Stage::Unreconcilable(error), &current).await;
        let body = json!({"metadata": {"annotations": {MCD_STATE: STATE_UNRECONCILABLE, MCD_REASON: reason}}});
        patch(&nodes, &name, body).await?;
        return Ok(Outcome::Failed { config: desired });
    }
    let failing = faults::fails_updates(&annotations);
    let cordon = !rebootless || failing;
    let plan = Update {
        node: &name,
        current: &current,
        desired: &desired,
        disruptive: cordon,
        os_update: source.as_ref().is_none_or(|s| s.spec.os_image_url != target.spec.os_image_url),
        was_cordoned,
    };

    tracing::info!(node = %name, from = %current, to = %desired, rebootless, "updating node");
    reach(&mut report, &plan, Stage::Start, &current).await;
    if let Some(report) = report.as_mut() {
        report.apply_spec(&desired).await;
    }
    let mut working = json!({"metadata": {"annotations": {MCD_STATE: STATE_WORKING, MCD_REASON: ""}}});
    if cordon {
        working["spec"] = json!({"unschedulable": true});
    }
    patch(&nodes, &name, working).await?;

    // A retry on a node its failed update left cordoned: "drain is already completed on this node" (drain.go).
    let drained_before = cordon && recovering && was_cordoned;
    if !drained_before {
        reach(&mut report, &plan, Stage::DrainStarted, &current).await;
        if cordon {
            if let Some(drainer) = &context.drainer {
                drainer.drain(&name).await;
            }
            tokio::time::sleep_until(Instant::now() + faults::drain_time(&annotations, context.timing.drain)).await;
            reach(&mut report, &plan, Stage::Drained, &current).await;
        }
    }
    reach(&mut report, &plan, Stage::Applying, &current).await;
    // The fault as read at the start fails the update before its files are written; read again after the reboot, it
    // decides the node's state.
    if !failing {
        reach(&mut report, &plan, Stage::Applied, &current).await;
    }
    let reboot = (cordon && !rebootless).then(|| Reboot {
        node: name.clone(),
        at: SystemTime::now(),
        from: current.clone(),
        to: desired.clone(),
        pool: pool.clone(),
    });
    // An update that fails before it writes anything does not reboot into the new config; the one that reboots
    // into it is recorded as it goes down.
    let mut unrecorded = None;
    match reboot {
        Some(reboot) if failing => unrecorded = Some(reboot),
        Some(reboot) => record::with(&context.record, |r| r.reboot(reboot)),
        None => {}
    }
    if cordon {
        let reboot = faults::reboot_time(&annotations, context.timing.reboot);
        tokio::time::sleep_until(Instant::now() + reboot).await;
    }

    let after = nodes.get(&name).await.with_context(|| format!("reading node {name}"))?;
    if faults::fails_updates(after.metadata.annotations.as_ref().unwrap_or(&BTreeMap::new())) {
        let reason =
            format!("failed to update to {desired}: simulated failure ({}=true on the node)", faults::FAIL_UPDATE);
        tracing::info!(node = %name, %reason, "node update failed");
        patch(&nodes, &name, degraded(&reason)).await?;
        reach(&mut report, &plan, Stage::Failed(reason), &current).await;
        return Ok(Outcome::Failed { config: desired });
    }
    if failing {
        // The fault was removed during the reboot: the node came back on the new config after all.
        if let Some(reboot) = unrecorded.take() {
            record::with(&context.record, |r| r.reboot(reboot));
        }
        reach(&mut report, &plan, Stage::Applied, &current).await;
    }
    reach(&mut report, &plan, Stage::Resuming, &current).await;

    let mut done = json!({
        "metadata": {"annotations": {CURRENT_CONFIG: desired, DESIRED_CONFIG: desired, MCD_STATE: STATE_DONE, MCD_REASON: ""}},
    });
    if cordon || (recovering && was_cordoned) {
        done["spec"] = json!({"unschedulable": null});
    }
    patch(&nodes, &name, done).await?;
    reach(&mut report, &plan, Stage::Completed, &desired).await;
    tracing::info!(node = %name, config = %desired, "node updated");
    Ok(Outcome::Updated { config: desired })
}

/// Writes the MachineConfigNode steps of `stage`, the node's `currentConfig` being `current`.
async fn reach(report: &mut Option<NodeReport>, plan: &Update<'_>, stage: Stage, current: &str) {
    if let Some(report) = report.as_mut() {
        report.write(steps(plan, &stage), plan.desired, current).await;
    }
}

fn degraded(reason: &str) -> Value {
    json!({"metadata": {"annotations": {MCD_STATE: STATE_DEGRADED, MCD_REASON: reason}}})
}

async fn patch(nodes: &Api<Node>, name: &str, body: Value) -> anyhow::Result<()> {
    let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..PatchParams::default() };
    nodes.patch(name, &params, &Patch::Merge(&body)).await.with_context(|| format!("patching node {name}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node_state::tests::node;
    use kube::ResourceExt;

    #[test]
    fn the_daemon_works_on_nodes_behind_their_desired_config_or_not_done() {
        assert!(!has_work(&node("a", "r1", "r1", STATE_DONE)));
        assert!(has_work(&node("a", "r1", "r2", STATE_DONE)));
        assert!(has_work(&node("a", "r1", "r2", STATE_WORKING)), "an interrupted update resumes");
        assert!(has_work(&node("a", "r1", "r1", STATE_DEGRADED)), "a degraded node on its config recovers");
        assert!(!has_work(&node("a", "", "", "")), "no desired config: not managed yet");
        let mut unreconcilable = node("a", "r1", "r2", STATE_UNRECONCILABLE);
        let reason = format!("{} configs r1, r2 are not reconcilable: ...", reason_prefix("r1", "r2"));
        unreconcilable.metadata.annotations.as_mut().unwrap().insert(MCD_REASON.into(), reason);
        assert!(!has_work(&unreconcilable), "an unreconcilable move is not tried again");
        unreconcilable.metadata.annotations.as_mut().unwrap().insert(DESIRED_CONFIG.into(), "r1".into());
        assert!(has_work(&unreconcilable), "back to its own config: the daemon reports Done again");
    }

    #[test]
    fn moving_between_rendered_configs_of_equal_content_needs_no_reboot() {
        use crate::render::{render, rendered_config, sources, template_config};
        use numo::openshift::{MachineConfigPool, MachineConfigPoolSpec};
        let pool = |name: &str, roles: serde_json::Value| -> MachineConfigPool {
            let spec: MachineConfigPoolSpec = serde_json::from_value(json!({"machineConfigSelector": {
                "matchExpressions": [{"key": numo::openshift::MC_ROLE, "operator": "In", "values": roles}],
            }}))
            .unwrap();
            MachineConfigPool::new(name, spec)
        };
        let rendered = |p: &MachineConfigPool, version: &str| {
            let configs = [template_config("worker", version)];
            rendered_config(p, &render(p, &sources(p, &configs)).unwrap())
        };
        let (worker, canary) = (pool("worker", json!(["worker"])), pool("canary", json!(["worker", "canary"])));
        let on_worker = rendered(&worker, "4.16.4");
        let on_canary = rendered(&canary, "4.16.4");
        assert_ne!(on_worker.name_any(), on_canary.name_any());
        assert!(is_rebootless(Some(&on_worker), &on_canary), "another pool's name, the same content");
        assert!(!is_rebootless(Some(&on_worker), &rendered(&canary, "4.16.5")), "a new OS image reboots");
        assert!(!is_rebootless(None, &on_canary), "an unknown current config reboots");
    }

    #[test]
    fn no_daemon_runs_on_a_windows_node() {
        let mut n = node("win", "r1", "r2", STATE_DONE);
        n.labels_mut().insert("kubernetes.io/os".into(), "windows".into());
        assert!(!has_work(&n));
        n.labels_mut().insert("kubernetes.io/os".into(), "linux".into());
        assert!(has_work(&n));
    }

    #[test]
    fn a_node_failed_by_the_fault_waits_until_the_fault_is_removed() {
        let mut n = node("a", "r1", "r2", STATE_DEGRADED);
        n.metadata.annotations.as_mut().unwrap().insert(faults::FAIL_UPDATE.into(), "true".into());
        assert!(!has_work(&n));
        n.metadata.annotations.as_mut().unwrap().remove(faults::FAIL_UPDATE);
        assert!(has_work(&n), "the daemon retries");
    }
}
