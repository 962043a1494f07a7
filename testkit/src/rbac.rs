//! A client with exactly the operator's RBAC (config/rbac), for tests that prove the permissions suffice.
//!
//! [`operator_client`] applies the ServiceAccount, roles and bindings of `config/rbac` to the test cluster and
//! returns a client that impersonates the operator's ServiceAccount. The API server then authorizes every request
//! as it would for the operator's pod: the ServiceAccount's user name and its groups (`system:serviceaccounts`,
//! `system:serviceaccounts:numo-system`, `system:authenticated`), nothing of the admin identity of the kubeconfig.
//! [`write_operator_kubeconfig`] does the same for a `numo run` process started outside the test. [`user_client`]
//! acts as a person holding only the roles a test bound to them, and [`wait_until_granted`] waits until the API
//! server's authorizer applies such a binding.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context as _};
use k8s_openapi::api::authorization::v1::{ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec};
use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::serde::de::DeserializeOwned;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::Client;
use serde_json::Value;

/// The namespace `config/rbac` puts the operator's ServiceAccount and leader-election Role in.
pub const OPERATOR_NAMESPACE: &str = "numo-system";
/// The operator's ServiceAccount.
pub const OPERATOR_SERVICE_ACCOUNT: &str = "numo-operator";
/// The user name the API server gives the operator's ServiceAccount.
pub const OPERATOR_USER: &str = "system:serviceaccount:numo-system:numo-operator";

/// Field manager of the RBAC objects the test kit applies.
const FIELD_MANAGER: &str = "numo-testkit-rbac";

/// Applies `config/rbac` to the cluster and returns a client that acts as the operator's ServiceAccount.
pub async fn operator_client(cluster: &crate::TestCluster) -> anyhow::Result<Client> {
    apply_operator_rbac(&cluster.client()).await?;
    let config = operator_config(cluster.kubeconfig()).await?;
    Client::try_from(config).context("building the impersonating client")
}

/// A client configuration from `kubeconfig` that impersonates the operator's ServiceAccount.
pub async fn operator_config(kubeconfig: &Path) -> anyhow::Result<kube::Config> {
    impersonating_config(kubeconfig, OPERATOR_USER).await
}

/// A client that acts as the person `user`: impersonated without groups, so the API server grants it only what
/// is bound to `user` (and to `system:authenticated`).
pub async fn user_client(cluster: &crate::TestCluster, user: &str) -> anyhow::Result<Client> {
    let config = impersonating_config(cluster.kubeconfig(), user).await?;
    Client::try_from(config).context("building the impersonating client")
}

async fn impersonating_config(kubeconfig: &Path, user: &str) -> anyhow::Result<kube::Config> {
    let file = Kubeconfig::read_from(kubeconfig).with_context(|| format!("reading {}", kubeconfig.display()))?;
    let mut config = kube::Config::from_custom_kubeconfig(file, &KubeConfigOptions::default())
        .await
        .with_context(|| format!("loading {}", kubeconfig.display()))?;
    config.auth_info.impersonate = Some(user.to_string());
    Ok(config)
}

/// Applies `config/rbac` and writes a copy of the cluster's kubeconfig to `path` whose user impersonates the
/// operator's ServiceAccount (`as:` in the kubeconfig), for `KUBECONFIG=<path> numo run ...`.
pub async fn write_operator_kubeconfig(cluster: &crate::TestCluster, path: &Path) -> anyhow::Result<PathBuf> {
    apply_operator_rbac(&cluster.client()).await?;
    let text = std::fs::read_to_string(cluster.kubeconfig())
        .with_context(|| format!("reading {}", cluster.kubeconfig().display()))?;
    std::fs::write(path, impersonating_kubeconfig(&text)?).with_context(|| format!("writing {}", path.display()))?;
    Ok(path.to_path_buf())
}

/// `kubeconfig` with the current context's user impersonating the operator's ServiceAccount.
pub fn impersonating_kubeconfig(kubeconfig: &str) -> anyhow::Result<String> {
    let mut doc: Value = serde_yaml::from_str(kubeconfig).context("parsing the kubeconfig")?;
    let current = doc["current-context"].as_str().context("the kubeconfig has no current-context")?.to_string();
    let user = doc["contexts"]
        .as_array()
        .and_then(|contexts| contexts.iter().find(|c| c["name"].as_str() == Some(current.as_str())))
        .and_then(|c| c["context"]["user"].as_str())
        .with_context(|| format!("the kubeconfig has no user for context {current}"))?
        .to_string();
    let entry = doc["users"]
        .as_array_mut()
        .and_then(|users| users.iter_mut().find(|u| u["name"].as_str() == Some(user.as_str())))
        .with_context(|| format!("the kubeconfig has no user {user}"))?;
    let Some(fields) = entry["user"].as_object_mut() else { bail!("user {user} of the kubeconfig is not a mapping") };
    fields.insert("as".into(), Value::from(OPERATOR_USER));
    Ok(serde_yaml::to_string(&doc)?)
}

