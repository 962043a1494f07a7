//! The MutexRule controller against a real apiserver: what an admin sees in a rule's status and Events.

mod reference;

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Event, Namespace, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{ListParams, ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use numo::api::MutexRule;
use numo::metrics::Metrics;
use numo::{Context, OperatorConfig};
use serde_json::json;

use reference::REFERENCE_RULE;

const TIMEOUT: Duration = Duration::from_secs(60);

/// The namespace the reference example's Jobs run in.
const REFERENCE_JOB_NAMESPACE: &str = "node-upgrade-mutex-operator";

fn context(client: kube::Client, allowed: &[&str]) -> Context {
    let config = OperatorConfig {
        allowed_job_namespaces: allowed.iter().map(|n| n.to_string()).collect(),
        ..Default::default()
    };
    Context::new(client, config, Arc::new(Metrics::default()))
}

fn valid_config(rule: &MutexRule) -> Option<&Condition> {
    rule.status.as_ref().and_then(|s| s.conditions.iter().find(|c| c.type_ == "ValidConfig"))
}

/// Whether the rule's status describes its current spec and says `status` (True/False).
fn judged(rule: &MutexRule, status: &str) -> bool {
    let current = rule.status.as_ref().and_then(|s| s.observed_generation) == rule.metadata.generation;
    current
        && valid_config(rule).is_some_and(|c| c.status == status && c.observed_generation == rule.metadata.generation)
}

/// A rule named `name` in `namespace` with the given `jobSpec`.
fn rule(
    name: &str,
    namespace: &str,
    job_name: &str,
    job_namespace: Option<&str>,
    job_spec: serde_json::Value,
) -> MutexRule {
    let mut value = json!({
        "apiVersion": "openshift-optional.skrzypek.io/v1alpha1",
        "kind": "MutexRule",
        "metadata": { "name": name, "namespace": namespace },
        "spec": { "jobName": job_name, "jobSpec": job_spec },
    });
    if let Some(ns) = job_namespace {
        value["spec"]["jobNamespace"] = json!(ns);
    }
    serde_json::from_value(value).unwrap_or_else(|e| panic!("test rule does not parse: {e}"))
}

fn job_spec(image: serde_json::Value, container_name: &str) -> serde_json::Value {
    json!({
        "template": { "spec": {
            "containers": [{ "name": container_name, "image": image, "command": ["true"] }],
            "restartPolicy": "Never"
        }}
    })
}

/// Waits (by watch) for an Event about the object `name` with `reason`; returns its message.
async fn event(client: &kube::Client, namespace: &str, name: &str, reason: &str) -> anyhow::Result<String> {
    let api: Api<Event> = Api::namespaced(client.clone(), namespace);
    let config = watcher::Config::default().fields(&format!("involvedObject.name={name}"));
    let mut events = watcher::watcher(api, config).applied_objects().boxed();
    let found = tokio::time::timeout(TIMEOUT, async {
        while let Some(event) = events.next().await {
            if let Ok(event) = event {
                if event.reason.as_deref() == Some(reason) {
                    return Some(event.message.unwrap_or_default());
                }
            }
        }
        None
    })
    .await;
    match found {
        Ok(Some(message)) => Ok(message),
        _ => anyhow::bail!("no Event {reason} about {namespace}/{name} within {TIMEOUT:?}"),
    }
}

/// Jobs anywhere in the cluster whose name starts with `prefix`.
async fn jobs_named(client: &kube::Client, prefix: &str) -> anyhow::Result<Vec<String>> {
    let jobs: Api<Job> = Api::all(client.clone());
    let names = jobs.list(&ListParams::default()).await?.items.iter().map(|j| j.name_any()).collect::<Vec<_>>();
    Ok(names.into_iter().filter(|n| n.starts_with(prefix)).collect())
}

/// Creates the namespace `name` (labelled as a test namespace, so the next test's clean-up removes it).
async fn create_namespace(client: &kube::Client, name: &str, test: &str) -> anyhow::Result<()> {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([(numo_testkit::TEST_NAMESPACE_LABEL.to_string(), test.to_string())].into()),
            ..Default::default()
        },
        ..Default::default()
    };
    match Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(status)) if status.code == 409 => Ok(()),
        Err(error) => Err(error.into()),
    }
}

