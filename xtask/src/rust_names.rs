//! The Rust names of the objects in a kind's schema. The CRD schema numo generates inlines every type (the API
//! server takes no references), so it no longer says that `status.nodes[]` is a `NodeProgress`; schemars, asked
//! for the same type without inlining, keeps each type as a named definition. Walking that schema gives, for each
//! path in the CRD schema, the Rust type there and its own doc comment.

use std::collections::BTreeMap;

use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value};

/// A Rust type at one place of a schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RustType {
    /// The type's name, without a module path (`Condition`, not `io.k8s.apimachinery.pkg.apis.meta.v1.Condition`).
    pub name: String,
    /// The type's own doc comment, as schemars gives it.
    pub doc: Option<String>,
}

/// How far a schema is followed (numo's types are not recursive; this stops one that would be).
const MAX_DEPTH: usize = 64;

/// The Rust types in `T`'s schema by path: `spec`, `status.nodes[]` (an array's items), `spec.labels{}` (a map's
/// values), as [`join`] and [`ITEMS`]/[`VALUES`] spell them. The root, `""`, is `T` itself.
pub fn of<T: JsonSchema>() -> BTreeMap<String, RustType> {
    let schema = SchemaGenerator::default().into_root_schema_for::<T>();
    let schema = serde_json::to_value(&schema).unwrap_or_default();
    let defs = schema.get("$defs").and_then(Value::as_object).cloned().unwrap_or_default();
    let mut found = BTreeMap::new();
    found.insert(String::new(), RustType { name: short(&T::schema_name()), doc: description(&schema) });
    visit(&schema, &defs, "", &mut found, 0);
    found
}

/// The suffix of a path that steps into an array's items.
pub const ITEMS: &str = "[]";
/// The suffix of a path that steps into a map's values (`additionalProperties`).
pub const VALUES: &str = "{}";

/// The path of property `name` under `path`.
pub fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

fn short(name: &str) -> String {
    name.rsplit('.').next().unwrap_or(name).to_string()
}

fn description(schema: &Value) -> Option<String> {
    schema.get("description").and_then(Value::as_str).map(str::to_string)
}

fn visit(node: &Value, defs: &Map<String, Value>, path: &str, found: &mut BTreeMap<String, RustType>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if let Some(name) = node.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
        if let Some(def) = defs.get(name) {
            found.entry(path.to_string()).or_insert_with(|| RustType { name: short(name), doc: description(def) });
            visit(def, defs, path, found, depth + 1);
        }
    }
    // `Option<T>` is `anyOf: [T, null]`; a field with a default may be `allOf: [T]`.
    for key in ["anyOf", "oneOf", "allOf"] {
        for variant in node.get(key).and_then(Value::as_array).into_iter().flatten() {
            visit(variant, defs, path, found, depth + 1);
        }
    }
    if let Some(properties) = node.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            visit(property, defs, &join(path, name), found, depth + 1);
        }
    }
    if let Some(items) = node.get("items").filter(|items| items.is_object()) {
        visit(items, defs, &format!("{path}{ITEMS}"), found, depth + 1);
    }
    if let Some(values) = node.get("additionalProperties").filter(|values| values.is_object()) {
        visit(values, defs, &format!("{path}{VALUES}"), found, depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_paths_of_a_run_config_name_numos_rust_types() {
        let found = of::<numo::api::MutexRunConfig>();
        let name = |path: &str| found.get(path).map(|t| t.name.as_str());
        assert_eq!(name(""), Some("MutexRunConfig"));
        assert_eq!(name("spec"), Some("MutexRunConfigSpec"));
        assert_eq!(name("status"), Some("MutexRunConfigStatus"));
        assert_eq!(name("status.nodes[]"), Some("NodeProgress"));
        assert_eq!(name("status.nodes[].jobs[]"), Some("JobRecord"));
        assert_eq!(name("status.topology.waves[]"), Some("Wave"));
        assert_eq!(name("spec.mutexRules[]"), Some("ObjectReference"));
        // A Kubernetes type loses its module path.
        assert_eq!(name("status.conditions[]"), Some("Condition"));
        // The type's own doc, not the field's.
        let nodes = found.get("status.nodes[]").and_then(|t| t.doc.as_deref());
        assert_eq!(nodes, Some("One node's progress through the gate."));
        assert_eq!(join("", "spec"), "spec");
        assert_eq!(join("spec", "canary"), "spec.canary");
    }
}
