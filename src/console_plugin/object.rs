//! The `ConsolePlugin` object (`console.openshift.io/v1`, cluster-scoped) that tells the OpenShift console to load
//! numo's plugin from the Service `numo-console-plugin` in numo's namespace, and to proxy the plugin's requests to
//! numo's backend there (`spec.proxy`, alias [`PROXY_ALIAS`]) with the logged-in user's token (`UserToken`): the
//! plugin fetches its timelines at `/api/proxy/plugin/numo-console-plugin/numo/api/timeline/<namespace>/<name>`.
//!
//! numo applies it itself when it starts serving the plugin, because only the running pod knows its namespace
//! (OLM installs into the namespace the admin picks). It is owned by numo's run-config CRD, so removing numo's CRDs
//! removes it. An admin turns the plugin on and off in the console (the CSV offers it on install) or in the console
//! operator's `spec.plugins` (docs/install.md).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::json;

use super::timeline::PROXY_ALIAS;
use super::{NAME, PORT, SERVICE};

/// The field manager of numo's writes of the ConsolePlugin.
pub const FIELD_MANAGER: &str = "numo";

/// The ConsolePlugin kind.
pub fn resource() -> ApiResource {
    ApiResource {
        group: "console.openshift.io".into(),
        version: "v1".into(),
        api_version: "console.openshift.io/v1".into(),
        kind: "ConsolePlugin".into(),
        plural: "consoleplugins".into(),
    }
}

/// The ConsolePlugin for numo's Service in `namespace`, owned by `owner` if given.
pub fn console_plugin(namespace: &str, owner: Option<&OwnerReference>) -> serde_json::Value {
    let mut metadata = json!({
        "name": NAME,
        "labels": {"app.kubernetes.io/name": "numo", "app.kubernetes.io/component": "console-plugin"},
    });
    if let Some(owner) = owner {
        metadata["ownerReferences"] = json!([owner]);
    }
    json!({
        "apiVersion": "console.openshift.io/v1",
        "kind": "ConsolePlugin",
        "metadata": metadata,
        "spec": {
            "displayName": "numo",
            "backend": {
                "type": "Service",
                "service": {"name": SERVICE, "namespace": namespace, "port": PORT, "basePath": "/"},
            },
            "proxy": [{
                "alias": PROXY_ALIAS,
                "authorization": "UserToken",
                "endpoint": {"type": "Service", "service": {"name": SERVICE, "namespace": namespace, "port": PORT}},
            }],
        },
    })
}

/// Whether the ConsolePlugin is in place, as [`ensure`] found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Applied: the console can offer the plugin.
    Applied,
    /// Not applied; the sentence says why and what an admin can do.
    NotApplied(String),
}

/// Applies the ConsolePlugin for numo's Service in `namespace` (server-side apply, forced), owned by numo's
/// run-config CRD when numo can read it.
pub async fn ensure(client: &kube::Client, namespace: &str) -> Outcome {
    let owner = crate::crd_owner::run_config_crd(client).await.ok();
    let api = Api::<DynamicObject>::all_with(client.clone(), &resource());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    match api.patch(NAME, &params, &Patch::Apply(&console_plugin(namespace, owner.as_ref()))).await {
        Ok(_) => Outcome::Applied,
        Err(error) => Outcome::NotApplied(not_applied(&error)),
    }
}

/// What a failure to apply the ConsolePlugin means, in a sentence an admin can act on.
pub fn not_applied(error: &kube::Error) -> String {
    match error {
        kube::Error::Api(status) if status.code == 404 => format!(
            "this cluster serves no console.openshift.io/v1 ConsolePlugin (not OpenShift, or its console is \
             disabled), so numo's console plugin is not offered ({})",
            status.message
        ),
        kube::Error::Api(status) if status.code == 403 => format!(
            "numo may not create or update the ConsolePlugin {NAME}: grant its ServiceAccount the \
             console.openshift.io rules of config/rbac/role.yaml (create, and get, patch and update of {NAME}) ({})",
            status.message
        ),
        other => format!("numo could not apply the ConsolePlugin {NAME} ({other}); it tries again when it next starts"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_plugin_points_at_numos_service_in_its_own_namespace() {
        let owner = OwnerReference {
            api_version: "apiextensions.k8s.io/v1".into(),
            kind: "CustomResourceDefinition".into(),
            name: "mutexrunconfigs.openshift-optional.skrzypek.io".into(),
            uid: "u-1".into(),
            ..Default::default()
        };
        let plugin = console_plugin("operators-here", Some(&owner));
        assert_eq!(plugin["metadata"]["name"], "numo-console-plugin");
        assert_eq!(plugin["metadata"].get("namespace"), None, "cluster-scoped");
        assert_eq!(plugin["metadata"]["ownerReferences"][0]["uid"], "u-1");
        let service = &plugin["spec"]["backend"]["service"];
        assert_eq!(service["name"], "numo-console-plugin");
        assert_eq!(service["namespace"], "operators-here");
        assert_eq!(service["port"], 9443);
        assert_eq!(service["basePath"], "/");
        assert_eq!(plugin["spec"]["backend"]["type"], "Service");
        // The plugin's requests to numo's backend go through the console's proxy with the user's token.
        let proxy = &plugin["spec"]["proxy"][0];
        assert_eq!(proxy["alias"], "numo");
        assert_eq!(proxy["authorization"], "UserToken");
        assert_eq!(proxy["endpoint"]["type"], "Service");
        assert_eq!(
            proxy["endpoint"]["service"],
            serde_json::json!({"name": "numo-console-plugin", "namespace": "operators-here", "port": 9443})
        );
        assert_eq!(console_plugin("x", None)["metadata"].get("ownerReferences"), None);
    }

    #[test]
    fn failures_say_what_to_do() {
        let api = |code: u16| {
            let mut status = kube::core::Status::failure("denied", "");
            status.code = code;
            kube::Error::Api(Box::new(status))
        };
        assert!(not_applied(&api(404)).contains("not OpenShift"));
        assert!(not_applied(&api(403)).contains("config/rbac/role.yaml"));
    }
}
