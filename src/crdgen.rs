//! The CRD manifests of numo's kinds, generated from the Rust types. `numo crds` prints them; `make crds` writes
//! them to `config/crd/`, where they are committed (a test fails when the committed files drift).

use std::path::{Path, PathBuf};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;

/// First line of every generated file.
pub const HEADER: &str = "# Generated from the Rust types by `numo crds` (run `make crds`); do not edit.\n";

/// numo's CRDs, in a stable order.
pub fn crds() -> Vec<CustomResourceDefinition> {
    crate::api::crds()
}

/// The file a CRD is written to: `<plural>.<group>.yaml` (the CRD's own name).
pub fn file_name(crd: &CustomResourceDefinition) -> String {
    format!("{}.yaml", crd.metadata.name.as_deref().unwrap_or("unnamed"))
}

/// One CRD as a YAML document, with the header.
pub fn to_yaml(crd: &CustomResourceDefinition) -> Result<String, serde_yaml::Error> {
    Ok(format!("{HEADER}{}", serde_yaml::to_string(crd)?))
}

/// Every CRD as one multi-document YAML stream.
pub fn all_yaml() -> Result<String, serde_yaml::Error> {
    let mut out = String::new();
    for crd in crds() {
        out.push_str("---\n");
        out.push_str(&serde_yaml::to_string(&crd)?);
    }
    Ok(out)
}

/// Every CRD as `(file name, file content)`.
pub fn files() -> Result<Vec<(String, String)>, serde_yaml::Error> {
    crds().iter().map(|crd| Ok((file_name(crd), to_yaml(crd)?))).collect()
}

/// Writes one file per CRD into `dir` (created if missing); returns the paths written.
pub fn write_dir(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for (name, content) in files()? {
        let path = dir.join(name);
        std::fs::write(&path, content)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_are_named_after_plural_and_group() {
        let names: Vec<String> = crds().iter().map(file_name).collect();
        assert_eq!(
            names,
            [
                "mutexrules.openshift-optional.skrzypek.io.yaml",
                "mutextargets.openshift-optional.skrzypek.io.yaml",
                "mutexrunconfigs.openshift-optional.skrzypek.io.yaml",
            ]
        );
    }

    #[test]
    fn the_stream_holds_every_crd_as_its_own_document() {
        let text = all_yaml().unwrap_or_default();
        let docs: Vec<CustomResourceDefinition> =
            text.split("---\n").filter(|d| !d.trim().is_empty()).filter_map(|d| serde_yaml::from_str(d).ok()).collect();
        assert_eq!(docs, crds());
    }
}
