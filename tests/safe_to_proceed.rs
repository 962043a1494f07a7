//! Maintenance windows, health checks and soak against the real kube-apiserver, with the simulated OpenShift: a
//! check only ever holds the next node, and the rollout goes on by itself once nothing holds it.

mod support;

use std::time::Duration;

use chrono::{Timelike, Utc};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt};
use numo::api::{MutexRunConfig, NodePhase, RunPhase};
use numo::openshift::ClusterOperator;
use numo_simulator::faults;
use serde_json::json;
use support::*;

/// The condition ReadyForNextNode as (status, reason, message).
fn ready_for_next(rc: &MutexRunConfig) -> Option<(String, String, String)> {
    let status = rc.status.as_ref()?;
    let c = numo::conditions::find(&status.conditions, "ReadyForNextNode")?;
    Some((c.status.clone(), c.reason.clone(), c.message.clone()))
}

/// Waits until the run config's next node is held by `check` with the pools steered: from then on, only the check
/// keeps the node from starting.
async fn wait_held_by(setup: &Setup, name: &str, check: &'static str) -> anyhow::Result<MutexRunConfig> {
    numo_testkit::wait_until(&setup.run_configs(), name, ROLLOUT, &format!("held by {check}"), move |rc| {
        let steered = rc.status.as_ref().is_some_and(|s| numo::conditions::is_true(&s.conditions, "MCPUpdated"));
        steered && ready_for_next(rc).is_some_and(|(status, reason, _)| status == "False" && reason == check)
    })
    .await
}

/// Asserts that no gate Job was created before `lifted` (the second the test lifted the hold).
async fn no_gate_job_before(setup: &Setup, lifted: i64) -> anyhow::Result<()> {
    for (node, job) in gate_jobs(setup).await? {
        let created = job.creation_timestamp().map(|t| t.0.as_second()).unwrap_or_default();
        assert!(
            created >= lifted,
            "the gate Job of {node} was created at {created}, before the hold was lifted at {lifted}"
        );
    }
    Ok(())
}

