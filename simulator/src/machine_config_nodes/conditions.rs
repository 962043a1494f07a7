//! The conditions one write leaves on a MachineConfigNode, as `pkg/upgrademonitor/upgrade_monitor.go`
//! `generateAndApplyMachineConfigNodes` computes them (release-4.20; release-4.21 and release-4.22 alike but for the
//! list of types, [`all_types`]). Pure: the writer reads the object, asks [`next`], and applies the result.
//!
//! - The first write (no conditions yet) sets the parent and child and creates every other type of [`all_types`]
//!   False, reason `NotYetOccurred`, message `This node has not yet entered the <type> phase`.
//! - Later writes replace the parent and the child (every field, `lastTransitionTime` now, even when only the message
//!   changed); when the parent's status and message are already as given, nothing is written at all (the pinned-image
//!   types excepted).
//! - A parent of type `Updated` (either status) resets: every other condition not False becomes False, message
//!   `Action during update to <spec.configVersion.desired>: <its message>`, `lastTransitionTime` now.
//! - An `Updated=True` stays as it is when another parent is written: the real code writes it False ("sensed
//!   disruption via a manual update") into the list and then overwrites that with the unchanged condition.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

use super::*;
use crate::release::OpenShiftRelease;

/// Condition status.
pub const TRUE: &str = "True";
/// Condition status.
pub const FALSE: &str = "False";
/// Condition status: the phase is under way.
pub const UNKNOWN: &str = "Unknown";
/// Reason of the conditions the first write creates.
pub const NOT_YET_OCCURRED: &str = "NotYetOccurred";

/// The types written on every update of their own (`singletonConditionTypes`): never skipped as unchanged.
const SINGLETONS: [&str; 2] = [PINNED_IMAGE_SETS_DEGRADED, PINNED_IMAGE_SETS_PROGRESSING];

/// A phase as a component reports it: `upgrademonitor.Condition` (type, reason, message) with the status it is
/// written with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Phase {
    /// The condition type.
    pub type_: &'static str,
    /// [`TRUE`], [`FALSE`] or [`UNKNOWN`].
    pub status: &'static str,
    /// The reason.
    pub reason: String,
    /// The message.
    pub message: String,
}

impl Phase {
    /// A phase of type `type_` written with `status`.
    pub fn new(type_: &'static str, status: &'static str, reason: &str, message: impl Into<String>) -> Self {
        Self { type_, status, reason: reason.to_string(), message: message.into() }
    }

    fn condition(&self, now: &Time) -> Condition {
        Condition {
            type_: self.type_.to_string(),
            status: self.status.to_string(),
            reason: self.reason.clone(),
            message: self.message.clone(),
            last_transition_time: now.clone(),
            observed_generation: None,
        }
    }
}

/// The condition types the first write creates, in the MCO's order (`allConditionTypes` plus the singletons):
/// release-4.21 lists `ImagePulledFromRegistry` among them; release-4.22 only with the `ImageModeStatusReporting`
/// gate (TechPreview), as 4.20 never.
pub fn all_types(release: OpenShiftRelease) -> Vec<&'static str> {
    let mut types =
        vec![UPDATE_PREPARED, UPDATE_EXECUTED, UPDATE_POST_ACTION_COMPLETE, UPDATE_COMPLETE, RESUMED, DRAINED];
    types.push(APPLIED_FILES_AND_OS);
    if release.lists_image_pulled_condition() {
        types.push(IMAGE_PULLED_FROM_REGISTRY);
    }
    types.extend([CORDONED, REBOOTED_NODE, UPDATED, UNCORDONED, NODE_DEGRADED]);
    types.extend(SINGLETONS);
    types
}

