//! The simulated ClusterOperators against the real API server: seeded healthy, faults that come and go, versions that
//! follow an upgrade.

mod support;

use kube::api::{ListParams, PostParams};
use kube::ResourceExt;
use numo_simulator::cluster_operators::{
    ClusterOperator, ClusterOperatorCondition, ClusterOperatorSpec, AVAILABLE, DEGRADED, MACHINE_CONFIG, PAYLOAD,
    PROGRESSING, UPGRADEABLE,
};
use numo_simulator::faults::{self, SIMULATED_FAULT};
use numo_simulator::{ClusterShape, SimConfig};
use serde_json::json;
use support::*;

fn condition(operator: &ClusterOperator, type_: &str) -> Option<ClusterOperatorCondition> {
    operator.status.as_ref()?.condition(type_).cloned()
}

fn says(operator: &ClusterOperator, type_: &str, status: &str) -> bool {
    condition(operator, type_).is_some_and(|c| c.status == status)
}

fn version(operator: &ClusterOperator) -> Option<String> {
    operator.status.as_ref()?.operator_version().map(str::to_string)
}

/// Available, not Progressing, not Degraded, Upgradeable.
fn healthy(operator: &ClusterOperator) -> bool {
    says(operator, AVAILABLE, "True")
        && says(operator, PROGRESSING, "False")
        && says(operator, DEGRADED, "False")
        && says(operator, UPGRADEABLE, "True")
}

#[tokio::test]
async fn seeded_operators_are_healthy_and_faults_come_and_go() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-cluster-operators").await?;
    world.openshift(ClusterShape { version: OLD.into(), workers: 1, masters: 1 }, fast()).await?;
    let api = operators(&world);

    let seeded = api.list(&ListParams::default()).await?.items;
    let mut names: Vec<String> = seeded.iter().map(|o| o.name_any()).collect();
    names.sort();
    assert_eq!(names, PAYLOAD, "only the payload's operators");
    for operator in &seeded {
        assert!(healthy(operator), "{} is healthy: {:?}", operator.name_any(), operator.status);
        assert_eq!(version(operator).as_deref(), Some(OLD), "{} runs the cluster's release", operator.name_any());
        let conditions = operator.status.as_ref().map(|s| s.conditions.clone()).unwrap_or_default();
        assert!(conditions.iter().all(|c| c.last_transition_time.is_some() && c.reason.is_some()), "{conditions:?}");
    }

    // Degraded, with the annotation's message, until the annotation goes.
    let message = "DNS pods are crash-looping";
    patch(&api, "dns", json!({"metadata": {"annotations": {faults::DEGRADED: message}}})).await?;
    let degraded = numo_testkit::wait_until(&api, "dns", WAIT, "dns Degraded", |o| says(o, DEGRADED, "True")).await?;
    let fault = condition(&degraded, DEGRADED).unwrap_or_default();
    assert_eq!((fault.reason.as_deref(), fault.message.as_deref()), (Some(SIMULATED_FAULT), Some(message)));
    assert!(says(&degraded, AVAILABLE, "True"), "only Degraded changes");
    patch(&api, "dns", json!({"metadata": {"annotations": {faults::DEGRADED: null}}})).await?;
    let recovered =
        numo_testkit::wait_until(&api, "dns", WAIT, "dns not Degraded", |o| says(o, DEGRADED, "False")).await?;
    let back = condition(&recovered, DEGRADED).unwrap_or_default();
    assert_eq!(back.reason.as_deref(), Some("DNSNotDegraded"));
    assert!(back.last_transition_time >= fault.last_transition_time, "a new transition: {back:?} after {fault:?}");
    assert!(healthy(&recovered));

    // Unavailable likewise.
    patch(&api, "ingress", json!({"metadata": {"annotations": {faults::UNAVAILABLE: "no router pods"}}})).await?;
    let unavailable =
        numo_testkit::wait_until(&api, "ingress", WAIT, "ingress unavailable", |o| says(o, AVAILABLE, "False")).await?;
    let fault = condition(&unavailable, AVAILABLE).unwrap_or_default();
    assert_eq!((fault.reason.as_deref(), fault.message.as_deref()), (Some(SIMULATED_FAULT), Some("no router pods")));
    assert!(says(&unavailable, DEGRADED, "False"), "only Available changes");
    patch(&api, "ingress", json!({"metadata": {"annotations": {faults::UNAVAILABLE: null}}})).await?;
    let recovered =
        numo_testkit::wait_until(&api, "ingress", WAIT, "ingress available", |o| says(o, AVAILABLE, "True")).await?;
    assert_eq!(condition(&recovered, AVAILABLE).and_then(|c| c.reason).as_deref(), Some("IngressAvailable"));
    assert!(healthy(&recovered));

    // An operator a test creates reports faults too (and is not given a version).
    let addon = ClusterOperator::new("my-addon", ClusterOperatorSpec {});
    api.create(&PostParams::default(), &addon).await?;
    patch(&api, "my-addon", json!({"metadata": {"annotations": {faults::DEGRADED: "broken"}}})).await?;
    let degraded =
        numo_testkit::wait_until(&api, "my-addon", WAIT, "my-addon Degraded", |o| says(o, DEGRADED, "True")).await?;
    assert_eq!(version(&degraded), None);
    Ok(())
}

#[tokio::test]
async fn operators_move_to_the_new_release_with_the_control_plane() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let mut world = numo_testkit::cluster().await?.world("sim-cluster-operators-upgrade").await?;
    let shape = ClusterShape { version: OLD.into(), workers: 1, masters: 1 };
    let slow_control_plane = SimConfig { control_plane: std::time::Duration::from_secs(600), ..fast() };
    world.openshift(shape.clone(), slow_control_plane).await?;
    let api = operators(&world);
    upgrade(&world, NEW).await?;

    let working =
        numo_testkit::wait_until(&api, "network", WAIT, "network progressing", |o| says(o, PROGRESSING, "True"))
            .await?;
    let progressing = condition(&working, PROGRESSING).unwrap_or_default();
    assert_eq!(progressing.message.as_deref(), Some("Working towards 4.16.5"));
    assert_eq!(version(&working).as_deref(), Some(OLD), "the old version until the control plane is done");
    let mco = api.get(MACHINE_CONFIG).await?;
    assert!(healthy(&mco) && version(&mco).as_deref() == Some(OLD), "the MCO is not updated yet: {:?}", mco.status);

    world.openshift(shape, fast()).await?;
    for name in PAYLOAD {
        let what = format!("{name} at {NEW}");
        let updated = numo_testkit::wait_until(&api, name, WAIT, &what, |o| {
            version(o).as_deref() == Some(NEW) && says(o, PROGRESSING, "False")
        })
        .await?;
        assert!(healthy(&updated), "{name}: {:?}", updated.status);
    }
    let cv = versions(&world).get("version").await?;
    assert!(cv.control_plane_completed(NEW), "machine-config reports the release once the master pool has it");
    let mco = api.get(MACHINE_CONFIG).await?;
    let message = condition(&mco, PROGRESSING).and_then(|c| c.message);
    assert_eq!(message.as_deref(), Some("Cluster version is 4.16.5"));
    Ok(())
}
