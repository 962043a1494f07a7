//! Installs the OpenShift CRDs into a cluster: the real ones from a folder when it exists, else the ones numo derives
//! from its own Rust types. Also installs numo's own CRDs, the same way.
//!
//! Which folder holds the real CRDs is decided in one place, [`openshift_crds_dir`]: `$NUMO_OPENSHIFT_CRDS` when set,
//! else `../shared/openshift-crds` beside the repository. The test kit, `numo-sim install-crds` and (through
//! `numo-sim`) `hack/cluster-up.sh` all ask it.
//!
//! Every CRD is applied server-side under one field manager and then awaited until the API server reports it
//! `Established`, so objects of the kind can be created as soon as the function returns.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::wait::{await_condition, conditions};
use serde::Deserialize;

/// Field manager of every CRD this module applies.
pub const FIELD_MANAGER: &str = "numo-crd-installer";

/// How long one CRD may take to become Established.
const ESTABLISH_TIMEOUT: Duration = Duration::from_secs(60);

/// Environment variable naming the folder of real OpenShift CRDs; see [`openshift_crds_dir`].
pub const OPENSHIFT_CRDS_ENV: &str = "NUMO_OPENSHIFT_CRDS";

/// The folder of real OpenShift CRDs, if any: `$NUMO_OPENSHIFT_CRDS` when set (it must then be a folder: a typo is
/// an error, never a silent fallback), else `../shared/openshift-crds` beside the repository when that folder exists.
/// `None` means "no real CRDs here": [`install_openshift_crds`] then derives them from numo's Rust types.
pub fn openshift_crds_dir() -> anyhow::Result<Option<PathBuf>> {
    resolve_crds_dir(std::env::var_os(OPENSHIFT_CRDS_ENV), &default_crds_dir())
}

/// `<repository>/../shared/openshift-crds`, the repository being the workspace this crate was built in.
fn default_crds_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/openshift-crds")
}

/// [`openshift_crds_dir`] for a given value of the variable and default folder.
fn resolve_crds_dir(variable: Option<std::ffi::OsString>, default: &Path) -> anyhow::Result<Option<PathBuf>> {
    match variable.filter(|v| !v.is_empty()) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if !dir.is_dir() {
                bail!("{OPENSHIFT_CRDS_ENV}={} is not a folder (unset it to use {})", dir.display(), default.display());
            }
            Ok(Some(dir))
        }
        None => Ok(default.is_dir().then(|| default.canonicalize().unwrap_or_else(|_| default.to_path_buf()))),
    }
}

/// Installs the OpenShift CRDs (ClusterVersion, MachineConfigPool, MachineConfig, and whatever else `from` holds):
/// every CRD in the `*.yaml`/`*.yml` files of the folder `from` when given, else those derived from numo's Rust types
/// ([`numo::openshift::crds`]). Returns the names of the CRDs, each Established.
pub async fn install_openshift_crds(client: &kube::Client, from: Option<&Path>) -> anyhow::Result<Vec<String>> {
    let crds = match from {
        Some(dir) => read_crds(dir)?,
        None => numo::openshift::crds(),
    };
    apply_crds(client, crds).await
}

/// Installs numo's own CRDs ([`numo::api::crds`]). Returns their names, each Established.
pub async fn install_numo_crds(client: &kube::Client) -> anyhow::Result<Vec<String>> {
    apply_crds(client, numo::api::crds()).await
}

/// Applies `crds` server-side (forcing ownership of their fields) and waits until each is Established.
pub async fn apply_crds(client: &kube::Client, crds: Vec<CustomResourceDefinition>) -> anyhow::Result<Vec<String>> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let mut names = Vec::with_capacity(crds.len());
    for mut crd in crds {
        let name = crd.metadata.name.clone().context("a CRD without metadata.name")?;
        crd.metadata.managed_fields = None;
        crd.metadata.resource_version = None;
        crd.status = None;
        api.patch(&name, &params, &Patch::Apply(&crd)).await.with_context(|| format!("applying CRD {name}"))?;
        names.push(name);
    }
    for name in &names {
        let established = await_condition(api.clone(), name, conditions::is_crd_established());
        tokio::time::timeout(ESTABLISH_TIMEOUT, established)
            .await
            .with_context(|| format!("CRD {name} not Established within {ESTABLISH_TIMEOUT:?}"))?
            .with_context(|| format!("watching CRD {name}"))?;
    }
    Ok(names)
}

