//! The operator's identity (config/rbac, impersonated) against the real API server: what it may and may not do.

use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Secret};
use kube::api::{Api, ListParams, PostParams};
use numo::api::{MutexRule, MutexRunConfig, MutexTarget};
use numo_testkit::rbac::{self, OPERATOR_NAMESPACE, OPERATOR_USER};

/// Whether `result` is the API server's 403 Forbidden.
fn forbidden<T: std::fmt::Debug>(result: &Result<T, kube::Error>) -> bool {
    matches!(result, Err(kube::Error::Api(status)) if status.code == 403)
}

#[tokio::test]
async fn the_operator_identity_can_list_nodes_and_cannot_read_secrets() -> anyhow::Result<()> {
    let cluster = numo_testkit::cluster().await?;
    let client = rbac::operator_client(cluster).await?;

    let who = Api::<SelfSubjectReview>::all(client.clone())
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await?;
    let user = who.status.and_then(|s| s.user_info).and_then(|u| u.username);
    assert_eq!(user.as_deref(), Some(OPERATOR_USER), "the API server sees the operator's ServiceAccount");

    Api::<Node>::all(client.clone()).list(&ListParams::default()).await?;
    Api::<MutexRunConfig>::all(client.clone()).list(&ListParams::default()).await?;
    Api::<MutexRule>::all(client.clone()).list(&ListParams::default()).await?;
    Api::<MutexTarget>::all(client.clone()).list(&ListParams::default()).await?;
    Api::<Job>::all(client.clone()).list(&ListParams::default()).await?;

    let secrets = Api::<Secret>::namespaced(client.clone(), OPERATOR_NAMESPACE).list(&ListParams::default()).await;
    assert!(forbidden(&secrets), "secrets must be out of reach: {secrets:?}");
    let all_secrets = Api::<Secret>::all(client.clone()).list(&ListParams::default()).await;
    assert!(forbidden(&all_secrets), "secrets must be out of reach cluster-wide: {all_secrets:?}");
    let config_maps = Api::<ConfigMap>::all(client.clone()).list(&ListParams::default()).await;
    assert!(forbidden(&config_maps), "nothing beyond config/rbac is granted: {config_maps:?}");
    let node_delete = Api::<Node>::all(client.clone()).delete("no-such-node", &Default::default()).await;
    assert!(forbidden(&node_delete), "nodes may be patched, never deleted: {node_delete:?}");
    Ok(())
}

#[tokio::test]
async fn the_operator_identity_has_exactly_the_verbs_of_config_rbac() -> anyhow::Result<()> {
    use k8s_openapi::api::authorization::v1::{
        ResourceAttributes, SelfSubjectAccessReview, SelfSubjectAccessReviewSpec,
    };
    let cluster = numo_testkit::cluster().await?;
    let client = rbac::operator_client(cluster).await?;
    let reviews: Api<SelfSubjectAccessReview> = Api::all(client);
    let may = |group: &str, resource: &str, subresource: Option<&str>, verb: &str, namespace: Option<&str>| {
        let review = SelfSubjectAccessReview {
            spec: SelfSubjectAccessReviewSpec {
                resource_attributes: Some(ResourceAttributes {
                    group: Some(group.into()),
                    resource: Some(resource.into()),
                    subresource: subresource.map(Into::into),
                    verb: Some(verb.into()),
                    namespace: namespace.map(Into::into),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let reviews = reviews.clone();
        async move {
            let answer = reviews.create(&PostParams::default(), &review).await?;
            anyhow::Ok(answer.status.is_some_and(|s| s.allowed))
        }
    };
    let group = "openshift-optional.skrzypek.io";
    let granted = [
        ("", "nodes", None, "patch", None),
        ("machineconfiguration.openshift.io", "machineconfigpools", None, "patch", None),
        ("machineconfiguration.openshift.io", "machineconfigs", None, "watch", None),
        ("config.openshift.io", "clusterversions", None, "get", None),
        ("batch", "jobs", None, "create", Some("any-rule-namespace")),
        ("batch", "jobs", None, "patch", Some("any-rule-namespace")),
        ("", "serviceaccounts", None, "watch", None),
        ("", "serviceaccounts", None, "get", Some("any-namespace")),
        ("events.k8s.io", "events", None, "create", Some("any-namespace")),
        ("", "events", None, "patch", Some("any-namespace")),
        (group, "mutexrunconfigs", Some("status"), "patch", Some("any-namespace")),
        (group, "mutexrunconfigs", Some("finalizers"), "update", Some("any-namespace")),
        (group, "mutexrules", None, "watch", None),
        ("coordination.k8s.io", "leases", None, "create", Some(OPERATOR_NAMESPACE)),
    ];
    for (g, resource, sub, verb, ns) in granted {
        assert!(may(g, resource, sub, verb, ns).await?, "{verb} {g}/{resource}/{sub:?} in {ns:?} must be granted");
    }
    let denied = [
        ("", "secrets", None, "get", Some(OPERATOR_NAMESPACE)),
        ("", "pods", Some("exec"), "create", Some("any-namespace")),
        ("", "pods", None, "create", Some("any-namespace")),
        ("", "nodes", None, "delete", None),
        ("", "serviceaccounts", None, "patch", Some("any-namespace")),
        ("", "serviceaccounts", Some("token"), "create", Some("any-namespace")),
        ("", "nodes", None, "update", None),
        ("machineconfiguration.openshift.io", "machineconfigpools", None, "delete", None),
        ("machineconfiguration.openshift.io", "machineconfigs", None, "patch", None),
        ("config.openshift.io", "clusterversions", None, "patch", None),
        ("batch", "jobs", None, "update", Some("any-namespace")),
        ("batch", "jobs", None, "delete", Some("any-namespace")),
        (group, "mutexrunconfigs", None, "create", Some("any-namespace")),
        (group, "mutexrules", None, "delete", Some("any-namespace")),
        ("coordination.k8s.io", "leases", None, "create", Some("kube-system")),
        ("rbac.authorization.k8s.io", "clusterrolebindings", None, "create", None),
    ];
    for (g, resource, sub, verb, ns) in denied {
        assert!(!may(g, resource, sub, verb, ns).await?, "{verb} {g}/{resource}/{sub:?} in {ns:?} must be denied");
    }
    Ok(())
}
