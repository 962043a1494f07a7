//! numo's claim on a MachineConfigPool, kept in three annotations of the pool: which run config drives it
//! (`claimed-by`, `<namespace>/<name>`), how the pool was before numo changed it (`original`, JSON) and how numo last
//! set it (`written`, JSON: what differs from it now was changed by someone else). This module is the only place
//! that reads or writes them.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde::{Deserialize, Serialize};

use crate::labels::{POOL_CLAIMED_BY, POOL_ORIGINAL, POOL_WRITTEN};

/// What the `original` annotation records: the pool as it was before numo changed it. The `written` annotation
/// records the same fields as numo last set them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolOriginal {
    /// `spec.paused` before numo.
    pub paused: bool,
    /// `spec.nodeSelector` before numo (absent if it had none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<LabelSelector>,
    /// `spec.maxUnavailable` before numo, when numo changes it (the canary, for `spec.concurrency`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// `spec.machineConfigSelector` before numo, recorded for the canary only: numo points the canary at the
    /// MachineConfigs of the pool whose nodes it takes, so that a released node runs its own pool's config. Absent
    /// in a claim made before numo steered it (numo then leaves it as it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_config_selector: Option<LabelSelector>,
    /// `spec.osImageStream` before numo, recorded for the canary only: numo points the canary at the OS image
    /// stream of the pool whose nodes it takes, so that a released node boots its own pool's OS image. Absent in a
    /// claim made before numo steered it (numo then leaves it as it is).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os_image_stream: Option<RecordedStream>,
}

/// A pool's own `spec.osImageStream` as numo recorded it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedStream {
    /// The stream's name; None: the pool named none (it boots the default stream, or a custom pool `worker`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// A pool's claim annotations as read from the pool.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolClaim {
    /// The run config that drives the pool, `<namespace>/<name>`.
    pub owner: String,
    /// The recorded original: `Ok` when readable, else why not.
    pub original: Result<PoolOriginal, Unreadable>,
    /// The pool's settings as numo last wrote them; None when the annotation is missing (a claim of numo 0.1) or
    /// unreadable.
    pub written: Option<PoolOriginal>,
    /// Whether the `written` annotation is present (readable or not).
    pub written_present: bool,
}

/// Why a claim's recorded original cannot be used.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Unreadable {
    /// The `original` annotation is missing.
    #[error("the annotation {POOL_ORIGINAL} is missing")]
    Missing,
    /// The `original` annotation is not the JSON numo writes.
    #[error("the annotation {POOL_ORIGINAL} is not readable: {0}")]
    Garbled(String),
}

/// Whether a pool carries numo's annotations at all: a claim, an `original` without a claim (a restore cut short),
/// or neither.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum ClaimAnnotations {
    /// Neither annotation.
    #[default]
    None,
    /// numo's other annotations without the claim (a restore cut short, or someone removed the claim): the keys
    /// present, and the original they record if it is readable.
    Leftover {
        /// The annotation keys present.
        keys: Vec<&'static str>,
        /// The recorded original, if present and readable.
        original: Option<PoolOriginal>,
    },
    /// The claim (with or without a readable original).
    Claimed(PoolClaim),
}

impl PoolClaim {
    /// Reads the claim from a pool's annotations.
    pub fn read(annotations: &BTreeMap<String, String>) -> ClaimAnnotations {
        let original = annotations.get(POOL_ORIGINAL);
        let written = annotations.get(POOL_WRITTEN);
        match annotations.get(POOL_CLAIMED_BY) {
            Some(owner) => ClaimAnnotations::Claimed(PoolClaim {
                owner: owner.clone(),
                original: match original {
                    None => Err(Unreadable::Missing),
                    Some(text) => serde_json::from_str(text).map_err(|e| Unreadable::Garbled(e.to_string())),
                },
                written: written.and_then(|text| serde_json::from_str(text).ok()),
                written_present: written.is_some(),
            }),
            None if original.is_some() || written.is_some() => ClaimAnnotations::Leftover {
                keys: [(POOL_ORIGINAL, original), (POOL_WRITTEN, written)]
                    .into_iter()
                    .filter_map(|(key, value)| value.map(|_| key))
                    .collect(),
                original: original.and_then(|text| serde_json::from_str(text).ok()),
            },
            None => ClaimAnnotations::None,
        }
    }

