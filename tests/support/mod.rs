//! Shared pieces of the run-config integration tests: the objects an admin creates, the operator under test, and a
//! recorder of what a user would watch happen.

#![allow(dead_code)] // each test binary uses a different subset

mod gated;
mod timeline;
#[allow(unused_imports)] // not every test binary checks the gating of each node
pub use gated::*;
#[allow(unused_imports)] // not every test binary watches a timeline
pub use timeline::*;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use numo::api::{MutexRule, MutexRunConfig, MutexRunConfigSpec, MutexTarget, NodePhase, RunPhase};
use numo::openshift::{ClusterVersion, MachineConfig, MachineConfigPool};
use numo_testkit::{TaskId, World};
use serde_json::json;

pub const OLD: &str = "4.16.4";
pub const NEW: &str = "4.16.5";
/// Long enough for a whole simulated rollout on a busy 2-core machine; a test fails long before CI's limit.
pub const ROLLOUT: Duration = Duration::from_secs(300);

/// Whether the simulated cluster has Node Feature Discovery label each node with its release (the simulator's NFD
/// stand-in). Without it, as on a cluster without NFD, numo reads a node's release from its rendered config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nfd {
    /// Nodes carry only what the MCO writes: the default of the test world.
    Off,
    /// Nodes carry the `release-image-version` label, written after each node's config moved.
    On,
}

/// The environment variable naming the OpenShift release the simulated cluster plays (`4.21`, `4.22`, ...):
/// `hack/test.sh` runs the rollout, other-hands and config-change tests once per release of its matrix.
pub const OPENSHIFT_ENV: &str = "NUMO_TEST_OPENSHIFT_VERSION";

/// The release the simulated cluster plays: [`OPENSHIFT_ENV`], else the newest the simulator knows.
pub fn openshift_release() -> numo_simulator::OpenShiftRelease {
    match std::env::var(OPENSHIFT_ENV) {
        Ok(text) if !text.is_empty() => {
            numo_simulator::OpenShiftRelease::parse(&text).unwrap_or_else(|e| panic!("{OPENSHIFT_ENV}: {e}"))
        }
        _ => numo_simulator::OpenShiftRelease::default(),
    }
}

/// A world with a simulated OpenShift of `workers` workers at [`OLD`], the reference's canary pool, and numo's
/// controllers running.
pub struct Setup {
    pub world: World,
    pub client: kube::Client,
    pub ns: String,
    pub operator: Option<TaskId>,
    /// What `/readyz` of the running operator reports.
    pub readiness: numo::server::Readiness,
    pub allowed_job_namespaces: Vec<String>,
    /// The Alertmanager the operator asks (the default, OpenShift's, is not reachable in the test world).
    pub alertmanager: numo::alerts::AlertmanagerConfig,
    /// Whether numo runs as installed, knowing its ServiceAccount, so that it puts its admission policy
    /// `numo-holds` in force (the default); false for a test of what numo does where the policy is not available
    /// (OpenShift before 4.17).
    pub policy: bool,
    /// The OpenShift release the simulated cluster plays.
    pub openshift: numo_simulator::OpenShiftRelease,
    /// The projections the running operator's planner keeps, for numo's plugin server's timelines.
    pub projections: numo::projections::Projections,
}

impl Setup {
    /// The test world without NFD (see [`Nfd`]).
    pub async fn new(test: &str, workers: usize) -> anyhow::Result<Self> {
        Self::with(test, workers, Nfd::Off).await
    }

    /// The test world, with or without the NFD stand-in, on the release of [`openshift_release`].
    pub async fn with(test: &str, workers: usize, nfd: Nfd) -> anyhow::Result<Self> {
        Self::on(test, workers, nfd, openshift_release()).await
    }

    /// The test world on OpenShift release `openshift`.
    pub async fn on(
        test: &str,
        workers: usize,
        nfd: Nfd,
        openshift: numo_simulator::OpenShiftRelease,
    ) -> anyhow::Result<Self> {
        let config = numo_simulator::SimConfig { nfd_labels: nfd == Nfd::On, openshift, ..Default::default() };
        Self::with_config(test, workers, config).await
    }

    /// The test world with the simulator's settings `config` (its storage world, its timings).
    pub async fn with_config(test: &str, workers: usize, config: numo_simulator::SimConfig) -> anyhow::Result<Self> {
        numo_testkit::init_tracing();
        let cluster = numo_testkit::cluster().await?;
        let mut world = cluster.world(test).await?;
        let shape = numo_simulator::ClusterShape { version: OLD.into(), workers, masters: 1 };
        let openshift = config.openshift;
        world.openshift(shape, config).await?;
        let client = world.client.clone();
        let ns = world.namespace.clone();
        create_canary(&client).await?;
        let readiness = Default::default();
        Ok(Self {
            world,
            client,
            ns,
            operator: None,
            readiness,
            allowed_job_namespaces: Vec::new(),
            alertmanager: Default::default(),
            policy: true,
            openshift,
            projections: Default::default(),
        })
    }

