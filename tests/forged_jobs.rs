//! Jobs numo trusts are Jobs numo made. A user who may only `edit` in the rules' namespace creates, for every worker,
//! a Job with numo's labels and annotations that succeeds at once, while numo gates the first worker. numo names
//! each Job in its status before it creates it, under a name nobody can know before, and counts only the Jobs it
//! recorded (by uid once seen): the forgeries release no node and take no slot, each is told once in a Warning
//! naming its maker, every worker is gated by numo's own Job (exactly one per step), and the rollout completes. The
//! same with numo's admission policy in force and without it (OpenShift before 4.17).

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{Api, PostParams};
use kube::ResourceExt;
use numo::api::{NodePhase, RunPhase};
use serde_json::json;
use support::*;

const WORKERS: usize = 3;
const FORGER: &str = "forger@example.com";

/// A Job like `numo_job` (numo's labels and annotations) for `node`, that succeeds at once.
fn forgery(numo_job: &Job, node: &str) -> anyhow::Result<Job> {
    let mut labels = numo_job.labels().clone();
    labels.insert(numo::labels::JOB_NODE.into(), node.into());
    let mut annotations = numo_job.annotations().clone();
    annotations.insert(numo::jobs::NODE_ANNOTATION.into(), node.into());
    Ok(serde_json::from_value(json!({
        "metadata": {"name": format!("forged-{node}"), "labels": labels, "annotations": annotations},
        "spec": job_spec("0s", false),
    }))?)
}

async fn forged_jobs_open_no_gate(test: &str, policy: bool) -> anyhow::Result<()> {
    let mut setup = Setup::new(test, WORKERS).await?;
    setup.policy = policy;
    setup.check_workers("gated", job_spec("4s", false), None, json!({})).await?;
    let desired = record_desired(&mut setup);
    setup.start_operator().await?;
    setup.wait_phase("gated", RunPhase::Idle, Duration::from_secs(60)).await?;

    // The forger may edit in the rules' namespace (the built-in `edit` role), nothing else.
    let cluster = numo_testkit::cluster().await?;
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "forger-edit", "namespace": setup.ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": FORGER}],
    }))?;
    Api::<RoleBinding>::namespaced(setup.client.clone(), &setup.ns).create(&PostParams::default(), &binding).await?;
    let authenticated = vec!["system:authenticated".to_string()];
    let grant = ("batch", "jobs", "create", Some(setup.ns.as_str()));
    numo_testkit::rbac::wait_until_granted(&setup.client, FORGER, &authenticated, grant).await?;
    let forger = Api::<Job>::namespaced(numo_testkit::rbac::user_client(cluster, FORGER).await?, &setup.ns);

    setup.upgrade_cluster(NEW).await?;
    setup.wait_node_phase("gated", "worker-0", NodePhase::Gating).await?;
    // numo names the Job in its status first, then creates it.
    let jobs = Api::<Job>::namespaced(setup.client.clone(), &setup.ns);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let numo_job = loop {
        if let Some(job) = jobs.list(&Default::default()).await?.items.into_iter().find(made_by_numo) {
            break job;
        }
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "numo's first gate Job was never created");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    for i in 0..WORKERS {
        forger.create(&PostParams::default(), &forgery(&numo_job, &format!("worker-{i}"))?).await?;
    }

    let done = setup.wait_phase("gated", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.clone().unwrap_or_default();
    assert_eq!(status.progress.as_deref(), Some(format!("{WORKERS}/{WORKERS}").as_str()), "{status:?}");
    assert_eq!(honest(&setup, &done, &desired).await?, Vec::<String>::new(), "every worker gated by numo's Job");
    // Exactly one Job of numo's per worker: none missing, none run twice.
    let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
    for job in setup.jobs().await?.iter().filter(|j| made_by_numo(j)) {
        *per_node
            .entry(job.annotations().get(numo::jobs::NODE_ANNOTATION).cloned().unwrap_or_default())
            .or_default() += 1;
    }
    assert_eq!(per_node, (0..WORKERS).map(|i| (format!("worker-{i}"), 1)).collect(), "numo's own Jobs");
    // Each forgery told once, naming it and its maker.
    let forged = |events: &[(String, String, String)]| -> Vec<String> {
        events
            .iter()
            .filter(|(kind, reason, _)| kind == "Warning" && reason == "ForeignJob")
            .map(|e| e.2.clone())
            .collect()
    };
    let every_one = |events: &[(String, String, String)]| {
        let told = forged(events);
        (0..WORKERS).all(|i| told.iter().any(|note| note.contains(&format!("forged-worker-{i}"))))
    };
    let told = forged(&setup.events_when("gated", every_one).await?);
    for i in 0..WORKERS {
        let name = format!("forged-worker-{i}");
        assert_eq!(told.iter().filter(|note| note.contains(&name)).count(), 1, "{told:?}");
    }
    assert!(told.iter().all(|note| note.contains("did not create")), "{told:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_jobs_release_no_node_with_the_policy_in_force() -> anyhow::Result<()> {
    forged_jobs_open_no_gate("forged-jobs", true).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forged_jobs_release_no_node_without_the_policy() -> anyhow::Result<()> {
    forged_jobs_open_no_gate("forged-jobs-no-policy", false).await
}
