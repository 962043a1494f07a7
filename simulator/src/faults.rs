//! Fault injection: node annotations that make the simulated machine-config daemon misbehave, so tests (and the CLI,
//! through `kubectl annotate`) can show what numo does when an upgrade goes wrong.
//!
//! | annotation | effect |
//! | --- | --- |
//! | [`FAIL_UPDATE`]` = "true"` | the node's next update ends in state `Degraded` with a reason, cordoned, on its old config |
//! | [`REBOOT_SECONDS`]` = "30"` | the node's updates "reboot" this many seconds (fractions allowed) instead of [`crate::SimConfig::reboot`] |
//!
//! Removing [`FAIL_UPDATE`] from a Degraded node makes the daemon retry the update, as the real one retries.

use std::collections::BTreeMap;
use std::time::Duration;

/// Node annotation: `"true"` makes the node's updates fail (state `Degraded`, cordoned, old config kept).
pub const FAIL_UPDATE: &str = "sim.numo.openshift-optional.skrzypek.io/fail-update";
/// Node annotation: the node's simulated reboot time in seconds (e.g. `"30"` or `"0.5"`), a slow node.
pub const REBOOT_SECONDS: &str = "sim.numo.openshift-optional.skrzypek.io/reboot-seconds";

/// Whether the node's updates are set to fail.
pub fn fails_updates(annotations: &BTreeMap<String, String>) -> bool {
    annotations.get(FAIL_UPDATE).is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
}

/// How long the node's updates "reboot": its [`REBOOT_SECONDS`] annotation when that is a non-negative number of
/// seconds, else `default`.
pub fn reboot_time(annotations: &BTreeMap<String, String>, default: Duration) -> Duration {
    annotations
        .get(REBOOT_SECONDS)
        .and_then(|v| v.trim().parse::<f64>().ok())
        .and_then(|secs| Duration::try_from_secs_f64(secs).ok())
        .unwrap_or(default)
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
}