    /// Starts numo's three controllers in this process, as installed: the operator's own RBAC and, unless
    /// [`Setup::policy`] is false, its admission policy in force.
    pub async fn start_operator(&mut self) -> anyhow::Result<()> {
        let cluster = numo_testkit::cluster().await?;
        let client = numo_testkit::rbac::operator_client(cluster).await?;
        let config = numo::OperatorConfig {
            allowed_job_namespaces: self.allowed_job_namespaces.clone(),
            alertmanager: self.alertmanager.clone(),
        };
        let mut ctx = numo::Context::new(client, config, Default::default());
        if self.policy {
            ctx.service_account = Some(numo_testkit::rbac::OPERATOR_USER.to_string());
        }
        self.readiness = ctx.readiness.clone();
        ctx.projections = self.projections.clone();
        self.operator = Some(self.world.spawn(numo::controllers::run(ctx)));
        Ok(())
    }

    /// Kills the operator (as a crash would: no cleanup runs).
    pub fn kill_operator(&mut self) {
        if let Some(id) = self.operator.take() {
            self.world.stop(id);
        }
    }

    pub fn run_configs(&self) -> Api<MutexRunConfig> {
        Api::namespaced(self.client.clone(), &self.ns)
    }

    pub async fn rule(
        &self,
        name: &str,
        gate: serde_json::Value,
        cleanup: Option<serde_json::Value>,
    ) -> anyhow::Result<()> {
        let mut spec = json!({"jobName": name, "jobSpec": gate});
        if let Some(cleanup) = cleanup {
            spec["cleanUpJobSpec"] = cleanup;
        }
        let rule: MutexRule = serde_json::from_value(json!({
            "apiVersion": "openshift-optional.skrzypek.io/v1alpha1", "kind": "MutexRule",
            "metadata": {"name": name, "namespace": self.ns}, "spec": spec,
        }))?;
        Api::<MutexRule>::namespaced(self.client.clone(), &self.ns).create(&PostParams::default(), &rule).await?;
        Ok(())
    }

    pub async fn target(&self, name: &str, pools: &[&str]) -> anyhow::Result<()> {
        let target: MutexTarget = serde_json::from_value(json!({
            "apiVersion": "openshift-optional.skrzypek.io/v1alpha1", "kind": "MutexTarget",
            "metadata": {"name": name, "namespace": self.ns}, "spec": {"machineConfigPools": pools},
        }))?;
        Api::<MutexTarget>::namespaced(self.client.clone(), &self.ns).create(&PostParams::default(), &target).await?;
        Ok(())
    }

    /// Creates a run config from the reference's fields plus `extra` spec fields.
    pub async fn run_config(
        &self,
        name: &str,
        rules: &[&str],
        targets: &[&str],
        extra: serde_json::Value,
    ) -> anyhow::Result<()> {
        let mut spec = json!({
            "canary": {"name": "canary"},
            "mutexRules": rules.iter().map(|r| json!({"name": r, "namespace": self.ns})).collect::<Vec<_>>(),
            "mutexTargets": targets.iter().map(|t| json!({"name": t})).collect::<Vec<_>>(),
        });
        if let (Some(spec), Some(extra)) = (spec.as_object_mut(), extra.as_object()) {
            spec.extend(extra.clone());
        }
        let spec: MutexRunConfigSpec = serde_json::from_value(spec)?;
        let mut rc = MutexRunConfig::new(name, spec);
        rc.metadata.namespace = Some(self.ns.clone());
        self.run_configs().create(&PostParams::default(), &rc).await?;
        Ok(())
    }

    /// Makes the operator ask the test's Alertmanager at `url` (no token, asked again every second while alerts
    /// hold).
    pub fn ask_alertmanager(&mut self, url: &str) {
        self.alertmanager = numo::alerts::AlertmanagerConfig {
            url: url.to_string(),
            token_file: "/nonexistent/token".into(),
            poll_interval: Duration::from_secs(1),
            ..Default::default()
        };
    }

    /// The usual world of a test: a rule `check` (its gate Job `gate`, its cleanup Job `cleanup`), a target
    /// `workers` of the pool `worker`, and the run config `name` that ties them, with `extra` spec fields.
    pub async fn check_workers(
        &self,
        name: &str,
        gate: serde_json::Value,
        cleanup: Option<serde_json::Value>,
        extra: serde_json::Value,
    ) -> anyhow::Result<()> {
        self.rule("check", gate, cleanup).await?;
        self.target("workers", &["worker"]).await?;
        self.run_config(name, &["check"], &["workers"], extra).await
    }

