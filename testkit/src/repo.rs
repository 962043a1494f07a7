//! numo's repository as tests read it: its root, and the YAML files it ships (manifests, samples, rules).

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use serde_json::Value;

/// The repository root (the parent of this crate's directory).
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_path_buf).unwrap_or_default()
}

/// The one YAML document of the file at `path`; panics, naming the file, when it cannot be read or parsed.
pub fn yaml(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("parsing {}: {e}", path.display()))
}

/// Every document of the YAML file at `path` (a `---` stream), the empty ones left out.
pub fn documents(path: &Path) -> anyhow::Result<Vec<Value>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    let mut docs = Vec::new();
    for doc in serde_yaml::Deserializer::from_str(&text) {
        let value: Value = serde::Deserialize::deserialize(doc).with_context(|| format!("{}", path.display()))?;
        if !value.is_null() {
            docs.push(value);
        }
    }
    Ok(docs)
}

/// The files the kustomization in `dir` lists (its `resources`), as paths under `dir`.
pub fn kustomization_resources(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let docs = documents(&dir.join("kustomization.yaml"))?;
    let resources = docs.first().and_then(|k| k["resources"].as_array()).cloned().unwrap_or_default();
    resources.iter().map(|r| r.as_str().map(|r| dir.join(r)).context("a resource that is not a path")).collect()
}