/// The conditions after writing `parent` (and `child`) over `existing`, `spec_desired` being the object's
/// `spec.configVersion.desired`; None when the MCO writes nothing (the parent is already as given).
pub fn next(
    existing: &[Condition],
    parent: &Phase,
    child: Option<&Phase>,
    spec_desired: &str,
    release: OpenShiftRelease,
    now: &Time,
) -> Option<Vec<Condition>> {
    let new_parent = parent.condition(now);
    let new_child = child.map(|c| c.condition(now));
    if existing.is_empty() {
        let mut conditions: Vec<Condition> = std::iter::once(new_parent).chain(new_child).collect();
        for type_ in all_types(release) {
            if !conditions.iter().any(|c| c.type_ == type_) {
                conditions.push(not_yet_occurred(type_, now));
            }
        }
        return Some(conditions);
    }
    let reset = parent.type_ == UPDATED;
    let (mut found_parent, mut found_child) = (false, false);
    let mut conditions = Vec::with_capacity(existing.len() + 2);
    for condition in existing {
        let mut condition = condition.clone();
        if condition.type_ == UPDATED && condition.status == TRUE && parent.type_ != UPDATED {
            // Kept: see the module docs.
        } else if let Some(child) = new_child.as_ref().filter(|c| c.type_ == condition.type_) {
            found_child = true;
            condition = child.clone();
        } else if condition.type_ == parent.type_ {
            found_parent = true;
            let changed = condition.status != new_parent.status || condition.message != new_parent.message;
            if !changed && !SINGLETONS.contains(&parent.type_) {
                return None;
            }
            condition = new_parent.clone();
        } else if condition.status != FALSE && reset {
            condition.status = FALSE.to_string();
            condition.message = format!("Action during update to {spec_desired}: {}", condition.message);
            condition.last_transition_time = now.clone();
        }
        conditions.push(condition);
    }
    if !found_child {
        conditions.extend(new_child);
    }
    if !found_parent {
        conditions.push(new_parent);
    }
    Some(conditions)
}

/// `status.configVersion.desired` after writing `parent` on a node whose `desiredConfig` is `node_desired`: the
/// node's once the update is found compatible (`UpdatePrepared=True`), or on any write but `UpdatePrepared` when
/// the node has one; else [`NOT_YET_SET`].
pub fn status_desired(parent: &Phase, node_desired: &str) -> String {
    let compatible = parent.type_ == UPDATE_PREPARED && parent.status == TRUE;
    if compatible || (parent.type_ != UPDATE_PREPARED && !node_desired.is_empty()) {
        node_desired.to_string()
    } else {
        NOT_YET_SET.to_string()
    }
}