    pub async fn wait_phase(&self, name: &str, phase: RunPhase, timeout: Duration) -> anyhow::Result<MutexRunConfig> {
        numo_testkit::wait_until(
            &self.run_configs(),
            name,
            timeout,
            &format!("phase {phase:?}"),
            move |rc: &MutexRunConfig| rc.status.as_ref().and_then(|s| s.phase) == Some(phase),
        )
        .await
    }

    pub async fn wait_node_phase(&self, name: &str, node: &str, phase: NodePhase) -> anyhow::Result<MutexRunConfig> {
        let node = node.to_string();
        numo_testkit::wait_until(
            &self.run_configs(),
            name,
            ROLLOUT,
            &format!("{node} {phase:?}"),
            move |rc: &MutexRunConfig| {
                rc.status.as_ref().is_some_and(|s| s.nodes.iter().any(|e| e.name == node && e.phase == phase))
            },
        )
        .await
    }

    /// Starts the cluster upgrade to `version` (what an admin does with `oc adm upgrade`).
    pub async fn upgrade_cluster(&self, version: &str) -> anyhow::Result<()> {
        let patch = json!({"spec": {"desiredUpdate": {"version": version, "image": format!("quay.io/openshift-release-dev/ocp-release:{version}-x86_64")}}});
        Api::<ClusterVersion>::all(self.client.clone())
            .patch("version", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        Ok(())
    }

    pub async fn pools(&self) -> anyhow::Result<BTreeMap<String, (bool, serde_json::Value)>> {
        let pools = Api::<MachineConfigPool>::all(self.client.clone()).list(&Default::default()).await?;
        Ok(pools
            .into_iter()
            .map(|p| (p.name_any(), (p.spec.paused, serde_json::to_value(&p.spec.node_selector).unwrap_or_default())))
            .collect())
    }

    pub async fn nodes(&self) -> anyhow::Result<Vec<Node>> {
        Ok(Api::<Node>::all(self.client.clone()).list(&Default::default()).await?.items)
    }

    /// The release each node runs, read as numo's `versionSource: Auto` reads it (see [`version_of`]).
    pub async fn node_versions(&self) -> anyhow::Result<BTreeMap<String, Option<String>>> {
        let rendered = rendered_versions(&self.client).await?;
        Ok(self.nodes().await?.iter().map(|n| (n.name_any(), version_of(n, &rendered))).collect())
    }

    /// The Events about the run config `name`, as `(type, reason, note)`.
    pub async fn events_about(&self, name: &str) -> anyhow::Result<Vec<(String, String, String)>> {
        let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(self.client.clone(), &self.ns)
            .list(&Default::default())
            .await?;
        let text = |v: &Option<String>| v.clone().unwrap_or_default();
        Ok(events
            .items
            .iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
            .map(|e| (text(&e.type_), text(&e.reason), text(&e.note)))
            .collect())
    }

    /// The Events about the run config `name` once `seen` holds for them (numo publishes a run config's Events from
    /// a queue, a moment after the status shows the transition); the last ones read after 20 s otherwise.
    pub async fn events_when(
        &self,
        name: &str,
        seen: impl Fn(&[(String, String, String)]) -> bool,
    ) -> anyhow::Result<Vec<(String, String, String)>> {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let events = self.events_about(name).await?;
            if seen(&events) || std::time::Instant::now() > deadline {
                return Ok(events);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// What `seen` takes of each status run config `name` has, as a watch sees them, from now until the test ends.
    pub fn record_statuses<T: Send + 'static>(
        &mut self,
        name: &str,
        seen: impl Fn(numo::api::MutexRunConfigStatus) -> Vec<T> + Send + 'static,
    ) -> std::sync::Arc<std::sync::Mutex<Vec<T>>> {
        use futures::StreamExt;
        use kube::runtime::{watcher, WatchStreamExt};
        let record: std::sync::Arc<std::sync::Mutex<Vec<T>>> = Default::default();
        let kept = record.clone();
        let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
        let run_configs = self.run_configs();
        self.world.spawn(async move {
            let mut stream = watcher(run_configs, config).applied_objects().boxed();
            while let Some(Ok(rc)) = stream.next().await {
                let rc: MutexRunConfig = rc;
                let taken = seen(rc.status.unwrap_or_default());
                if let Ok(mut kept) = kept.lock() {
                    kept.extend(taken);
                }
            }
        });
        record
    }

    /// A database pod `pg-1` on `node` and a PodDisruptionBudget `pg-pdb` that allows it no disruption, once the
    /// budget's status says so; returns the pods of the test's namespace (to move the database away).
    pub async fn database_held_by_budget(&self, node: &str) -> anyhow::Result<Api<Pod>> {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "pg-1", "labels": {"app": "pg"}},
            "spec": {"nodeName": node, "containers": [{"name": "pg", "image": "postgres"}],
                     "tolerations": [{"operator": "Exists"}]}
        }))?;
        let pods = Api::<Pod>::namespaced(self.client.clone(), &self.ns);
        pods.create(&PostParams::default(), &pod).await?;
        let pdb: PodDisruptionBudget = serde_json::from_value(json!({
            "metadata": {"name": "pg-pdb"},
            "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "pg"}}}
        }))?;
        let budgets = Api::<PodDisruptionBudget>::namespaced(self.client.clone(), &self.ns);
        budgets.create(&PostParams::default(), &pdb).await?;
        numo_testkit::wait_until(&budgets, "pg-pdb", Duration::from_secs(60), "the budget at zero with its pod", |b| {
            b.status.as_ref().is_some_and(|s| s.current_healthy == 1 && s.disruptions_allowed == 0)
        })
        .await?;
        Ok(pods)
    }

    pub async fn jobs(&self) -> anyhow::Result<Vec<Job>> {
        let params = kube::api::ListParams::default().labels("app.kubernetes.io/managed-by=numo");
        Ok(Api::<Job>::all(self.client.clone()).list(&params).await?.items)
    }
}

