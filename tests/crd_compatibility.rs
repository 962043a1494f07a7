//! numo's CRDs change compatibly from one release to the next (docs/install.md, "Upgrading numo"): within
//! `v1alpha1` only additions, so that every object stored by the previous release (kept in
//! `tests/releases/<version>/`, the version this bundle replaces) still validates and means the same. OLM refuses an
//! upgrade whose CRD would reject an existing object; these tests refuse the change before it ships.

use std::path::PathBuf;

use numo_testkit::repo::{self, yaml};
use serde_json::Value;

const PACKAGE: &str = "openshift-node-upgrade-mutex-operator";

/// The version this tree's bundle replaces (config/manifests/bundle.yaml).
fn previous_release() -> String {
    let settings = yaml(&repo::root().join("config/manifests/bundle.yaml"));
    settings["replaces"].as_str().expect("config/manifests/bundle.yaml names the release it replaces").to_owned()
}

fn previous_bundle() -> PathBuf {
    repo::root().join("tests/releases").join(previous_release()).join("bundle/manifests")
}

/// Each CRD of numo, as the previous release shipped it and as this tree ships it.
fn crd_pairs() -> Vec<(String, Value, Value)> {
    numo::api::crds()
        .into_iter()
        .filter_map(|crd| crd.metadata.name)
        .map(|name| {
            let file = format!("{name}.yaml");
            let old = yaml(&previous_bundle().join(&file));
            let new = yaml(&repo::root().join("config/crd").join(&file));
            (name, old, new)
        })
        .collect()
}

/// Validation keywords that, added to a field or changed, can reject a value the previous release accepted.
const RESTRICTING: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "pattern",
    "format",
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
];

/// Every way the schema `new` would reject or reinterpret a value that `old` accepted, at `path`.
fn incompatibilities(path: &str, old: &Value, new: &Value, found: &mut Vec<String>) {
    if old.get("type") != new.get("type") {
        found.push(format!("{path}: type {} became {}", old["type"], new["type"]));
    }
    for keyword in RESTRICTING {
        if let Some(value) = new.get(*keyword) {
            if old.get(*keyword) != Some(value) {
                found.push(format!("{path}: {keyword} {} became {value}", old.get(*keyword).unwrap_or(&Value::Null)));
            }
        }
    }
    if old.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true))
        && new.get("x-kubernetes-preserve-unknown-fields") != Some(&Value::Bool(true))
    {
        found.push(format!("{path}: unknown fields are no longer kept"));
    }
    if old.get("nullable") == Some(&Value::Bool(true)) && new.get("nullable") != Some(&Value::Bool(true)) {
        found.push(format!("{path}: null is no longer accepted"));
    }
    if let Some(values) = new.get("enum").and_then(Value::as_array) {
        let old_values = old.get("enum").and_then(Value::as_array);
        for value in old_values.into_iter().flatten() {
            if !values.contains(value) {
                found.push(format!("{path}: enum value {value} was removed"));
            }
        }
        if old_values.is_none() {
            found.push(format!("{path}: an enum was added"));
        }
    }
    if old.get("default") != new.get("default") && old.get("default").is_some() {
        found.push(format!("{path}: default {} became {}", old["default"], new.get("default").unwrap_or(&Value::Null)));
    }
    let old_required: Vec<&Value> = old.get("required").and_then(Value::as_array).into_iter().flatten().collect();
    for field in new.get("required").and_then(Value::as_array).into_iter().flatten() {
        if !old_required.contains(&field) {
            found.push(format!("{path}: {field} became required"));
        }
    }
    if let Some(properties) = old.get("properties").and_then(Value::as_object) {
        for (name, old_field) in properties {
            match new.get("properties").and_then(|p| p.get(name)) {
                Some(new_field) => incompatibilities(&format!("{path}.{name}"), old_field, new_field, found),
                None => found.push(format!("{path}.{name}: the field was removed")),
            }
        }
    }
    if let (Some(old_items), Some(new_items)) = (old.get("items"), new.get("items")) {
        incompatibilities(&format!("{path}[]"), old_items, new_items, found);
    }
    if let (Some(old_values), Some(new_values)) = (old.get("additionalProperties"), new.get("additionalProperties")) {
        incompatibilities(&format!("{path}{{}}"), old_values, new_values, found);
    }
}

