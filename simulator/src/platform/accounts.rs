//! The platform's ServiceAccounts and their roles, as the components' install manifests have them: seeding creates
//! them, so that the clients of [`super::Platform`] act as on a real cluster.

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kube::api::Api;
use serde_json::json;

use super::{
    CONTROLLER_SERVICE_ACCOUNT, DAEMON_SERVICE_ACCOUNT, OPERATOR_NAMESPACE, OPERATOR_SERVICE_ACCOUNT, SRIOV_NAMESPACE,
    SRIOV_SERVICE_ACCOUNT,
};
use crate::create::{create_if_missing, create_or_read};

/// The machine-config operator's namespace, ServiceAccount and its binding to `cluster-admin`, as the MCO's install
/// manifests have them (`install/0000_80_machine-config_00_rbac.yaml`, ClusterRoleBinding
/// `custom-account-openshift-machine-config-operator`): the simulator's pool sync acts as that ServiceAccount. Also the
/// daemon's and the controller's ServiceAccounts, each with its ClusterRole and ClusterRoleBinding named after it as
/// in `manifests/machineconfigdaemon/` and `manifests/machineconfigcontroller/` (the rules on the kinds the simulator
/// has): their MachineConfigNode writes act as them.
pub(crate) async fn ensure(client: &kube::Client) -> anyhow::Result<()> {
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": OPERATOR_NAMESPACE}}))?;
    create_if_missing(client, namespace).await?;
    let accounts = [
        (OPERATOR_SERVICE_ACCOUNT, "custom-account-openshift-machine-config-operator", "cluster-admin"),
        (DAEMON_SERVICE_ACCOUNT, DAEMON_SERVICE_ACCOUNT, DAEMON_SERVICE_ACCOUNT),
        (CONTROLLER_SERVICE_ACCOUNT, CONTROLLER_SERVICE_ACCOUNT, CONTROLLER_SERVICE_ACCOUNT),
    ];
    for (account, binding, role) in accounts {
        let rules = platform_role_rules(role);
        ensure_identity(client, Identity { namespace: OPERATOR_NAMESPACE, account, role, rules, binding }).await?;
    }
    ensure_sriov_account(client).await
}

/// The SR-IOV network operator's namespace, ServiceAccount, ClusterRole and binding, with the rules of its
/// `config/rbac/clusterrole.yaml` on the kinds the simulator has (every verb on `machineconfiguration.openshift.io`;
/// nodes, which its drain reads and cordons): [`crate::sriov`] acts as it.
async fn ensure_sriov_account(client: &kube::Client) -> anyhow::Result<()> {
    let namespace: Namespace = serde_json::from_value(json!({"metadata": {"name": SRIOV_NAMESPACE}}))?;
    create_if_missing(client, namespace).await?;
    let rules = json!([
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch", "update"]},
        {"apiGroups": ["machineconfiguration.openshift.io"], "resources": ["*"], "verbs": ["*"]},
    ]);
    let account = SRIOV_SERVICE_ACCOUNT;
    let identity =
        Identity { namespace: SRIOV_NAMESPACE, account, role: account, rules: Some(rules), binding: account };
    ensure_identity(client, identity).await
}

/// A platform component's identity as its manifests make it, in a namespace that exists.
pub(crate) struct Identity<'a> {
    /// The namespace of its ServiceAccount.
    pub namespace: &'a str,
    /// Its ServiceAccount.
    pub account: &'a str,
    /// The ClusterRole it is bound to.
    pub role: &'a str,
    /// That ClusterRole's rules; None for a role seeding does not create (`cluster-admin`).
    pub rules: Option<serde_json::Value>,
    /// The ClusterRoleBinding's name.
    pub binding: &'a str,
}

/// Creates what is missing of `identity`: its ServiceAccount, its ClusterRole (when it has rules) and the binding of
/// the one to the other.
pub(crate) async fn ensure_identity(client: &kube::Client, identity: Identity<'_>) -> anyhow::Result<()> {
    let Identity { namespace, account, role, rules, binding } = identity;
    let object: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": account, "namespace": namespace}}))?;
    create_or_read(Api::namespaced(client.clone(), namespace), object).await?;
    if let Some(rules) = rules {
        let cluster_role: ClusterRole = serde_json::from_value(json!({"metadata": {"name": role}, "rules": rules}))?;
        create_if_missing(client, cluster_role).await?;
    }
    let binding: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": binding},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
        "roleRef": {"kind": "ClusterRole", "name": role, "apiGroup": "rbac.authorization.k8s.io"},
    }))?;
    create_if_missing(client, binding).await?;
    Ok(())
}

/// The rules of the daemon's or the controller's ClusterRole on the kinds the simulator has; None for a role seeding
/// does not create (`cluster-admin`).
fn platform_role_rules(role: &str) -> Option<serde_json::Value> {
    const MCO_GROUP: &str = "machineconfiguration.openshift.io";
    let read = json!(["get", "list", "watch"]);
    match role {
        DAEMON_SERVICE_ACCOUNT => Some(json!([
            {"apiGroups": [""], "resources": ["nodes"], "verbs": read},
            {"apiGroups": ["config.openshift.io"], "resources": ["clusterversions"], "verbs": read},
            {"apiGroups": [MCO_GROUP], "resources": ["machineconfigs", "machineconfigpools"], "verbs": read},
            {"apiGroups": [MCO_GROUP], "resources": ["machineconfignodes", "machineconfignodes/status"],
             "verbs": ["create", "update", "patch", "get"]},
        ])),
        CONTROLLER_SERVICE_ACCOUNT => Some(json!([
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch", "patch", "update"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": read},
            {"apiGroups": [""], "resources": ["pods/eviction"], "verbs": ["create"]},
            {"apiGroups": [MCO_GROUP], "resources": [
                "machineconfigs", "machineconfigs/status", "machineconfigpools", "machineconfigpools/status",
                "machineconfignodes", "machineconfignodes/status"],
             "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
            {"apiGroups": ["config.openshift.io"], "resources": ["clusterversions"], "verbs": read},
        ])),
        _ => None,
    }
}