/// Every MachineConfig that names a release, with that release.
pub async fn rendered_versions(client: &kube::Client) -> anyhow::Result<BTreeMap<String, String>> {
    let configs = Api::<MachineConfig>::all(client.clone()).list(&Default::default()).await?;
    Ok(configs.iter().filter_map(|c| Some((c.name_any(), c.release_version()?.to_string()))).collect())
}

/// The release a node runs as a user (and numo's `versionSource: Auto`) reads it: the NFD label when the node has
/// one, else the release of the rendered MachineConfig its `currentConfig` names (`rendered`: see
/// [`rendered_versions`]).
pub fn version_of(node: &Node, rendered: &BTreeMap<String, String>) -> Option<String> {
    let label = node.labels().get(numo::openshift::RELEASE_VERSION).cloned();
    label.or_else(|| rendered.get(node.annotations().get(numo::openshift::CURRENT_CONFIG)?).cloned())
}

/// The reference's canary pool: selects worker nodes that also have `isCanary` (none do), so it is empty at rest.
pub async fn create_canary(client: &kube::Client) -> anyhow::Result<()> {
    let pool: MachineConfigPool = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
        "metadata": {"name": "canary"},
        "spec": {
            "machineConfigSelector": {"matchLabels": {"machineconfiguration.openshift.io/role": "worker"}},
            "nodeSelector": {
                "matchLabels": {"node-role.kubernetes.io/worker": ""},
                "matchExpressions": [{"key": "isCanary", "operator": "Exists"}]
            },
            "paused": false
        }
    }))?;
    Api::<MachineConfigPool>::all(client.clone()).create(&PostParams::default(), &pool).await?;
    Ok(())
}

/// A MachineConfig for `role` with one file, as an admin writes one (a chrony or registry config).
pub async fn machine_config(client: &kube::Client, name: &str, role: &str) -> anyhow::Result<()> {
    let config: MachineConfig = serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig",
        "metadata": {"name": name, "labels": {"machineconfiguration.openshift.io/role": role}},
        "spec": {"config": {"ignition": {"version": "3.2.0"},
                 "storage": {"files": [{"path": format!("/etc/{name}.conf"), "mode": 420,
                                        "contents": {"source": "data:,server%20ntp.example.com"}}]}}}
    }))?;
    Api::<MachineConfig>::all(client.clone()).create(&PostParams::default(), &config).await?;
    Ok(())
}

/// A JobSpec whose pod the fake kubelet runs for `duration` and then succeeds (or fails).
pub fn job_spec(duration: &str, fail: bool) -> serde_json::Value {
    let mut annotations = json!({"sim.numo.openshift-optional.skrzypek.io/job-duration": duration});
    if fail {
        annotations["sim.numo.openshift-optional.skrzypek.io/job-result"] = json!("fail");
    }
    json!({
        "backoffLimit": 0,
        "selector": {},
        "template": {
            "metadata": {"name": "mutex", "annotations": annotations},
            "spec": {
                "containers": [{"name": "mutex", "image": "ubi9/toolbox", "command": ["sleep"], "args": ["1"],
                                "env": [{"name": "FROM_TEMPLATE", "value": "kept"}]}],
                "restartPolicy": "Never"
            }
        }
    })
}
