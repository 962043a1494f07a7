//! The questions a plan asks only when a node would start, never watched: which pods a PodDisruptionBudget at zero
//! covers on the nodes about to start, and which alerts fire. The operator's reconcile and `numo plan` both plan
//! here: the plan's questions are asked through an [`Ask`] (the operator's, or the caller's), the answers go into the
//! snapshot, and the planner runs again.

use std::future::Future;

use super::plan::{self, Plan};
use super::snapshot::{BudgetPods, BudgetView, Snapshot, Source};
use crate::alerts::{AlertmanagerConfig, FiringAlert};

/// Who answers what a plan asks when a node would start.
pub trait Ask {
    /// Which pods of `budgets` run on `nodes`, or why they cannot be listed.
    fn budget_pods(&self, budgets: &[BudgetView], nodes: &[String]) -> impl Future<Output = Source<BudgetPods>> + Send;

    /// The alerts matching `matchers` that fire now, or why Alertmanager cannot be asked.
    fn firing(&self, matchers: &[String]) -> impl Future<Output = Source<Vec<FiringAlert>>> + Send;
}

/// The operator's answers: the pods listed with its client, the alerts from the Alertmanager of its settings.
pub struct Operator<'a> {
    /// numo's client.
    pub client: &'a kube::Client,
    /// The Alertmanager numo asks.
    pub alertmanager: &'a AlertmanagerConfig,
}

impl Ask for Operator<'_> {
    async fn budget_pods(&self, budgets: &[BudgetView], nodes: &[String]) -> Source<BudgetPods> {
        super::observe::budget_pods(self.client, budgets, nodes).await
    }

    async fn firing(&self, matchers: &[String]) -> Source<Vec<FiringAlert>> {
        crate::alerts::firing(self.alertmanager, matchers).await
    }
}

/// Plans `snapshot`; when the plan asks for the pods on the nodes about to start or for the firing alerts, asks
/// `ask` (both at once), keeps the answers in the snapshot and plans again.
pub async fn plan(snapshot: &mut Snapshot, ask: &impl Ask) -> Plan {
    let first = plan::plan(snapshot);
    if first.needs_budget_pods.is_empty() && !first.needs_alerts {
        return first;
    }
    let budgets = snapshot.health.budgets_at_zero.as_deref().unwrap_or_default();
    let checks = snapshot.run_config.spec.health_checks.as_ref();
    let matchers = checks.and_then(|h| h.alerts.as_ref()).map(|a| a.matchers.as_slice()).unwrap_or_default();
    let pods = async {
        match first.needs_budget_pods.is_empty() {
            true => None,
            false => Some(ask.budget_pods(budgets, &first.needs_budget_pods).await),
        }
    };
    let alerts = async {
        match first.needs_alerts {
            true => Some(ask.firing(matchers).await),
            false => None,
        }
    };
    let (pods, alerts) = futures::join!(pods, alerts);
    if pods.is_some() {
        snapshot.health.budget_pods = pods;
    }
    if alerts.is_some() {
        snapshot.health.alerts = alerts;
    }
    plan::plan(snapshot)
}
