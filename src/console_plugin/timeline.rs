//! `GET /api/timeline/<namespace>/<name>`: a run config's timeline laid out ([`crate::timeline::drawing`]) as JSON,
//! for the console plugin to draw. The console reaches it through its plugin proxy
//! (`/api/proxy/plugin/numo-console-plugin/numo/api/timeline/...`, the ConsolePlugin's `spec.proxy`), which forwards
//! the logged-in user's bearer token; numo reads the run config, its rollout record and (for failure domains) the
//! nodes with that token ([`super::as_user`]), never with its own. No token: 401. What the API server refuses or
//! does not have for the run config (401, 403, 404) is answered as such with its message; the record and the nodes
//! are optional (the picture says what it left out). The projection of the nodes still to go is the one numo's
//! planner worked out last ([`crate::projections`]), given only once the user's read of the run config succeeded.

use std::collections::BTreeMap;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Response, StatusCode};
use http_body_util::Full;
use k8s_openapi::api::core::v1::{ConfigMap, Node};
use kube::api::{Api, ListParams};

use crate::api::MutexRunConfig;
use crate::controllers::run_config::preview;
use crate::projections::Projections;
use crate::timeline::drawing::{self, ProjectionSource, TimelineDrawing, Unread};

/// The path under which the timelines are served.
pub const PREFIX: &str = "/api/timeline/";
/// The alias of numo's backend in the ConsolePlugin's `spec.proxy`: the plugin reaches it at
/// `/api/proxy/plugin/<plugin>/<alias>/`.
pub const PROXY_ALIAS: &str = "numo";
/// How long a whole request may take (its reads from the API server included).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The most nodes read for failure domains, one page.
const NODES_PAGE: u32 = 5000;

/// What the timeline endpoint reads with: numo's API server settings and the planner's projections.
#[derive(Clone)]
pub struct Source {
    /// numo's own client configuration: its API server URL and CA (its credentials are never used here).
    pub config: kube::Config,
    /// The planner's projections.
    pub projections: Projections,
}

/// A refusal: its status and what it says.
#[derive(Debug, PartialEq, Eq)]
struct Refusal {
    status: StatusCode,
    message: String,
}

impl Refusal {
    fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self { status, message: message.into() }
    }
}

/// The run config `<namespace>/<name>` of a path under [`PREFIX`], if the path names one.
pub fn run_config_of(path: &str) -> Option<(&str, &str)> {
    let (namespace, name) = path.strip_prefix(PREFIX)?.split_once('/')?;
    // A DNS-1123 subdomain, as Kubernetes names these objects.
    let alphanumeric = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let valid = |s: &str| {
        let bytes = s.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= 253
            && bytes.iter().all(|&b| alphanumeric(b) || b == b'-' || b == b'.')
            && bytes.first().is_some_and(|&b| alphanumeric(b))
            && bytes.last().is_some_and(|&b| alphanumeric(b))
    };
    (valid(namespace) && valid(name)).then_some((namespace, name))
}

/// The answer to `method path` with `headers`, the path under [`PREFIX`].
pub async fn respond(source: &Source, method: &Method, path: &str, headers: &HeaderMap) -> Response<Full<Bytes>> {
    let answer = match (method, run_config_of(path)) {
        (&Method::GET, Some((namespace, name))) => match super::as_user::bearer(headers) {
            None => Err(Refusal::new(
                StatusCode::UNAUTHORIZED,
                "no bearer token: numo reads the timeline as the console's user, through the console's plugin proxy",
            )),
            Some(token) => match tokio::time::timeout(REQUEST_TIMEOUT, read(source, &token, namespace, name)).await {
                Ok(answer) => answer,
                Err(_) => Err(Refusal::new(StatusCode::GATEWAY_TIMEOUT, "the API server did not answer in time")),
            },
        },
        (&Method::GET, None) => {
            Err(Refusal::new(StatusCode::NOT_FOUND, "name a run config: /api/timeline/<namespace>/<name>"))
        }
        _ => Err(Refusal::new(StatusCode::METHOD_NOT_ALLOWED, "only GET")),
    };
    match answer {
        Ok(drawing) => json(StatusCode::OK, &drawing),
        Err(refusal) => {
            let body = serde_json::json!({"code": refusal.status.as_u16(), "message": refusal.message});
            let mut response = json(refusal.status, &body);
            if refusal.status == StatusCode::METHOD_NOT_ALLOWED {
                response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET"));
            }
            response
        }
    }
}

