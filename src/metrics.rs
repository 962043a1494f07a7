//! Prometheus metrics, registered under the `numo` prefix.

use prometheus_client::registry::Registry;

/// The operator's metrics.
#[derive(Default)]
pub struct Metrics {
    /// The registry served on `/metrics`.
    pub registry: std::sync::Mutex<Registry>,
}
