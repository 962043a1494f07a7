//! The operator's HTTP endpoints: `/metrics` (Prometheus), `/healthz` (the process serves) and `/readyz` (the
//! controllers' watches hold their lists and none is failing, or this replica is a healthy standby waiting for the
//! leader lease).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use tokio::sync::watch;

use crate::metrics::Metrics;

/// What `/readyz` reports. Controllers [`register`](Readiness::register) when they start; their watches
/// (`crate::watches::Watches`) mark them [`ready`](Readiness::set_ready) once every cache holds its first list, and
/// [`not ready`](Readiness::set_not_ready) while a watch fails, until it has listed again. A standby replica is ready
/// while it waits for the lease ([`set_standby`](Readiness::set_standby)). Cloning shares the state.
#[derive(Clone, Debug)]
pub struct Readiness {
    state: Arc<Mutex<ReadinessState>>,
    ready: Arc<watch::Sender<bool>>,
}

impl Default for Readiness {
    fn default() -> Self {
        Self { state: Default::default(), ready: Arc::new(watch::channel(false).0) }
    }
}

#[derive(Debug, Default)]
struct ReadinessState {
    standby: bool,
    controllers: BTreeMap<&'static str, ControllerState>,
}

impl ReadinessState {
    fn is_ready(&self) -> bool {
        self.standby
            || (!self.controllers.is_empty()
                && self.controllers.values().all(|state| matches!(state, ControllerState::Ready)))
    }
}

/// One controller's line in the report.
#[derive(Clone, Debug, PartialEq, Eq)]
enum ControllerState {
    Starting,
    Ready,
    NotReady(String),
}

impl Readiness {
    fn with<T>(&self, f: impl FnOnce(&mut ReadinessState) -> T) -> T {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let result = f(&mut state);
        let now = state.is_ready();
        self.ready.send_if_modified(|ready| {
            let changed = *ready != now;
            *ready = now;
            changed
        });
        result
    }

    /// Declares a controller that is not ready yet. Call it before the controller's first `.await`.
    pub fn register(&self, controller: &'static str) {
        self.with(|s| {
            s.controllers.entry(controller).or_insert(ControllerState::Starting);
        });
    }

    /// Marks a controller ready (its watches hold their list and none is failing).
    pub fn set_ready(&self, controller: &'static str) {
        self.with(|s| s.controllers.insert(controller, ControllerState::Ready));
    }

    /// Marks a controller not ready, saying why (e.g. which watch fails).
    pub fn set_not_ready(&self, controller: &'static str, why: impl Into<String>) {
        let why = why.into();
        self.with(|s| s.controllers.insert(controller, ControllerState::NotReady(why)));
    }

    /// Marks this replica as a standby waiting for the leader lease (`true`) or as the leader (`false`).
    pub fn set_standby(&self, standby: bool) {
        self.with(|s| s.standby = standby);
    }

    /// Ready when standing by, or when at least one controller registered and every registered one is ready.
    pub fn is_ready(&self) -> bool {
        self.with(|s| s.is_ready())
    }

    /// Follows [`is_ready`](Readiness::is_ready): the receiver sees every change (e.g. to wait for one).
    pub fn subscribe(&self) -> watch::Receiver<bool> {
        self.ready.subscribe()
    }

    /// One line per controller (`name: ready`, `name: starting` or `name: <why not>`), or the standby state.
    pub fn report(&self) -> String {
        self.with(|s| {
            if s.standby {
                return "standby: waiting for the leader lease\n".to_string();
            }
            if s.controllers.is_empty() {
                return "starting: no controller has started yet\n".to_string();
            }
            s.controllers
                .iter()
                .map(|(name, state)| match state {
                    ControllerState::Starting => format!("{name}: starting\n"),
                    ControllerState::Ready => format!("{name}: ready\n"),
                    ControllerState::NotReady(why) => format!("{name}: {why}\n"),
                })
                .collect()
        })
    }
}

#[derive(Clone)]
struct AppState {
    metrics: Arc<Metrics>,
    readiness: Readiness,
}

