//! The machine-config operator's own admission policy on pools, per release, against the real API server
//! (release-4.18 `manifests/machineconfigcontroller/custom-machine-config-pool-selector-validatingadmissionpolicy.yaml`):
//! from 4.18 a pool whose `machineConfigSelector` does not select `role: worker` is refused with the MCO's message,
//! a custom pool selecting `In [worker, infra]` is accepted, and so is a canary's selector changed to such a pool's;
//! the operator puts the policy back when it is deleted. On 4.16 and 4.17 nothing refuses such a pool.

mod support;

use std::time::Duration;

use k8s_openapi::api::admissionregistration::v1::{ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding};
use kube::api::{Api, DeleteParams, PostParams};
use kube::ResourceExt;
use numo::openshift::{MachineConfigPool, MachineConfigPoolSpec, MC_ROLE};
use numo_simulator::admission_policies::{POOL_SELECTOR_BINDING, POOL_SELECTOR_MESSAGE, POOL_SELECTOR_POLICY};
use numo_simulator::operator_sync::OPERATOR_FIELD_MANAGER;
use numo_simulator::{ClusterShape, OpenShiftRelease, SimConfig};
use serde_json::{json, Value};
use support::*;

/// How long the API server may take to enforce a policy just created.
const ENFORCED: Duration = Duration::from_secs(30);

fn on(minor: u32) -> SimConfig {
    SimConfig { openshift: OpenShiftRelease { minor }, ..fast() }
}

fn shape() -> ClusterShape {
    ClusterShape { version: OLD.into(), workers: 1, masters: 1 }
}

/// A pool `name` with the given `machineConfigSelector`, selecting nodes labelled for `name`.
fn pool(name: &str, machine_config_selector: Value) -> anyhow::Result<MachineConfigPool> {
    let spec: MachineConfigPoolSpec = serde_json::from_value(json!({
        "machineConfigSelector": machine_config_selector,
        "nodeSelector": {"matchLabels": {format!("node-role.kubernetes.io/{name}"): ""}},
    }))?;
    Ok(MachineConfigPool::new(name, spec))
}

/// Selects only the configs of role `infra`: not the worker's.
fn infra_only() -> Value {
    json!({"matchLabels": {MC_ROLE: "infra"}})
}

/// The worker's and the infra pool's configs, as custom pools are documented.
fn worker_and_infra() -> Value {
    json!({"matchExpressions": [{"key": MC_ROLE, "operator": "In", "values": ["worker", "infra"]}]})
}

/// Creates `object` until the API server refuses it (a policy takes a moment to be enforced; a pool created before
/// is deleted again); returns the refusal's message, or fails after [`ENFORCED`].
async fn refused(world: &numo_testkit::World, object: &MachineConfigPool) -> anyhow::Result<String> {
    let api = pools(world);
    let deadline = tokio::time::Instant::now() + ENFORCED;
    loop {
        match api.create(&PostParams::default(), object).await {
            Err(kube::Error::Api(status)) if status.code != 409 => return Ok(status.message),
            Err(err) if tokio::time::Instant::now() >= deadline => anyhow::bail!("not refused by a policy: {err}"),
            Ok(_) if tokio::time::Instant::now() >= deadline => {
                anyhow::bail!("pool {} accepted for {ENFORCED:?}", object.name_any())
            }
            _ => {
                let _ = api.delete(&object.name_any(), &DeleteParams::default()).await;
                tokio::time::sleep(Duration::from_millis(300)).await;
            }
        }
    }
}

