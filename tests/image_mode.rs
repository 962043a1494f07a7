//! Image mode (on-cluster layering, OpenShift 4.19+) against the real API server with the MachineOSConfig CRD of
//! openshift/api (`$NUMO_OPENSHIFT_API_CRDS/machineosconfigs.crd.yaml`, make test sets it): a target pool that
//! builds its own OS image is refused, saying that each node would reboot a second time, ungated, at the restore,
//! with nothing changed in the cluster; accepted in the spec (`acceptImageModeSecondReboot`), it is still refused
//! while the canary builds no image of its own, naming the fix; once the canary builds one too, the run config is
//! valid.

mod support;

use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use numo::api::{MutexRunConfig, RunPhase};
use numo::openshift::MachineOSConfig;
use serde_json::json;
use support::*;

/// A MachineOSConfig building `pool`'s image, as an admin writes one (every field the CRD requires; numo's type
/// reads only the pool).
fn build_for(pool: &str) -> anyhow::Result<DynamicObject> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineOSConfig",
        "metadata": {"name": pool},
        "spec": {
            "machineConfigPool": {"name": pool},
            "imageBuilder": {"imageBuilderType": "Job"},
            "renderedImagePushSecret": {"name": "push-secret"},
            "renderedImagePushSpec": format!("image-registry.openshift-image-registry.svc:5000/openshift-machine-config-operator/os-{pool}:latest"),
        },
    }))?)
}

fn validated(rc: &MutexRunConfig) -> Option<(String, String)> {
    let status = rc.status.as_ref()?;
    let c = status.conditions.iter().find(|c| c.type_ == "ConfigValidated")?;
    Some((c.status.clone(), c.message.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_pool_in_image_mode_is_refused_until_its_second_reboot_is_accepted_and_the_canary_builds_too(
) -> anyhow::Result<()> {
    let cluster = numo_testkit::cluster().await?;
    let crds = Api::<CustomResourceDefinition>::all(cluster.client());
    crds.patch(
        "machineosconfigs.machineconfiguration.openshift.io",
        &PatchParams::apply("numo-tests").force(),
        &Patch::Apply(&numo_testkit::crds::openshift_api("machineosconfigs.crd.yaml")?),
    )
    .await?;
    let mut setup = Setup::new("image-mode", 2).await?;
    let builds = Api::<DynamicObject>::all_with(setup.client.clone(), &ApiResource::erase::<MachineOSConfig>(&()));
    // What an earlier run of this test may have left (an error: nothing left, or not served yet, so nothing left
    // either; the create below reports any real problem).
    for name in ["worker", "canary"] {
        builds.delete(name, &DeleteParams::default()).await.ok();
    }
    // Served once the CRD is established.
    let mut created = builds.create(&PostParams::default(), &build_for("worker")?).await;
    for _ in 0..100 {
        if created.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        created = builds.create(&PostParams::default(), &build_for("worker")?).await;
    }
    created?;
    let before = setup.pools().await?;
    setup.check_workers("layered", job_spec("1s", false), None, json!({})).await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    let refused = numo_testkit::wait_until(&setup.run_configs(), "layered", Duration::from_secs(60), "refused", |rc| {
        validated(rc).is_some_and(|(status, message)| status == "False" && message.contains("MachineOSConfig"))
    })
    .await?;
    let (_, message) = validated(&refused).unwrap_or_default();
    assert!(message.contains("MachineOSConfig worker"), "{message}");
    assert!(message.contains("reboots a second time, ungated"), "{message}");
    assert!(message.contains("spec.acceptImageModeSecondReboot: true"), "{message}");
    assert_eq!(setup.pools().await?, before, "nothing changed in the cluster");

    // The admin accepts the second reboot; the canary has no build yet.
    let accept = json!({"spec": {"acceptImageModeSecondReboot": true}});
    setup.run_configs().patch("layered", &PatchParams::default(), &Patch::Merge(&accept)).await?;
    let refused = numo_testkit::wait_until(&setup.run_configs(), "layered", Duration::from_secs(60), "refused", |rc| {
        validated(rc).is_some_and(|(status, message)| status == "False" && message.contains("Give the canary"))
    })
    .await?;
    let (_, message) = validated(&refused).unwrap_or_default();
    assert!(message.contains("Give the canary a MachineOSConfig that builds the same image"), "{message}");
    assert_eq!(setup.pools().await?, before, "nothing changed in the cluster");
    let warned = |events: &[(String, String, String)]| {
        events.iter().any(|(kind, _, note)| kind == "Warning" && note.contains("MachineOSConfig worker"))
    };
    let events = setup.events_when("layered", warned).await?;
    assert!(warned(&events), "{events:?}");

    // The admin gives the canary the same build: the rollout goes on.
    builds.create(&PostParams::default(), &build_for("canary")?).await?;
    let done = setup.wait_phase("layered", RunPhase::Completed, ROLLOUT).await;
    for name in ["worker", "canary"] {
        builds.delete(name, &DeleteParams::default()).await?;
    }
    let done = done?;
    assert_eq!(validated(&done).map(|(s, _)| s).as_deref(), Some("True"));
    Ok(())
}
