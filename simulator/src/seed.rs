//! Seeding a cluster shape: the ClusterVersion, the ClusterOperators of the payload
//! ([`crate::cluster_operators::PAYLOAD`]), the MCO's template MachineConfigs, the `master` and `worker` pools with
//! their rendered configs, the nodes, and the ServiceAccounts (with their roles) the machine-config operator, daemon
//! and controller act as. Every object is created only if missing, so seeding twice neither
//! duplicates nor resets anything; what exists (an upgraded pool, an updated node) is left as it is.

use std::collections::BTreeMap;

use anyhow::Context as _;
use futures::future::try_join_all;
use k8s_openapi::api::core::v1::{Node, NodeSpec, Taint};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::ResourceExt;
use numo::openshift::{
    ClusterVersion, ClusterVersionSpec, ConfigSource, MachineConfig, MachineConfigPool, RenderedConfiguration, Update,
    CLUSTER_VERSION_NAME, CURRENT_CONFIG, DESIRED_CONFIG, MCD_REASON, MCD_STATE,
};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::cluster_operators::{self, ClusterOperator, ClusterOperatorSpec};
use crate::config::ClusterShape;
use crate::create::create_if_missing;
use crate::membership::{MASTER, ROLE_LABEL_PREFIX, WORKER};
use crate::node_state::STATE_DONE;
use crate::operator_sync::manifest_pool;
use crate::platform::FIELD_MANAGER;
use crate::{cvo, render};

/// kwok manages the nodes that carry this annotation (value `fake`).
pub const KWOK_NODE_ANNOTATION: &str = "kwok.x-k8s.io/node";

/// Creates what is missing of `shape`; see the module docs.
pub async fn seed(client: &kube::Client, shape: &ClusterShape) -> anyhow::Result<()> {
    let version = shape.version.as_str();
    let cv = ensure_cluster_version(client, version).await?;
    ensure_cluster_operators(client, installed_version(&cv).unwrap_or(version)).await?;
    for role in [MASTER, WORKER] {
        create_if_missing(client, render::template_config(role, version)).await?;
    }
    let configs: Vec<MachineConfig> = Api::<MachineConfig>::all(client.clone())
        .list(&Default::default())
        .await
        .context("listing MachineConfigs")?
        .items;
    crate::platform::accounts::ensure(client).await?;
    let master = ensure_pool(client, manifest_pool(MASTER), &configs).await?;
    let mut worker = manifest_pool(WORKER);
    worker.spec.max_unavailable = Some(IntOrString::Int(1));
    let worker = ensure_pool(client, worker, &configs).await?;

    let mut nodes = Vec::new();
    for (pool, count) in [(&master, shape.masters), (&worker, shape.workers)] {
        let role = pool.name_any();
        let config = pool.spec.configuration.as_ref().and_then(|c| c.name.clone()).unwrap_or_default();
        for i in 0..count {
            nodes.push(node(&format!("{role}-{i}"), &role, &config));
        }
    }
    try_join_all(nodes.into_iter().map(|n| create_if_missing(client, n))).await?;
    tracing::info!(%version, masters = shape.masters, workers = shape.workers, "seeded");
    Ok(())
}

/// Creates the ClusterVersion `version` if missing, and gives it an installed status if it has none; returns it as
/// stored.
async fn ensure_cluster_version(client: &kube::Client, version: &str) -> anyhow::Result<ClusterVersion> {
    let image = render::release_image(version);
    let minor: Vec<&str> = version.split('.').take(2).collect();
    let cv = ClusterVersion::new(
        CLUSTER_VERSION_NAME,
        ClusterVersionSpec {
            cluster_id: cluster_id(),
            channel: Some(format!("stable-{}", minor.join("."))),
            desired_update: Some(Update { version: Some(version.into()), image: Some(image.clone()), force: None }),
        },
    );
    let cv = create_if_missing(client, cv).await?;
    if cv.status.is_none() {
        let status = cvo::installed_status(version, &image, Timestamp::now());
        let patch: json_patch::Patch = serde_json::from_value(cvo::status_patch(&status, false))?;
        Api::<ClusterVersion>::all(client.clone())
            .patch_status(CLUSTER_VERSION_NAME, &params(), &Patch::Json::<()>(patch))
            .await
            .context("writing the installed ClusterVersion status")?;
        return Ok(ClusterVersion { status: Some(status), ..cv });
    }
    Ok(cv)
}

