//! The MutexTarget controller against a real apiserver: pool existence and a node list that follows nodes and
//! pools as they change, by watch.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::Api;
use numo::api::{MutexTarget, MutexTargetSpec};
use numo::metrics::Metrics;
use numo::openshift::{MachineConfigPool, MachineConfigPoolSpec};
use numo::{Context, OperatorConfig};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(60);
const WORKER: &str = "node-role.kubernetes.io/worker";
const INFRA: &str = "node-role.kubernetes.io/infra";

fn start(world: &mut numo_testkit::World) {
    let ctx = Context::new(world.client.clone(), OperatorConfig::default(), Arc::new(Metrics::default()));
    world.spawn(numo::controllers::mutex_target::run(ctx));
}

fn pool(name: &str, role_label: &str) -> MachineConfigPool {
    let selector = LabelSelector {
        match_labels: Some(BTreeMap::from([(role_label.to_string(), String::new())])),
        match_expressions: None,
    };
    MachineConfigPool::new(name, MachineConfigPoolSpec { node_selector: Some(selector), ..Default::default() })
}

fn node(name: &str, labels: &[&str]) -> Node {
    let mut node = numo_testkit::kwok::fake_node(name);
    let node_labels = node.metadata.labels.get_or_insert_with(Default::default);
    node_labels.extend(labels.iter().map(|l| (l.to_string(), String::new())));
    node
}

fn target(name: &str, namespace: &str, pools: &[&str]) -> MutexTarget {
    let mut target =
        MutexTarget::new(name, MutexTargetSpec { machine_config_pools: pools.iter().map(|p| p.to_string()).collect() });
    target.metadata.namespace = Some(namespace.to_string());
    target
}

fn condition<'a>(target: &'a MutexTarget, type_: &str) -> Option<&'a Condition> {
    target.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == type_))
}

/// Whether the status lists exactly `nodes` (and counts them) for the current generation.
fn lists(target: &MutexTarget, nodes: &[&str]) -> bool {
    target.status.as_ref().is_some_and(|s| {
        s.observed_generation == target.metadata.generation
            && s.nodes == nodes
            && usize::try_from(s.node_count).ok() == Some(nodes.len())
    })
}

async fn label(nodes: &Api<Node>, name: &str, key: &str, present: bool) -> anyhow::Result<()> {
    let value = if present { json!("") } else { serde_json::Value::Null };
    let patch = json!({ "metadata": { "labels": { key: value } } });
    nodes.patch(name, &PatchParams::default(), &Patch::Merge(&patch)).await?;
    Ok(())
}

#[tokio::test]
async fn a_missing_pool_is_named_until_it_is_created() -> anyhow::Result<()> {
    let mut world = numo_testkit::world("target-missing-pool").await?;
    let client = world.client.clone();
    let pools: Api<MachineConfigPool> = Api::all(client.clone());
    let nodes: Api<Node> = Api::all(client.clone());
    pools.create(&PostParams::default(), &pool("worker", WORKER)).await?;
    for (name, labels) in [("tw-1", vec![WORKER]), ("tw-2", vec![WORKER]), ("ti-1", vec![WORKER, INFRA])] {
        nodes.create(&PostParams::default(), &node(name, &labels)).await?;
    }
    start(&mut world);

    let targets: Api<MutexTarget> = Api::namespaced(client.clone(), &world.namespace);
    targets.create(&PostParams::default(), &target("gated", &world.namespace, &["worker", "infra"])).await?;
    let seen = numo_testkit::wait_until(&targets, "gated", TIMEOUT, "ValidConfig=False", |t| {
        condition(t, "ValidConfig").is_some_and(|c| c.status == "False")
    })
    .await?;
    let valid = condition(&seen, "ValidConfig").cloned();
    assert_eq!(valid.as_ref().map(|c| c.reason.as_str()), Some("PoolNotFound"), "{valid:?}");
    assert!(valid.as_ref().is_some_and(|c| c.message.contains("infra")), "{valid:?}");
    assert_eq!(condition(&seen, "NodeListGathered").map(|c| c.status.as_str()), Some("False"));

    // Without an infra pool, the MCO keeps the infra-labelled node in worker.
    numo_testkit::wait_until(&targets, "gated", TIMEOUT, "all three nodes in worker", |t| {
        lists(t, &["ti-1", "tw-1", "tw-2"])
    })
    .await?;

    pools.create(&PostParams::default(), &pool("infra", INFRA)).await?;
    let seen = numo_testkit::wait_until(&targets, "gated", TIMEOUT, "ValidConfig=True", |t| {
        condition(t, "ValidConfig").is_some_and(|c| c.status == "True")
    })
    .await?;
    assert_eq!(condition(&seen, "ValidConfig").map(|c| c.reason.as_str()), Some("Valid"));
    let listed = numo_testkit::wait_until(&targets, "gated", TIMEOUT, "nodes of worker and infra", |t| {
        lists(t, &["ti-1", "tw-1", "tw-2"]) && condition(t, "NodeListGathered").is_some_and(|c| c.status == "True")
    })
    .await?;
    assert_eq!(listed.status.map(|s| s.node_count), Some(3));
    Ok(())
}