fn json(status: StatusCode, body: &impl serde::Serialize) -> Response<Full<Bytes>> {
    let bytes = serde_json::to_vec(body).unwrap_or_default();
    let mut response = Response::new(Full::new(Bytes::from(bytes)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/json"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// What the API server's refusal of the user's read of `what` means to the plugin.
fn refused(what: &str, error: kube::Error) -> Refusal {
    match error {
        kube::Error::Api(status) if matches!(status.code, 401 | 403 | 404) => Refusal::new(
            StatusCode::from_u16(status.code).unwrap_or(StatusCode::BAD_GATEWAY),
            format!("cannot read {what}: {}", status.message),
        ),
        other => Refusal::new(StatusCode::BAD_GATEWAY, format!("cannot read {what}: {other}")),
    }
}

/// Reads what the timeline of `namespace/name` rests on as the holder of `token`, and lays it out.
async fn read(source: &Source, token: &str, namespace: &str, name: &str) -> Result<TimelineDrawing, Refusal> {
    let client = super::as_user::client(&source.config, token)
        .map_err(|e| Refusal::new(StatusCode::INTERNAL_SERVER_ERROR, format!("cannot build a client: {e}")))?;
    let run_config = Api::<MutexRunConfig>::namespaced(client.clone(), namespace)
        .get(name)
        .await
        .map_err(|e| refused(&format!("MutexRunConfig {namespace}/{name}"), e))?;
    let mut unread = Vec::new();
    let record_name = crate::rollout_record::config_map_name(name);
    let record = match Api::<ConfigMap>::namespaced(client.clone(), namespace).get_opt(&record_name).await {
        Ok(found) => found.and_then(|c| c.data).unwrap_or_default(),
        Err(error) => {
            tracing::debug!(%error, namespace, record = %record_name, "timeline: the rollout record is not read");
            unread.push(Unread::RolloutRecord);
            BTreeMap::new()
        }
    };
    let status = run_config.status.clone().unwrap_or_default();
    let domains = match &status.topology {
        Some(topology) => match node_domains(&client, &topology.key).await {
            Ok(domains) => Some(domains),
            Err(error) => {
                tracing::debug!(%error, "timeline: the nodes are not read");
                unread.push(Unread::Nodes);
                None
            }
        },
        None => Some(BTreeMap::new()),
    };
    let rollout = status.rollout_key();
    // Read only now that the user may read the run config.
    let projected = source.projections.get(namespace, name, rollout);
    let nodes = projected.as_ref().map(|p| preview::projected_nodes(p, None, |_| None)).unwrap_or_default();
    let now = chrono::Utc::now();
    let timeline = preview::timeline::timeline(&run_config, &record, &nodes, domains.as_ref(), now);
    let mut drawing = drawing::draw(&timeline, &format!("{namespace}/{name}"), rollout);
    drawing.projection = if projected.is_some() { ProjectionSource::Planner } else { ProjectionSource::None };
    drawing.unread = unread;
    Ok(drawing)
}

/// Each node's failure domain: the value of its label `key`, `""` without it.
async fn node_domains(client: &kube::Client, key: &str) -> Result<BTreeMap<String, String>, kube::Error> {
    let nodes = Api::<Node>::all(client.clone()).list_metadata(&ListParams::default().limit(NODES_PAGE)).await?;
    Ok(nodes
        .items
        .into_iter()
        .filter_map(|n| {
            let domain = n.metadata.labels.as_ref().and_then(|l| l.get(key)).cloned().unwrap_or_default();
            Some((n.metadata.name?, domain))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_names_a_run_config() {
        assert_eq!(run_config_of("/api/timeline/ops/gated"), Some(("ops", "gated")));
        assert_eq!(run_config_of("/api/timeline/ops/"), None);
        assert_eq!(run_config_of("/api/timeline/ops"), None);
        assert_eq!(run_config_of("/api/timeline/ops/a/b"), None);
        assert_eq!(run_config_of("/api/timeline/../etc"), None);
        assert_eq!(run_config_of("/api/timeline/Ops/x"), None);
    }

    fn source() -> Source {
        Source {
            config: kube::Config::new("https://127.0.0.1:1".parse().expect("a URL")),
            projections: Default::default(),
        }
    }

    async fn said(response: Response<Full<Bytes>>) -> serde_json::Value {
        use http_body_util::BodyExt;
        let bytes = response.into_body().collect().await.map(|b| b.to_bytes()).unwrap_or_default();
        serde_json::from_slice(&bytes).unwrap_or_default()
    }

    #[tokio::test]
    async fn no_token_is_401_and_other_methods_405() {
        let response = respond(&source(), &Method::GET, "/api/timeline/ops/gated", &HeaderMap::new()).await;
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.headers()[header::CONTENT_TYPE], "application/json");
        assert!(said(response).await["message"].as_str().is_some_and(|m| m.contains("bearer token")));
        let response = respond(&source(), &Method::POST, "/api/timeline/ops/gated", &HeaderMap::new()).await;
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        let response = respond(&source(), &Method::GET, "/api/timeline/ops", &HeaderMap::new()).await;
        assert_eq!(response.status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn the_api_servers_refusals_pass_through() {
        let api = |code: u16| {
            let mut status = kube::core::Status::failure("mutexrunconfigs \"gated\" is forbidden", "Forbidden");
            status.code = code;
            kube::Error::Api(Box::new(status))
        };
        for code in [401, 403, 404] {
            let refusal = refused("MutexRunConfig ops/gated", api(code));
            assert_eq!(refusal.status.as_u16(), code);
            assert!(refusal.message.contains("is forbidden"), "{}", refusal.message);
        }
        assert_eq!(refused("x", api(500)).status, StatusCode::BAD_GATEWAY);
    }
}
