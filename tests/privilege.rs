//! Privilege through someone else's rule (docs/security.md): a person who may only edit MutexRules in their own
//! namespace tries to make numo run a Job in another namespace as a privileged ServiceAccount there. The operator
//! runs with exactly its own RBAC (config/rbac); the people act through impersonated clients holding only the roles
//! bound to them.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::RoleBinding;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, ResourceExt};
use numo::api::{MutexRule, MutexRunConfig, RunPhase};
use numo::openshift::ClusterVersion;
use serde_json::json;
use support::{job_spec, Setup, NEW, ROLLOUT};

/// The opt-in annotation docs/security.md promises (spelled out: it is part of the API).
const OPT_IN_ANNOTATION: &str = "openshift-optional.skrzypek.io/allow-mutex-rules-from";
/// The attacker's namespace, where they hold only `numo-editor`.
const TENANT: &str = "tenant";
/// A namespace on the operator's job-namespace allow-list, where the attacker has no rights.
const OPS: &str = "upgrade-ops";
/// A ServiceAccount in [`OPS`] with its namespace's `admin` role.
const PRIVILEGED: &str = "ops-admin";
/// The attacker.
const MALLORY: &str = "mallory";
/// The admin of [`OPS`].
const OLIVIA: &str = "olivia";
const TIMEOUT: Duration = Duration::from_secs(60);

async fn create_namespace(client: &kube::Client, name: &str) -> anyhow::Result<()> {
    let namespace = Namespace {
        metadata: ObjectMeta {
            name: Some(name.into()),
            labels: Some([(numo_testkit::TEST_NAMESPACE_LABEL.to_string(), "privilege".to_string())].into()),
            ..Default::default()
        },
        ..Default::default()
    };
    Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &namespace).await?;
    Ok(())
}

/// Binds the ClusterRole `role` in `namespace` to the user or ServiceAccount `subject`.
async fn bind(client: &kube::Client, namespace: &str, role: &str, subject: serde_json::Value) -> anyhow::Result<()> {
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": {"name": format!("{role}-{}", subject["name"].as_str().unwrap_or_default()), "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [subject],
    }))?;
    Api::<RoleBinding>::namespaced(client.clone(), namespace).create(&PostParams::default(), &binding).await?;
    Ok(())
}

fn user(name: &str) -> serde_json::Value {
    json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": name})
}

/// Records the name of every Job that ever appears in `namespace`.
fn record_jobs(setup: &mut Setup, namespace: &str) -> Arc<Mutex<Vec<String>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let (api, record) = (Api::<Job>::namespaced(setup.client.clone(), namespace), seen.clone());
    setup.world.spawn(async move {
        let mut jobs = watcher::watcher(api, watcher::Config::default()).default_backoff().applied_objects().boxed();
        while let Some(job) = jobs.next().await {
            if let (Ok(job), Ok(mut record)) = (job, record.lock()) {
                if !record.contains(&job.name_any()) {
                    record.push(job.name_any());
                }
            }
        }
    });
    seen
}

