//! The questions a plan asks only when a node would start, never watched ([`Question`], asked by the checks): which
//! pods a PodDisruptionBudget at zero covers on the nodes about to start, and which alerts fire. The operator's
//! reconcile and `numo plan` both plan here: the plan's questions are asked through an [`Ask`] (the operator's, or the
//! caller's), the answers go into the snapshot, and the planner runs again.

use std::future::Future;

use super::checks::Question;
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

/// Plans `snapshot`, with what the run config's plans keep between them (`kept`); when the plan asks what numo only
/// asks when a node would start, asks `ask` (every question at once), keeps the answers in the snapshot and plans
/// again.
pub async fn plan(snapshot: &mut Snapshot, ask: &impl Ask, kept: &plan::Kept) -> Plan {
    let first = plan::plan_kept(snapshot, kept);
    if first.asks.is_empty() {
        return first;
    }
    let answers = futures::future::join_all(first.asks.iter().map(|question| answer(snapshot, question, ask))).await;
    for answer in answers {
        answer.keep(snapshot);
    }
    plan::plan_kept(snapshot, kept)
}

/// An answer to a [`Question`].
enum Answer {
    BudgetPods(Source<BudgetPods>),
    FiringAlerts(Source<Vec<FiringAlert>>),
}

impl Answer {
    /// Keeps the answer in `snapshot`, where the check that asked reads it.
    fn keep(self, snapshot: &mut Snapshot) {
        match self {
            Answer::BudgetPods(pods) => snapshot.health.budget_pods = Some(pods),
            Answer::FiringAlerts(alerts) => snapshot.health.alerts = Some(alerts),
        }
    }
}

/// Asks `question` of `ask`, with what `snapshot` says of it.
async fn answer(snapshot: &Snapshot, question: &Question, ask: &impl Ask) -> Answer {
    match question {
        Question::BudgetPods(nodes) => {
            let budgets = snapshot.health.budgets_at_zero.as_deref().unwrap_or_default();
            Answer::BudgetPods(ask.budget_pods(budgets, nodes).await)
        }
        Question::FiringAlerts => {
            let checks = snapshot.run_config.spec.health_checks.as_ref();
            let matchers = checks.and_then(|h| h.alerts.as_ref()).map(|a| a.matchers.as_slice()).unwrap_or_default();
            Answer::FiringAlerts(ask.firing(matchers).await)
        }
    }
}
