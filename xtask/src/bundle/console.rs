//! ConsoleYAMLSamples: the OpenShift console offers each sample of `config/samples`, with its comments, when a user
//! creates an object of its kind.

use anyhow::Context as _;
use serde_json::{json, Value};

use super::settings::ConsoleSample;
use crate::manifests::Object;

/// One ConsoleYAMLSample per configured sample.
pub fn samples(configured: &[ConsoleSample], samples: &[Object]) -> anyhow::Result<Vec<Value>> {
    configured
        .iter()
        .map(|entry| {
            let sample = samples
                .iter()
                .find(|s| s.file_name() == entry.file)
                .with_context(|| format!("console sample `{}` is not listed in config/samples", entry.file))?;
            Ok(json!({
                "apiVersion": "console.openshift.io/v1",
                "kind": "ConsoleYAMLSample",
                "metadata": {"name": entry.name, "labels": {"app.kubernetes.io/name": "numo"}},
                "spec": {
                    "targetResource": {"apiVersion": sample.api_version(), "kind": sample.kind()},
                    "title": entry.title,
                    "description": entry.description,
                    "yaml": sample.text,
                },
            }))
        })
        .collect()
}
