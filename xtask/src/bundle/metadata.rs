//! `bundle/metadata/annotations.yaml` and `bundle.Dockerfile`, whose LABELs are the same annotations.

use std::collections::BTreeMap;

use super::settings::Settings;
use super::GENERATED;

/// The bundle annotations, sorted by key.
pub fn annotations(settings: &Settings) -> BTreeMap<&'static str, String> {
    BTreeMap::from([
        ("operators.operatorframework.io.bundle.mediatype.v1", "registry+v1".to_string()),
        ("operators.operatorframework.io.bundle.manifests.v1", "manifests/".to_string()),
        ("operators.operatorframework.io.bundle.metadata.v1", "metadata/".to_string()),
        ("operators.operatorframework.io.bundle.package.v1", settings.package.clone()),
        ("operators.operatorframework.io.bundle.channels.v1", settings.channels.join(",")),
        ("operators.operatorframework.io.bundle.channel.default.v1", settings.default_channel.clone()),
        ("com.redhat.openshift.versions", settings.openshift_versions.clone()),
    ])
}

/// `bundle/metadata/annotations.yaml`.
pub fn annotations_yaml(annotations: &BTreeMap<&'static str, String>) -> anyhow::Result<String> {
    let doc = BTreeMap::from([("annotations", annotations)]);
    Ok(format!("{GENERATED}{}", serde_yaml::to_string(&doc)?))
}

/// `bundle.Dockerfile` (built from the repository root).
pub fn dockerfile(annotations: &BTreeMap<&'static str, String>) -> String {
    let mut text = format!("{GENERATED}# Build from the repository root: make bundle-build\nFROM scratch\n\n");
    for (key, value) in annotations {
        text.push_str(&format!("LABEL {key}={}\n", label_value(value)));
    }
    text.push_str("\nCOPY bundle/manifests /manifests/\nCOPY bundle/metadata /metadata/\n");
    text
}

/// A LABEL value, quoted when it holds anything but plain characters.
fn label_value(value: &str) -> String {
    if !value.is_empty() && value.chars().all(|c| c.is_ascii_alphanumeric() || "+-./:_,".contains(c)) {
        value.to_string()
    } else {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_label_values_stay_bare_and_others_are_quoted() {
        assert_eq!(label_value("registry+v1"), "registry+v1");
        assert_eq!(label_value("v4.16"), "v4.16");
        assert_eq!(label_value("a b"), "\"a b\"");
        assert_eq!(label_value(""), "\"\"");
    }
}
