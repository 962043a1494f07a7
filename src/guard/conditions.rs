//! Reading an object only for its metadata and status conditions, so that the status of an object numo cannot
//! decode (too deep, wrong shape) can still be read and written, and the apiserver's answer to that write decoded.

use std::borrow::Cow;
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta};
use kube::Resource;
use serde::de::{Deserialize, Deserializer};
use serde::Serialize;
use serde_json::value::RawValue;

use super::forward_resource_statics;

/// An object of kind `K` read for its metadata (without `managedFields`) and `status.conditions` only. It decodes
/// whatever the rest of the object holds; conditions that cannot be read count as none.
#[derive(Clone, Debug, Serialize)]
pub struct ConditionsOf<K> {
    /// The object's metadata, without `managedFields`.
    pub metadata: ObjectMeta,
    /// The object's status: its conditions.
    pub status: ConditionsStatus,
    #[serde(skip)]
    kind: PhantomData<fn() -> K>,
}

/// The part of a status that [`ConditionsOf`] reads.
#[derive(Clone, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConditionsStatus {
    /// The status' `observedGeneration`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The status' conditions.
    #[serde(default)]
    pub conditions: Vec<Condition>,
}

impl<K> ConditionsOf<K> {
    /// Reads the object `json`.
    pub fn read(json: &str) -> Self {
        #[derive(serde::Deserialize)]
        struct StatusOnly {
            status: Option<Box<RawValue>>,
        }
        let status = serde_json::from_str::<StatusOnly>(json)
            .ok()
            .and_then(|object| object.status)
            .and_then(|status| super::decode::<ConditionsStatus>(status.get()).ok())
            .unwrap_or_default();
        Self { metadata: super::meta::read(json), status, kind: PhantomData }
    }
}

impl<'de, K> Deserialize<'de> for ConditionsOf<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Ok(Self::read(raw.get()))
    }
}

impl<K: Resource> Resource for ConditionsOf<K> {
    forward_resource_statics!(K);

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}
