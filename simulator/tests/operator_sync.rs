//! The machine-config operator's own sync of the built-in pools, per OpenShift release, against the real API server
//! with the operator acting as its ServiceAccount: on 4.21 it puts the `worker` pool's selectors back (and a refused
//! write degrades `machine-config` and stops the update); on 4.22 it leaves the spec alone.

mod support;

use k8s_openapi::api::admissionregistration::v1::{ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding};
use kube::api::{Api, DeleteParams, PostParams};
use kube::ResourceExt;
use numo_simulator::cluster_operators::{DEGRADED, MACHINE_CONFIG};
use numo_simulator::operator_sync::{OPERATOR_FIELD_MANAGER, OPERATOR_USER, POOLS_FAILED};
use numo_simulator::{ClusterShape, OpenShiftRelease, SimConfig};
use serde_json::json;
use support::*;

fn on(minor: u32) -> SimConfig {
    SimConfig { openshift: OpenShiftRelease { minor }, ..fast() }
}

fn shape() -> ClusterShape {
    ClusterShape { version: OLD.into(), workers: 1, masters: 1 }
}

const MANIFEST: &str = r#"{"matchLabels":{"node-role.kubernetes.io/worker":""}}"#;
const EDITED: &str = r#"{"matchLabels":{"node-role.kubernetes.io/worker":"","team":"a"}}"#;

fn selector(pool: &numo::openshift::MachineConfigPool) -> String {
    serde_json::to_string(&pool.spec.node_selector).unwrap_or_default()
}

#[tokio::test]
async fn on_4_21_the_operator_puts_the_worker_selector_back_as_its_service_account() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-operator-sync-421").await?;
    world.openshift(shape(), on(21)).await?;
    let edit: serde_json::Value = serde_json::from_str(EDITED)?;
    patch(&pools(&world), "worker", json!({"spec": {"nodeSelector": edit, "paused": true}})).await?;
    let back = numo_testkit::wait_until(&pools(&world), "worker", WAIT, "the manifest's selector", |p| {
        selector(p) == MANIFEST
    })
    .await?;
    assert!(back.spec.paused, "paused is the admin's");
    let managers: Vec<String> = back.managed_fields().iter().filter_map(|m| m.manager.clone()).collect();
    assert!(managers.iter().any(|m| m == OPERATOR_FIELD_MANAGER), "{managers:?}");
    Ok(())
}

#[tokio::test]
async fn on_4_22_the_operator_leaves_the_selector_and_puts_back_only_its_labels() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-operator-sync-422").await?;
    world.openshift(shape(), on(22)).await?;
    let edit: serde_json::Value = serde_json::from_str(EDITED)?;
    let label = "machineconfiguration.openshift.io/mco-built-in";
    patch(&pools(&world), "worker", json!({"metadata": {"labels": {label: null}}, "spec": {"nodeSelector": edit}}))
        .await?;
    let back =
        numo_testkit::wait_until(&pools(&world), "worker", WAIT, "its label back", |p| p.labels().contains_key(label))
            .await?;
    assert_eq!(selector(&back), EDITED, "4.22 does not care about the spec");
    Ok(())
}

/// A policy that refuses every write of the machine-config operator's ServiceAccount to pools.
async fn refuse_the_operator(world: &numo_testkit::World) -> anyhow::Result<()> {
    let policy: ValidatingAdmissionPolicy = serde_json::from_value(json!({
        "metadata": {"name": "numo-holds"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": [{"apiGroups": ["machineconfiguration.openshift.io"],
                "apiVersions": ["v1"], "operations": ["UPDATE"], "resources": ["machineconfigpools"]}]},
            "matchConditions": [{"name": "the-operator", "expression": format!("request.userInfo.username == '{OPERATOR_USER}'")}],
            "validations": [{"expression": "false", "message": "The nodeSelector of MachineConfigPool worker is steered"}],
        },
    }))?;
    let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(json!({
        "metadata": {"name": "numo-holds"},
        "spec": {"policyName": "numo-holds", "validationActions": ["Deny"]},
    }))?;
    Api::<ValidatingAdmissionPolicy>::all(world.client.clone()).create(&PostParams::default(), &policy).await?;
    Api::<ValidatingAdmissionPolicyBinding>::all(world.client.clone()).create(&PostParams::default(), &binding).await?;
    Ok(())
}

#[tokio::test]
async fn a_refused_pool_write_degrades_machine_config_and_stops_the_update_until_a_sync_succeeds() -> anyhow::Result<()>
{
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-operator-refused").await?;
    world.openshift(shape(), on(21)).await?;
    refuse_the_operator(&world).await?;
    let edit: serde_json::Value = serde_json::from_str(EDITED)?;
    // The policy takes effect once the API server saw it: edit until the operator's put-back is refused.
    let operator_api = operators(&world);
    let degraded = numo_testkit::wait_until(&operator_api, MACHINE_CONFIG, WAIT, "Degraded", |o| {
        o.status.as_ref().and_then(|s| s.condition(DEGRADED)).is_some_and(|c| c.status == "True")
    });
    let editing = async {
        loop {
            patch(&pools(&world), "worker", json!({"spec": {"nodeSelector": edit}})).await?;
            tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        }
        #[allow(unreachable_code)]
        Ok::<(), anyhow::Error>(())
    };
    let degraded = tokio::select! {
        degraded = degraded => degraded?,
        failed = editing => { failed?; unreachable!("the edits loop until the operator degrades") }
    };
    let condition = degraded.status.as_ref().and_then(|s| s.condition(DEGRADED)).cloned().unwrap_or_default();
    assert_eq!(condition.reason.as_deref(), Some(POOLS_FAILED));
    let message = condition.message.unwrap_or_default();
    assert!(message.starts_with(&format!("Failed to resync {OLD} because:")), "{message}");
    assert!(message.contains("steered"), "the refusal is in the message: {message}");

    // An update now does not complete: the operator's sync stops before it hands the release to its controllers.
    upgrade(&world, NEW).await?;
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let cv = versions(&world).get("version").await?;
    assert!(!cv.control_plane_completed(NEW), "Completed while the operator could not sync");

    // The refusal goes: the next sync succeeds, machine-config recovers and the update completes.
    let params = DeleteParams::default();
    Api::<ValidatingAdmissionPolicyBinding>::all(world.client.clone()).delete("numo-holds", &params).await?;
    Api::<ValidatingAdmissionPolicy>::all(world.client.clone()).delete("numo-holds", &params).await?;
    numo_testkit::wait_until(&operators(&world), MACHINE_CONFIG, WAIT, "not Degraded", |o| {
        o.status.as_ref().and_then(|s| s.condition(DEGRADED)).is_some_and(|c| c.status == "False")
    })
    .await?;
    numo_testkit::wait_until(&versions(&world), "version", WAIT, "Completed", |cv| cv.control_plane_completed(NEW))
        .await?;
    let worker = pools(&world).get("worker").await?;
    assert_eq!(selector(&worker), MANIFEST);
    Ok(())
}
