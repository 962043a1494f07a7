//! The local cluster behaves as the tests rely on: kwok nodes become Ready, Job pods finish as their annotations say
//! while other pods keep running, every test world starts empty, and a restarted apiserver leaves a usable cluster.

use std::time::Duration;

use anyhow::Context as _;
use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{Container, Namespace, Node, Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::api::{Api, ListParams, ObjectMeta, PostParams};
use numo::api::{MutexTarget, MutexTargetSpec};
use numo::openshift::{
    ClusterVersion, ClusterVersionSpec, MachineConfig, MachineConfigPool, MachineConfigPoolSpec, MachineConfigSpec,
};
use numo_testkit::kwok::{fake_node, is_node_ready, job_pod_annotations};
use numo_testkit::{cluster, init_tracing, wait_until, TEST_NAMESPACE_LABEL};

const TIMEOUT: Duration = Duration::from_secs(60);

#[tokio::test]
async fn kwok_nodes_become_ready() -> anyhow::Result<()> {
    init_tracing();
    let world = cluster().await?.world("kwok_nodes_become_ready").await?;
    let nodes: Api<Node> = Api::all(world.client.clone());
    for i in 0..3 {
        nodes.create(&PostParams::default(), &fake_node(&format!("smoke-node-{i}"))).await?;
    }
    for i in 0..3 {
        let node = wait_until(&nodes, &format!("smoke-node-{i}"), TIMEOUT, "node Ready", is_node_ready).await?;
        let kubelet = node.status.and_then(|s| s.node_info).map(|info| info.kubelet_version).unwrap_or_default();
        assert!(kubelet.starts_with("kwok-"), "node smoke-node-{i} is not faked by kwok: kubelet {kubelet}");
    }
    Ok(())
}

#[tokio::test]
async fn job_pods_succeed_or_fail_after_their_annotated_duration_and_other_pods_keep_running() -> anyhow::Result<()> {
    init_tracing();
    let world = cluster().await?.world("job_pods_finish_as_annotated").await?;
    let nodes: Api<Node> = Api::all(world.client.clone());
    nodes.create(&PostParams::default(), &fake_node("smoke-jobs")).await?;
    wait_until(&nodes, "smoke-jobs", TIMEOUT, "node Ready", is_node_ready).await?;

    // A pod no Job owns, annotated as if it should fail after 1s: kwok must leave it Running.
    let pods: Api<Pod> = Api::namespaced(world.client.clone(), &world.namespace);
    let bare = Pod {
        metadata: ObjectMeta {
            name: Some("bare".into()),
            annotations: Some(job_pod_annotations("1s", false)),
            ..Default::default()
        },
        spec: Some(pod_spec()),
        ..Default::default()
    };
    pods.create(&PostParams::default(), &bare).await?;
    wait_until(&pods, "bare", TIMEOUT, "bare pod Running", |p| phase(p) == "Running").await?;

    let jobs: Api<Job> = Api::namespaced(world.client.clone(), &world.namespace);
    jobs.create(&PostParams::default(), &job("succeeds", "3s", true)).await?;
    jobs.create(&PostParams::default(), &job("fails", "3s", false)).await?;
    wait_until(&jobs, "succeeds", TIMEOUT, "Job Complete", |j| has_condition(j, "Complete")).await?;
    wait_until(&jobs, "fails", TIMEOUT, "Job Failed", |j| has_condition(j, "Failed")).await?;

    let succeeded = only_pod_of(&pods, "succeeds").await?;
    assert_eq!(phase(&succeeded), "Succeeded");
    let (exit_code, ran) = termination(&succeeded)?;
    assert_eq!(exit_code, 0);
    assert!(ran >= 3, "the succeeding Job's pod ran {ran}s, not the 3s its annotation asks for");

    let failed = only_pod_of(&pods, "fails").await?;
    assert_eq!(phase(&failed), "Failed");
    let (exit_code, ran) = termination(&failed)?;
    assert_eq!(exit_code, 1);
    assert!(ran >= 3, "the failing Job's pod ran {ran}s, not the 3s its annotation asks for");

    // Both Jobs took at least 3s after the bare pod was Running; its 1s annotation must not have ended it.
    assert_eq!(phase(&pods.get("bare").await?), "Running");
    Ok(())
}

#[tokio::test]
async fn a_new_world_starts_without_what_earlier_tests_left() -> anyhow::Result<()> {
    init_tracing();
    let cluster = cluster().await?;
    let first = cluster.world("leaves_leftovers").await?;
    let client = first.client.clone();
    Api::<Node>::all(client.clone()).create(&PostParams::default(), &fake_node("leftover")).await?;
    let pool = MachineConfigPool::new("leftover", MachineConfigPoolSpec::default());
    Api::<MachineConfigPool>::all(client.clone()).create(&PostParams::default(), &pool).await?;
    let config = MachineConfig::new("rendered-leftover-0", MachineConfigSpec::default());
    Api::<MachineConfig>::all(client.clone()).create(&PostParams::default(), &config).await?;
    let version = ClusterVersion::new(
        "version",
        ClusterVersionSpec { cluster_id: "5a0b0a4e-54cb-4c1b-8f0a-1f4a3d2b9c10".into(), ..Default::default() },
    );
    Api::<ClusterVersion>::all(client.clone()).create(&PostParams::default(), &version).await?;
    // A numo object whose operator was killed before it could remove its finalizer.
    let mut target = MutexTarget::new("leftover", MutexTargetSpec { machine_config_pools: vec!["leftover".into()] });
    target.metadata.finalizers = Some(vec![numo::labels::FINALIZER.into()]);
    Api::<MutexTarget>::namespaced(client.clone(), &first.namespace).create(&PostParams::default(), &target).await?;
    let first_namespace = first.namespace.clone();
    drop(first);

    let second = cluster.world("starts_empty").await?;
    let client = second.client.clone();
    let list = ListParams::default();
    assert!(Api::<Node>::all(client.clone()).list(&list).await?.items.is_empty(), "nodes left");
    assert!(Api::<MachineConfigPool>::all(client.clone()).list(&list).await?.items.is_empty(), "pools left");
    assert!(Api::<MachineConfig>::all(client.clone()).list(&list).await?.items.is_empty(), "configs left");
    assert!(Api::<ClusterVersion>::all(client.clone()).list(&list).await?.items.is_empty(), "versions left");
    assert!(Api::<MutexTarget>::all(client.clone()).list(&list).await?.items.is_empty(), "numo objects left");
    let namespaces: Api<Namespace> = Api::all(client.clone());
    assert!(namespaces.get_opt(&first_namespace).await?.is_none(), "namespace {first_namespace} left");
    let own = namespaces.get(&second.namespace).await?;
    assert!(second.namespace.starts_with("starts-empty-"), "{}", second.namespace);
    let labels = own.metadata.labels.unwrap_or_default();
    assert_eq!(labels.get(TEST_NAMESPACE_LABEL).map(String::as_str), Some("starts-empty"));
    Ok(())
}

#[tokio::test]
async fn after_an_apiserver_restart_jobs_run_again_and_the_next_world_works() -> anyhow::Result<()> {
    init_tracing();
    let cluster = cluster().await?;
    let world = cluster.world("apiserver_restart").await?;
    let nodes: Api<Node> = Api::all(world.client.clone());
    nodes.create(&PostParams::default(), &fake_node("smoke-restart")).await?;
    wait_until(&nodes, "smoke-restart", TIMEOUT, "node Ready", is_node_ready).await?;
    let jobs: Api<Job> = Api::namespaced(world.client.clone(), &world.namespace);

    // Long enough for kube-controller-manager and kube-scheduler to lose their leases and exit.
    let down = cluster.stop_apiserver().await?;
    assert!(Api::<Namespace>::all(world.client.clone()).list(&ListParams::default()).await.is_err(), "still up");
    tokio::time::sleep(Duration::from_secs(15)).await;
    down.start().await?;
    // A Job needs the Job controller and the scheduler, and kwok to run its pod.
    jobs.create(&PostParams::default(), &job("after-restart", "1s", true)).await?;
    wait_until(&jobs, "after-restart", TIMEOUT, "Job Complete", |j| has_condition(j, "Complete")).await?;
    drop(world);

    // A restart in a failing test (the handle dropped while the apiserver is down) also leaves a usable cluster.
    // The node deleted with the first world comes back under its name: kwok must have seen it go.
    let world = cluster.world("apiserver_restart_dropped").await?;
    drop(cluster.stop_apiserver().await?);
    let nodes: Api<Node> = Api::all(world.client.clone());
    nodes.create(&PostParams::default(), &fake_node("smoke-restart")).await?;
    wait_until(&nodes, "smoke-restart", TIMEOUT, "node Ready", is_node_ready).await?;
    let jobs: Api<Job> = Api::namespaced(world.client.clone(), &world.namespace);
    jobs.create(&PostParams::default(), &job("after-drop", "1s", true)).await?;
    wait_until(&jobs, "after-drop", TIMEOUT, "Job Complete", |j| has_condition(j, "Complete")).await?;
    Ok(())
}

fn pod_spec() -> PodSpec {
    PodSpec {
        containers: vec![Container {
            name: "main".into(),
            image: Some("example.invalid/job:1".into()),
            ..Default::default()
        }],
        restart_policy: Some("Never".into()),
        ..Default::default()
    }
}

fn job(name: &str, duration: &str, succeed: bool) -> Job {
    Job {
        metadata: ObjectMeta { name: Some(name.into()), ..Default::default() },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    annotations: Some(job_pod_annotations(duration, succeed)),
                    ..Default::default()
                }),
                spec: Some(pod_spec()),
            },
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn has_condition(job: &Job, type_: &str) -> bool {
    job.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|conditions| conditions.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

fn phase(pod: &Pod) -> String {
    pod.status.as_ref().and_then(|s| s.phase.clone()).unwrap_or_default()
}

async fn only_pod_of(pods: &Api<Pod>, job: &str) -> anyhow::Result<Pod> {
    let mut list = pods.list(&ListParams::default().labels(&format!("job-name={job}"))).await?.items;
    anyhow::ensure!(list.len() == 1, "Job {job} has {} pods, not 1", list.len());
    list.pop().context("no pod")
}

/// The exit code of the pod's container and how many whole seconds it ran (from the pod's start to the
/// container's end, as the fake kubelet reported them).
fn termination(pod: &Pod) -> anyhow::Result<(i32, i64)> {
    let status = pod.status.as_ref().context("pod without status")?;
    let terminated = status
        .container_statuses
        .as_ref()
        .and_then(|c| c.first())
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.terminated.as_ref())
        .context("the pod's container has not terminated")?;
    let started = status.start_time.as_ref().context("pod without startTime")?;
    let finished = terminated.finished_at.as_ref().context("terminated container without finishedAt")?;
    Ok((terminated.exit_code, seconds_between(started, finished)))
}

fn seconds_between(from: &Time, to: &Time) -> i64 {
    to.0.as_second() - from.0.as_second()
}
