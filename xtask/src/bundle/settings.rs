//! `config/manifests/bundle.yaml`: the bundle settings that are not part of the CSV.

use std::path::Path;

use anyhow::{bail, Context as _};
use serde::Deserialize;

/// The bundle's package, channels, OpenShift versions and console samples.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settings {
    /// The OLM package name; the CSV is named `<package>.v<version>`.
    pub package: String,
    /// The channels this bundle is in.
    pub channels: Vec<String>,
    /// The channel a Subscription gets when it names none.
    pub default_channel: String,
    /// `com.redhat.openshift.versions`, e.g. `v4.16` (that version and later).
    pub openshift_versions: String,
    /// The version this bundle upgrades from (the CSV's `spec.replaces` names `<package>.v<replaces>`): the
    /// previous release, so that OLM upgrades a Subscription from it along the channel.
    #[serde(default)]
    pub replaces: Option<String>,
    /// One ConsoleYAMLSample per entry.
    pub console_samples: Vec<ConsoleSample>,
}

/// A ConsoleYAMLSample made from a file of `config/samples`.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConsoleSample {
    /// The sample file, relative to `config/samples`.
    pub file: String,
    /// The ConsoleYAMLSample's name.
    pub name: String,
    /// The title the console shows.
    pub title: String,
    /// The description the console shows.
    pub description: String,
}

impl Settings {
    /// Reads and checks the settings file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        let settings: Settings = serde_yaml::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
        if settings.channels.is_empty() || !settings.channels.contains(&settings.default_channel) {
            bail!("{}: defaultChannel must be one of the channels", path.display());
        }
        Ok(settings)
    }
}
