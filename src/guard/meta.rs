//! Reading an object's metadata whatever the rest of it holds: every `ObjectMeta` field except `managedFields` (which
//! mirrors the shape of the object's fields, so it nests as deeply as they do). serde_json skips the fields not
//! named here (the object's spec and status, `managedFields`) without recursion, so this reads an object of any
//! depth.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use serde::Deserialize;

/// An object with only its metadata read.
#[derive(Debug, Default, Deserialize)]
pub struct MetadataOnly {
    /// The metadata, without `managedFields`.
    #[serde(default)]
    pub metadata: LenientMeta,
}

/// `ObjectMeta` without `managedFields`.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LenientMeta {
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

impl From<LenientMeta> for ObjectMeta {
    fn from(meta: LenientMeta) -> Self {
        ObjectMeta {
            annotations: meta.annotations,
            creation_timestamp: meta.creation_timestamp,
            deletion_grace_period_seconds: meta.deletion_grace_period_seconds,
            deletion_timestamp: meta.deletion_timestamp,
            finalizers: meta.finalizers,
            generate_name: meta.generate_name,
            generation: meta.generation,
            labels: meta.labels,
            managed_fields: None,
            name: meta.name,
            namespace: meta.namespace,
            owner_references: meta.owner_references,
            resource_version: meta.resource_version,
            self_link: meta.self_link,
            uid: meta.uid,
        }
    }
}

/// The metadata of the object `json`, without `managedFields`. When even the metadata cannot be read (the
/// apiserver never serves such an object), the parts that can: name, namespace, uid and resourceVersion.
pub fn read(json: &str) -> ObjectMeta {
    if let Ok(object) = serde_json::from_str::<MetadataOnly>(json) {
        return object.metadata.into();
    }
    #[derive(Default, Deserialize)]
    struct Identity {
        #[serde(default)]
        metadata: IdentityMeta,
    }
    #[derive(Default, Deserialize)]
    #[serde(rename_all = "camelCase", default)]
    struct IdentityMeta {
        name: Option<serde_json::Value>,
        namespace: Option<serde_json::Value>,
        uid: Option<serde_json::Value>,
        resource_version: Option<serde_json::Value>,
    }
    let text = |value: Option<serde_json::Value>| value.and_then(|v| v.as_str().map(String::from));
    let identity = serde_json::from_str::<Identity>(json).unwrap_or_default().metadata;
    ObjectMeta {
        name: text(identity.name),
        namespace: text(identity.namespace),
        uid: text(identity.uid),
        resource_version: text(identity.resource_version),
        ..Default::default()
    }
}
