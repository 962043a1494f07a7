//! Fault injection: node annotations that make the simulated machine-config daemon misbehave, and ClusterOperator
//! annotations that make a simulated operator report trouble, so tests (and the CLI, through `kubectl annotate`) can
//! show what numo does when an upgrade goes wrong.
//!
//! | object | annotation | effect |
//! | --- | --- | --- |
//! | Node | [`FAIL_UPDATE`]` = "true"` | the node's next update ends in state `Degraded` with a reason, cordoned, on its old config |
//! | Node | [`REBOOT_SECONDS`]` = "30"` | the node's updates "reboot" this many seconds (fractions allowed) instead of [`crate::SimConfig::reboot`] |
//! | Node | [`DRAIN_SECONDS`]` = "30"` | the node's updates drain this many seconds (fractions allowed) after the cordon instead of [`crate::SimConfig::drain`] |
//! | Node | [`SRIOV_RECONFIGURE`]` = "true"` | with [`crate::SimConfig::sriov`]: the SR-IOV network operator wants to reconfigure the node's NICs and pauses its pool around its drain ([`crate::sriov`]); removed once SR-IOV is done |
//! | ClusterOperator | [`DEGRADED`]` = "<message>"` | the operator reports `Degraded=True`, reason [`SIMULATED_FAULT`], the value as message |
//! | ClusterOperator | [`UNAVAILABLE`]` = "<message>"` | the operator reports `Available=False`, reason [`SIMULATED_FAULT`], the value as message |
//!
//! Removing [`FAIL_UPDATE`] from a Degraded node makes the daemon retry the update, as the real one retries.
//! Removing [`DEGRADED`] or [`UNAVAILABLE`] makes the operator report `Degraded=False` or `Available=True` again (a
//! new `lastTransitionTime`); see [`crate::cluster_operators`].

use std::collections::BTreeMap;
use std::time::Duration;

/// Node annotation: `"true"` makes the node's updates fail (state `Degraded`, cordoned, old config kept).
pub const FAIL_UPDATE: &str = "sim.numo.openshift-optional.skrzypek.io/fail-update";
/// Node annotation: the node's simulated reboot time in seconds (e.g. `"30"` or `"0.5"`), a slow node.
pub const REBOOT_SECONDS: &str = "sim.numo.openshift-optional.skrzypek.io/reboot-seconds";
/// Node annotation: the node's simulated drain time in seconds (e.g. `"30"` or `"0.5"`), a node with slow pods.
pub const DRAIN_SECONDS: &str = "sim.numo.openshift-optional.skrzypek.io/drain-seconds";
/// Node annotation: `"true"` makes the SR-IOV network operator drain the node, pausing its pool around the drain
/// ([`crate::sriov`], with [`crate::SimConfig::sriov`]).
pub const SRIOV_RECONFIGURE: &str = "sim.numo.openshift-optional.skrzypek.io/sriov-reconfigure";

/// ClusterOperator annotation: while present, the operator reports `Degraded=True` with this message.
pub const DEGRADED: &str = "sim.numo.openshift-optional.skrzypek.io/degraded";
/// ClusterOperator annotation: while present, the operator reports `Available=False` with this message.
pub const UNAVAILABLE: &str = "sim.numo.openshift-optional.skrzypek.io/unavailable";
/// Reason of the ClusterOperator conditions a fault sets.
pub const SIMULATED_FAULT: &str = "SimulatedFault";

/// The message of a ClusterOperator's [`DEGRADED`] fault, if it has one.
pub fn degraded(annotations: &BTreeMap<String, String>) -> Option<&str> {
    annotations.get(DEGRADED).map(String::as_str)
}

/// The message of a ClusterOperator's [`UNAVAILABLE`] fault, if it has one.
pub fn unavailable(annotations: &BTreeMap<String, String>) -> Option<&str> {
    annotations.get(UNAVAILABLE).map(String::as_str)
}

/// Whether the node's updates are set to fail.
pub fn fails_updates(annotations: &BTreeMap<String, String>) -> bool {
    annotations.get(FAIL_UPDATE).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// Whether the SR-IOV network operator is asked to reconfigure the node ([`SRIOV_RECONFIGURE`]).
pub fn sriov_reconfigure(annotations: &BTreeMap<String, String>) -> bool {
    annotations.get(SRIOV_RECONFIGURE).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// How long the node's updates "reboot": its [`REBOOT_SECONDS`] annotation when that is a non-negative number of
/// seconds, else `default`.
pub fn reboot_time(annotations: &BTreeMap<String, String>, default: Duration) -> Duration {
    seconds(annotations, REBOOT_SECONDS).unwrap_or(default)
}

/// How long the node's updates drain: its [`DRAIN_SECONDS`] annotation when that is a non-negative number of
/// seconds, else `default`.
pub fn drain_time(annotations: &BTreeMap<String, String>, default: Duration) -> Duration {
    seconds(annotations, DRAIN_SECONDS).unwrap_or(default)
}

/// The annotation `key` as a non-negative number of seconds.
fn seconds(annotations: &BTreeMap<String, String>, key: &str) -> Option<Duration> {
    annotations
        .get(key)
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn only_true_fails_updates() {
        assert!(fails_updates(&annotations(&[(FAIL_UPDATE, "true")])));
        assert!(fails_updates(&annotations(&[(FAIL_UPDATE, "True")])));
        assert!(!fails_updates(&annotations(&[(FAIL_UPDATE, "false")])));
        assert!(!fails_updates(&annotations(&[(FAIL_UPDATE, "")])));
        assert!(!fails_updates(&annotations(&[])));
    }

    #[test]
    fn reboot_time_comes_from_the_annotation_when_it_is_a_number() {
        let default = Duration::from_secs(2);
        assert_eq!(reboot_time(&annotations(&[(REBOOT_SECONDS, "30")]), default), Duration::from_secs(30));
        assert_eq!(reboot_time(&annotations(&[(REBOOT_SECONDS, "0.5")]), default), Duration::from_millis(500));
        assert_eq!(reboot_time(&annotations(&[(REBOOT_SECONDS, "-1")]), default), default);
        assert_eq!(reboot_time(&annotations(&[(REBOOT_SECONDS, "slow")]), default), default);
        assert_eq!(reboot_time(&annotations(&[]), default), default);
    }

    #[test]
    fn drain_time_comes_from_its_own_annotation() {
        let default = Duration::ZERO;
        let both = annotations(&[(DRAIN_SECONDS, "1.5"), (REBOOT_SECONDS, "30")]);
        assert_eq!(drain_time(&both, default), Duration::from_millis(1500));
        assert_eq!(reboot_time(&both, default), Duration::from_secs(30));
        assert_eq!(drain_time(&annotations(&[(REBOOT_SECONDS, "30")]), default), default);
        assert_eq!(drain_time(&annotations(&[(DRAIN_SECONDS, "-2")]), default), default);
    }

    #[test]
    fn operator_faults_carry_their_message() {
        let faulted = annotations(&[(DEGRADED, "etcd is sad"), (UNAVAILABLE, "")]);
        assert_eq!(degraded(&faulted), Some("etcd is sad"));
        assert_eq!(unavailable(&faulted), Some(""), "an empty message is still a fault");
        assert_eq!(degraded(&annotations(&[])), None);
        assert_eq!(unavailable(&annotations(&[(FAIL_UPDATE, "true")])), None);
    }
}
