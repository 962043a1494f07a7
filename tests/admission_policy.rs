//! numo's ValidatingAdmissionPolicy on the real API server (docs/security.md, "What other hands may not undo"):
//! `ensure`, as the operator's ServiceAccount with exactly its RBAC, puts it in force; other users' writes that
//! would release what numo holds are refused with a message that names the run config; numo's own writes, objects
//! numo does not hold and the manual restore (which releases the claim in the same write) go through.
//!
//! The policy is cluster-wide: the test removes it at its end, also when it fails, and the test kit removes it
//! before every test in any case.

use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::FutureExt;
use k8s_openapi::api::admissionregistration::v1::{ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, CustomResourceExt, ResourceExt};
use numo::admission_policy::{self, PolicyStatus, NAME};
use numo::api::MutexRunConfig;
use numo::labels::{POOL_CLAIMED_BY, POOL_ORIGINAL};
use numo::openshift::MachineConfigPool;
use numo_testkit::rbac::OPERATOR_USER;
use serde_json::{json, Value};

/// The rule label numo would put on a held node.
const LABEL: &str = "mutexrule.openshift-optional.skrzypek.io/drain.upgrade-ops";
/// How long a new policy may take to be in force (the API server's informers pick it up asynchronously).
const IN_FORCE: Duration = Duration::from_secs(60);

fn merge(patch: Value) -> Patch<Value> {
    Patch::Merge(patch)
}

/// The message of a write the policy refused; fails on any other outcome.
fn refusal<T: std::fmt::Debug>(result: kube::Result<T>) -> String {
    match result {
        Err(kube::Error::Api(status)) if status.code == 403 && status.message.contains(NAME) => status.message.clone(),
        other => panic!("the write must be refused by {NAME}, got {other:?}"),
    }
}

/// A client acting as the person `user` in `groups` (a cluster admin in `system:masters`, as the console's user).
async fn user_in_groups(user: &str, groups: &[&str]) -> anyhow::Result<Client> {
    let cluster = numo_testkit::cluster().await?;
    let file = Kubeconfig::read_from(cluster.kubeconfig())?;
    let mut config = kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default()).await?;
    config.auth_info.impersonate = Some(user.to_string());
    config.auth_info.impersonate_groups = Some(groups.iter().map(|g| g.to_string()).collect());
    Ok(Client::try_from(config)?)
}