#[tokio::test]
async fn on_4_18_a_pool_not_selecting_worker_is_refused_and_worker_selectors_are_accepted() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-admission-pool-selector-418").await?;
    world.openshift(shape(), on(18)).await?;
    let message = refused(&world, &pool("infra", infra_only())?).await?;
    assert!(message.contains(POOL_SELECTOR_MESSAGE), "{message}");
    assert!(message.contains(POOL_SELECTOR_POLICY), "{message}");

    let api = pools(&world);
    api.create(&PostParams::default(), &pool("infra", worker_and_infra())?).await?;
    // numo's canary selects the worker's configs, then takes a target pool's selector (a patch: the MCO writes the
    // pool too).
    api.create(&PostParams::default(), &pool("canary", json!({"matchLabels": {MC_ROLE: "worker"}}))?).await?;
    let mut moved = worker_and_infra();
    moved["matchLabels"] = Value::Null;
    patch(&api, "canary", json!({"spec": {"machineConfigSelector": moved}})).await?;
    // And back off the worker's configs is refused, as an update.
    let mut away = infra_only();
    away["matchExpressions"] = Value::Null;
    let refusal = patch(&api, "canary", json!({"spec": {"machineConfigSelector": away}})).await;
    let refusal = refusal.err().map(|e| format!("{e:#}")).unwrap_or_default();
    assert!(refusal.contains(POOL_SELECTOR_MESSAGE), "{refusal:?}");
    Ok(())
}

#[tokio::test]
async fn on_4_22_the_operator_puts_a_deleted_pool_selector_policy_back() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-admission-pool-selector-422").await?;
    world.openshift(shape(), on(22)).await?;
    refused(&world, &pool("infra", infra_only())?).await?;
    let policies = Api::<ValidatingAdmissionPolicy>::all(world.client.clone());
    let bindings = Api::<ValidatingAdmissionPolicyBinding>::all(world.client.clone());
    let installed = policies.get(POOL_SELECTOR_POLICY).await?;
    let managers: Vec<String> = installed.managed_fields().iter().filter_map(|m| m.manager.clone()).collect();
    assert!(managers.iter().any(|m| m == OPERATOR_FIELD_MANAGER), "written by the operator: {managers:?}");

    bindings.delete(POOL_SELECTOR_BINDING, &DeleteParams::default()).await?;
    policies.delete(POOL_SELECTOR_POLICY, &DeleteParams::default()).await?;
    // The operator syncs on its informers' events: a pool changes.
    patch(&pools(&world), "worker", json!({"metadata": {"labels": {"team": "a"}}})).await?;
    let back = numo_testkit::wait_until(&bindings, POOL_SELECTOR_BINDING, WAIT, "the binding back", |_| true).await?;
    assert_eq!(back.spec.and_then(|s| s.policy_name).as_deref(), Some(POOL_SELECTOR_POLICY));
    let message = refused(&world, &pool("infra", infra_only())?).await?;
    assert!(message.contains(POOL_SELECTOR_MESSAGE), "{message}");
    Ok(())
}

/// On `minor`, once the operator has synced, a pool selecting only `infra` configs is created.
async fn accepted_on(minor: u32) -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let name = format!("sim-admission-pool-selector-4{minor}");
    let mut world = numo_testkit::cluster().await?.world(&name).await?;
    world.openshift(shape(), on(minor)).await?;
    // A sync has run once the operator has put the worker pool's label back.
    let label = "machineconfiguration.openshift.io/mco-built-in";
    patch(&pools(&world), "worker", json!({"metadata": {"labels": {label: null}}})).await?;
    numo_testkit::wait_until(&pools(&world), "worker", WAIT, "its label back", |p| p.labels().contains_key(label))
        .await?;
    // Longer than a policy takes to be enforced.
    tokio::time::sleep(Duration::from_secs(3)).await;
    pools(&world).create(&PostParams::default(), &pool("infra", infra_only())?).await?;
    let policy = Api::<ValidatingAdmissionPolicy>::all(world.client.clone()).get_opt(POOL_SELECTOR_POLICY).await?;
    assert!(policy.is_none(), "4.{minor} has no such policy");
    Ok(())
}

#[tokio::test]
async fn on_4_16_a_pool_not_selecting_worker_is_accepted() -> anyhow::Result<()> {
    accepted_on(16).await
}

#[tokio::test]
async fn on_4_17_a_pool_not_selecting_worker_is_accepted() -> anyhow::Result<()> {
    accepted_on(17).await
}