#[tokio::test]
async fn the_reference_example_becomes_valid() -> anyhow::Result<()> {
    let mut world = numo_testkit::world("rule-reference").await?;
    let client = world.client.clone();
    // As in the reference, the rule lives in the namespace its Jobs run in (the run config names the rule there):
    // no allow-list, no opt-in, nothing beyond the reference's own steps.
    create_namespace(&client, REFERENCE_JOB_NAMESPACE, "rule-reference").await?;
    world.spawn(numo::controllers::mutex_rule::run(context(client.clone(), &[])));

    let mut example: MutexRule = serde_yaml::from_str(REFERENCE_RULE)?;
    example.metadata.namespace = Some(REFERENCE_JOB_NAMESPACE.into());
    let rules: Api<MutexRule> = Api::namespaced(client.clone(), REFERENCE_JOB_NAMESPACE);
    rules.create(&PostParams::default(), &example).await?;

    let judged_rule =
        numo_testkit::wait_until(&rules, "k8s-example", TIMEOUT, "ValidConfig=True", |r| judged(r, "True")).await?;
    let condition = valid_config(&judged_rule).map(|c| (c.reason.clone(), c.message.clone()));
    assert_eq!(condition.as_ref().map(|c| c.0.as_str()), Some("Valid"), "{condition:?}");
    let renderings = judged_rule.status.clone().unwrap_or_default().job_renderings;
    assert!(renderings.len() == 2 && renderings.iter().all(|r| r.accepted), "{renderings:?}");
    assert_eq!(judged_rule.usable(true), Ok(()));
    assert_eq!(judged_rule.usable(false), Ok(()));
    let message = event(&client, REFERENCE_JOB_NAMESPACE, "k8s-example", "Valid").await?;
    assert!(message.contains("spec.cleanUpJobSpec"), "both templates were checked: {message}");
    assert!(jobs_named(&client, "example").await?.is_empty(), "validation creates no Job");
    Ok(())
}

#[tokio::test]
async fn an_invalid_job_spec_names_the_bad_field_until_it_is_fixed() -> anyhow::Result<()> {
    let mut world = numo_testkit::world("rule-invalid").await?;
    let client = world.client.clone();
    world.spawn(numo::controllers::mutex_rule::run(context(client.clone(), &[])));
    let rules: Api<MutexRule> = Api::namespaced(client.clone(), &world.namespace);

    let bad = rule("bad-image", &world.namespace, "bad-image", None, job_spec(json!(42), "gate"));
    rules.create(&PostParams::default(), &bad).await?;
    let seen =
        numo_testkit::wait_until(&rules, "bad-image", TIMEOUT, "ValidConfig=False", |r| judged(r, "False")).await?;
    let condition = valid_config(&seen).cloned();
    assert_eq!(condition.as_ref().map(|c| c.reason.as_str()), Some("InvalidJobSpec"), "{condition:?}");
    let message = condition.map(|c| c.message).unwrap_or_default();
    assert!(message.starts_with("spec.jobSpec.template.spec.containers[0].image: "), "{message}");
    let warning = event(&client, &world.namespace, "bad-image", "InvalidJobSpec").await?;
    assert_eq!(warning, message);

    // The admin fixes the image: the rule becomes valid.
    let fix = json!({ "spec": { "jobSpec": job_spec(json!("registry.example/gate:1"), "gate") } });
    rules.patch("bad-image", &PatchParams::default(), &Patch::Merge(&fix)).await?;
    numo_testkit::wait_until(&rules, "bad-image", TIMEOUT, "ValidConfig=True after the fix", |r| judged(r, "True"))
        .await?;

    // A bad cleanup template is reported as such.
    let mut cleanup = rule("bad-cleanup", &world.namespace, "bad-cleanup", None, job_spec(json!("img"), "gate"));
    cleanup.spec.clean_up_job_spec =
        Some(json!({ "template": { "spec": { "containers": [{ "name": "c", "image": "i" }] } } }));
    rules.create(&PostParams::default(), &cleanup).await?;
    let seen =
        numo_testkit::wait_until(&rules, "bad-cleanup", TIMEOUT, "ValidConfig=False", |r| judged(r, "False")).await?;
    let condition = valid_config(&seen).cloned();
    assert_eq!(condition.as_ref().map(|c| c.reason.as_str()), Some("InvalidCleanUpJobSpec"), "{condition:?}");
    let message = condition.map(|c| c.message).unwrap_or_default();
    assert!(message.starts_with("spec.cleanUpJobSpec.template.spec.restartPolicy: "), "{message}");
    Ok(())
}

