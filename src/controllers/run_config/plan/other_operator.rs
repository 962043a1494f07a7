//! Whether another operator waits for numo: the SR-IOV network operator paused a target pool numo holds, for its
//! drain of one of the pool's nodes (openshift/sriov-network-operator `pkg/orchestrator/openshift/openshift.go`,
//! `BeforeDrainNode`), and its unpause (`AfterCompleteDrainNode`) would release held nodes into a new config the
//! pool has pending: numo's admission policy refuses it, and SR-IOV retries, with a growing backoff, until numo
//! restores the pool. Its drain slot (one node at a time by default) stays taken meanwhile. numo says so (condition
//! [`condition::OTHER_OPERATOR_WAITS`], an Event) with what it costs and when numo expects to be done; it changes
//! nothing: SR-IOV's hold is not numo's to end (docs/install.md, "Other operators that pause pools next to numo").

use super::stage::condition;
use super::Notice;
use crate::api::MutexRunConfigStatus;
use crate::controllers::run_config::snapshot::Snapshot;
use crate::taking_turns::SRIOV;

/// Why SR-IOV waits for numo, as the condition's message; None when it does not.
pub fn waiting(snapshot: &Snapshot, status: &MutexRunConfigStatus) -> Option<String> {
    // Without numo's policy in force, SR-IOV's unpause goes through (numo pauses the pool again): it waits for no one.
    if !matches!(snapshot.policy, Some(Ok(()))) {
        return None;
    }
    let owner = snapshot.run_config.key();
    let canary = snapshot.run_config.spec.canary.name.as_str();
    // A target pool numo holds, paused by SR-IOV as well, with a config its nodes do not all run yet: the policy
    // refuses SR-IOV's unpause for as long as numo holds it.
    let pools: Vec<&str> = snapshot
        .pools
        .values()
        .filter(|p| p.name != canary && p.owner() == Some(owner.as_str()) && p.paused && p.sriov_holds && !p.updated)
        .map(|p| p.name.as_str())
        .collect();
    if pools.is_empty() {
        return None;
    }
    let until = match &status.estimate {
        Some(estimate) => format!("numo expects to restore it at {}", estimate.end.0),
        None => "numo has no estimate of when it restores it yet".to_string(),
    };
    Some(format!(
        "{SRIOV} paused MachineConfigPool {pools} for its drain of a node and waits to unpause it: numo's admission \
         policy refuses that unpause while numo holds the pool with a new config pending (it would release held \
         nodes ungated). Its drain slot stays taken, so no other node's SR-IOV configuration proceeds until numo \
         restores the pool ({until}). To let SR-IOV go on sooner, let the rollout finish faster or allow SR-IOV more \
         nodes at once (its SriovNetworkPoolConfig's maxUnavailable); see docs/install.md.",
        pools = pools.join(", "),
    ))
}

/// The Event of a plan that starts saying SR-IOV waits for numo.
pub fn notice(snapshot: &Snapshot, waiting: Option<&String>) -> Option<Notice> {
    let before = crate::conditions::is_true(&snapshot.run_config.status.conditions, condition::OTHER_OPERATOR_WAITS);
    let message = waiting.filter(|_| !before)?;
    Some(Notice::warning("OtherOperatorWaits", "Hold", message.clone()))
}
