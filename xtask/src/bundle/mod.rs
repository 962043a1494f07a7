//! The OLM bundle (registry+v1), generated from `config/`.
//!
//! Inputs: `config/manifests/` (CSV base, bundle settings, icon), `config/crd` (copied verbatim), `config/rbac` and
//! `config/manager` (install strategy, metrics Service), `config/samples` (alm-examples, ConsoleYAMLSamples),
//! `config/prometheus` (ServiceMonitor, PrometheusRule and the Role that lets OpenShift's monitoring scrape numo).
//! Outputs: `bundle/manifests/*`, `bundle/metadata/annotations.yaml`, `bundle.Dockerfile`.

mod console;
mod csv;
pub mod descriptors;
mod install;
mod metadata;
mod monitoring;
pub mod settings;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde_json::Value;

use crate::manifests::{self, Object};

/// First lines of every generated file.
pub const GENERATED: &str = "# Generated from config/ by `cargo xtask bundle`; do not edit.\n";

/// The directories whose files are all generated (stale files in them are drift).
const GENERATED_DIRS: &[&str] = &["bundle/manifests", "bundle/metadata"];

/// Every generated file: path relative to the repository root → content.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bundle {
    /// The files.
    pub files: BTreeMap<PathBuf, String>,
}

/// How a file on disk differs from the generated one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Drift {
    /// The file should exist and does not.
    Missing(PathBuf),
    /// The file's content differs.
    Changed(PathBuf),
    /// The file is not generated any more.
    Stale(PathBuf),
}

impl fmt::Display for Drift {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Drift::Missing(p) => write!(f, "missing: {}", p.display()),
            Drift::Changed(p) => write!(f, "differs: {}", p.display()),
            Drift::Stale(p) => write!(f, "not generated (stale): {}", p.display()),
        }
    }
}

/// Choices that change the generated bundle.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The operator image to install instead of config/manager's, e.g. a release image pinned by digest
    /// (`quay.io/numo-operator/numo@sha256:...`); the committed bundle uses config/manager's.
    pub image: Option<String>,
}

/// Generates the bundle from the `config/` of the repository at `root`, as committed.
pub fn generate(root: &Path) -> anyhow::Result<Bundle> {
    generate_with(root, &Options::default())
}

/// Generates the bundle from the `config/` of the repository at `root`, with `options`.
pub fn generate_with(root: &Path, options: &Options) -> anyhow::Result<Bundle> {
    let config = root.join("config");
    let settings = settings::Settings::load(&config.join("manifests/bundle.yaml"))?;
    let base_path = config.join(format!("manifests/bases/{}.clusterserviceversion.yaml", settings.package));
    let base = manifests::yaml_file(&base_path)?;
    let icon_svg = std::fs::read(config.join("manifests/icon.svg")).context("reading config/manifests/icon.svg")?;
    let crds = crds(&config.join("crd"))?;
    let rbac = manifests::kustomization(&config.join("rbac"))?;
    let manager = manifests::kustomization(&config.join("manager"))?;
    let samples = manifests::kustomization(&config.join("samples"))?;
    let monitoring = monitoring::manifests(&manifests::kustomization(&config.join("prometheus"))?)?;
    let install = install::install(&manager, &rbac, options.image.as_deref())?;

    let crd_values: Vec<Value> = crds.iter().map(|o| o.value.clone()).collect();
    let csv = csv::csv(&csv::Inputs {
        base: &base,
        package: &settings.package,
        version: crate::VERSION,
        replaces: settings.replaces.as_deref(),
        crds: &crd_values,
        install: &install,
        samples: &samples,
        icon_svg: &icon_svg,
    })?;

    let mut files = BTreeMap::new();
    let manifests_dir = Path::new("bundle/manifests");
    let csv_file = manifests_dir.join(format!("{}.clusterserviceversion.yaml", settings.package));
    files.insert(csv_file, generated_yaml(&csv)?);
    for crd in &crds {
        files.insert(manifests_dir.join(crd.file_name()), crd.text.clone());
    }
    for service in &install.services {
        let name = service["metadata"]["name"].as_str().unwrap_or("service");
        files.insert(manifests_dir.join(format!("{name}_v1_service.yaml")), generated_yaml(service)?);
    }
    for role in &install.user_roles {
        let name = role["metadata"]["name"].as_str().unwrap_or("role");
        files.insert(
            manifests_dir.join(format!("{name}_rbac.authorization.k8s.io_v1_clusterrole.yaml")),
            generated_yaml(role)?,
        );
    }
    for (file, object) in &monitoring {
        files.insert(manifests_dir.join(file), generated_yaml(object)?);
    }
    for sample in console::samples(&settings.console_samples, &samples)? {
        let name = sample["metadata"]["name"].as_str().unwrap_or("sample");
        let file = format!("{name}_console.openshift.io_v1_consoleyamlsample.yaml");
        files.insert(manifests_dir.join(file), generated_yaml(&sample)?);
    }
    let annotations = metadata::annotations(&settings);
    files.insert(PathBuf::from("bundle/metadata/annotations.yaml"), metadata::annotations_yaml(&annotations)?);
    files.insert(PathBuf::from("bundle.Dockerfile"), metadata::dockerfile(&annotations));
    Ok(Bundle { files })
}