fn not_yet_occurred(type_: &str, now: &Time) -> Condition {
    Condition {
        type_: type_.to_string(),
        status: FALSE.to_string(),
        reason: NOT_YET_OCCURRED.to_string(),
        message: format!("This node has not yet entered the {type_} phase"),
        last_transition_time: now.clone(),
        observed_generation: None,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    pub(crate) const ON_4_20: OpenShiftRelease = OpenShiftRelease { minor: 20 };

    pub(crate) fn at(seconds: i64) -> Time {
        Time(Timestamp::from_second(1_800_000_000 + seconds).unwrap_or(Timestamp::UNIX_EPOCH))
    }

    fn find<'a>(conditions: &'a [Condition], type_: &str) -> &'a Condition {
        conditions.iter().find(|c| c.type_ == type_).unwrap_or_else(|| panic!("no {type_} in {conditions:?}"))
    }

    fn needs_update() -> Phase {
        Phase::new(UPDATED, FALSE, UPDATED, "Node worker-0 needs an update")
    }

    #[test]
    fn the_first_write_creates_every_type_false_but_its_own() {
        let child = Phase::new(CORDONED, TRUE, "UpdateExecutedCordoned", "Cordoned node.");
        let parent = Phase::new(UPDATE_EXECUTED, UNKNOWN, CORDONED, "Cordoned Node as part of update executed phase");
        let conditions = next(&[], &parent, Some(&child), "r2", ON_4_20, &at(0)).unwrap_or_default();
        let types: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types[..2], [UPDATE_EXECUTED, CORDONED], "parent and child first");
        assert_eq!(types.len(), 14, "12 types and the two pinned-image ones: {types:?}");
        let prepared = find(&conditions, UPDATE_PREPARED);
        assert_eq!((prepared.status.as_str(), prepared.reason.as_str()), (FALSE, NOT_YET_OCCURRED));
        assert_eq!(prepared.message, "This node has not yet entered the UpdatePrepared phase");
        assert_eq!(find(&conditions, CORDONED).status, TRUE);
        assert_eq!(find(&conditions, UPDATE_EXECUTED).status, UNKNOWN);
        assert!(!types.contains(&IMAGE_PULLED_FROM_REGISTRY));
    }

    #[test]
    fn only_4_21_lists_the_image_pull() {
        let count = |minor| all_types(OpenShiftRelease { minor }).len();
        assert_eq!((count(20), count(21), count(22)), (14, 15, 14));
        assert!(all_types(OpenShiftRelease { minor: 21 }).contains(&IMAGE_PULLED_FROM_REGISTRY));
    }

    #[test]
    fn a_parent_and_child_replace_theirs_and_leave_the_rest() {
        let first = next(&[], &needs_update(), None, "r2", ON_4_20, &at(0)).unwrap_or_default();
        let parent = Phase::new(UPDATE_EXECUTED, UNKNOWN, DRAINED, "Draining Node as part of update executed phase");
        let child = Phase::new(DRAINED, UNKNOWN, "UpdateExecutedDrained", "Draining node.");
        let after = next(&first, &parent, Some(&child), "r2", ON_4_20, &at(5)).unwrap_or_default();
        assert_eq!(after.len(), first.len(), "one condition per type");
        let drained = find(&after, DRAINED);
        assert_eq!((drained.status.as_str(), drained.message.as_str()), (UNKNOWN, "Draining node."));
        assert_eq!(drained.last_transition_time, at(5));
        assert_eq!(find(&after, UPDATE_EXECUTED).reason, DRAINED);
        assert_eq!(find(&after, CORDONED), find(&first, CORDONED), "untouched");
        assert_eq!(find(&after, UPDATED).last_transition_time, at(0));
    }

    #[test]
    fn an_unchanged_parent_writes_nothing_even_with_a_new_child() {
        let parent = Phase::new(UPDATE_EXECUTED, UNKNOWN, DRAINED, "Draining Node as part of update executed phase");
        let first = next(&[], &parent, None, "r2", ON_4_20, &at(0)).unwrap_or_default();
        let child = Phase::new(DRAINED, TRUE, "UpdateExecutedDrained", "Drained node.");
        assert_eq!(next(&first, &parent, Some(&child), "r2", ON_4_20, &at(1)), None);
        let reworded = Phase { message: "Drained Node as part of update executed phase".into(), ..parent };
        let after = next(&first, &reworded, Some(&child), "r2", ON_4_20, &at(1)).unwrap_or_default();
        assert_eq!(find(&after, UPDATE_EXECUTED).last_transition_time, at(1), "a new message is a new time");
        assert_eq!(find(&after, DRAINED).status, TRUE);
    }

    #[test]
    fn updated_resets_every_other_condition_that_is_not_false() {
        let first = next(&[], &needs_update(), None, "r2", ON_4_20, &at(0)).unwrap_or_default();
        let drained = Phase::new(DRAINED, TRUE, "UpdateExecutedDrained", "Drained node.");
        let parent = Phase::new(UPDATE_EXECUTED, UNKNOWN, DRAINED, "Drained Node as part of update executed phase");
        let mid = next(&first, &parent, Some(&drained), "r2", ON_4_20, &at(3)).unwrap_or_default();
        let updated = Phase::new(UPDATED, TRUE, UPDATED, "Node worker-0 Updated");
        let done = next(&mid, &updated, None, "r2", ON_4_20, &at(9)).unwrap_or_default();
        let was_drained = find(&done, DRAINED);
        assert_eq!(was_drained.status, FALSE);
        assert_eq!(was_drained.message, "Action during update to r2: Drained node.");
        assert_eq!(was_drained.last_transition_time, at(9));
        assert_eq!(
            find(&done, UPDATE_EXECUTED).message,
            "Action during update to r2: Drained Node as part of update executed phase"
        );
        let never = find(&done, CORDONED);
        assert_eq!((never.reason.as_str(), &never.last_transition_time), (NOT_YET_OCCURRED, &at(0)), "False stays");
        assert_eq!(find(&done, UPDATED).status, TRUE);
        assert_eq!(next(&done, &updated, None, "r2", ON_4_20, &at(10)), None, "already Updated");
    }

    #[test]
    fn updated_true_survives_another_parent() {
        let updated = Phase::new(UPDATED, TRUE, UPDATED, "Node worker-0 Updated");
        let first = next(&[], &updated, None, "r1", ON_4_20, &at(0)).unwrap_or_default();
        let degraded = Phase::new(NODE_DEGRADED, TRUE, NODE_DEGRADED, "Node worker-0 upgrade failure. boom");
        let after = next(&first, &degraded, None, "r1", ON_4_20, &at(1)).unwrap_or_default();
        assert_eq!(find(&after, UPDATED).status, TRUE);
        assert_eq!(find(&after, NODE_DEGRADED).status, TRUE);
    }

    #[test]
    fn the_status_names_the_desired_config_once_the_update_is_compatible() {
        let prepared = Phase::new(UPDATE_PREPARED, TRUE, UPDATE_PREPARED, "Update Compatible.");
        let failed = Phase::new(UPDATE_PREPARED, UNKNOWN, UPDATE_PREPARED, "Update Failed compatibility validation.");
        assert_eq!(status_desired(&prepared, "r2"), "r2");
        assert_eq!(status_desired(&failed, "r2"), NOT_YET_SET);
        assert_eq!(status_desired(&needs_update(), "r2"), "r2");
        assert_eq!(status_desired(&needs_update(), ""), NOT_YET_SET);
    }
}