/// The router serving `/metrics`, `/healthz` and `/readyz`.
pub fn router(metrics: Arc<Metrics>, readiness: Readiness) -> Router {
    Router::new()
        .route("/metrics", get(metrics_handler))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz_handler))
        .with_state(AppState { metrics, readiness })
}

async fn metrics_handler(State(state): State<AppState>) -> impl IntoResponse {
    match state.metrics.encode() {
        Ok(text) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/openmetrics-text; version=1.0.0; charset=utf-8")],
            text,
        ),
        Err(_) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            "could not encode the metrics\n".to_string(),
        ),
    }
}

async fn readyz_handler(State(state): State<AppState>) -> impl IntoResponse {
    let status = if state.readiness.is_ready() { StatusCode::OK } else { StatusCode::SERVICE_UNAVAILABLE };
    (status, state.readiness.report())
}

/// Binds `address` (port 0 picks a free port; see `local_addr` on the result).
pub async fn bind(address: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    tokio::net::TcpListener::bind(address).await
}

/// Serves the endpoints on `listener` until the process ends.
pub async fn serve(
    listener: tokio::net::TcpListener,
    metrics: Arc<Metrics>,
    readiness: Readiness,
) -> std::io::Result<()> {
    axum::serve(listener, router(metrics, readiness)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_only_when_every_registered_controller_is_ready_or_when_standing_by_and_subscribers_follow() {
        let readiness = Readiness::default();
        assert!(!readiness.is_ready(), "nothing started yet");
        readiness.register("mutex_rule");
        readiness.register("mutex_target");
        readiness.set_ready("mutex_rule");
        assert!(!readiness.is_ready());
        assert!(readiness.report().contains("mutex_target: starting"));
        readiness.set_ready("mutex_target");
        assert!(readiness.is_ready());
        readiness.register("mutex_target");
        assert!(readiness.is_ready(), "registering again keeps the state");
        let mut changes = readiness.subscribe();
        readiness.set_not_ready("mutex_target", "watches failing: Nodes");
        assert!(!readiness.is_ready());
        assert!(readiness.report().contains("mutex_target: watches failing: Nodes"), "{}", readiness.report());
        assert!(changes.has_changed().unwrap_or_default() && !*changes.borrow_and_update(), "subscribers see it");
        readiness.set_ready("mutex_target");
        assert!(readiness.is_ready());
        assert!(*changes.borrow_and_update());
        let standby = Readiness::default();
        standby.set_standby(true);
        assert!(standby.is_ready());
    }

    /// A plain HTTP/1.1 GET over a blocking socket (on a blocking thread), returning the raw response.
    async fn get(addr: SocketAddr, path: &str) -> String {
        let request = format!("GET {path} HTTP/1.1\r\nHost: numo\r\nConnection: close\r\n\r\n");
        let exchange = move || {
            use std::io::{Read, Write};
            let mut response = String::new();
            if let Ok(mut stream) = std::net::TcpStream::connect(addr) {
                if stream.write_all(request.as_bytes()).is_ok() {
                    let _ = stream.read_to_string(&mut response);
                }
            }
            response
        };
        tokio::task::spawn_blocking(exchange).await.unwrap_or_default()
    }

    #[tokio::test]
    async fn endpoints_answer_over_http() {
        let metrics = Arc::new(Metrics::default());
        metrics.set_leader(true);
        let readiness = Readiness::default();
        let Ok(listener) = bind(SocketAddr::from(([127, 0, 0, 1], 0))).await else {
            panic!("could not bind a local port");
        };
        let Ok(addr) = listener.local_addr() else { panic!("no local address") };
        tokio::spawn(serve(listener, metrics, readiness.clone()));

        assert!(get(addr, "/healthz").await.starts_with("HTTP/1.1 200"));
        let metrics_response = get(addr, "/metrics").await;
        assert!(metrics_response.starts_with("HTTP/1.1 200"), "{metrics_response}");
        assert!(metrics_response.contains("numo_leader 1"), "{metrics_response}");
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 503"));
        readiness.register("mutex_rule");
        readiness.set_ready("mutex_rule");
        assert!(get(addr, "/readyz").await.starts_with("HTTP/1.1 200"));
    }
}
