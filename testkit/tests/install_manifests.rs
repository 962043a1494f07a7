//! `kubectl apply -k config/default` installs numo cleanly on the real API server, the operator's pod passes the
//! restricted Pod Security Standard, and every sample of config/samples is accepted by the real CRDs.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context as _};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Pod, Service, ServiceAccount};
use kube::api::{Api, PostParams};

/// The repository root.
fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The kubectl that hack/build-tools.sh built (its version pinned in hack/versions.sh).
fn kubectl() -> anyhow::Result<PathBuf> {
    let versions = std::fs::read_to_string(repo().join("hack/versions.sh"))?;
    let version = versions
        .lines()
        .find_map(|l| l.strip_prefix("K8S_VERSION=\"${K8S_VERSION:-")?.strip_suffix("}\""))
        .context("hack/versions.sh pins no K8S_VERSION")?;
    let version = std::env::var("K8S_VERSION").unwrap_or_else(|_| version.to_string());
    let cache = match (std::env::var_os("NUMO_CACHE"), std::env::var_os("XDG_CACHE_HOME"), std::env::var_os("HOME")) {
        (Some(cache), _, _) => PathBuf::from(cache),
        (None, Some(xdg), _) => PathBuf::from(xdg).join("numo"),
        (None, None, Some(home)) => PathBuf::from(home).join(".cache/numo"),
        (None, None, None) => bail!("neither NUMO_CACHE, XDG_CACHE_HOME nor HOME is set"),
    };
    let kubectl = cache.join(format!("kubernetes-{version}/bin/kubectl"));
    if !kubectl.is_file() {
        bail!("{} is missing; run hack/build-tools.sh", kubectl.display());
    }
    Ok(kubectl)
}

/// Runs kubectl against the test cluster; fails with its output when it fails.
fn run_kubectl(kubeconfig: &Path, args: &[&str]) -> anyhow::Result<String> {
    let output =
        Command::new(kubectl()?).arg("--kubeconfig").arg(kubeconfig).args(args).current_dir(repo()).output()?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    if !output.status.success() {
        bail!("kubectl {} failed:\n{stdout}\n{stderr}", args.join(" "));
    }
    Ok(format!("{stdout}{stderr}"))
}

#[tokio::test]
async fn kubectl_apply_k_config_default_installs_numo() -> anyhow::Result<()> {
    let cluster = numo_testkit::cluster().await?;
    let kubeconfig = cluster.kubeconfig().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        run_kubectl(
            &kubeconfig,
            &["apply", "--server-side", "--field-manager=numo-install-test", "-k", "config/default"],
        )
    })
    .await??;
    assert!(!output.to_lowercase().contains("warning"), "the install must apply without warnings:\n{output}");

    let client = cluster.client();
    let namespace = Api::<Namespace>::all(client.clone()).get("numo-system").await?;
    let labels = namespace.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get("pod-security.kubernetes.io/enforce").map(String::as_str), Some("restricted"));
    Api::<ServiceAccount>::namespaced(client.clone(), "numo-system").get("numo-operator").await?;
    let service = Api::<Service>::namespaced(client.clone(), "numo-system").get("numo-operator-metrics").await?;
    let port = service.spec.and_then(|s| s.ports).and_then(|p| p.into_iter().next()).map(|p| p.port);
    assert_eq!(port, Some(8080));

    // The operator's pod, as the Deployment's ReplicaSet would create it, is admitted by the restricted Pod Security
    // Standard that the namespace enforces (a dry run: the admission chain runs, nothing is stored).
    let deployment = Api::<Deployment>::namespaced(client.clone(), "numo-system").get("numo-operator").await?;
    let template = deployment.spec.map(|s| s.template).context("the Deployment has no pod template")?;
    let pod = Pod {
        metadata: kube::api::ObjectMeta {
            generate_name: Some("numo-operator-psa-check-".into()),
            labels: template.metadata.and_then(|m| m.labels),
            ..Default::default()
        },
        spec: template.spec,
        ..Default::default()
    };
    let dry_run = PostParams { dry_run: true, ..Default::default() };
    Api::<Pod>::namespaced(client.clone(), "numo-system")
        .create(&dry_run, &pod)
        .await
        .context("the restricted Pod Security Standard must admit the operator's pod")?;
    Ok(())
}

#[tokio::test]
async fn a_pod_that_breaks_the_restricted_standard_is_refused_in_numo_system() -> anyhow::Result<()> {
    // The positive check above means something only if the namespace really enforces the standard.
    let cluster = numo_testkit::cluster().await?;
    let kubeconfig = cluster.kubeconfig().to_path_buf();
    tokio::task::spawn_blocking(move || {
        run_kubectl(
            &kubeconfig,
            &["apply", "--server-side", "--field-manager=numo-install-test", "-f", "config/default/namespace.yaml"],
        )
    })
    .await??;
    let pod: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"generateName": "privileged-"},
        "spec": {"containers": [{"name": "c", "image": "x", "securityContext": {"privileged": true}}]},
    }))?;
    let dry_run = PostParams { dry_run: true, ..Default::default() };
    let refused = Api::<Pod>::namespaced(cluster.client(), "numo-system").create(&dry_run, &pod).await;
    assert!(matches!(&refused, Err(kube::Error::Api(s)) if s.code == 403), "{refused:?}");
    Ok(())
}

#[tokio::test]
async fn every_sample_is_accepted_by_the_real_crds() -> anyhow::Result<()> {
    let cluster = numo_testkit::cluster().await?;
    // The cluster to itself, without the leftovers of earlier tests: a run config of one still holding the canary
    // pool would have numo's admission policy refuse the sample's canary.
    let _world = cluster.world("install-samples").await?;
    let kubeconfig = cluster.kubeconfig().to_path_buf();
    let output = tokio::task::spawn_blocking(move || {
        run_kubectl(&kubeconfig, &["apply", "--dry-run=server", "-n", "default", "-k", "config/samples"])
    })
    .await??;
    for kind in ["machineconfigpool", "mutexrule", "mutextarget", "mutexrunconfig"] {
        assert!(output.contains(&format!("{kind}.")), "kubectl did not report the {kind} sample:\n{output}");
    }
    for variant in ["safe-to-proceed", "every-config-change"] {
        let kubeconfig = cluster.kubeconfig().to_path_buf();
        let dir = format!("config/samples/{variant}");
        let applied = tokio::task::spawn_blocking(move || {
            run_kubectl(&kubeconfig, &["apply", "--dry-run=server", "-n", "default", "-k", &dir])
        })
        .await??;
        assert!(applied.contains("mutexrunconfig."), "kubectl did not report the {variant} sample:\n{applied}");
    }
    Ok(())
}