/// The repository's `config/rbac` directory.
pub fn rbac_dir() -> PathBuf {
    crate::repo::root().join("config/rbac")
}

/// The objects `config/rbac/kustomization.yaml` lists, in order.
pub fn rbac_objects() -> anyhow::Result<Vec<Value>> {
    let dir = rbac_dir();
    let kustomization: Value = read_yaml(&dir.join("kustomization.yaml"))?;
    let files = kustomization["resources"].as_array().context("config/rbac/kustomization.yaml lists no resources")?;
    files
        .iter()
        .map(|file| {
            let file = file.as_str().context("a resource of config/rbac is not a file name")?;
            read_yaml(&dir.join(file))
        })
        .collect()
}

/// Server-side applies every object of `config/rbac` (creating the operator's namespace first), then waits until
/// the API server's authorizer grants the operator's ServiceAccount what the ClusterRole says.
pub async fn apply_operator_rbac(client: &Client) -> anyhow::Result<()> {
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let namespace =
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": OPERATOR_NAMESPACE}});
    Api::<Namespace>::all(client.clone()).patch(OPERATOR_NAMESPACE, &params, &Patch::Apply(&namespace)).await?;
    for object in rbac_objects()? {
        let kind = object["kind"].as_str().unwrap_or_default().to_string();
        let name = object["metadata"]["name"].as_str().unwrap_or_default().to_string();
        let namespace = object["metadata"]["namespace"].as_str().unwrap_or(OPERATOR_NAMESPACE).to_string();
        let result = match kind.as_str() {
            "ServiceAccount" => apply(Api::<ServiceAccount>::namespaced(client.clone(), &namespace), &object).await,
            "Role" => apply(Api::<Role>::namespaced(client.clone(), &namespace), &object).await,
            "RoleBinding" => apply(Api::<RoleBinding>::namespaced(client.clone(), &namespace), &object).await,
            "ClusterRole" => apply(Api::<ClusterRole>::all(client.clone()), &object).await,
            "ClusterRoleBinding" => apply(Api::<ClusterRoleBinding>::all(client.clone()), &object).await,
            other => bail!("config/rbac holds a {other}, which the test kit does not know how to apply"),
        };
        result.with_context(|| format!("applying {kind} {name}"))?;
    }
    wait_until_authorized(client).await
}

async fn apply<K>(api: Api<K>, object: &Value) -> anyhow::Result<()>
where
    K: kube::Resource + Clone + DeserializeOwned + k8s_openapi::serde::Serialize + std::fmt::Debug,
{
    let name = object["metadata"]["name"].as_str().context("an object of config/rbac has no name")?;
    let mut object = object.clone();
    if let Some(metadata) = object["metadata"].as_object_mut() {
        // Namespaced objects go where the Api points; cluster-scoped ones have none.
        metadata.remove("namespace");
    }
    api.patch(name, &PatchParams::apply(FIELD_MANAGER).force(), &Patch::Apply(&object)).await?;
    Ok(())
}

/// RBAC objects take effect once the API server's informers saw them; ask its authorizer until they did (the first
/// and the latest rules of the ClusterRole, so that a ClusterRole an older tree applied does not pass, and the
/// leader-election Role), for at most ten seconds.
async fn wait_until_authorized(client: &Client) -> anyhow::Result<()> {
    let probes = [
        ("", "nodes", "patch", None),
        ("openshift-optional.skrzypek.io", "mutexrunconfigs/finalizers", "update", None),
        ("admissionregistration.k8s.io", "validatingadmissionpolicies", "create", None),
        ("coordination.k8s.io", "leases", "create", Some(OPERATOR_NAMESPACE)),
    ];
    let groups = [
        "system:serviceaccounts".to_string(),
        format!("system:serviceaccounts:{OPERATOR_NAMESPACE}"),
        "system:authenticated".to_string(),
    ];
    for (group, resource, verb, namespace) in probes {
        wait_until_granted(client, OPERATOR_USER, &groups, (group, resource, verb, namespace)).await?;
    }
    Ok(())
}