    /// The annotations that record a claim by `owner` of a pool that was `original` and that numo set to
    /// `written`.
    pub fn annotations(
        owner: &str,
        original: &PoolOriginal,
        written: &PoolOriginal,
    ) -> Result<[(&'static str, String); 3], serde_json::Error> {
        Ok([
            (POOL_CLAIMED_BY, owner.to_string()),
            (POOL_ORIGINAL, serde_json::to_string(original)?),
            (POOL_WRITTEN, serde_json::to_string(written)?),
        ])
    }

    /// The `original` annotation recording that the pool was `original` before numo.
    pub fn original_annotation(original: &PoolOriginal) -> Result<(&'static str, String), serde_json::Error> {
        Ok((POOL_ORIGINAL, serde_json::to_string(original)?))
    }

    /// The `written` annotation recording that numo set the pool to `written`.
    pub fn written_annotation(written: &PoolOriginal) -> Result<(&'static str, String), serde_json::Error> {
        Ok((POOL_WRITTEN, serde_json::to_string(written)?))
    }
}

impl ClaimAnnotations {
    /// The claim, if the pool is claimed.
    pub fn claim(&self) -> Option<&PoolClaim> {
        match self {
            ClaimAnnotations::Claimed(claim) => Some(claim),
            _ => None,
        }
    }

    /// The keys of numo's annotations present on the pool (what a restore removes).
    pub fn present_keys(&self) -> Vec<&'static str> {
        match self {
            ClaimAnnotations::None => Vec::new(),
            ClaimAnnotations::Leftover { keys, .. } => keys.clone(),
            ClaimAnnotations::Claimed(claim) => {
                let mut keys = vec![POOL_CLAIMED_BY];
                if claim.original != Err(Unreadable::Missing) {
                    keys.push(POOL_ORIGINAL);
                }
                if claim.written_present {
                    keys.push(POOL_WRITTEN);
                }
                keys
            }
        }
    }

    /// The node selector that decides membership: the recorded original while a claim with a readable original
    /// stands, else the pool's `current` selector.
    pub fn effective_selector<'a>(&'a self, current: Option<&'a LabelSelector>) -> Option<&'a LabelSelector> {
        match self.claim().map(|c| &c.original) {
            Some(Ok(original)) => original.node_selector.as_ref(),
            _ => current,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_claim_round_trips_through_its_annotations() {
        let original = PoolOriginal { max_unavailable: Some(IntOrString::Int(2)), paused: true, ..Default::default() };
        let set = PoolOriginal { paused: true, node_selector: Some(LabelSelector::default()), ..Default::default() };
        let annotations = PoolClaim::annotations("ops/rc", &original, &set).unwrap_or_else(|e| panic!("{e}"));
        let read = PoolClaim::read(&annotations.iter().map(|(k, v)| (k.to_string(), v.clone())).collect());
        let claim =
            PoolClaim { owner: "ops/rc".into(), original: Ok(original), written: Some(set), written_present: true };
        assert_eq!(read, ClaimAnnotations::Claimed(claim));
        assert_eq!(read.present_keys(), [POOL_CLAIMED_BY, POOL_ORIGINAL, POOL_WRITTEN]);
    }

    #[test]
    fn unreadable_missing_and_orphaned_originals_are_told_apart() {
        let garbled = PoolClaim::read(&annotations(&[(POOL_CLAIMED_BY, "ops/rc"), (POOL_ORIGINAL, "{not json")]));
        assert!(garbled.claim().is_some_and(|c| matches!(c.original, Err(Unreadable::Garbled(_)))));
        assert_eq!(garbled.present_keys(), [POOL_CLAIMED_BY, POOL_ORIGINAL]);
        let missing = PoolClaim::read(&annotations(&[(POOL_CLAIMED_BY, "ops/rc")]));
        assert!(missing.claim().is_some_and(|c| c.original == Err(Unreadable::Missing)));
        assert_eq!(missing.present_keys(), [POOL_CLAIMED_BY]);
        let leftover = PoolClaim::read(&annotations(&[(POOL_ORIGINAL, "{\"paused\":true}"), (POOL_WRITTEN, "{}")]));
        let original = PoolOriginal { paused: true, ..Default::default() };
        assert_eq!(
            leftover,
            ClaimAnnotations::Leftover { keys: vec![POOL_ORIGINAL, POOL_WRITTEN], original: Some(original) }
        );
        assert_eq!(leftover.present_keys(), [POOL_ORIGINAL, POOL_WRITTEN]);
        assert_eq!(PoolClaim::read(&annotations(&[])), ClaimAnnotations::None);
    }

    #[test]
    fn membership_uses_the_original_only_while_claimed_and_readable() {
        let current = LabelSelector::default();
        let claimed =
            PoolClaim::read(&annotations(&[(POOL_CLAIMED_BY, "ops/rc"), (POOL_ORIGINAL, "{\"paused\":false}")]));
        assert_eq!(claimed.effective_selector(Some(&current)), None);
        let garbled = PoolClaim::read(&annotations(&[(POOL_CLAIMED_BY, "ops/rc"), (POOL_ORIGINAL, "x")]));
        assert_eq!(garbled.effective_selector(Some(&current)), Some(&current));
    }
}
