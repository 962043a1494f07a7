//! The one cluster of a test run: found through `$NUMO_TEST_KUBECONFIG`, or started (or reused) with
//! `hack/cluster-up.sh numo-test`; set up once per process with the OpenShift CRDs and numo's CRDs.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context as _};
use k8s_openapi::api::core::v1::Namespace;
use kube::api::{Api, ObjectMeta, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::OnceCell;

use crate::cleanup::{remove_leftovers, TEST_NAMESPACE_LABEL};
use crate::lock::{self, lock_path};
use crate::world::World;

/// Environment variable naming the kubeconfig of an already running cluster to test against.
pub const KUBECONFIG_ENV: &str = "NUMO_TEST_KUBECONFIG";
/// Name of the cluster the test kit starts when [`KUBECONFIG_ENV`] is not set.
pub const CLUSTER_NAME: &str = "numo-test";

static CLUSTER: OnceCell<TestCluster> = OnceCell::const_new();

/// The cluster of this test run: connects to `$NUMO_TEST_KUBECONFIG` if set, else starts (or reuses) the cluster
/// `numo-test` via `hack/cluster-up.sh`. Installs the OpenShift CRDs (the real ones from
/// `numo_simulator::crds::openshift_crds_dir`: `$NUMO_OPENSHIFT_CRDS`, else `../shared/openshift-crds` beside the
/// repository) and numo's CRDs once, holding the cluster's lock (as a test's world does). Safe to call from many
/// tests, threads and runtimes.
pub async fn cluster() -> anyhow::Result<&'static TestCluster> {
    CLUSTER.get_or_try_init(TestCluster::set_up).await
}

/// A running cluster the tests of this process share; see [`cluster`].
pub struct TestCluster {
    kubeconfig: PathBuf,
    config: kube::Config,
    lock: PathBuf,
}

impl std::fmt::Debug for TestCluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestCluster")
            .field("kubeconfig", &self.kubeconfig)
            .field("server", &self.config.cluster_url.to_string())
            .finish()
    }
}

impl TestCluster {
    /// A fresh client usable on the caller's runtime (call it inside a tokio runtime).
    pub fn client(&self) -> kube::Client {
        // The same configuration already built a client in `set_up`, so this cannot fail any more.
        kube::Client::try_from(self.config.clone()).expect("the test cluster's configuration built a client before")
    }

    /// The kubeconfig file of the cluster.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The client configuration of the cluster.
    pub fn config(&self) -> &kube::Config {
        &self.config
    }

    /// Exclusive use of the cluster for one test: waits for other tests (across threads and runtimes of this process
    /// and across test binaries running concurrently), deletes the leftovers of earlier tests (numo's
    /// ValidatingAdmissionPolicy, nodes, MachineConfigPools, MachineConfigs, ClusterVersions, ClusterOperators,
    /// numo's objects, test namespaces — waiting until they are gone, finalizers of numo's objects removed), then
    /// creates a fresh namespace `<test-name>-<random>` labelled as a test namespace. [`World::openshift`] seeds the
    /// healthy ClusterOperators of the payload again. A test holds one World at a time: asking for a second while
    /// holding the first waits forever.
    pub async fn world(&self, test_name: &str) -> anyhow::Result<World> {
        let lock = lock::acquire(self.lock.clone()).await?;
        let client = self.client();
        remove_leftovers(&client).await.context("removing the leftovers of earlier tests")?;
        let namespace = create_namespace(&client, test_name).await?;
        tracing::info!(%namespace, "test world ready");
        Ok(World::new(client, self.config.clone(), namespace, lock))
    }

