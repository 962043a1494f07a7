//! The CSV's owned CRDs: the hand-written entries of the CSV base (display name, description, resources,
//! descriptors), completed with name, version and kind from the CRDs, and checked against the CRDs' schemas.

use anyhow::{bail, Context as _};
use serde_json::Value;

/// `spec.customresourcedefinitions.owned`, one entry per CRD in CRD order.
pub fn owned(base_entries: &[Value], crds: &[Value]) -> anyhow::Result<Vec<Value>> {
    let mut owned = Vec::new();
    for crd in crds {
        let kind = crd["spec"]["names"]["kind"].as_str().context("a CRD has no kind")?;
        let name = crd["metadata"]["name"].as_str().context("a CRD has no name")?;
        let version = storage_version(crd).with_context(|| format!("{name}: no served storage version"))?;
        let base = base_entries.iter().find(|e| e["kind"].as_str() == Some(kind)).with_context(|| {
            format!("the CSV base has no owned entry for kind {kind}; add one with its descriptors")
        })?;
        let schema = &version["schema"]["openAPIV3Schema"]["properties"];
        check_descriptors(kind, "specDescriptors", &base["specDescriptors"], &schema["spec"])?;
        check_descriptors(kind, "statusDescriptors", &base["statusDescriptors"], &schema["status"])?;
        check_resources(kind, &base["resources"], crds)?;
        let mut entry = base.clone();
        entry["name"] = Value::from(name);
        entry["version"] = version["name"].clone();
        owned.push(entry);
    }
    for entry in base_entries {
        let kind = entry["kind"].as_str().unwrap_or_default();
        if !crds.iter().any(|c| c["spec"]["names"]["kind"].as_str() == Some(kind)) {
            bail!("the CSV base describes kind {kind}, which no CRD in config/crd defines");
        }
    }
    Ok(owned)
}

/// Each `resources` entry is an OLM `APIResourceReference`, whose schema requires `name`, `kind` and `version`:
/// `name` is the plural of a custom resource and `""` for a built-in kind (a CSV without it is re-encoded by OLM,
/// but refused by anything that applies the file as it is, e.g. `kubectl create -f`).
fn check_resources(owner: &str, resources: &Value, crds: &[Value]) -> anyhow::Result<()> {
    for resource in resources.as_array().into_iter().flatten() {
        let field = |key: &str| resource[key].as_str();
        let (Some(name), Some(kind), Some(version)) = (field("name"), field("kind"), field("version")) else {
            bail!(
                "the CSV base's {owner} entry lists a resource without a string name, kind and version ({resource}); \
                 OLM's CSV schema requires all three (name: the plural of a custom resource, \"\" for a built-in kind)"
            );
        };
        let ours = crds.iter().find(|c| c["spec"]["names"]["kind"].as_str() == Some(kind));
        if let Some(plural) = ours.and_then(|c| c["spec"]["names"]["plural"].as_str()) {
            if name != plural {
                bail!(
                    "the CSV base's {owner} entry names resource {kind} {version} `{name}`; its plural is `{plural}`"
                );
            }
        }
    }
    Ok(())
}

fn storage_version(crd: &Value) -> Option<&Value> {
    crd["spec"]["versions"].as_array()?.iter().find(|v| v["storage"] == true && v["served"] == true)
}