/// Deletes the binding and the policy (the admin's way, as in an emergency), waiting for nothing.
async fn remove_policy(admin: &Client) -> anyhow::Result<()> {
    for result in [
        Api::<ValidatingAdmissionPolicyBinding>::all(admin.clone())
            .delete(NAME, &DeleteParams::default())
            .await
            .map(|_| ()),
        Api::<ValidatingAdmissionPolicy>::all(admin.clone()).delete(NAME, &DeleteParams::default()).await.map(|_| ()),
    ] {
        match result {
            Ok(()) => {}
            Err(kube::Error::Api(status)) if status.code == 404 => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn other_hands_cannot_undo_what_numo_holds() -> anyhow::Result<()> {
    numo_testkit::init_tracing();
    let cluster = numo_testkit::cluster().await?;
    let mut world = cluster.world("admission-policy").await?;
    world.openshift(Default::default(), Default::default()).await?;
    let admin = world.client.clone();
    let run_config = format!("{}/gated-workers", world.namespace);
    let outcome = AssertUnwindSafe(refuses_other_hands(&admin, &run_config)).catch_unwind().await;
    let removed = remove_policy(&admin).await;
    match outcome {
        Ok(result) => result.and(removed),
        Err(panic) => std::panic::resume_unwind(panic),
    }
}

async fn refuses_other_hands(admin: &Client, run_config: &str) -> anyhow::Result<()> {
    let cluster = numo_testkit::cluster().await?;
    let numo = numo_testkit::rbac::operator_client(cluster).await?;
    let pools = |client: &Client| Api::<MachineConfigPool>::all(client.clone());
    let nodes = |client: &Client| Api::<Node>::all(client.clone());
    let params = PatchParams::default();

    // What numo holds in a rollout: the worker pool claimed and paused, a node with a rule label.
    let claim = json!({"metadata": {"annotations": {POOL_CLAIMED_BY: run_config, POOL_ORIGINAL: "{\"paused\":false}"}},
                       "spec": {"paused": true}});
    pools(admin).patch("worker", &params, &merge(claim)).await?;
    nodes(admin).patch("worker-0", &params, &merge(json!({"metadata": {"labels": {LABEL: ""}}}))).await?;

    // numo puts the policy in place with its own RBAC; a second time changes nothing.
    assert_eq!(admission_policy::ensure(&numo, OPERATOR_USER).await, PolicyStatus::InForce);
    assert_eq!(admission_policy::ensure(&numo, OPERATOR_USER).await, PolicyStatus::InForce);
    let crd = Api::<CustomResourceDefinition>::all(admin.clone()).get(MutexRunConfig::crd_name()).await?;
    let policy = Api::<ValidatingAdmissionPolicy>::all(admin.clone()).get(NAME).await?;
    let binding = Api::<ValidatingAdmissionPolicyBinding>::all(admin.clone()).get(NAME).await?;
    // As the API server stores them, they compare equal to what numo applies: numo's watch puts back only what
    // someone else changed.
    assert_eq!(
        admission_policy::differences(&policy, &admission_policy::policy(OPERATOR_USER, None)),
        Vec::<&str>::new()
    );
    assert_eq!(admission_policy::differences(&binding, &admission_policy::binding(None)), Vec::<&str>::new());
    for owners in [policy.owner_references(), binding.owner_references()] {
        let owner: Vec<_> = owners.iter().map(|o| (o.kind.as_str(), o.name.as_str(), o.uid.as_str())).collect();
        assert_eq!(
            owner,
            [("CustomResourceDefinition", MutexRunConfig::crd_name(), crd.uid().unwrap_or_default().as_str())]
        );
    }

    // The API server type-checks every expression against nodes and pools: no warning.
    let checked = numo_testkit::wait_until(
        &Api::<ValidatingAdmissionPolicy>::all(admin.clone()),
        NAME,
        IN_FORCE,
        "the policy type-checked",
        |p| p.status.as_ref().and_then(|s| s.observed_generation) == p.metadata.generation,
    )
    .await?;
    let warnings = checked.status.and_then(|s| s.type_checking).and_then(|t| t.expression_warnings);
    assert!(warnings.unwrap_or_default().is_empty(), "type-checking warnings");

    // In force once the API server refuses a dry-run of the console's "Resume updates".
    let unpause = json!({"spec": {"paused": false}});
    let deadline = tokio::time::Instant::now() + IN_FORCE;
    loop {
        match pools(admin)
            .patch("worker", &PatchParams { dry_run: true, ..Default::default() }, &merge(unpause.clone()))
            .await
        {
            Err(kube::Error::Api(status)) if status.code == 403 => break,
            Ok(_) if tokio::time::Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(200)).await,
            other => anyhow::bail!("the policy is not in force after {IN_FORCE:?}: {other:?}"),
        }
    }

    // Other hands: unpausing (the admin's kubeconfig, and a console user in system:masters) is refused, naming the
    // run config and how to end the hold.
    let console = user_in_groups("console-admin", &["system:masters", "system:authenticated"]).await?;
    for client in [admin, &console] {
        let message = refusal(pools(client).patch("worker", &params, &merge(unpause.clone())).await);
        assert!(
            message.contains(&format!(
                "MachineConfigPool worker is held paused by numo for the MutexRunConfig {run_config}"
            )),
            "{message}"
        );
        assert!(
            message
                .contains(&format!("delete the MutexRunConfig {run_config} (numo then restores the pools and labels)")),
            "{message}"
        );
        assert!(
            message.contains("set its spec.paused: true") && message.contains("hack/restore-without-numo.sh"),
            "{message}"
        );
        assert!(
            message.contains(
                "If numo is down: `oc delete validatingadmissionpolicybinding numo-holds` lets everyone write again"
            ),
            "{message}"
        );
    }
    // ... a changed selector of a held custom pool ...
    let infra: MachineConfigPool = serde_json::from_value(json!({
        "metadata": {"name": "infra", "annotations": {POOL_CLAIMED_BY: run_config, POOL_ORIGINAL: "{\"paused\":false}"}},
        "spec": {"paused": true, "nodeSelector": {"matchLabels": {"node-role.kubernetes.io/infra": ""}},
                 "machineConfigSelector": {"matchExpressions": [{"key": "machineconfiguration.openshift.io/role",
                                                                 "operator": "In", "values": ["worker", "infra"]}]}},
    }))?;
    pools(admin).create(&Default::default(), &infra).await?;
    let steer = json!({"spec": {"nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""},
                                                 "matchExpressions": [{"key": "team", "operator": "Exists"}]}}});
    let message = refusal(pools(admin).patch("infra", &params, &merge(steer.clone())).await);
    assert!(
        message.contains(&format!(
            "The nodeSelector of MachineConfigPool infra is steered by numo for the MutexRunConfig {run_config}"
        )),
        "{message}"
    );
    // ... a release mark that numo did not add ...
    let forged = json!({"metadata": {"labels": {numo::labels::RELEASED: "canary"}}});
    let message = refusal(nodes(admin).patch("worker-0", &params, &merge(forged)).await);
    assert!(message.contains("only numo marks a node released"), "{message}");
    // ... and a removed rule label.
    let unlabel = json!({"metadata": {"labels": {LABEL: null}}});
    let message = refusal(nodes(&console).patch("worker-0", &params, &merge(unlabel.clone())).await);
    assert!(
        message.contains(&format!(
            "Node worker-0 is held by numo: its label {LABEL} (MutexRule and namespace drain.upgrade-ops)"
        )),
        "{message}"
    );
    assert!(message.contains("delete the MutexRunConfig that runs this rule"), "{message}");
    let pool = pools(admin).get("worker").await?;
    assert!(pool.spec.paused, "nothing changed");
    assert!(nodes(admin).get("worker-0").await?.labels().contains_key(LABEL), "nothing changed");

    // The platform is never refused: the worker pool's selector is the machine-config operator's (it puts it back on
    // every sync on 4.16–4.21), and its ServiceAccounts, the CVO's and the kubelets' writes all go through.
    let manifest = json!({"spec": {"nodeSelector": {"matchLabels": {"node-role.kubernetes.io/worker": ""}}}});
    pools(admin).patch("worker", &params, &merge(manifest.clone())).await?;
    let operator = user_in_groups(
        "system:serviceaccount:openshift-machine-config-operator:machine-config-operator",
        &["system:serviceaccounts", "system:authenticated"],
    )
    .await?;
    pools(&operator).patch("infra", &params, &merge(steer.clone())).await?;
    pools(&operator).patch("worker", &params, &merge(manifest)).await?;

    // What does not release numo's hold goes through: other labels and annotations, pausing.
    nodes(admin).patch("worker-0", &params, &merge(json!({"metadata": {"labels": {"team": "a"}}}))).await?;
    pools(admin)
        .patch("worker", &params, &merge(json!({"metadata": {"labels": {"team": "a"}}, "spec": {"paused": true}})))
        .await?;

    // numo itself may do all of it.
    pools(&numo).patch("worker", &params, &merge(steer)).await?;
    pools(&numo).patch("worker", &params, &merge(unpause.clone())).await?;
    pools(&numo).patch("worker", &params, &merge(json!({"spec": {"paused": true}}))).await?;
    nodes(&numo).patch("worker-0", &params, &merge(unlabel.clone())).await?;
    nodes(&numo).patch("worker-0", &params, &merge(json!({"metadata": {"labels": {LABEL: ""}}}))).await?;

    // Pools and nodes numo does not hold are not its business.
    pools(admin).patch("master", &params, &merge(json!({"spec": {"paused": true}}))).await?;
    pools(admin).patch("master", &params, &merge(unpause.clone())).await?;
    nodes(admin).patch("worker-1", &params, &merge(json!({"metadata": {"labels": {"team": "b"}}}))).await?;
    nodes(admin).patch("worker-1", &params, &merge(json!({"metadata": {"labels": {"team": null}}}))).await?;

    // A held pool is neither deleted nor stripped of numo's claim (a replace with an older manifest drops it), and
    // a rule label goes through neither the node nor its status.
    let message = refusal(pools(admin).delete("infra", &DeleteParams::default()).await);
    assert!(message.contains("deleted, it would come back without the hold"), "{message}");
    let restore = json!([
        {"op": "add", "path": "/spec/paused", "value": false},
        {"op": "remove", "path": "/metadata/annotations/openshift-optional.skrzypek.io~1claimed-by"},
        {"op": "remove", "path": "/metadata/annotations/openshift-optional.skrzypek.io~1original"},
    ]);
    let restore: json_patch::Patch = serde_json::from_value(restore)?;
    let message = refusal(pools(admin).patch("worker", &params, &Patch::<Value>::Json(restore.clone())).await);
    assert!(message.contains("only numo removes it"), "{message}");
    let message = refusal(nodes(admin).patch_status("worker-0", &params, &merge(unlabel.clone())).await);
    assert!(message.contains(&format!("Node worker-0 is held by numo: its label {LABEL}")), "{message}");

    // The manual restore, as hack/restore-without-numo.sh does it: the binding goes first, then one JSON patch puts
    // the pool back and releases the claim, and the node's label may go.
    Api::<ValidatingAdmissionPolicyBinding>::all(admin.clone()).delete(NAME, &DeleteParams::default()).await?;
    let deadline = tokio::time::Instant::now() + IN_FORCE;
    let restored = loop {
        match pools(admin).patch("worker", &params, &Patch::<Value>::Json(restore.clone())).await {
            Ok(pool) => break pool,
            Err(kube::Error::Api(status)) if status.code == 403 && tokio::time::Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(200)).await
            }
            Err(error) => anyhow::bail!("the restore stays refused after the binding was deleted: {error}"),
        }
    };
    assert!(!restored.spec.paused);
    assert!(!restored.annotations().contains_key(POOL_CLAIMED_BY));
    let node = nodes(admin).patch("worker-0", &params, &merge(unlabel.clone())).await?;
    assert!(!node.labels().contains_key(LABEL));
    Ok(())
}