fn valid_config(rule: &MutexRule) -> Option<(String, String, String)> {
    let judged = rule.status.as_ref().and_then(|s| s.observed_generation) == rule.metadata.generation;
    let condition = rule.status.as_ref()?.conditions.iter().find(|c| c.type_ == "ValidConfig")?;
    judged.then(|| (condition.status.clone(), condition.reason.clone(), condition.message.clone()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenants_rule_cannot_run_jobs_as_another_namespaces_service_account_until_it_opts_in() -> anyhow::Result<()> {
    let mut setup = Setup::new("privilege", 2).await?;
    let cluster = numo_testkit::cluster().await?;
    let admin = setup.client.clone();
    numo_testkit::rbac::apply_operator_rbac(&admin).await?;
    create_namespace(&admin, TENANT).await?;
    create_namespace(&admin, OPS).await?;
    let account = ServiceAccount {
        metadata: ObjectMeta { name: Some(PRIVILEGED.into()), ..Default::default() },
        ..Default::default()
    };
    Api::<ServiceAccount>::namespaced(admin.clone(), OPS).create(&PostParams::default(), &account).await?;
    let privileged = json!({"kind": "ServiceAccount", "name": PRIVILEGED, "namespace": OPS});
    bind(&admin, OPS, "admin", privileged).await?;
    bind(&admin, TENANT, "numo-editor", user(MALLORY)).await?;
    bind(&admin, OPS, "admin", user(OLIVIA)).await?;
    let authenticated = ["system:authenticated".to_string()];
    let group = "openshift-optional.skrzypek.io";
    numo_testkit::rbac::wait_until_granted(
        &admin,
        MALLORY,
        &authenticated,
        (group, "mutexrules", "create", Some(TENANT)),
    )
    .await?;
    numo_testkit::rbac::wait_until_granted(&admin, OLIVIA, &authenticated, ("", "serviceaccounts", "patch", Some(OPS)))
        .await?;
    let jobs_in_ops = record_jobs(&mut setup, OPS);

    // Mallory may write MutexRules in her namespace, and may create Jobs nowhere.
    let mallory = numo_testkit::rbac::user_client(cluster, MALLORY).await?;
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": "direct"},
        "spec": {"template": {"spec": {"serviceAccountName": PRIVILEGED, "restartPolicy": "Never",
                                        "containers": [{"name": "c", "image": "img"}]}}}
    }))?;
    for namespace in [OPS, TENANT] {
        let direct = Api::<Job>::namespaced(mallory.clone(), namespace).create(&PostParams::default(), &job).await;
        assert!(matches!(&direct, Err(kube::Error::Api(s)) if s.code == 403), "{namespace}: {direct:?}");
    }

    // Her rule: a Job in the allowed namespace, as its admin ServiceAccount.
    let mut spec = job_spec("1s", false);
    spec["template"]["spec"]["serviceAccountName"] = json!(PRIVILEGED);
    let rule: MutexRule = serde_json::from_value(json!({
        "apiVersion": "openshift-optional.skrzypek.io/v1alpha1", "kind": "MutexRule",
        "metadata": {"name": "borrowed", "namespace": TENANT},
        "spec": {"jobName": "borrowed", "jobNamespace": OPS, "jobSpec": spec},
    }))?;
    let mallorys_rules: Api<MutexRule> = Api::namespaced(mallory.clone(), TENANT);
    mallorys_rules.create(&PostParams::default(), &rule).await?;

    // The upgrade admins' run config uses it (they trust the rule's namespace, not its author's reach).
    setup.target("workers", &["worker"]).await?;
    let run_config: MutexRunConfig = serde_json::from_value(json!({
        "apiVersion": "openshift-optional.skrzypek.io/v1alpha1", "kind": "MutexRunConfig",
        "metadata": {"name": "gated", "namespace": setup.ns},
        "spec": {"canary": {"name": "canary"}, "mutexRules": [{"name": "borrowed", "namespace": TENANT}],
                 "mutexTargets": [{"name": "workers"}]},
    }))?;
    setup.run_configs().create(&PostParams::default(), &run_config).await?;
    // While the run config cannot run, the admin holds the workers themselves (else the MCO upgrades them ungated
    // once the control plane is done, as numo changes nothing for an invalid run config).
    let pools = Api::<numo::openshift::MachineConfigPool>::all(admin.clone());
    pools.patch("worker", &PatchParams::default(), &Patch::Merge(&json!({"spec": {"paused": true}}))).await?;
    let before = setup.pools().await?;
    setup.allowed_job_namespaces = vec![OPS.to_string()];
    setup.start_operator().await?;
    setup.upgrade_cluster(NEW).await?;

    // The rule says why, to Mallory herself, and what the admin of upgrade-ops would have to do.
    let refused = numo_testkit::wait_until(&mallorys_rules, "borrowed", TIMEOUT, "ValidConfig=False", |r| {
        valid_config(r).is_some_and(|(status, reason, _)| status == "False" && reason == "ServiceAccountNotOptedIn")
    })
    .await?;
    let (_, _, message) = valid_config(&refused).unwrap_or_default();
    let command =
        format!("kubectl annotate serviceaccount {PRIVILEGED} -n {OPS} --overwrite {OPT_IN_ANNOTATION}={TENANT}");
    assert!(message.contains(&command), "the message names the missing opt-in: {message}");

    // The run config is invalid and changes nothing, even once the control plane has upgraded.
    numo_testkit::wait_until(&setup.run_configs(), "gated", TIMEOUT, "Invalid for the rule", |rc| {
        let status = rc.status.clone().unwrap_or_default();
        status.phase == Some(RunPhase::Invalid)
            && status
                .conditions
                .iter()
                .any(|c| c.type_ == "ConfigValidated" && c.status == "False" && c.message.contains(OPT_IN_ANNOTATION))
    })
    .await?;
    let versions = Api::<ClusterVersion>::all(admin.clone());
    numo_testkit::wait_until(&versions, "version", ROLLOUT, "control plane upgraded", |cv| {
        cv.control_plane_completed(NEW)
    })
    .await?;
    let rc = setup.run_configs().get("gated").await?;
    assert_eq!(rc.status.and_then(|s| s.phase), Some(RunPhase::Invalid));
    assert_eq!(setup.pools().await?, before, "no pool paused or steered");
    for node in setup.nodes().await? {
        let held = node.labels().keys().any(|k| k.starts_with(numo::labels::RULE_LABEL_PREFIX));
        assert!(!held, "{} labelled", node.name_any());
    }
    let seen = jobs_in_ops.lock().map(|j| j.clone()).unwrap_or_default();
    assert!(seen.is_empty(), "no Job ever ran in {OPS}: {seen:?}");

    // The admin of upgrade-ops (no cluster rights) opts the ServiceAccount in for tenant: the same rule is valid.
    let olivia = numo_testkit::rbac::user_client(cluster, OLIVIA).await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(olivia, OPS);
    let opt_in = |value: Option<&str>| json!({"metadata": {"annotations": {OPT_IN_ANNOTATION: value}}});
    accounts.patch(PRIVILEGED, &PatchParams::default(), &Patch::Merge(&opt_in(Some(TENANT)))).await?;
    numo_testkit::wait_until(&mallorys_rules, "borrowed", TIMEOUT, "ValidConfig=True after the opt-in", |r| {
        valid_config(r).is_some_and(|(status, _, _)| status == "True")
    })
    .await?;
    // The admin paused the workers before numo held them (their own hold): numo releases none until they give it
    // the go-ahead.
    numo_testkit::wait_until(&setup.run_configs(), "gated", TIMEOUT, "held by the admin's pause", |rc| {
        rc.status.as_ref().is_some_and(|s| s.blocked_by.iter().any(|b| b.check == "AdminHold"))
    })
    .await?;
    let go_ahead = json!({"metadata": {"annotations": {numo::labels::GO_AHEAD_ANNOTATION: "worker"}}});
    setup.run_configs().patch("gated", &PatchParams::default(), &Patch::Merge(&go_ahead)).await?;
    // ... and the rollout runs its gate Job there, as that ServiceAccount.
    let deadline = tokio::time::Instant::now() + ROLLOUT;
    let mut updates = watcher::watcher(Api::<Job>::namespaced(admin.clone(), OPS), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .boxed();
    let first = tokio::time::timeout_at(deadline, updates.next()).await;
    let job = match first {
        Ok(Some(Ok(job))) => job,
        other => anyhow::bail!("no gate Job in {OPS} after the opt-in: {other:?}"),
    };
    let account = job.spec.and_then(|s| s.template.spec).and_then(|p| p.service_account_name);
    assert_eq!(account.as_deref(), Some(PRIVILEGED));

    // Taking the opt-in back makes the rule invalid again.
    accounts.patch(PRIVILEGED, &PatchParams::default(), &Patch::Merge(&opt_in(None))).await?;
    numo_testkit::wait_until(&mallorys_rules, "borrowed", TIMEOUT, "ValidConfig=False after the revocation", |r| {
        valid_config(r).is_some_and(|(status, reason, _)| status == "False" && reason == "ServiceAccountNotOptedIn")
    })
    .await?;
    Ok(())
}
