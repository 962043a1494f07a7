//! The CSV's install strategy from `config/rbac` and `config/manager`: the Deployment, and the rules of the roles
//! bound to the Deployment's ServiceAccount (ClusterRoles → `clusterPermissions`, Roles → `permissions`).

use anyhow::{bail, Context as _};
use serde_json::{json, Value};

use crate::manifests::Object;

/// What `config/manager` and `config/rbac` contribute to the bundle.
#[derive(Clone, Debug)]
pub struct Install {
    /// `spec.install` of the CSV.
    pub strategy: Value,
    /// The operator image the Deployment runs.
    pub image: String,
    /// The Services of `config/manager`, without namespace, for `bundle/manifests`.
    pub services: Vec<Value>,
    /// The ClusterRoles of `config/rbac` that nothing there binds: the roles an admin binds to people
    /// (`numo-viewer`, `numo-editor`, `numo-run-config-editor`), shipped as plain bundle manifests so that an
    /// OperatorHub install creates them too.
    pub user_roles: Vec<Value>,
}

/// Builds the install strategy; `image` replaces the Deployment's image when given.
pub fn install(manager: &[Object], rbac: &[Object], image: Option<&str>) -> anyhow::Result<Install> {
    let deployments: Vec<&Object> = manager.iter().filter(|o| o.kind() == "Deployment").collect();
    let [deployment] = deployments.as_slice() else { bail!("config/manager must hold exactly one Deployment") };
    let mut spec = deployment.value["spec"].clone();
    if let Some(image) = image {
        spec["template"]["spec"]["containers"][0]["image"] = Value::from(image);
    }
    let pod = &spec["template"]["spec"];
    let account = pod["serviceAccountName"].as_str().context("the Deployment names no serviceAccountName")?;
    let containers = pod["containers"].as_array().cloned().unwrap_or_default();
    let [container] = containers.as_slice() else { bail!("the Deployment must run exactly one container") };
    let image = container["image"].as_str().context("the container has no image")?.to_string();

    if !rbac.iter().any(|o| o.kind() == "ServiceAccount" && o.name() == account) {
        bail!("config/rbac has no ServiceAccount `{account}`, which the Deployment runs as");
    }
    let cluster_rules = bound_rules(rbac, "ClusterRoleBinding", "ClusterRole", account)?;
    let rules = bound_rules(rbac, "RoleBinding", "Role", account)?;
    if cluster_rules.is_empty() {
        bail!("no ClusterRole in config/rbac is bound to `{account}`");
    }

    let mut install_spec = json!({
        "clusterPermissions": [{"serviceAccountName": account, "rules": cluster_rules}],
        "deployments": [{
            "name": deployment.name(),
            "label": deployment.value["metadata"]["labels"],
            "spec": &spec,
        }],
    });
    if !rules.is_empty() {
        install_spec["permissions"] = json!([{"serviceAccountName": account, "rules": rules}]);
    }
    let services = manager
        .iter()
        .filter(|o| o.kind() == "Service")
        .map(|o| crate::manifests::without_namespace(&o.value))
        .collect();
    let user_roles = user_roles(rbac);
    Ok(Install { strategy: json!({"strategy": "deployment", "spec": install_spec}), image, services, user_roles })
}

/// The ClusterRoles no ClusterRoleBinding of `rbac` refers to.
fn user_roles(rbac: &[Object]) -> Vec<Value> {
    let bound = |name: &str| {
        rbac.iter().any(|o| {
            o.kind() == "ClusterRoleBinding"
                && o.value["roleRef"]["kind"] == "ClusterRole"
                && o.value["roleRef"]["name"].as_str() == Some(name)
        })
    };
    rbac.iter().filter(|o| o.kind() == "ClusterRole" && !bound(o.name())).map(|o| o.value.clone()).collect()
}

/// The rules of every `role_kind` bound to the ServiceAccount by a `binding_kind`, in binding order.
fn bound_rules(rbac: &[Object], binding_kind: &str, role_kind: &str, account: &str) -> anyhow::Result<Vec<Value>> {
    let mut rules = Vec::new();
    for binding in rbac.iter().filter(|o| o.kind() == binding_kind) {
        let binds_account = binding.value["subjects"].as_array().is_some_and(|subjects| {
            subjects.iter().any(|s| s["kind"] == "ServiceAccount" && s["name"].as_str() == Some(account))
        });
        if !binds_account {
            continue;
        }
        let role_ref = &binding.value["roleRef"];
        if role_ref["kind"].as_str() != Some(role_kind) {
            bail!("{}: binds a {} where a {role_kind} is expected", binding.path.display(), role_ref["kind"]);
        }
        let role_name = role_ref["name"].as_str().unwrap_or_default();
        let role = rbac
            .iter()
            .find(|o| o.kind() == role_kind && o.name() == role_name)
            .with_context(|| format!("{}: {role_kind} `{role_name}` is not in config/rbac", binding.path.display()))?;
        rules.extend(role.value["rules"].as_array().cloned().unwrap_or_default());
    }
    Ok(rules)
}
