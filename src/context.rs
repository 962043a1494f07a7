//! What every reconcile shares: the client, the operator's configuration, metrics and the event recorder.

use std::sync::Arc;

use crate::events::Recorder;
use crate::metrics::Metrics;

/// Operator-wide settings, from flags and environment (see `numo run --help`).
#[derive(Clone, Debug, Default)]
pub struct OperatorConfig {
    /// Namespaces (besides a rule's own) that MutexRule Jobs may run in, as a ServiceAccount there that opted in to
    /// the rule's namespace (`controllers::mutex_rule::access`). Empty: only the rule's own namespace.
    pub allowed_job_namespaces: Vec<String>,
    /// The Alertmanager the alert health check asks (`crate::alerts`).
    pub alertmanager: crate::alerts::AlertmanagerConfig,
}

impl OperatorConfig {
    /// Whether a rule in `rule_namespace` may run its Jobs in `job_namespace`.
    pub fn job_namespace_allowed(&self, rule_namespace: &str, job_namespace: &str) -> bool {
        job_namespace == rule_namespace || self.allowed_job_namespaces.iter().any(|n| n == job_namespace)
    }
}

/// Shared state of the controllers.
#[derive(Clone)]
pub struct Context {
    /// The Kubernetes client.
    pub client: kube::Client,
    /// Operator-wide settings.
    pub config: Arc<OperatorConfig>,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// Publishes Kubernetes Events.
    pub recorder: Recorder,
    /// Tells `/readyz` when each controller's watches are initialised (see `crate::server::Readiness`).
    pub readiness: crate::server::Readiness,
    /// Whether numo's ValidatingAdmissionPolicy is in force (`crate::admission_policy`), once numo tried.
    pub policy: crate::admission_policy::PolicyState,
    /// numo's own user name, `system:serviceaccount:<namespace>:<name>`: the one user the ValidatingAdmissionPolicy
    /// lets change what numo holds. `None`: unknown, and no policy is put in place.
    pub service_account: Option<String>,
    /// The projection of each run config's nodes still to go, from its last estimate, for the console plugin's
    /// timeline.
    pub projections: crate::projections::Projections,
}

impl Context {
    /// A context with the given client and settings, reporting Events as `numo`.
    pub fn new(client: kube::Client, config: OperatorConfig, metrics: Arc<Metrics>) -> Self {
        let recorder = Recorder::new(client.clone(), "numo", std::env::var("POD_NAME").ok());
        Self {
            client,
            config: Arc::new(config),
            metrics,
            recorder,
            readiness: Default::default(),
            policy: Default::default(),
            service_account: None,
            projections: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_namespaces_default_to_the_rules_own() {
        let config = OperatorConfig::default();
        assert!(config.job_namespace_allowed("team-a", "team-a"));
        assert!(!config.job_namespace_allowed("team-a", "kube-system"));
        let config = OperatorConfig { allowed_job_namespaces: vec!["ops".into()], ..Default::default() };
        assert!(config.job_namespace_allowed("team-a", "ops"));
        assert!(!config.job_namespace_allowed("team-a", "kube-system"));
    }
}
