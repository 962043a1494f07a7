//! numo's Kubernetes client: kube's own, with every request counted in the metrics (`numo_api_requests_total`), so
//! that what numo costs the API server — per node in a rollout, and nothing at all while idle — can be read off
//! `/metrics`.

use std::sync::Arc;

use kube::client::{Body, ClientBuilder};
use tower::util::MapRequestLayer;

use crate::metrics::Metrics;

/// A client from `config` that counts each request in `metrics`.
pub fn counted(config: kube::Config, metrics: Arc<Metrics>) -> kube::Result<kube::Client> {
    let count = MapRequestLayer::new(move |request: http::Request<Body>| {
        let (verb, resource) = classify(request.method(), request.uri());
        metrics.api_request(verb, resource);
        request
    });
    Ok(ClientBuilder::try_from(config)?.with_layer(&count).build())
}

/// A request's verb (`watch`, `read`, `create`, `update`, `patch`, `delete`) and the resource it addresses, with the
/// subresource when there is one (`mutexrunconfigs/status`).
fn classify<'a>(method: &http::Method, uri: &'a http::Uri) -> (&'static str, &'a str) {
    let path = uri.path();
    let watch = uri.query().is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let verb = match *method {
        http::Method::GET if watch => "watch",
        http::Method::GET => "read",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "other",
    };
    (verb, resource_of(path))
}

/// The resource an API path addresses: `/api/v1/namespaces/ns/pods/p` → `pods`. A subresource (`…/x/n/status`)
/// counts as its resource, so the label's values stay the handful of kinds numo uses.
fn resource_of(path: &str) -> &str {
    let rest = path
        .strip_prefix("/api/v1/")
        .or_else(|| path.strip_prefix("/apis/").and_then(|p| p.splitn(3, '/').nth(2)))
        .unwrap_or("");
    let rest = match rest.strip_prefix("namespaces/") {
        // `namespaces/<ns>/<resource>...`, or a namespace itself.
        Some(after) => after.split_once('/').map_or("namespaces", |(_, r)| r),
        None => rest,
    };
    let resource = rest.split('/').next().unwrap_or("");
    if resource.is_empty() {
        "other"
    } else {
        resource
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classified(method: http::Method, uri: &str) -> (&'static str, String) {
        let uri: http::Uri = uri.parse().unwrap_or_default();
        let (verb, resource) = classify(&method, &uri);
        (verb, resource.to_string())
    }

    #[test]
    fn requests_are_counted_by_verb_and_resource() {
        assert_eq!(classified(http::Method::GET, "/api/v1/nodes?watch=true&rv=1"), ("watch", "nodes".into()));
        assert_eq!(classified(http::Method::PATCH, "/api/v1/nodes/worker-1"), ("patch", "nodes".into()));
        assert_eq!(classified(http::Method::POST, "/apis/batch/v1/namespaces/ops/jobs"), ("create", "jobs".into()));
        assert_eq!(
            classified(
                http::Method::PATCH,
                "/apis/openshift-optional.skrzypek.io/v1alpha1/namespaces/ops/mutexrunconfigs/rc/status"
            ),
            ("patch", "mutexrunconfigs".into())
        );
        assert_eq!(classified(http::Method::GET, "/api/v1/namespaces/ops"), ("read", "namespaces".into()));
        assert_eq!(classified(http::Method::GET, "/version"), ("read", "other".into()));
    }
}
