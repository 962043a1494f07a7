//! Other operators that pause pools around their own drains and take turns with numo: the SR-IOV network operator
//! (openshift/sriov-network-operator `pkg/orchestrator/openshift/openshift.go`, `BeforeDrainNode` and
//! `AfterCompleteDrainNode`). One owner of its format: its pool annotation is read here and nowhere else.
//!
//! SR-IOV annotates the pool of the node it drains [`SRIOV_STATE`]` = `[`SRIOV_PAUSED`] and sets `spec.paused: true`
//! (also on a pool already paused), drains, then sets `spec.paused: false` and the annotation `Idle`. So a pool that
//! is paused and says [`SRIOV_PAUSED`] is SR-IOV's hold, which ends by itself; numo waits for it
//! (docs/install.md, "Other operators that pause pools").

use std::collections::BTreeMap;

/// SR-IOV's annotation on a pool it pauses (`consts.MachineConfigPoolPausedAnnotation`).
pub const SRIOV_STATE: &str = "sriovnetwork.openshift.io/state";
/// [`SRIOV_STATE`] while SR-IOV holds the pool paused (`consts.MachineConfigPoolPausedAnnotationPaused`).
pub const SRIOV_PAUSED: &str = "Paused";
/// The user SR-IOV's drain controller runs as: ServiceAccount `sriov-network-operator` in
/// `openshift-sriov-network-operator` (its `config/manager/manager.yaml`, `deploy/operator.yaml`).
pub const SRIOV_USER: &str = "system:serviceaccount:openshift-sriov-network-operator:sriov-network-operator";
/// How numo names SR-IOV to an admin.
pub const SRIOV: &str = "the SR-IOV network operator";

/// Whether a pool's annotations say SR-IOV holds it paused for a drain of its own.
pub fn sriov_holds(annotations: &BTreeMap<String, String>) -> bool {
    annotations.get(SRIOV_STATE).is_some_and(|v| v == SRIOV_PAUSED)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_paused_is_sriovs_hold() {
        let with = |v: &str| BTreeMap::from([(SRIOV_STATE.to_string(), v.to_string())]);
        assert!(sriov_holds(&with("Paused")));
        assert!(!sriov_holds(&with("Idle")));
        assert!(!sriov_holds(&BTreeMap::new()));
    }
}