#[tokio::test]
async fn the_node_list_follows_node_labels_and_pool_selectors() -> anyhow::Result<()> {
    let mut world = numo_testkit::world("target-follows").await?;
    let client = world.client.clone();
    let pools: Api<MachineConfigPool> = Api::all(client.clone());
    let nodes: Api<Node> = Api::all(client.clone());
    pools.create(&PostParams::default(), &pool("worker", WORKER)).await?;
    pools.create(&PostParams::default(), &pool("infra", INFRA)).await?;
    for name in ["fw-1", "fw-2"] {
        nodes.create(&PostParams::default(), &node(name, &[WORKER])).await?;
    }
    start(&mut world);
    let targets: Api<MutexTarget> = Api::namespaced(client.clone(), &world.namespace);
    targets.create(&PostParams::default(), &target("workers", &world.namespace, &["worker"])).await?;
    let wait = |nodes: &'static [&'static str], what: &'static str| {
        let targets = targets.clone();
        async move { numo_testkit::wait_until(&targets, "workers", TIMEOUT, what, move |t| lists(t, nodes)).await }
    };
    wait(&["fw-1", "fw-2"], "both workers").await?;

    // A node that gains the infra role moves to the infra pool, and back when it loses it.
    label(&nodes, "fw-2", INFRA, true).await?;
    wait(&["fw-1"], "fw-2 moved to infra").await?;
    label(&nodes, "fw-2", INFRA, false).await?;
    wait(&["fw-1", "fw-2"], "fw-2 back in worker").await?;

    // A narrower pool selector takes effect without any change to the target.
    let narrower = json!({ "spec": { "nodeSelector": { "matchExpressions": [{ "key": "zone", "operator": "In", "values": ["a"] }] } } });
    pools.patch("worker", &PatchParams::default(), &Patch::Merge(&narrower)).await?;
    wait(&[], "no worker carries zone=a").await?;
    let zone = json!({ "metadata": { "labels": { "zone": "a" } } });
    nodes.patch("fw-1", &PatchParams::default(), &Patch::Merge(&zone)).await?;
    wait(&["fw-1"], "fw-1 is in zone a").await?;

    // Nodes coming and going.
    nodes.create(&PostParams::default(), &node("fw-3", &[WORKER])).await?;
    nodes.patch("fw-3", &PatchParams::default(), &Patch::Merge(&zone)).await?;
    wait(&["fw-1", "fw-3"], "a new node in zone a").await?;
    nodes.delete("fw-1", &DeleteParams::default()).await?;
    wait(&["fw-3"], "a deleted node is gone").await?;
    Ok(())
}
