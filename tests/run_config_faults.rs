//! What a bad day does to a gated rollout, against the real kube-apiserver with the simulated CVO and MCO: Jobs
//! deleted as soon as they finish, a write the apiserver refuses, Events the apiserver refuses, a canary that would
//! take every worker.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::admissionregistration::v1::{ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding};
use k8s_openapi::api::batch::v1::Job;
use kube::api::{DeleteParams, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use numo::api::{NodePhase, RunPhase};
use serde_json::json;
use support::*;

/// Job names by `(node, phase)`.
type JobsSeen = Arc<Mutex<BTreeMap<(String, String), Vec<String>>>>;

/// Every Job name numo created in the test namespace, by `(node, phase)`, as a watch saw them appear.
fn record_jobs(setup: &mut Setup) -> JobsSeen {
    let seen: JobsSeen = Arc::default();
    let jobs = Api::<Job>::namespaced(setup.client.clone(), &setup.ns);
    let record = seen.clone();
    setup.world.spawn(async move {
        let mut stream = watcher(jobs, watcher::Config::default()).applied_objects().boxed();
        while let Some(Ok(job)) = stream.next().await {
            let key = (
                job.annotations().get("openshift-optional.skrzypek.io/node").cloned().unwrap_or_default(),
                job.labels().get("openshift-optional.skrzypek.io/phase").cloned().unwrap_or_default(),
            );
            if let Ok(mut seen) = record.lock() {
                let names = seen.entry(key).or_default();
                if !names.contains(&job.name_any()) {
                    names.push(job.name_any());
                }
            }
        }
    });
    seen
}

/// A JobSpec that the TTL controller deletes as soon as the Job finished.
fn deleted_when_done(duration: &str) -> serde_json::Value {
    let mut spec = job_spec(duration, false);
    spec["ttlSecondsAfterFinished"] = json!(0);
    spec
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_deleted_as_soon_as_they_finish_are_never_run_again_across_restarts() -> anyhow::Result<()> {
    let mut setup = Setup::new("ttl-zero", 3).await?;
    setup.check_workers("forgetful", deleted_when_done("1s"), Some(deleted_when_done("1s")), json!({})).await?;
    let before = setup.pools().await?;
    let seen = record_jobs(&mut setup);
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    setup.wait_node_phase("forgetful", "worker-0", NodePhase::Upgrading).await?;
    setup.kill_operator();
    // Jobs finish and go while numo is down: their finalizer keeps them until numo recorded their results.
    tokio::time::sleep(Duration::from_secs(3)).await;
    setup.start_operator().await?;
    setup.wait_node_phase("forgetful", "worker-1", NodePhase::Gating).await?;
    setup.kill_operator();
    tokio::time::sleep(Duration::from_secs(3)).await;
    setup.start_operator().await?;
    setup.wait_phase("forgetful", RunPhase::Completed, ROLLOUT).await?;

    let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
    for node in ["worker-0", "worker-1", "worker-2"] {
        for phase in ["gate", "cleanup"] {
            let names = seen.get(&(node.to_string(), phase.to_string())).cloned().unwrap_or_default();
            assert_eq!(names.len(), 1, "{node} {phase}: exactly one Job, saw {names:?}");
        }
    }
    let left = setup.jobs().await?;
    assert!(left.is_empty(), "the TTL collected every Job once its result was recorded: {:?}", left.len());
    assert_eq!(setup.pools().await?, before);
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_write_is_said_in_the_status_and_an_event_and_retried() -> anyhow::Result<()> {
    let mut setup = Setup::new("refused", 2).await?;
    setup.rule("check", job_spec("1s", false), None).await?;
    setup.target("workers", &["worker"]).await?;
    // The rule's own dry run must pass first: the policy comes after the rule was judged.
    setup.start_operator().await?;
    numo_testkit::wait_until(
        &Api::<numo::api::MutexRule>::namespaced(setup.client.clone(), &setup.ns),
        "check",
        Duration::from_secs(60),
        "ValidConfig=True",
        |rule: &numo::api::MutexRule| {
            rule.status
                .as_ref()
                .is_some_and(|s| s.conditions.iter().any(|c| c.type_ == "ValidConfig" && c.status == "True"))
        },
    )
    .await?;
    let rules =
        json!([{"apiGroups": ["batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["jobs"]}]);
    let freeze = Refusal::create(&setup, "freeze", rules, "Jobs are frozen during the change window").await?;
    // Admission policies take effect once the apiserver's informer saw them: wait until a dry run is refused.
    let probe: Job = serde_json::from_value(json!({
        "metadata": {"name": "probe", "namespace": setup.ns},
        "spec": job_spec("1s", false),
    }))?;
    let jobs = Api::<Job>::namespaced(setup.client.clone(), &setup.ns);
    let dry_run = PostParams { dry_run: true, ..Default::default() };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while jobs.create(&dry_run, &probe).await.is_ok() {
        anyhow::ensure!(tokio::time::Instant::now() < deadline, "the admission policy never took effect");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    setup.run_config("blocked", &["check"], &["workers"], json!({})).await?;
    setup.upgrade_cluster(NEW).await?;
    let refused = numo_testkit::wait_until(
        &setup.run_configs(),
        "blocked",
        ROLLOUT,
        "a status naming the refused write",
        |rc: &numo::api::MutexRunConfig| {
            rc.status.as_ref().and_then(|s| s.message.as_deref()).is_some_and(|m| m.contains("Could not create Job"))
        },
    )
    .await?;
    let message = refused.status.and_then(|s| s.message).unwrap_or_default();
    assert!(message.contains("frozen during the change window"), "{message}");
    let refused = |events: &[(String, String, String)]| {
        events
            .iter()
            .any(|(kind, reason, note)| kind == "Warning" && reason == "WriteFailed" && note.contains("frozen"))
    };
    let events = setup.events_when("blocked", refused).await?;
    assert!(refused(&events), "{events:?}");

    freeze.remove(&setup).await?;
    setup.wait_phase("blocked", RunPhase::Completed, ROLLOUT).await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_events_hold_no_node_back() -> anyhow::Result<()> {
    let mut setup = Setup::new("no-events", 3).await?;
    setup.rule("check", job_spec("1s", false), Some(job_spec("1s", false))).await?;
    setup.target("workers", &["worker"]).await?;
    let rules = json!([
        {"apiGroups": ["events.k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["events"]},
        {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["events"]}
    ]);
    let silence = Refusal::create(&setup, "silence", rules, "no Events today").await?;
    let probe: k8s_openapi::api::events::v1::Event = serde_json::from_value(json!({
        "metadata": {"name": "probe", "namespace": setup.ns},
        "eventTime": "2026-01-01T00:00:00.000000Z", "reportingController": "numo-test", "reportingInstance": "probe",
        "action": "Probe", "reason": "Probe", "type": "Normal", "note": "probe",
        "regarding": {"kind": "ConfigMap", "namespace": setup.ns, "name": "probe", "apiVersion": "v1"},
    }))?;
    let events = Api::<k8s_openapi::api::events::v1::Event>::namespaced(setup.client.clone(), &setup.ns);
    let dry_run = PostParams { dry_run: true, ..Default::default() };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        match events.create(&dry_run, &probe).await {
            Err(kube::Error::Api(status)) if status.message.contains("no Events today") => break,
            other => {
                let outcome = other.map(|_| ());
                anyhow::ensure!(tokio::time::Instant::now() < deadline, "the policy never took effect: {outcome:?}");
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    setup.run_config("quiet", &["check"], &["workers"], json!({"concurrency": 2})).await?;
    let before = setup.pools().await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;
    let done = setup.wait_phase("quiet", RunPhase::Completed, ROLLOUT).await?;
    let status = done.status.unwrap_or_default();
    assert_eq!(status.completed_nodes.len(), 3, "{:?}", status.completed_nodes);
    assert!(
        !status.message.as_deref().unwrap_or_default().contains("Could not"),
        "an Event is not a write the rollout waits for: {:?}",
        status.message
    );
    let published = setup.events_about("quiet").await?;
    assert!(published.is_empty(), "the policy let an Event through: {published:?}");
    assert_eq!(setup.pools().await?, before, "pools restored exactly");
    silence.remove(&setup).await?;
    Ok(())
}

/// A ValidatingAdmissionPolicy (and its binding to the test namespace) that refuses the requests `rules` match.
struct Refusal {
    name: String,
}

impl Refusal {
    async fn create(setup: &Setup, what: &str, rules: serde_json::Value, message: &str) -> anyhow::Result<Self> {
        let name = format!("numo-test-{what}-{}", setup.ns);
        let policy: ValidatingAdmissionPolicy = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": rules},
                "validations": [{"expression": "false", "message": message}]
            }
        }))?;
        let binding: ValidatingAdmissionPolicyBinding = serde_json::from_value(json!({
            "metadata": {"name": name},
            "spec": {
                "policyName": name,
                "validationActions": ["Deny"],
                "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": setup.ns}}}
            }
        }))?;
        Api::<ValidatingAdmissionPolicy>::all(setup.client.clone()).create(&PostParams::default(), &policy).await?;
        Api::<ValidatingAdmissionPolicyBinding>::all(setup.client.clone())
            .create(&PostParams::default(), &binding)
            .await?;
        Ok(Self { name })
    }

    async fn remove(self, setup: &Setup) -> anyhow::Result<()> {
        Api::<ValidatingAdmissionPolicyBinding>::all(setup.client.clone())
            .delete(&self.name, &DeleteParams::default())
            .await?;
        Api::<ValidatingAdmissionPolicy>::all(setup.client.clone())
            .delete(&self.name, &DeleteParams::default())
            .await?;
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_canary_that_takes_every_worker_is_refused_and_nothing_changes() -> anyhow::Result<()> {
    let mut setup = Setup::new("greedy-canary", 2).await?;
    // The reference's canary without its isCanary expression: the MCO puts every worker into it.
    let greedy = numo_testkit::pools::custom("greedy", "worker");
    Api::<numo::openshift::MachineConfigPool>::all(setup.client.clone()).create(&Default::default(), &greedy).await?;
    setup.check_workers("careless", job_spec("1s", false), None, json!({"canary": {"name": "greedy"}})).await?;
    let before = setup.pools().await?;
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    numo_testkit::wait_until(
        &setup.run_configs(),
        "careless",
        Duration::from_secs(60),
        "Invalid naming the canary and the worker it would upgrade ungated",
        |rc: &numo::api::MutexRunConfig| {
            let status = rc.status.clone().unwrap_or_default();
            status.phase == Some(RunPhase::Invalid)
                && status.conditions.iter().any(|c| {
                    c.type_ == "ConfigValidated"
                        && ["greedy", "worker-0", "ungated"].iter().all(|part| c.message.contains(part))
                })
        },
    )
    .await?;
    let invalid = |events: &[(String, String, String)]| {
        events.iter().any(|(kind, reason, _)| kind == "Warning" && reason == "InvalidConfig")
    };
    let events = setup.events_when("careless", invalid).await?;
    assert!(invalid(&events), "{events:?}");
    assert_eq!(setup.pools().await?, before, "no pool was touched");
    assert!(setup.jobs().await?.is_empty(), "no Job was created");
    for node in setup.nodes().await? {
        assert!(!node.labels().keys().any(|k| k.starts_with(numo::labels::RULE_LABEL_PREFIX)));
    }
    Ok(())
}