/// The gate Jobs created, as (node, creation time).
async fn gate_jobs(setup: &Setup) -> anyhow::Result<Vec<(String, Job)>> {
    let mut jobs: Vec<(String, Job)> = setup
        .jobs()
        .await?
        .into_iter()
        .filter(|j| j.labels().get(numo::labels::JOB_PHASE).map(String::as_str) == Some("gate"))
        .map(|j| (j.annotations().get(numo::jobs::NODE_ANNOTATION).cloned().unwrap_or_default(), j))
        .collect();
    jobs.sort_by_key(|(_, j)| j.creation_timestamp().map(|t| t.0));
    Ok(jobs)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rollout_waits_for_its_window_and_starts_by_itself_when_it_opens() -> anyhow::Result<()> {
    let mut setup = Setup::new("window", 2).await?;
    setup.rule("check", job_spec("1s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    // A window that opens at a whole minute 10 to 70 s from now, in a time zone other than UTC.
    let now = Utc::now();
    let ahead = now + chrono::Duration::seconds(70);
    let opens = ahead.with_second(0).and_then(|t| t.with_nanosecond(0)).unwrap_or(ahead);
    let tokyo = opens.with_timezone(&chrono_tz::Asia::Tokyo);
    let schedule = format!("{} {} * * *", tokyo.minute(), tokyo.hour());
    let windows = json!([{"schedule": schedule, "duration": "1h", "timeZone": "Asia/Tokyo"}]);
    setup.run_config("nightly", &["check"], &["workers"], json!({"maintenanceWindows": windows})).await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    let held = wait_held_by(&setup, "nightly", "MaintenanceWindow").await?;
    let status = held.status.clone().unwrap_or_default();
    let window = status.next_window.clone().expect("nextWindow");
    assert_eq!(window.start.0.as_second(), opens.timestamp(), "nextWindow.start is when the window opens");
    let message = ready_for_next(&held).map(|c| c.2).unwrap_or_default();
    assert!(message.contains(&format!("the next opens {}", tokyo.format("%Y-%m-%dT%H:%M:%S+09:00"))), "{message}");
    if Utc::now() < opens - chrono::Duration::seconds(2) {
        assert!(gate_jobs(&setup).await?.is_empty(), "no gate Job before the window opens");
        assert_eq!(status.phase, Some(RunPhase::Waiting), "{status:?}");
    }

    // Nothing changes in the cluster when the window opens: numo wakes by itself.
    setup.wait_phase("nightly", RunPhase::Completed, ROLLOUT + Duration::from_secs(70)).await?;
    let jobs = gate_jobs(&setup).await?;
    assert_eq!(jobs.len(), 2, "one gate Job per worker");
    let first = jobs[0].1.creation_timestamp().map(|t| t.0.as_second()).unwrap_or_default();
    assert!(first >= opens.timestamp(), "the first gate Job was created at {first}, before the window opened");
    let events = setup.events_when("nightly", |e| e.iter().any(|(_, r, _)| r == "RolloutResumed")).await?;
    assert!(events.iter().any(|(t, r, n)| t == "Warning" && r == "RolloutHeld" && n.contains("MaintenanceWindow")));
    assert!(events.iter().any(|(_, r, _)| r == "RolloutResumed"));
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_degraded_cluster_operator_holds_the_next_node_and_its_recovery_releases_it() -> anyhow::Result<()> {
    let mut setup = Setup::new("cluster-operators", 2).await?;
    setup.check_workers("healthy", job_spec("1s", false), None, json!({"healthChecks": {}})).await?;
    setup.start_operator().await?;
    let operators = Api::<ClusterOperator>::all(setup.client.clone());
    let degrade = |message: Option<&str>| json!({"metadata": {"annotations": {faults::DEGRADED: message}}});
    operators
        .patch("ingress", &PatchParams::default(), &Patch::Merge(&degrade(Some("2 of 2 router pods crash"))))
        .await?;
    setup.upgrade_cluster(NEW).await?;

    let held = wait_held_by(&setup, "healthy", "ClusterOperators").await?;
    let message = ready_for_next(&held).map(|c| c.2).unwrap_or_default();
    assert!(
        message.contains("ClusterOperator ingress is Degraded (SimulatedFault: 2 of 2 router pods crash)"),
        "{message}"
    );
    let status = held.status.clone().unwrap_or_default();
    assert_eq!(status.blocked_by.len(), 1, "{:?}", status.blocked_by);
    assert!(gate_jobs(&setup).await?.is_empty(), "no node starts while the operator is degraded");
    // The rollout waits with its pools paused; nothing else happens while it is held.
    let pools = setup.pools().await?;
    assert!(pools["worker"].0, "the target pool stays paused");

    let lifted = Utc::now().timestamp();
    operators.patch("ingress", &PatchParams::default(), &Patch::Merge(&degrade(None))).await?;
    let done = setup.wait_phase("healthy", RunPhase::Completed, ROLLOUT).await?;
    no_gate_job_before(&setup, lifted).await?;
    assert_eq!(done.status.unwrap_or_default().completed_nodes.len(), 2);
    let events = setup.events_when("healthy", |e| e.iter().any(|(_, r, _)| r == "RolloutResumed")).await?;
    let held = events.iter().filter(|(_, r, _)| r == "RolloutHeld").count();
    assert!(held >= 1, "{events:?}");
    assert!(events.iter().any(|(_, r, n)| r == "RolloutResumed" && n.contains("ClusterOperators")), "{events:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_that_allows_no_disruption_holds_the_node_its_pod_runs_on() -> anyhow::Result<()> {
    let mut setup = Setup::new("budgets", 2).await?;
    setup.check_workers("careful", job_spec("1s", false), None, json!({"healthChecks": {}})).await?;
    // A single database pod on worker-0 and a budget that keeps it: no disruption allowed.
    let pods = setup.database_held_by_budget("worker-0").await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    let held = wait_held_by(&setup, "careful", "PodDisruptionBudgets").await?;
    let message = ready_for_next(&held).map(|c| c.2).unwrap_or_default();
    let expected = format!(
        "PodDisruptionBudget {ns}/pg-pdb allows no disruption and covers pod {ns}/pg-1 on worker-0",
        ns = setup.ns
    );
    assert_eq!(message, expected);
    assert!(gate_jobs(&setup).await?.is_empty());

    // The database moves away (its pod goes): the budget covers nothing on worker-0 and the rollout goes on.
    let lifted = Utc::now().timestamp();
    pods.delete("pg-1", &Default::default()).await?;
    setup.wait_phase("careful", RunPhase::Completed, ROLLOUT).await?;
    no_gate_job_before(&setup, lifted).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_soak_keeps_the_slot_after_a_node_is_done() -> anyhow::Result<()> {
    let mut setup = Setup::new("soak", 2).await?;
    setup
        .check_workers("soaked", job_spec("1s", false), Some(job_spec("1s", false)), json!({"soakTime": "4s"}))
        .await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    let soaking = setup.wait_node_phase("soaked", "worker-0", NodePhase::Soaking).await?;
    let entry = soaking.status.clone().unwrap_or_default().nodes.into_iter().find(|e| e.name == "worker-0");
    let soak_start = entry.and_then(|e| e.soak_started_at).expect("soakStartedAt").0;
    setup.wait_phase("soaked", RunPhase::Completed, ROLLOUT).await?;
    let jobs = gate_jobs(&setup).await?;
    let worker1 = jobs.iter().find(|(node, _)| node == "worker-1").and_then(|(_, j)| j.creation_timestamp());
    let worker1 = worker1.expect("a gate Job for worker-1").0;
    // Creation times have a resolution of one second.
    assert!(
        worker1.as_second() >= soak_start.as_second() + 4,
        "worker-1 started at {worker1}, before worker-0's soak from {soak_start} ended"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_firing_alert_holds_the_next_node_and_a_silence_releases_it() -> anyhow::Result<()> {
    let alertmanager = numo_testkit::alertmanager::Alertmanager::start().await?;
    let mut setup = Setup::new("alerts", 2).await?;
    setup.ask_alertmanager(&alertmanager.url);
    setup.check_workers("alert-aware", job_spec("1s", false), None, json!({"healthChecks": {"alerts": {}}})).await?;
    alertmanager.fire(&[("alertname", "EtcdMembersDown"), ("severity", "critical"), ("job", "etcd")]).await?;
    alertmanager.fire(&[("alertname", "KubeCPUOvercommit"), ("severity", "warning")]).await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    let held = wait_held_by(&setup, "alert-aware", "Alerts").await?;
    let message = ready_for_next(&held).map(|c| c.2).unwrap_or_default();
    assert_eq!(message, "alert EtcdMembersDown (job=etcd, severity=critical) fires", "the warning does not hold");
    assert!(gate_jobs(&setup).await?.is_empty());

    let lifted = Utc::now().timestamp();
    alertmanager.silence("EtcdMembersDown").await?;
    assert!(alertmanager.active().await?.iter().all(|a| a["labels"]["alertname"] != "EtcdMembersDown"));
    setup.wait_phase("alert-aware", RunPhase::Completed, ROLLOUT).await?;
    no_gate_job_before(&setup, lifted).await?;
    Ok(())
}

/// A CRD of the test's own, standing in for a storage operator's kind (a Rook CephCluster).
async fn storage_cluster_crd(client: &kube::Client) -> anyhow::Result<()> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crd: CustomResourceDefinition = serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "storageclusters.tests.numo.dev"},
        "spec": {"group": "tests.numo.dev", "scope": "Namespaced",
                 "names": {"plural": "storageclusters", "singular": "storagecluster", "kind": "StorageCluster"},
                 "versions": [{"name": "v1", "served": true, "storage": true, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object",
                                          "x-kubernetes-preserve-unknown-fields": true}}}]}
    }))?;
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    crds.patch(&crd.name_any(), &PatchParams::apply("numo-tests").force(), &Patch::Apply(&crd)).await?;
    numo_testkit::wait_until(&crds, "storageclusters.tests.numo.dev", Duration::from_secs(30), "Established", |c| {
        c.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Established" && c.status == "True"))
    })
    .await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_cel_check_on_a_custom_resource_holds_until_it_holds() -> anyhow::Result<()> {
    use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
    use kube::api::{ApiResource, DynamicObject};
    let mut setup = Setup::new("custom-check", 2).await?;
    storage_cluster_crd(&setup.client).await?;
    let resource = ApiResource {
        group: "tests.numo.dev".into(),
        version: "v1".into(),
        api_version: "tests.numo.dev/v1".into(),
        kind: "StorageCluster".into(),
        plural: "storageclusters".into(),
    };
    let clusters = Api::<DynamicObject>::namespaced_with(setup.client.clone(), &setup.ns, &resource);
    let storage: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "tests.numo.dev/v1", "kind": "StorageCluster", "metadata": {"name": "ceph"}
    }))?;
    clusters.create(&PostParams::default(), &storage).await?;
    let health = |h: &str| json!({"status": {"ceph": {"health": h}}});
    clusters.patch_status("ceph", &PatchParams::default(), &Patch::Merge(&health("HEALTH_WARN"))).await?;

    setup.rule("check", job_spec("1s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    let check = json!({"custom": [{
        "apiVersion": "tests.numo.dev/v1", "kind": "StorageCluster", "namespace": setup.ns, "name": "ceph",
        "expression": "object.status.ceph.health == 'HEALTH_OK'", "message": "the storage cluster is not healthy"
    }]});
    setup.run_config("storage-aware", &["check"], &["workers"], json!({"healthChecks": check})).await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    // numo may not read StorageClusters yet: the check holds the rollout and says why.
    let held = wait_held_by(&setup, "storage-aware", "Custom").await?;
    let message = ready_for_next(&held).map(|c| c.2).unwrap_or_default();
    assert!(message.contains("custom check 0 cannot read StorageCluster tests.numo.dev/v1"), "{message}");
    assert!(message.contains("forbidden"), "{message}");

    // The admin grants numo read access to the kind, as docs/api.md says.
    let grant = ("tests.numo.dev", "storageclusters");
    numo_testkit::rbac::grant_operator_read(&setup.client, "numo-read-storageclusters", None, grant).await?;
    let runs = setup.run_configs();
    numo_testkit::wait_until(&runs, "storage-aware", ROLLOUT, "the expression is evaluated", |rc| {
        ready_for_next(rc).is_some_and(|(_, _, m)| m.contains("the storage cluster is not healthy"))
    })
    .await?;
    assert!(gate_jobs(&setup).await?.is_empty());

    // `numo plan`, with the admin's credentials, plans what the operator does: the same custom check holds the next
    // node, with the same words.
    use numo::controllers::run_config::preview;
    let held_by_custom = |blockers: &[numo::api::Blocker]| {
        blockers.iter().find(|b| b.check == "Custom").map(|b| b.message.clone()).unwrap_or_default()
    };
    let operator = held_by_custom(&runs.get("storage-aware").await?.status.unwrap_or_default().blocked_by);
    let (rc, stores) =
        preview::read::read(&setup.client, &setup.ns, "storage-aware").await.map_err(anyhow::Error::msg)?;
    let previewed = preview::from_cluster(&setup.client, &rc, &stores, None, None).await;
    assert_eq!(held_by_custom(&previewed.held_by), operator, "{previewed:?}");
    assert!(operator.contains("the storage cluster is not healthy"), "{operator}");

    let lifted = Utc::now().timestamp();
    clusters.patch_status("ceph", &PatchParams::default(), &Patch::Merge(&health("HEALTH_OK"))).await?;
    setup.wait_phase("storage-aware", RunPhase::Completed, ROLLOUT).await?;
    no_gate_job_before(&setup, lifted).await?;
    Api::<ClusterRoleBinding>::all(setup.client.clone())
        .delete("numo-read-storageclusters", &Default::default())
        .await?;
    Api::<ClusterRole>::all(setup.client.clone()).delete("numo-read-storageclusters", &Default::default()).await?;
    Ok(())
}
