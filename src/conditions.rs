//! Building and merging status conditions: `lastTransitionTime` moves only when the status changes, and every
//! condition carries the `observedGeneration` it describes.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// What a condition says: it holds, it does not, or numo cannot judge it yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    /// The condition holds.
    True,
    /// The condition does not hold.
    False,
    /// numo cannot judge it yet (it has not read or checked what it would take).
    Unknown,
}

impl Status {
    /// The condition's `status` as Kubernetes spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::True => "True",
            Status::False => "False",
            Status::Unknown => "Unknown",
        }
    }
}

/// A condition as a reconcile wants it, before timestamps are settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Desired {
    /// Condition type, e.g. `ValidConfig`.
    pub type_: &'static str,
    /// Whether the condition holds, or that numo cannot tell yet.
    pub status: Status,
    /// CamelCase machine-readable reason.
    pub reason: String,
    /// A sentence a person can act on.
    pub message: String,
}

impl Desired {
    /// A condition that holds.
    pub fn true_(type_: &'static str, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self { type_, status: Status::True, reason: reason.into(), message: message.into() }
    }

    /// A condition that does not hold.
    pub fn false_(type_: &'static str, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self { type_, status: Status::False, reason: reason.into(), message: message.into() }
    }

    /// A condition numo cannot judge yet.
    pub fn unknown(type_: &'static str, reason: impl Into<String>, message: impl Into<String>) -> Self {
        Self { type_, status: Status::Unknown, reason: reason.into(), message: message.into() }
    }
}

/// Merges `desired` into `existing`: conditions keep their `lastTransitionTime` unless their status changes; conditions
/// not in `desired` are kept as they are. The result is sorted by type so repeated writes are identical.
pub fn merge(existing: &[Condition], desired: &[Desired], generation: Option<i64>, now: &Time) -> Vec<Condition> {
    let mut out: Vec<Condition> =
        existing.iter().filter(|c| !desired.iter().any(|d| d.type_ == c.type_)).cloned().collect();
    for d in desired {
        let status = d.status.as_str().to_string();
        let previous = existing.iter().find(|c| c.type_ == d.type_);
        let last_transition_time = match previous {
            Some(p) if p.status == status => p.last_transition_time.clone(),
            _ => now.clone(),
        };
        out.push(Condition {
            type_: d.type_.to_string(),
            status,
            reason: d.reason.clone(),
            message: d.message.clone(),
            observed_generation: generation,
            last_transition_time,
        });
    }
    out.sort_by(|a, b| a.type_.cmp(&b.type_));
    out
}

/// Finds a condition by type.
pub fn find<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition `type_` is present and True.
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    find(conditions, type_).is_some_and(|c| c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::jiff::Timestamp;

    fn at(secs: i64) -> Time {
        Time(Timestamp::from_second(secs).unwrap_or_default())
    }

    #[test]
    fn transition_time_moves_only_when_status_flips() {
        let first = merge(&[], &[Desired::true_("ValidConfig", "Valid", "ok")], Some(1), &at(10));
        assert_eq!(first[0].last_transition_time, at(10));
        let same = merge(&first, &[Desired::true_("ValidConfig", "StillValid", "still ok")], Some(2), &at(20));
        assert_eq!(same[0].last_transition_time, at(10));
        assert_eq!(same[0].reason, "StillValid");
        assert_eq!(same[0].observed_generation, Some(2));
        let flipped = merge(&same, &[Desired::false_("ValidConfig", "Invalid", "bad")], Some(3), &at(30));
        assert_eq!(flipped[0].last_transition_time, at(30));
        assert_eq!(flipped[0].status, "False");
    }

    #[test]
    fn unknown_is_a_status_of_its_own() {
        let first = merge(&[], &[Desired::unknown("Refused", "NotKnownYet", "not yet")], None, &at(10));
        assert_eq!((first[0].status.as_str(), first[0].last_transition_time.clone()), ("Unknown", at(10)));
        let same = merge(&first, &[Desired::unknown("Refused", "NotKnownYet", "still not")], None, &at(20));
        assert_eq!(same[0].last_transition_time, at(10));
        let known = merge(&same, &[Desired::true_("Refused", "InForce", "in force")], None, &at(30));
        assert_eq!((known[0].status.as_str(), known[0].last_transition_time.clone()), ("True", at(30)));
        assert!(is_true(&known, "Refused"));
        let unknown_again = merge(&known, &[Desired::unknown("Refused", "NotKnownYet", "lost")], None, &at(40));
        assert_eq!(unknown_again[0].last_transition_time, at(40));
        assert!(!is_true(&unknown_again, "Refused"));
    }

    #[test]
    fn other_conditions_are_kept_and_output_is_sorted() {
        let a = merge(&[], &[Desired::true_("B", "r", "m"), Desired::true_("A", "r", "m")], None, &at(1));
        assert_eq!(a.iter().map(|c| c.type_.as_str()).collect::<Vec<_>>(), ["A", "B"]);
        let b = merge(&a, &[Desired::false_("C", "r", "m")], None, &at(2));
        assert_eq!(b.len(), 3);
    }
}