/// Grants numo's ServiceAccount `get`, `list` and `watch` of `resource` in API group `group` (`""`: the core
/// group), as the admin `client`: in `namespace` by a Role and its RoleBinding, or everywhere (None) by a
/// ClusterRole and its ClusterRoleBinding, both named `name` and applied (so that a test may grant again). What an
/// admin does for a custom health check on a kind numo is not granted (docs/api.md).
pub async fn grant_operator_read(
    client: &Client,
    name: &str,
    namespace: Option<&str>,
    (group, resource): (&str, &str),
) -> anyhow::Result<()> {
    let (role_kind, binding_kind) = match namespace {
        Some(_) => ("Role", "RoleBinding"),
        None => ("ClusterRole", "ClusterRoleBinding"),
    };
    let role = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": role_kind,
        "metadata": {"name": name, "namespace": namespace},
        "rules": [{"apiGroups": [group], "resources": [resource], "verbs": ["get", "list", "watch"]}]
    });
    let binding = serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": binding_kind,
        "metadata": {"name": name, "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": OPERATOR_SERVICE_ACCOUNT, "namespace": OPERATOR_NAMESPACE}]
    });
    let apply = PatchParams::apply("numo-tests").force();
    match namespace {
        Some(ns) => {
            Api::<Role>::namespaced(client.clone(), ns).patch(name, &apply, &Patch::Apply(&role)).await?;
            Api::<RoleBinding>::namespaced(client.clone(), ns).patch(name, &apply, &Patch::Apply(&binding)).await?;
        }
        None => {
            Api::<ClusterRole>::all(client.clone()).patch(name, &apply, &Patch::Apply(&role)).await?;
            Api::<ClusterRoleBinding>::all(client.clone()).patch(name, &apply, &Patch::Apply(&binding)).await?;
        }
    }
    Ok(())
}

/// Asks the API server's authorizer (as the admin `client`) until it allows `user` in `groups` the request
/// `(api group, resource[/subresource], verb, namespace)`, for at most ten seconds: a new (Cluster)RoleBinding
/// takes effect once the API server's informers saw it.
pub async fn wait_until_granted(
    client: &Client,
    user: &str,
    groups: &[String],
    (group, resource, verb, namespace): (&str, &str, &str, Option<&str>),
) -> anyhow::Result<()> {
    let reviews: Api<SubjectAccessReview> = Api::all(client.clone());
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let mut delay = Duration::from_millis(20);
    let (resource, subresource) = match resource.split_once('/') {
        Some((r, s)) => (r, Some(s.to_string())),
        None => (resource, None),
    };
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.to_string()),
            groups: Some(groups.to_vec()),
            resource_attributes: Some(ResourceAttributes {
                group: Some(group.to_string()),
                resource: Some(resource.to_string()),
                subresource,
                verb: Some(verb.to_string()),
                namespace: namespace.map(str::to_string),
                ..Default::default()
            }),
            ..Default::default()
        },
        ..Default::default()
    };
    loop {
        let answer = reviews.create(&PostParams::default(), &review).await?;
        if answer.status.is_some_and(|s| s.allowed) {
            return Ok(());
        }
        if tokio::time::Instant::now() >= deadline {
            bail!("the API server does not grant {user} {verb} on {resource} in {namespace:?} after 10s");
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(500));
    }
}

fn read_yaml<T: DeserializeOwned>(path: &Path) -> anyhow::Result<T> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    serde_yaml::from_str(&text).with_context(|| format!("parsing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_rbac_binds_the_operator_service_account() {
        let objects = rbac_objects().unwrap_or_default();
        let account = objects.iter().find(|o| o["kind"] == "ServiceAccount").cloned().unwrap_or_default();
        assert_eq!(account["metadata"]["name"], OPERATOR_SERVICE_ACCOUNT);
        assert_eq!(account["metadata"]["namespace"], OPERATOR_NAMESPACE);
        let binding = objects.iter().find(|o| o["kind"] == "ClusterRoleBinding").cloned().unwrap_or_default();
        assert_eq!(binding["subjects"][0]["name"], OPERATOR_SERVICE_ACCOUNT);
        assert_eq!(binding["subjects"][0]["namespace"], OPERATOR_NAMESPACE);
    }

    #[test]
    fn the_kubeconfig_user_of_the_current_context_impersonates_the_operator() {
        let kubeconfig = "apiVersion: v1\nkind: Config\ncurrent-context: b\n\
            contexts:\n- name: a\n  context: {cluster: c, user: ua}\n- name: b\n  context: {cluster: c, user: ub}\n\
            users:\n- name: ua\n  user: {token: x}\n- name: ub\n  user: {client-certificate-data: Y2VydA==}\n";
        let out: Value =
            serde_yaml::from_str(&impersonating_kubeconfig(kubeconfig).unwrap_or_default()).unwrap_or_default();
        assert_eq!(out["users"][1]["user"]["as"], OPERATOR_USER);
        assert_eq!(out["users"][1]["user"]["client-certificate-data"], "Y2VydA==");
        assert_eq!(out["users"][0]["user"].get("as"), None);
    }
}