/// Reads every CustomResourceDefinition from the YAML files of `dir` (multi-document files included), in file-name
/// order. Documents of other kinds are skipped; a folder without any CRD is an error.
pub fn read_crds(dir: &Path) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .map(|entry| entry.map(|e| e.path()))
        .collect::<Result<_, _>>()
        .with_context(|| format!("listing {}", dir.display()))?;
    files.retain(|path| path.extension().is_some_and(|ext| ext == "yaml" || ext == "yml"));
    files.sort();
    let mut crds = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        crds.extend(parse_crds(&text).with_context(|| format!("parsing {}", file.display()))?);
    }
    if crds.is_empty() {
        bail!("no CustomResourceDefinition in {}", dir.display());
    }
    Ok(crds)
}

/// The CustomResourceDefinitions among the documents of a (multi-document) YAML text.
fn parse_crds(text: &str) -> anyhow::Result<Vec<CustomResourceDefinition>> {
    let mut crds = Vec::new();
    for document in serde_yaml::Deserializer::from_str(text) {
        let value = serde_yaml::Value::deserialize(document)?;
        if value.get("kind").and_then(serde_yaml::Value::as_str) == Some("CustomResourceDefinition") {
            crds.push(serde_yaml::from_value(value)?);
        }
    }
    Ok(crds)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_DOCUMENTS: &str = r#"
apiVersion: v1
kind: ConfigMap
metadata:
  name: not-a-crd
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object}
"#;

    #[test]
    fn only_crd_documents_are_read() {
        let crds = parse_crds(TWO_DOCUMENTS).unwrap();
        let names: Vec<_> = crds.iter().map(|c| c.metadata.name.as_deref().unwrap_or_default()).collect();
        assert_eq!(names, ["widgets.example.com"]);
    }

    #[test]
    fn the_real_openshift_crds_parse_when_present() {
        let Some(dir) = openshift_crds_dir().unwrap() else { return };
        let crds = read_crds(&dir).unwrap();
        let names: Vec<_> = crds.iter().filter_map(|c| c.metadata.name.as_deref()).collect();
        for kind in ["clusterversions.config.openshift.io", "machineconfigpools.machineconfiguration.openshift.io"] {
            assert!(names.contains(&kind), "{kind} missing from {names:?}");
        }
    }

    #[test]
    fn the_variable_wins_over_the_default_and_must_name_a_folder() {
        let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let missing = here.join("no-such-folder");
        assert_eq!(resolve_crds_dir(None, &here).unwrap(), Some(here.clone()), "the default when it exists");
        assert_eq!(resolve_crds_dir(None, &missing).unwrap(), None, "no default folder: derived CRDs");
        assert_eq!(resolve_crds_dir(Some("".into()), &missing).unwrap(), None, "empty counts as unset");
        let src = here.join("src");
        assert_eq!(resolve_crds_dir(Some(src.clone().into()), &here).unwrap(), Some(src));
        let err = resolve_crds_dir(Some(missing.clone().into()), &here).unwrap_err().to_string();
        assert!(err.starts_with("NUMO_OPENSHIFT_CRDS=") && err.contains("no-such-folder"), "{err}");
    }

    #[test]
    fn a_folder_without_crds_is_an_error() {
        let dir = std::env::temp_dir().join(format!("numo-crds-empty-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let err = read_crds(&dir).unwrap_err();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(err.to_string().contains("no CustomResourceDefinition"), "{err}");
    }
}