#[tokio::test]
async fn the_apiservers_own_validation_speaks_through_the_dry_run() -> anyhow::Result<()> {
    let mut world = numo_testkit::world("rule-dry-run").await?;
    let client = world.client.clone();
    world.spawn(numo::controllers::mutex_rule::run(context(client.clone(), &[])));
    let rules: Api<MutexRule> = Api::namespaced(client.clone(), &world.namespace);

    // Schema-valid, but a container name must be a DNS label: only the apiserver knows.
    let bad = rule("bad-name", &world.namespace, "dry-gate", None, job_spec(json!("img"), "Not_A_DNS_Label"));
    rules.create(&PostParams::default(), &bad).await?;
    let seen =
        numo_testkit::wait_until(&rules, "bad-name", TIMEOUT, "ValidConfig=False", |r| judged(r, "False")).await?;
    let condition = valid_config(&seen).cloned();
    assert_eq!(condition.as_ref().map(|c| c.reason.as_str()), Some("DryRunRejected"), "{condition:?}");
    let message = condition.map(|c| c.message).unwrap_or_default();
    assert!(message.contains("spec.jobSpec.template.spec.containers[0].name"), "{message}");
    assert!(jobs_named(&client, "dry-gate").await?.is_empty(), "a dry run stores nothing");
    Ok(())
}

#[tokio::test]
async fn a_job_namespace_off_the_allow_list_is_rejected_and_nothing_is_created() -> anyhow::Result<()> {
    let mut world = numo_testkit::world("rule-namespace").await?;
    let client = world.client.clone();
    world.spawn(numo::controllers::mutex_rule::run(context(client.clone(), &["ops"])));
    let rules: Api<MutexRule> = Api::namespaced(client.clone(), &world.namespace);

    let sneaky = rule("sneaky", &world.namespace, "sneaky-gate", Some("kube-system"), job_spec(json!("img"), "gate"));
    rules.create(&PostParams::default(), &sneaky).await?;
    let seen = numo_testkit::wait_until(&rules, "sneaky", TIMEOUT, "ValidConfig=False", |r| judged(r, "False")).await?;
    let condition = valid_config(&seen).cloned();
    assert_eq!(condition.as_ref().map(|c| c.reason.as_str()), Some("JobNamespaceNotAllowed"), "{condition:?}");
    let message = condition.map(|c| c.message).unwrap_or_default();
    assert!(message.contains("kube-system"), "{message}");
    assert!(
        message.contains("--allowed-job-namespaces") && message.contains("NUMO_ALLOWED_JOB_NAMESPACES"),
        "{message}"
    );
    event(&client, &world.namespace, "sneaky", "JobNamespaceNotAllowed").await?;
    assert!(jobs_named(&client, "sneaky-gate").await?.is_empty(), "no Job anywhere");
    Ok(())
}

/// The reason of the rule's `ValidConfig`, once it describes the current spec with status `status`.
async fn wait_reason(rules: &Api<MutexRule>, name: &str, status: &str, reason: &str) -> anyhow::Result<MutexRule> {
    let (status, reason) = (status.to_string(), reason.to_string());
    numo_testkit::wait_until(rules, name, TIMEOUT, &format!("ValidConfig={status} ({reason})"), move |r| {
        judged(r, &status) && valid_config(r).is_some_and(|c| c.reason == reason)
    })
    .await
}