/// Every descriptor path must exist in the schema, and every top-level field must have a descriptor (for itself or
/// a field inside it), so that the console's forms and details pages show every field with its help text.
fn check_descriptors(kind: &str, list: &str, descriptors: &Value, schema: &Value) -> anyhow::Result<()> {
    let descriptors = descriptors.as_array().cloned().unwrap_or_default();
    let mut paths = Vec::new();
    for descriptor in &descriptors {
        let path = descriptor["path"].as_str().with_context(|| format!("{kind} {list}: a descriptor has no path"))?;
        if descriptor["displayName"].as_str().is_none_or(str::is_empty)
            || descriptor["description"].as_str().is_none_or(str::is_empty)
        {
            bail!("{kind} {list}: `{path}` needs a displayName and a description");
        }
        if schema_at(schema, path).is_none() {
            bail!("{kind} {list}: `{path}` is not a field of the CRD's schema");
        }
        paths.push(path);
    }
    let fields = schema["properties"].as_object().map(|p| p.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
    for field in fields {
        let described = |p: &&str| {
            p.strip_prefix(field.as_str()).is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
        };
        if !paths.iter().any(described) {
            bail!("{kind} {list}: field `{field}` has no descriptor; add one to the CSV base");
        }
    }
    Ok(())
}

/// The schema of the field at a descriptor path such as `canary.name` or `mutexRules[0].namespace`.
pub fn schema_at<'a>(schema: &'a Value, path: &str) -> Option<&'a Value> {
    let mut current = schema;
    for segment in path.split('.') {
        let (field, indexes) = match segment.find('[') {
            Some(at) => (&segment[..at], &segment[at..]),
            None => (segment, ""),
        };
        current = current["properties"].get(field)?;
        for index in indexes.split_inclusive(']') {
            let digits = index.strip_prefix('[')?.strip_suffix(']')?;
            if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) {
                return None;
            }
            current = current.get("items")?;
        }
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"properties": {
            "canary": {"properties": {"name": {"type": "string"}}},
            "rules": {"type": "array", "items": {"properties": {"name": {"type": "string"}}}},
        }})
    }

    #[test]
    fn every_resource_names_its_plural_kind_and_version() {
        let crds = [json!({"spec": {"names": {"kind": "MutexRule", "plural": "mutexrules"}}})];
        let resources = |entries: Value| check_resources("K", &entries, &crds);
        assert!(resources(json!([{"name": "", "kind": "Job", "version": "v1"},
                                 {"name": "mutexrules", "kind": "MutexRule", "version": "v1alpha1"}]))
        .is_ok());
        let nameless = resources(json!([{"kind": "Job", "version": "v1"}]));
        assert!(nameless.err().is_some_and(|e| e.to_string().contains("requires all three")));
        let wrong = resources(json!([{"name": "rules", "kind": "MutexRule", "version": "v1alpha1"}]));
        assert!(wrong.err().is_some_and(|e| e.to_string().contains("its plural is `mutexrules`")));
    }

    #[test]
    fn descriptor_paths_walk_objects_and_arrays() {
        let schema = schema();
        assert_eq!(schema_at(&schema, "canary.name"), Some(&json!({"type": "string"})));
        assert_eq!(schema_at(&schema, "rules[0].name"), Some(&json!({"type": "string"})));
        assert!(schema_at(&schema, "rules").is_some());
        assert!(schema_at(&schema, "canary.nam").is_none());
        assert!(schema_at(&schema, "rules[x].name").is_none());
        assert!(schema_at(&schema, "canary[0]").is_none());
    }

    #[test]
    fn a_field_without_descriptor_or_a_wrong_path_is_an_error() {
        let schema = schema();
        let d = |path: &str| json!({"path": path, "displayName": "D", "description": "d"});
        assert!(check_descriptors("K", "specDescriptors", &json!([d("canary"), d("rules")]), &schema).is_ok());
        assert!(
            check_descriptors("K", "specDescriptors", &json!([d("canary.name"), d("rules[0].name")]), &schema).is_ok()
        );
        let prefix_only = check_descriptors("K", "specDescriptors", &json!([d("canary"), d("rulesX")]), &schema);
        assert!(prefix_only.is_err());
        let missing = check_descriptors("K", "specDescriptors", &json!([d("canary")]), &schema);
        assert!(missing.err().is_some_and(|e| e.to_string().contains("field `rules` has no descriptor")));
        let wrong = check_descriptors("K", "specDescriptors", &json!([d("canary"), d("rules"), d("rule")]), &schema);
        assert!(wrong.err().is_some_and(|e| e.to_string().contains("`rule` is not a field")));
    }
}
