//! The label keys and names numo writes: node rule labels, Job labels and names, pool annotations.
//!
//! A node rule label is `mutexrule.openshift-optional.skrzypek.io/<rule>.<namespace>`, exactly as the Ansible
//! operator wrote it. A label key's name part may hold at most 63 characters; when `<rule>.<namespace>` is longer,
//! numo uses a deterministic short form: the first 52 characters (trailing `-`, `_` and `.` dropped), a `-`, and the
//! first 10 hex digits of the SHA-256 of the full `<rule>.<namespace>`.

use sha2::{Digest, Sha256};

/// Prefix of the node labels that hold a node in its target pool, one per rule.
pub const RULE_LABEL_PREFIX: &str = "mutexrule.openshift-optional.skrzypek.io";
/// Longest name part of a label key.
const MAX_NAME: usize = 63;
/// Characters of the readable part of a shortened name.
const SHORT_KEEP: usize = 52;

/// Node label numo adds to a node it releases, valued with the canary pool's name (label-safe, see
/// [`released_value`]), and takes away when the rollout ends. The steered canary selects only nodes that carry it
/// with its own name, and steered custom target pools only nodes without it: a node leaves its paused pool only on
/// this mark, which only numo adds, so removing any label (this one or the rule labels) can only keep a node where
/// it is.
pub const RELEASED: &str = "openshift-optional.skrzypek.io/released-to";

/// Job label: the run config (`<name>`) that created the Job.
pub const JOB_RUN_CONFIG: &str = "openshift-optional.skrzypek.io/run-config";
/// Job label: the namespace of the run config that created the Job.
pub const JOB_RUN_CONFIG_NAMESPACE: &str = "openshift-optional.skrzypek.io/run-config-namespace";
/// Job label: the node the Job gates.
pub const JOB_NODE: &str = "openshift-optional.skrzypek.io/node";
/// Job label: the rule the Job runs, as a label-safe `<rule>.<namespace>` (shortened like node rule labels).
pub const JOB_RULE: &str = "openshift-optional.skrzypek.io/rule";
/// Job label: `gate` or `cleanup`.
pub const JOB_PHASE: &str = "openshift-optional.skrzypek.io/phase";
/// Job label: the target version the Job was run for.
pub const JOB_TARGET_VERSION: &str = "openshift-optional.skrzypek.io/target-version";
/// Job label: the attempt (1, 2, ...) of this step; a retry creates the next attempt.
pub const JOB_ATTEMPT: &str = "openshift-optional.skrzypek.io/attempt";
/// Job label present on every Job numo creates; the Job watch is filtered on it.
pub const JOB_MANAGED_BY: &str = "app.kubernetes.io/managed-by";
/// Value of [`JOB_MANAGED_BY`].
pub const MANAGER: &str = "numo";

/// Pool annotation: the run config (`<namespace>/<name>`) that drives this pool now.
pub const POOL_CLAIMED_BY: &str = "openshift-optional.skrzypek.io/claimed-by";
/// Pool annotation: the pool's `paused` flag and `nodeSelector` from before numo changed them (JSON).
pub const POOL_ORIGINAL: &str = "openshift-optional.skrzypek.io/original";
/// Pool annotation: the pool's `paused` flag, `nodeSelector` and `maxUnavailable` as numo last set them (JSON); a
/// pool that differs from it was changed by someone else.
pub const POOL_WRITTEN: &str = "openshift-optional.skrzypek.io/written";

/// Run-config annotation: the name of a Failed node whose failed step should run again.
pub const RETRY_ANNOTATION: &str = "openshift-optional.skrzypek.io/retry";
/// Run-config annotation: comma-separated names of nodes to mark Skipped (they are not gated by this rollout).
pub const SKIP_ANNOTATION: &str = "openshift-optional.skrzypek.io/skip";
/// Run-config annotation: the target pools (comma-separated) an admin had paused before numo held them (their own
/// hold, e.g. for an EUS-to-EUS update) and now lets numo roll: numo gates their nodes and leaves them unpaused at
/// the end, then removes the annotation.
pub const GO_AHEAD_ANNOTATION: &str = "openshift-optional.skrzypek.io/go-ahead";

/// Finalizer on run configs: pools are restored and node labels removed before the object goes away.
pub const FINALIZER: &str = "openshift-optional.skrzypek.io/restore-pools";

/// The name part `<rule>.<namespace>`, shortened deterministically when longer than 63 characters.
pub fn rule_name_part(rule: &str, namespace: &str) -> String {
    shorten(&format!("{rule}.{namespace}"), MAX_NAME)
}

/// The node label key for a rule.
pub fn rule_label(rule: &str, namespace: &str) -> String {
    format!("{RULE_LABEL_PREFIX}/{}", rule_name_part(rule, namespace))
}

/// Shortens `text` to at most `max` characters, keeping it a valid label name and unique by a hash suffix.
pub fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let keep = SHORT_KEEP.min(max.saturating_sub(11));
    let head: String = text.chars().take(keep).collect();
    let head = head.trim_end_matches(['-', '_', '.']);
    format!("{head}-{}", hash_hex(text, 10))
}

/// The first `len` hex digits of the SHA-256 of `text`.
pub fn hash_hex(text: &str, len: usize) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
    hex[..len.min(hex.len())].to_string()
}

/// The value of [`RELEASED`] on a node released into the canary pool `canary`.
pub fn released_value(canary: &str) -> String {
    label_value(canary)
}

/// Whether `value` is a valid label value (used for versions and node names in Job labels).
pub fn label_value(value: &str) -> String {
    let cleaned: String =
        value.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
    let short = shorten(&cleaned, MAX_NAME);
    short.trim_matches(|c: char| !c.is_ascii_alphanumeric()).to_string()
}

/// Whether `name` is a valid label-key name part.
pub fn is_valid_name_part(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_rule_labels_match_the_reference_format() {
        assert_eq!(
            rule_label("k8s-example", "node-upgrade-mutex-operator"),
            "mutexrule.openshift-optional.skrzypek.io/k8s-example.node-upgrade-mutex-operator"
        );
    }

    #[test]
    fn long_rule_labels_are_shortened_validly_and_deterministically() {
        let rule = "a-very-long-rule-name-that-goes-on-and-on-and-on-forever";
        let ns = "a-namespace-with-a-long-name-too";
        let part = rule_name_part(rule, ns);
        assert!(part.len() <= 63, "{part}");
        assert!(is_valid_name_part(&part), "{part}");
        assert_eq!(part, rule_name_part(rule, ns));
        assert_ne!(part, rule_name_part(rule, "another-namespace-with-a-long-name"));
        assert!(part.starts_with("a-very-long-rule-name"));
    }

    #[test]
    fn shortening_never_leaves_a_trailing_separator_before_the_hash() {
        let text = format!("{}.{}", "x".repeat(51), "y".repeat(30));
        let part = shorten(&text, 63);
        assert!(is_valid_name_part(&part), "{part}");
        assert!(!part.contains(".-"), "{part}");
    }

    #[test]
    fn label_values_are_sanitized() {
        assert_eq!(label_value("4.16.4"), "4.16.4");
        assert_eq!(label_value("4.17.0+abc"), "4.17.0_abc");
        assert!(label_value(&"n".repeat(100)).len() <= 63);
    }
}
