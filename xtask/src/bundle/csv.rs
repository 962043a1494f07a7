//! The ClusterServiceVersion: the hand-written base of `config/manifests/bases`, completed from `config/`.

use anyhow::{bail, Context as _};
use base64::Engine as _;
use serde_json::{json, Value};

use super::install::Install;
use crate::manifests::{without_namespace, Object};

/// Everything the CSV is made of.
pub struct Inputs<'a> {
    /// The CSV base.
    pub base: &'a Value,
    /// The OLM package name.
    pub package: &'a str,
    /// The bundle version.
    pub version: &'a str,
    /// The version this bundle replaces, if any.
    pub replaces: Option<&'a str>,
    /// The CRDs, as in `config/crd`.
    pub crds: &'a [Value],
    /// The install strategy, image and Services.
    pub install: &'a Install,
    /// The samples of `config/samples`.
    pub samples: &'a [Object],
    /// The SVG icon.
    pub icon_svg: &'a [u8],
}

/// Builds the CSV.
pub fn csv(inputs: &Inputs<'_>) -> anyhow::Result<Value> {
    let mut csv = inputs.base.clone();
    if csv["kind"] != "ClusterServiceVersion" {
        bail!("the CSV base is not a ClusterServiceVersion");
    }
    let image = &inputs.install.image;
    let tag = image.rsplit_once(':').map(|(_, tag)| tag).unwrap_or_default();
    if !image.contains("@sha256:") && tag != inputs.version {
        bail!("the Deployment's image `{image}` is not tagged with the crate version {}", inputs.version);
    }

    csv["metadata"]["name"] = json!(format!("{}.v{}", inputs.package, inputs.version));
    let annotations = csv["metadata"]["annotations"].as_object_mut().context("the CSV base has no annotations")?;
    annotations.insert("alm-examples".into(), json!(alm_examples(inputs.samples, inputs.crds)?));
    annotations.insert("containerImage".into(), json!(image));
    annotations.insert("features.operators.openshift.io/disconnected".into(), json!(disconnected(image)));

    let spec = csv["spec"].as_object_mut().context("the CSV base has no spec")?;
    spec.insert("version".into(), json!(inputs.version));
    if let Some(previous) = inputs.replaces {
        if previous == inputs.version {
            bail!("the bundle cannot replace its own version {previous}");
        }
        spec.insert("replaces".into(), json!(format!("{}.v{previous}", inputs.package)));
    }
    spec.insert("install".into(), inputs.install.strategy.clone());
    spec.insert("relatedImages".into(), json!([{"name": "numo", "image": image}]));
    spec.insert(
        "icon".into(),
        json!([{
            "base64data": base64::engine::general_purpose::STANDARD.encode(inputs.icon_svg),
            "mediatype": "image/svg+xml",
        }]),
    );
    let base_owned = spec
        .get("customresourcedefinitions")
        .and_then(|c| c["owned"].as_array())
        .cloned()
        .context("the CSV base has no customresourcedefinitions.owned")?;
    let owned = super::descriptors::owned(&base_owned, inputs.crds)?;
    spec.insert("customresourcedefinitions".into(), json!({"owned": owned}));
    Ok(csv)
}

/// `alm-examples`: every sample of one of numo's kinds, one per kind, as a JSON array.
fn alm_examples(samples: &[Object], crds: &[Value]) -> anyhow::Result<String> {
    let mut examples = Vec::new();
    for crd in crds {
        let group = crd["spec"]["group"].as_str().unwrap_or_default();
        let kind = crd["spec"]["names"]["kind"].as_str().unwrap_or_default();
        let of_kind: Vec<&Object> =
            samples.iter().filter(|s| s.kind() == kind && s.api_version().starts_with(&format!("{group}/"))).collect();
        let [sample] = of_kind.as_slice() else { bail!("config/samples needs exactly one {kind}") };
        examples.push(without_namespace(&sample.value));
    }
    crate::yaml::to_json_pretty(&Value::Array(examples))
}

/// `features.operators.openshift.io/disconnected`: numo needs no network beyond the API server, so it works in a
/// disconnected cluster exactly when its image can be mirrored, i.e. is referenced by digest.
fn disconnected(image: &str) -> &'static str {
    if image.contains("@sha256:") {
        "true"
    } else {
        "false"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv_replacing(replaces: Option<&str>) -> anyhow::Result<Value> {
        let base = json!({
            "kind": "ClusterServiceVersion",
            "metadata": {"annotations": {}},
            "spec": {"customresourcedefinitions": {"owned": []}},
        });
        let install = Install {
            strategy: json!({"strategy": "deployment"}),
            image: "quay.io/numo-operator/numo:0.2.0".into(),
            services: Vec::new(),
            user_roles: Vec::new(),
        };
        csv(&Inputs {
            base: &base,
            package: "pkg",
            version: "0.2.0",
            replaces,
            crds: &[],
            install: &install,
            samples: &[],
            icon_svg: b"<svg/>",
        })
    }

    #[test]
    fn the_csv_replaces_the_previous_release_by_its_csv_name() -> anyhow::Result<()> {
        assert_eq!(csv_replacing(Some("0.1.0"))?["spec"]["replaces"], "pkg.v0.1.0");
        assert!(csv_replacing(None)?["spec"].get("replaces").is_none());
        let own = csv_replacing(Some("0.2.0")).expect_err("a bundle replacing its own version");
        assert!(own.to_string().contains("cannot replace its own version"), "{own}");
        Ok(())
    }

    #[test]
    fn only_digest_references_count_as_disconnected_ready() {
        assert_eq!(disconnected("quay.io/numo-operator/numo:0.1.0"), "false");
        assert_eq!(disconnected("quay.io/numo-operator/numo@sha256:0123"), "true");
    }
}
