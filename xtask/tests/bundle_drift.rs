//! The committed OLM bundle is exactly what `cargo xtask bundle` generates from config/, and the check notices when
//! it is not.

use std::path::{Path, PathBuf};

use xtask::bundle::{self, Drift};

fn copy_dir(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), target)?;
        }
    }
    Ok(())
}

/// A copy of the repository's config/, bundle/ and bundle.Dockerfile in a temporary directory.
fn scratch_repo(name: &str) -> PathBuf {
    let root = xtask::repo_root();
    let scratch = std::env::temp_dir().join(format!("numo-bundle-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    copy_dir(&root.join("config"), &scratch.join("config")).expect("copy config/");
    copy_dir(&root.join("bundle"), &scratch.join("bundle")).expect("copy bundle/");
    std::fs::copy(root.join("bundle.Dockerfile"), scratch.join("bundle.Dockerfile")).expect("copy bundle.Dockerfile");
    scratch
}

#[test]
fn the_committed_bundle_is_what_config_generates() {
    let root = xtask::repo_root();
    let generated = bundle::generate(&root).expect("generate the bundle from config/");
    let drift = generated.drift(&root).expect("compare with the committed bundle");
    let listing: Vec<String> = drift.iter().map(ToString::to_string).collect();
    assert!(drift.is_empty(), "the bundle is out of date; run `cargo xtask bundle`:\n{}", listing.join("\n"));
}

#[test]
fn generating_twice_gives_the_same_bytes() {
    let root = xtask::repo_root();
    let first = bundle::generate(&root).expect("first generation");
    let second = bundle::generate(&root).expect("second generation");
    assert_eq!(first, second);
}

#[test]
fn a_change_in_config_is_drift_until_the_bundle_is_regenerated() {
    let scratch = scratch_repo("edit");
    let manager = scratch.join("config/manager/manager.yaml");
    let text = std::fs::read_to_string(&manager).expect("read manager.yaml");
    assert!(text.contains("memory: 256Mi"), "the test edits the memory limit");
    std::fs::write(&manager, text.replace("memory: 256Mi", "memory: 300Mi")).expect("edit manager.yaml");
    std::fs::write(scratch.join("bundle/manifests/leftover.yaml"), "kind: ConfigMap\n").expect("add a stray file");

    let generated = bundle::generate(&scratch).expect("generate from the edited config");
    let drift = generated.drift(&scratch).expect("compare");
    assert_eq!(
        drift,
        vec![Drift::Changed(generated_csv()), Drift::Stale(PathBuf::from("bundle/manifests/leftover.yaml"))]
    );

    generated.write(&scratch).expect("regenerate");
    assert_eq!(generated.drift(&scratch).expect("compare again"), vec![]);
    let csv_text = std::fs::read_to_string(scratch.join(generated_csv())).expect("read the new CSV");
    assert!(csv_text.contains("memory: 300Mi"), "the CSV's Deployment follows config/manager");
    let _ = std::fs::remove_dir_all(scratch);
}

#[test]
fn a_descriptor_for_a_field_the_crd_lacks_is_refused() {
    let scratch = scratch_repo("descriptor");
    let base = scratch.join("config/manifests/bases/openshift-node-upgrade-mutex-operator.clusterserviceversion.yaml");
    let text = std::fs::read_to_string(&base).expect("read the CSV base");
    std::fs::write(&base, text.replace("- path: canary.name", "- path: canary.nmae")).expect("edit the CSV base");
    let error = bundle::generate(&scratch).err().map(|e| format!("{e:#}")).unwrap_or_default();
    assert!(error.contains("`canary.nmae` is not a field"), "{error}");
    let _ = std::fs::remove_dir_all(scratch);
}

fn generated_csv() -> PathBuf {
    PathBuf::from("bundle/manifests/openshift-node-upgrade-mutex-operator.clusterserviceversion.yaml")
}

#[test]
fn a_release_image_by_digest_is_installed_and_marks_the_bundle_disconnected_ready() {
    let root = xtask::repo_root();
    let image = "quay.io/numo-operator/numo@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    let options = bundle::Options { image: Some(image.to_string()) };
    let generated = bundle::generate_with(&root, &options).expect("generate with a digest image");
    let csv: serde_json::Value = serde_yaml::from_str(&generated.files[&generated_csv()]).expect("parse the CSV");
    assert_eq!(csv["metadata"]["annotations"]["containerImage"], image);
    assert_eq!(csv["metadata"]["annotations"]["features.operators.openshift.io/disconnected"], "true");
    assert_eq!(csv["spec"]["relatedImages"][0]["image"], image);
    let pod = &csv["spec"]["install"]["spec"]["deployments"][0]["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["image"], image);

    let committed = bundle::generate(&root).expect("generate as committed");
    let csv: serde_json::Value = serde_yaml::from_str(&committed.files[&generated_csv()]).expect("parse the CSV");
    assert_eq!(csv["metadata"]["annotations"]["features.operators.openshift.io/disconnected"], "false");

    let wrong_tag = bundle::Options { image: Some("quay.io/numo-operator/numo:9.9.9".into()) };
    let error = bundle::generate_with(&root, &wrong_tag).err().map(|e| format!("{e:#}")).unwrap_or_default();
    assert!(error.contains("not tagged with the crate version"), "{error}");
}