#[tokio::test]
async fn a_service_account_other_than_the_default_runs_jobs_only_once_opted_in() -> anyhow::Result<()> {
    let mut world = numo_testkit::world("rule-service-account").await?;
    let client = world.client.clone();
    world.spawn(numo::controllers::mutex_rule::run(context(client.clone(), &[])));
    let rules: Api<MutexRule> = Api::namespaced(client.clone(), &world.namespace);
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), &world.namespace);
    let opt_in = "openshift-optional.skrzypek.io/allow-mutex-rules-from";

    let mut spec = job_spec(json!("img"), "gate");
    spec["template"]["spec"]["serviceAccountName"] = json!("backup");
    rules.create(&PostParams::default(), &rule("as-backup", &world.namespace, "as-backup", None, spec)).await?;
    let seen = wait_reason(&rules, "as-backup", "False", "ServiceAccountNotOptedIn").await?;
    let message = valid_config(&seen).map(|c| c.message.clone()).unwrap_or_default();
    assert!(message.starts_with("spec.jobSpec.template.spec.serviceAccountName: "), "{message}");
    assert!(message.contains("does not exist"), "{message}");

    // The ServiceAccount appears without the opt-in: the rule is judged again (no change to the rule).
    let account = ServiceAccount {
        metadata: ObjectMeta { name: Some("backup".into()), ..Default::default() },
        ..Default::default()
    };
    accounts.create(&PostParams::default(), &account).await?;
    let seen = numo_testkit::wait_until(&rules, "as-backup", TIMEOUT, "the opt-in named as missing", |r| {
        valid_config(r).is_some_and(|c| c.message.contains("has no annotation"))
    })
    .await?;
    let message = valid_config(&seen).map(|c| c.message.clone()).unwrap_or_default();
    let command = format!(
        "kubectl annotate serviceaccount backup -n {} --overwrite {opt_in}={}",
        world.namespace, world.namespace
    );
    assert!(message.contains(&command), "the message says what to run: {message}");

    // The namespace's admin opts it in: valid. Taking the opt-in back makes the rule invalid again.
    let annotate = |value: Option<&str>| json!({ "metadata": { "annotations": { opt_in: value } } });
    accounts.patch("backup", &PatchParams::default(), &Patch::Merge(&annotate(Some(&world.namespace)))).await?;
    wait_reason(&rules, "as-backup", "True", "Valid").await?;
    accounts.patch("backup", &PatchParams::default(), &Patch::Merge(&annotate(None))).await?;
    wait_reason(&rules, "as-backup", "False", "ServiceAccountNotOptedIn").await?;
    assert!(jobs_named(&client, "as-backup").await?.is_empty(), "validation creates no Job");
    Ok(())
}

#[tokio::test]
async fn a_rule_valid_only_with_numos_anti_affinity_says_what_avoid_target_node_false_would_hit() -> anyhow::Result<()>
{
    let mut world = numo_testkit::world("rule-anti-affinity").await?;
    let client = world.client.clone();
    world.spawn(numo::controllers::mutex_rule::run(context(client.clone(), &[])));
    let rules: Api<MutexRule> = Api::namespaced(client.clone(), &world.namespace);

    // Valid only once numo adds its term: Kubernetes requires at least one node selector term.
    let mut spec = job_spec(json!("img"), "gate");
    spec["template"]["spec"]["affinity"] =
        json!({ "nodeAffinity": { "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [] } } });
    rules.create(&PostParams::default(), &rule("empty-terms", &world.namespace, "empty-terms", None, spec)).await?;
    let seen = wait_reason(&rules, "empty-terms", "True", "AvoidTargetNodeRequired").await?;
    let message = valid_config(&seen).map(|c| c.message.clone()).unwrap_or_default();
    assert!(message.contains("avoidTargetNode: true"), "{message}");
    assert!(message.contains("spec.jobSpec.template.spec.affinity.nodeAffinity"), "{message}");

    let renderings = seen.status.clone().unwrap_or_default().job_renderings;
    let without = renderings.iter().find(|r| !r.avoid_target_node).cloned();
    let without = without.unwrap_or_else(|| panic!("no rendering without anti-affinity: {renderings:?}"));
    assert!(!without.accepted, "{without:?}");
    assert!(without.message.as_deref().is_some_and(|m| m.contains("nodeSelectorTerms")), "{without:?}");
    assert!(renderings.iter().any(|r| r.avoid_target_node && r.accepted), "{renderings:?}");

    // What a run config's validation hears from the rule.
    assert_eq!(seen.usable(true), Ok(()));
    let Err(numo::api::RuleUnusable::Invalid(why)) = seen.usable(false) else {
        panic!("a run config with avoidTargetNode: false may not use the rule: {:?}", seen.usable(false))
    };
    assert!(why.contains("avoidTargetNode: false") && why.contains("nodeSelectorTerms"), "{why}");
    event(&client, &world.namespace, "empty-terms", "AvoidTargetNodeRequired").await?;

    // A term of its own makes both renderings valid.
    let fixed = json!({ "spec": { "jobSpec": { "template": { "spec": { "affinity": { "nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": { "nodeSelectorTerms": [
            { "matchExpressions": [{ "key": "kubernetes.io/os", "operator": "In", "values": ["linux"] }] }
        ] } } } } } } } });
    rules.patch("empty-terms", &PatchParams::default(), &Patch::Merge(&fixed)).await?;
    let seen = wait_reason(&rules, "empty-terms", "True", "Valid").await?;
    assert_eq!(seen.usable(false), Ok(()));
    Ok(())
}
