//! Reading `config/`: the objects a kustomization lists, and YAML files as JSON values.
//!
//! The xtask does not run kustomize. The kustomizations it reads (`config/rbac`, `config/manager`, `config/crd`,
//! `config/samples`) must be plain lists of files; anything else (patches, generators, nested directories) is
//! rejected with an error rather than silently ignored.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use serde_json::Value;

/// One object read from a file.
#[derive(Clone, Debug, PartialEq)]
pub struct Object {
    /// The file it came from.
    pub path: PathBuf,
    /// The file's text, verbatim.
    pub text: String,
    /// The object.
    pub value: Value,
}

impl Object {
    /// `kind` of the object.
    pub fn kind(&self) -> &str {
        self.value["kind"].as_str().unwrap_or_default()
    }

    /// `apiVersion` of the object.
    pub fn api_version(&self) -> &str {
        self.value["apiVersion"].as_str().unwrap_or_default()
    }

    /// `metadata.name` of the object.
    pub fn name(&self) -> &str {
        self.value["metadata"]["name"].as_str().unwrap_or_default()
    }

    /// The file name without its directory.
    pub fn file_name(&self) -> String {
        self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default()
    }
}

/// Keys a plain kustomization may have.
const PLAIN_KEYS: &[&str] = &["apiVersion", "kind", "resources"];

/// The objects listed by `dir/kustomization.yaml`, in order, one per file.
pub fn kustomization(dir: &Path) -> anyhow::Result<Vec<Object>> {
    let path = dir.join("kustomization.yaml");
    let value = yaml_file(&path)?;
    let Some(map) = value.as_object() else { bail!("{}: not a mapping", path.display()) };
    if let Some(key) = map.keys().find(|k| !PLAIN_KEYS.contains(&k.as_str())) {
        bail!("{}: `{key}` is not supported here; keep this kustomization a plain list of resources", path.display());
    }
    let resources = map.get("resources").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut objects = Vec::new();
    for resource in resources {
        let Some(file) = resource.as_str() else { bail!("{}: a resource is not a file name", path.display()) };
        let file_path = dir.join(file);
        if file_path.is_dir() || file.contains('/') {
            bail!("{}: `{file}` is not a file of this directory; list files only", path.display());
        }
        objects.push(object_file(&file_path)?);
    }
    Ok(objects)
}

/// A YAML file holding exactly one object.
pub fn object_file(path: &Path) -> anyhow::Result<Object> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let value: Value = serde_yaml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    if !value.is_object() || value["kind"].as_str().is_none() {
        bail!("{}: expected one Kubernetes object", path.display());
    }
    Ok(Object { path: path.to_path_buf(), text, value })
}

/// Any YAML file, as a JSON value.
pub fn yaml_file(path: &Path) -> anyhow::Result<Value> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_yaml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

/// `value` without `metadata.namespace` (OLM and `kubectl -n` decide the namespace).
pub fn without_namespace(value: &Value) -> Value {
    let mut value = value.clone();
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.remove("namespace");
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str, files: &[(&str, &str)]) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("numo-xtask-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).ok();
        for (file, text) in files {
            std::fs::write(dir.join(file), text).ok();
        }
        dir
    }

    #[test]
    fn a_plain_kustomization_lists_its_objects_in_order() {
        let dir = scratch(
            "plain",
            &[
                ("kustomization.yaml", "resources:\n  - b.yaml\n  - a.yaml\n"),
                ("a.yaml", "apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: a\n"),
                ("b.yaml", "apiVersion: v1\nkind: Service\nmetadata:\n  name: b\n  namespace: x\n"),
            ],
        );
        let objects = kustomization(&dir).unwrap_or_default();
        let names: Vec<&str> = objects.iter().map(Object::name).collect();
        assert_eq!(names, ["b", "a"]);
        assert_eq!(objects[0].kind(), "Service");
        assert_eq!(without_namespace(&objects[0].value)["metadata"], serde_json::json!({"name": "b"}));
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn patches_and_directories_are_refused_not_ignored() {
        let dir = scratch("patches", &[("kustomization.yaml", "resources: [a.yaml]\npatches: []\n")]);
        let error = kustomization(&dir).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("`patches` is not supported"), "{error}");
        let dir2 = scratch("dirs", &[("kustomization.yaml", "resources: [../crd]\n")]);
        let error = kustomization(&dir2).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("list files only"), "{error}");
        let _ = std::fs::remove_dir_all(dir);
        let _ = std::fs::remove_dir_all(dir2);
    }
}