    async fn set_up() -> anyhow::Result<TestCluster> {
        let kubeconfig = match std::env::var_os(KUBECONFIG_ENV).filter(|v| !v.is_empty()) {
            Some(path) => PathBuf::from(path),
            None => tokio::task::spawn_blocking(start_cluster).await.context("the cluster-up task panicked")??,
        };
        let file = Kubeconfig::read_from(&kubeconfig).with_context(|| format!("reading {}", kubeconfig.display()))?;
        let config = kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
            .await
            .with_context(|| format!("loading {}", kubeconfig.display()))?;
        let lock = lock_path(&config.cluster_url.to_string());
        let client = kube::Client::try_from(config.clone()).context("building a client for the test cluster")?;
        // Under the tests' lock: a test may have the cluster's apiserver down (`TestCluster::stop_apiserver`).
        let _exclusive = lock::acquire(lock.clone()).await?;
        let from = numo_simulator::crds::openshift_crds_dir()?;
        let crds = numo_simulator::crds::install_openshift_crds(&client, from.as_deref())
            .await
            .context("installing the OpenShift CRDs")?;
        tracing::info!(?crds, from = ?from, "OpenShift CRDs installed");
        numo_simulator::crds::install_numo_crds(&client).await.context("installing numo's CRDs")?;
        Ok(TestCluster { kubeconfig, config, lock })
    }
}

/// A world on the test cluster for the test `test_name`, as most tests begin: tracing initialised
/// ([`crate::init_tracing`]), the cluster ([`cluster`]), then [`TestCluster::world`].
pub async fn world(test_name: &str) -> anyhow::Result<World> {
    crate::init_tracing();
    cluster().await?.world(test_name).await
}

/// Runs `hack/cluster-up.sh numo-test` (its progress goes to this process's stderr) and returns the kubeconfig path
/// it prints last. CRDs are left to [`TestCluster::set_up`], which installs them in-process.
fn start_cluster() -> anyhow::Result<PathBuf> {
    let script = crate::repo::root().join("hack/cluster-up.sh");
    let output = Command::new(&script)
        .arg(CLUSTER_NAME)
        .env("NUMO_SKIP_CRDS", "1")
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .with_context(|| format!("running {}", script.display()))?;
    if !output.status.success() {
        bail!("{} {CLUSTER_NAME} failed ({}); its log is above", script.display(), output.status);
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let path = stdout.lines().map(str::trim).rfind(|line| !line.is_empty()).map(PathBuf::from);
    match path {
        Some(path) if path.is_file() => Ok(path),
        _ => bail!("{} printed no kubeconfig path: {stdout:?}", script.display()),
    }
}

/// Creates the namespace `<test-name>-<random>` labelled as a test namespace.
async fn create_namespace(client: &kube::Client, test_name: &str) -> anyhow::Result<String> {
    let prefix = namespace_prefix(test_name);
    let namespace = Namespace {
        metadata: ObjectMeta {
            generate_name: Some(format!("{prefix}-")),
            labels: Some([(TEST_NAMESPACE_LABEL.to_string(), prefix.clone())].into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let created = Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &namespace)
        .await
        .with_context(|| format!("creating the namespace of test {test_name}"))?;
    created.metadata.name.context("the API server returned a namespace without a name")
}

/// A DNS-label-safe prefix from a test name: lowercase letters, digits and single `-`, at most 50 characters, so
/// the API server's 5-character random suffix fits in a namespace name (and the prefix in a label value).
fn namespace_prefix(test_name: &str) -> String {
    let mut prefix = String::new();
    for c in test_name.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            prefix.push(c);
        } else if !prefix.is_empty() && !prefix.ends_with('-') {
            prefix.push('-');
        }
    }
    prefix.truncate(50);
    let prefix = prefix.trim_end_matches('-');
    if prefix.is_empty() {
        "test".to_string()
    } else {
        prefix.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_prefixes_are_dns_labels() {
        assert_eq!(namespace_prefix("jobs_succeed_or_fail"), "jobs-succeed-or-fail");
        assert_eq!(namespace_prefix("module::Test Name!"), "module-test-name");
        assert_eq!(namespace_prefix("__"), "test");
        let long = namespace_prefix(&"x_".repeat(60));
        assert!(long.len() <= 50 && !long.ends_with('-'), "{long}");
    }
}