/// The release the cluster runs: that of its newest Completed update, if any.
fn installed_version(cv: &ClusterVersion) -> Option<&str> {
    let history = &cv.status.as_ref()?.history;
    history.iter().find(|h| h.state == cvo::COMPLETED).map(|h| h.version.as_str())
}

/// Creates the ClusterOperators of the payload that are missing, healthy at `version`; those that exist are left as
/// they are.
async fn ensure_cluster_operators(client: &kube::Client, version: &str) -> anyhow::Result<()> {
    let api: Api<ClusterOperator> = Api::all(client.clone());
    let now = Time(Timestamp::now());
    let one = |name: &'static str| {
        let (api, now) = (api.clone(), now.clone());
        async move {
            let stored = create_if_missing(client, ClusterOperator::new(name, ClusterOperatorSpec {})).await?;
            if stored.status.is_none() {
                let status = cluster_operators::healthy_status(name, version, &now);
                let patch = cluster_operators::status_patch(&status, None);
                api.patch_status(name, &params(), &Patch::Merge(&patch))
                    .await
                    .with_context(|| format!("writing the status of ClusterOperator {name}"))?;
            }
            anyhow::Ok(())
        }
    };
    try_join_all(cluster_operators::PAYLOAD.into_iter().map(one)).await?;
    Ok(())
}

/// Creates `pool` (targeting its rendered config) and that rendered config if missing; returns the pool as stored.
async fn ensure_pool(
    client: &kube::Client,
    mut pool: MachineConfigPool,
    configs: &[MachineConfig],
) -> anyhow::Result<MachineConfigPool> {
    let name = pool.name_any();
    let rendered =
        render::render(&pool, &render::sources(&pool, configs)).with_context(|| format!("rendering pool {name}"))?;
    let source = rendered.sources.iter().map(|s| ConfigSource::machine_config(s)).collect();
    pool.spec.configuration = Some(RenderedConfiguration { name: Some(rendered.name.clone()), source });
    let stored = create_if_missing(client, pool).await?;
    let current = stored.spec.configuration.as_ref().and_then(|c| c.name.as_deref());
    if current.is_none() || current == Some(rendered.name.as_str()) {
        create_if_missing(client, render::rendered_config(&stored, &rendered)).await?;
    }
    if current.is_none() {
        let body = json!({"spec": {"configuration": {"name": rendered.name}}});
        return Api::<MachineConfigPool>::all(client.clone())
            .patch(&name, &params(), &Patch::Merge(&body))
            .await
            .with_context(|| format!("pointing pool {name} at {}", rendered.name));
    }
    Ok(stored)
}