/// The CRDs of `config/crd`, in the order of its kustomization, checked against numo's Rust types.
fn crds(dir: &Path) -> anyhow::Result<Vec<Object>> {
    let objects = manifests::kustomization(dir).context("reading config/crd (run `make crds` to generate it)")?;
    let expected = numo::api::crds();
    let mut found = Vec::new();
    for object in &objects {
        if object.kind() != "CustomResourceDefinition" {
            bail!("{}: not a CustomResourceDefinition", object.path.display());
        }
        let typed: CustomResourceDefinition = serde_json::from_value(object.value.clone())
            .with_context(|| format!("{}: not a valid CustomResourceDefinition", object.path.display()))?;
        if !expected.contains(&typed) {
            bail!("{} differs from the Rust types; run `make crds`", object.path.display());
        }
        if object.file_name() != format!("{}.yaml", object.name()) {
            bail!("{}: a CRD's file must be named `{}.yaml`", object.path.display(), object.name());
        }
        found.push(typed.metadata.name.clone());
    }
    for crd in &expected {
        if !found.contains(&crd.metadata.name) {
            bail!("config/crd lacks {}; run `make crds`", crd.metadata.name.as_deref().unwrap_or_default());
        }
    }
    Ok(objects)
}

fn generated_yaml(value: &Value) -> anyhow::Result<String> {
    Ok(format!("{GENERATED}{}", crate::yaml::to_yaml(value)?))
}

impl Bundle {
    /// How the files under `root` differ from this bundle (empty: no drift).
    pub fn drift(&self, root: &Path) -> anyhow::Result<Vec<Drift>> {
        let mut drift = Vec::new();
        for (path, content) in &self.files {
            match std::fs::read_to_string(root.join(path)) {
                Ok(on_disk) if &on_disk == content => {}
                Ok(_) => drift.push(Drift::Changed(path.clone())),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => drift.push(Drift::Missing(path.clone())),
                Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
            }
        }
        drift.extend(self.stale_files(root)?.into_iter().map(Drift::Stale));
        Ok(drift)
    }

    /// Writes every file and removes stale ones; returns what changed.
    pub fn write(&self, root: &Path) -> anyhow::Result<Vec<Drift>> {
        let drift = self.drift(root)?;
        for change in &drift {
            match change {
                Drift::Missing(path) | Drift::Changed(path) => {
                    let target = root.join(path);
                    if let Some(dir) = target.parent() {
                        std::fs::create_dir_all(dir)?;
                    }
                    std::fs::write(&target, &self.files[path])
                        .with_context(|| format!("writing {}", path.display()))?;
                }
                Drift::Stale(path) => std::fs::remove_file(root.join(path))?,
            }
        }
        Ok(drift)
    }

    fn stale_files(&self, root: &Path) -> anyhow::Result<Vec<PathBuf>> {
        let mut stale = Vec::new();
        for dir in GENERATED_DIRS {
            let Ok(entries) = std::fs::read_dir(root.join(dir)) else { continue };
            for entry in entries {
                let path = Path::new(dir).join(entry?.file_name());
                if !self.files.contains_key(&path) {
                    stale.push(path);
                }
            }
        }
        stale.sort();
        Ok(stale)
    }
}
