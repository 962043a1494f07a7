//! Reading watched objects so that no single object can stop numo from seeing the others.
//!
//! kube decodes a whole LIST response (and each watch event) with serde_json, whose recursion limit (128 levels)
//! fails the entire response when one object nests deeper; kube-core's `DeserializeGuard` cannot help because it
//! first buffers the object recursively. [`Guarded`] instead captures each object as raw JSON (serde_json skips a
//! value without recursion), measures its nesting with an iterative scan ([`depth`]), and parses it into `K` only
//! when it nests at most [`MAX_DEPTH`] levels. An object too deep, or not of `K`'s shape, becomes an
//! [`Undecodable`] that carries its metadata and a sentence saying what is wrong, and the list or watch goes on.

pub mod conditions;
pub mod depth;
pub mod meta;

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::{Deserialize, DeserializeOwned, Deserializer};
use serde_json::value::RawValue;

pub use conditions::ConditionsOf;

/// The most levels of nesting numo reads in one object (`{}` is one level).
///
/// Half of serde_json's recursion limit (128): every object numo reads nests far less (a Node, a Job or a
/// MachineConfigPool with its `managedFields` stays under 20 levels; `tests/hostile_objects.rs` checks those of a
/// whole rollout against half this limit), and the margin leaves room for what numo builds from an object and reads
/// back. A rule's `jobSpec` becomes the spec of a Job (one level deeper, its `managedFields` about five more) that
/// numo decodes again from lists and watch events, within 128 levels even for a rule at this limit.
pub const MAX_DEPTH: usize = 64;

/// How many leading segments of a too-deep path a message shows.
const PATH_SHOWN: usize = 4;

/// A watched object: decoded into `K`, or the reason it could not be, with its metadata.
///
/// Decodes only from serde_json (kube's list, watch and get responses; `serde_json::from_str`/`from_value`), since
/// it captures the object as a `RawValue`. Like kube-core's `DeserializeGuard`, it is a [`Resource`] of `K`'s kind,
/// so it can be watched, cached in a reflector store and reconciled.
#[derive(Clone, Debug)]
pub struct Guarded<K>(pub Result<K, Undecodable>);

impl<K> Guarded<K> {
    /// The decoded object, if it could be decoded.
    pub fn decoded(&self) -> Option<&K> {
        self.0.as_ref().ok()
    }
}

/// An object that could not be decoded: its metadata (without `managedFields`) and what is wrong with it.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{error}")]
pub struct Undecodable {
    /// Which kind of problem it is.
    pub problem: Problem,
    /// A sentence naming the field at fault and what is wrong with it, e.g. `spec.jobSpec.a.a… nests 152 levels
    /// deep; numo reads objects at most 64 levels deep`.
    pub error: String,
    /// The object's metadata, without `managedFields` (boxed: an error is rare, and it keeps `Result`s small).
    pub metadata: Box<ObjectMeta>,
}

/// Why an object could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Problem {
    /// It nests more than [`MAX_DEPTH`] levels deep.
    TooDeep,
    /// It does not have the shape of numo's type (a wrong type, a missing required field, …).
    Mismatch,
}

/// Decodes the object `json` into `K`, or says why it cannot be (without ever recursing deeper than
/// [`MAX_DEPTH`] levels).
pub fn decode<K: DeserializeOwned>(json: &str) -> Result<K, Undecodable> {
    let depth = depth::measure(json, MAX_DEPTH);
    if let Some(beyond) = depth.beyond_limit {
        let error = format!(
            "{} nests {} levels deep; numo reads objects at most {MAX_DEPTH} levels deep",
            beyond.path.shortened(PATH_SHOWN),
            beyond.levels
        );
        return Err(Undecodable { problem: Problem::TooDeep, error, metadata: Box::new(meta::read(json)) });
    }
    serde_json::from_str(json).map_err(|error| Undecodable {
        problem: Problem::Mismatch,
        error: mismatch(json, &error),
        metadata: Box::new(meta::read(json)),
    })
}

/// serde_json's error with the path to the value at fault instead of a line and column.
fn mismatch(json: &str, error: &serde_json::Error) -> String {
    let text = error.to_string();
    let position = format!(" at line {} column {}", error.line(), error.column());
    let what = text.strip_suffix(&position).unwrap_or(&text);
    if error.line() == 0 {
        return what.to_string();
    }
    let path = depth::path_at(json, depth::offset_of(json, error.line(), error.column()));
    if path.0.is_empty() {
        what.to_string()
    } else {
        format!("{path}: {what}")
    }
}

/// The associated items of a `Resource` impl for a wrapper of `$inner`: the wrapper is read from and written to the
/// API as the object it wraps (kind, group, version, plural, URL).
macro_rules! forward_resource_statics {
    ($inner:ident) => {
        type DynamicType = $inner::DynamicType;
        type Scope = $inner::Scope;

        fn kind(dt: &Self::DynamicType) -> Cow<'_, str> {
            $inner::kind(dt)
        }

        fn group(dt: &Self::DynamicType) -> Cow<'_, str> {
            $inner::group(dt)
        }

        fn version(dt: &Self::DynamicType) -> Cow<'_, str> {
            $inner::version(dt)
        }

        fn api_version(dt: &Self::DynamicType) -> Cow<'_, str> {
            $inner::api_version(dt)
        }

        fn plural(dt: &Self::DynamicType) -> Cow<'_, str> {
            $inner::plural(dt)
        }

        fn url_path(dt: &Self::DynamicType, namespace: Option<&str>) -> String {
            $inner::url_path(dt, namespace)
        }
    };
}
pub(crate) use forward_resource_statics;

impl<'de, K: DeserializeOwned> Deserialize<'de> for Guarded<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Ok(Guarded(decode(raw.get())))
    }
}

impl<K: Resource> Resource for Guarded<K> {
    forward_resource_statics!(K);

    // `Guarded<PartialObjectMeta<Node>>` asks for metadata only, as `PartialObjectMeta<Node>` does.
    fn metadata_api() -> bool {
        K::metadata_api()
    }

    fn meta(&self) -> &ObjectMeta {
        self.0.as_ref().map_or_else(|invalid| &invalid.metadata, K::meta)
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        self.0.as_mut().map_or_else(|invalid| &mut invalid.metadata, K::meta_mut)
    }
}

#[cfg(test)]
mod tests;