/// A kwok node of `role` running `config`, as the installer and the MCO leave a node: the kubelet's labels, the role
/// label and the daemon's annotations. Its release is on `config`, not on the node (see [`crate::nfd`]).
fn node(name: &str, role: &str, config: &str) -> Node {
    let mut labels = BTreeMap::from([
        (format!("{ROLE_LABEL_PREFIX}{role}"), String::new()),
        ("kubernetes.io/os".to_string(), "linux".to_string()),
        ("kubernetes.io/arch".to_string(), "amd64".to_string()),
        ("kubernetes.io/hostname".to_string(), name.to_string()),
        ("beta.kubernetes.io/os".to_string(), "linux".to_string()),
        ("beta.kubernetes.io/arch".to_string(), "amd64".to_string()),
        ("node.openshift.io/os_id".to_string(), "rhcos".to_string()),
    ]);
    let mut taints = None;
    if role == MASTER {
        labels.insert(format!("{ROLE_LABEL_PREFIX}control-plane"), String::new());
        // mastersSchedulable is false by default: the MCO keeps this taint on control-plane nodes.
        taints = Some(vec![Taint {
            key: format!("{ROLE_LABEL_PREFIX}{MASTER}"),
            effect: "NoSchedule".into(),
            ..Taint::default()
        }]);
    }
    let annotations = BTreeMap::from([
        (KWOK_NODE_ANNOTATION.to_string(), "fake".to_string()),
        (CURRENT_CONFIG.to_string(), config.to_string()),
        (DESIRED_CONFIG.to_string(), config.to_string()),
        (MCD_STATE.to_string(), STATE_DONE.to_string()),
        (MCD_REASON.to_string(), String::new()),
    ]);
    Node {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some(labels),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec { taints, ..NodeSpec::default() }),
        status: None,
    }
}

/// A fresh cluster ID in UUID form.
fn cluster_id() -> String {
    let seed = format!("{:?} {}", Timestamp::now(), std::process::id());
    let hex: String = Sha256::digest(seed.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
    format!("{}-{}-4{}-a{}-{}", &hex[0..8], &hex[8..12], &hex[13..16], &hex[17..20], &hex[20..32])
}

fn params() -> PatchParams {
    PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..PatchParams::default() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::membership;

    #[test]
    fn seeded_nodes_land_in_their_pool_and_are_done_on_its_config() {
        let pools = [manifest_pool(MASTER), manifest_pool(WORKER)];
        let worker = node("worker-0", WORKER, "rendered-worker-x");
        let master = node("master-0", MASTER, "rendered-master-x");
        assert_eq!(membership::pool_of(&worker, &pools), Ok(Some(WORKER)));
        assert_eq!(membership::pool_of(&master, &pools), Ok(Some(MASTER)));
        assert_eq!(crate::node_state::current_config(&worker), "rendered-worker-x");
        assert!(crate::node_state::is_done(&worker));
        assert!(
            !worker.labels().contains_key(numo::openshift::RELEASE_VERSION),
            "the MCO writes no release label on nodes (that is NFD's)"
        );
        assert_eq!(worker.annotations().get(KWOK_NODE_ANNOTATION).map(String::as_str), Some("fake"));
        assert!(worker.spec.as_ref().and_then(|s| s.taints.as_ref()).is_none());
    }

    #[test]
    fn seeded_pools_render_from_their_role() {
        let configs = [render::template_config(MASTER, "4.16.4"), render::template_config(WORKER, "4.16.4")];
        let worker = manifest_pool(WORKER);
        let rendered = render::render(&worker, &render::sources(&worker, &configs)).unwrap();
        assert_eq!(rendered.sources, ["00-worker"]);
        assert!(rendered.name.starts_with("rendered-worker-"));
    }

    #[test]
    fn operators_are_seeded_at_the_release_the_cluster_runs() {
        let mut cv = ClusterVersion::new(CLUSTER_VERSION_NAME, ClusterVersionSpec::default());
        assert_eq!(installed_version(&cv), None);
        cv.status = Some(cvo::installed_status("4.16.4", "img", Timestamp::UNIX_EPOCH));
        assert_eq!(installed_version(&cv), Some("4.16.4"));
        let mut upgrading = cv.status.clone().unwrap_or_default();
        upgrading.history.insert(
            0,
            numo::openshift::UpdateHistory {
                state: cvo::PARTIAL.into(),
                version: "4.16.5".into(),
                ..upgrading.history[0].clone()
            },
        );
        cv.status = Some(upgrading);
        assert_eq!(installed_version(&cv), Some("4.16.4"), "not the release still being applied");
    }

    #[test]
    fn cluster_ids_look_like_uuids() {
        let id = cluster_id();
        let parts: Vec<usize> = id.split('-').map(str::len).collect();
        assert_eq!(parts, [8, 4, 4, 4, 12]);
    }
}