#[test]
fn this_bundle_replaces_the_previous_release_kept_in_tests_releases() {
    let previous = previous_release();
    let csv = yaml(&repo::root().join(format!("bundle/manifests/{PACKAGE}.clusterserviceversion.yaml")));
    assert_eq!(csv["spec"]["replaces"], format!("{PACKAGE}.v{previous}"));
    let old_csv = yaml(&previous_bundle().join(format!("{PACKAGE}.clusterserviceversion.yaml")));
    assert_eq!(old_csv["metadata"]["name"], format!("{PACKAGE}.v{previous}"));
    assert_ne!(old_csv["spec"]["version"], csv["spec"]["version"], "a release must not replace its own version");
    let install = std::fs::read_to_string(repo::root().join(format!("tests/releases/{previous}/install.yaml")))
        .expect("the previous release's install manifests are kept for hack/install-check.sh");
    assert!(install.contains(&format!("quay.io/numo-operator/numo:{previous}")), "install.yaml is not {previous}'s");
}

#[test]
fn every_version_the_previous_release_served_is_still_served_and_stored_alike() {
    for (name, old, new) in crd_pairs() {
        let versions = |crd: &Value| -> Vec<(String, bool, bool)> {
            crd["spec"]["versions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|v| {
                    let flag = |key: &str| v[key].as_bool().unwrap_or(false);
                    (v["name"].as_str().unwrap_or_default().to_owned(), flag("served"), flag("storage"))
                })
                .collect()
        };
        let new_versions = versions(&new);
        for (version, served, storage) in versions(&old) {
            let now = new_versions.iter().find(|(v, ..)| *v == version);
            assert!(now.is_some_and(|(_, s, _)| *s || !served), "{name}: {version} is no longer served");
            assert!(now.is_some_and(|(_, _, st)| *st == storage), "{name}: {version} changed its storage flag");
        }
        assert_eq!(old["spec"]["scope"], new["spec"]["scope"], "{name}: scope changed");
        assert_eq!(old["spec"]["names"], new["spec"]["names"], "{name}: names changed");
    }
}

#[test]
fn every_schema_accepts_what_the_previous_release_accepted() {
    let mut found = Vec::new();
    for (name, old, new) in crd_pairs() {
        for old_version in old["spec"]["versions"].as_array().into_iter().flatten() {
            let version = &old_version["name"];
            let new_version = new["spec"]["versions"].as_array().into_iter().flatten().find(|v| &v["name"] == version);
            let Some(new_version) = new_version else { continue };
            let schema = |v: &Value| v["schema"]["openAPIV3Schema"].clone();
            incompatibilities(&format!("{name} {version}"), &schema(old_version), &schema(new_version), &mut found);
        }
    }
    assert!(found.is_empty(), "incompatible CRD changes since the previous release:\n{}", found.join("\n"));
}

#[test]
fn the_compatibility_check_finds_what_would_break_stored_objects() {
    let old: Value = serde_json::json!({"type": "object", "required": ["a"], "properties": {
        "a": {"type": "string", "enum": ["x", "y"]},
        "b": {"type": "integer", "default": 1},
        "c": {"type": "string"},
        "d": {"type": "array", "items": {"type": "string"}},
    }});
    let new: Value = serde_json::json!({"type": "object", "required": ["a", "e"], "properties": {
        "a": {"type": "string", "enum": ["x"]},
        "b": {"type": "integer", "default": 2},
        "d": {"type": "array", "items": {"type": "string", "maxLength": 3}},
        "e": {"type": "string"},
    }});
    let mut found = Vec::new();
    incompatibilities("spec", &old, &new, &mut found);
    found.sort();
    assert_eq!(
        found,
        [
            "spec.a: enum value \"y\" was removed",
            "spec.b: default 1 became 2",
            "spec.c: the field was removed",
            "spec.d[]: maxLength null became 3",
            "spec: \"e\" became required",
        ]
    );
    let mut none = Vec::new();
    incompatibilities("spec", &old, &old, &mut none);
    assert!(none.is_empty(), "{none:?}");
}
