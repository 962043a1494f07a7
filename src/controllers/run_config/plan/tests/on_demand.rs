//! The step the operator and `numo plan` share: what a plan asks when a node would start is asked through an
//! [`Ask`], and the planner runs again with the answers.

use std::sync::Mutex;

use super::*;
use crate::alerts::FiringAlert;
use crate::api::{check, AlertsCheck, HealthChecks};
use crate::controllers::run_config::on_demand::{self, Ask};
use crate::controllers::run_config::snapshot::{BudgetPods, BudgetView, Source};

/// Answers from fixed facts, writing down each question.
struct Fixed {
    pods: BudgetPods,
    alerts: Source<Vec<FiringAlert>>,
    asked: Mutex<Vec<String>>,
}

impl Fixed {
    fn new(pods: BudgetPods, alerts: Source<Vec<FiringAlert>>) -> Self {
        Self { pods, alerts, asked: Mutex::new(Vec::new()) }
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().map(|a| a.clone()).unwrap_or_default()
    }
}

impl Ask for Fixed {
    async fn budget_pods(&self, budgets: &[BudgetView], nodes: &[String]) -> Source<BudgetPods> {
        let budgets: Vec<String> = budgets.iter().map(BudgetView::key).collect();
        let question = format!("pods of {} on {}", budgets.join(","), nodes.join(","));
        self.asked.lock().map(|mut a| a.push(question)).ok();
        Ok(self.pods.clone())
    }

    async fn firing(&self, matchers: &[String]) -> Source<Vec<FiringAlert>> {
        self.asked.lock().map(|mut a| a.push(format!("alerts {}", matchers.join(",")))).ok();
        self.alerts.clone()
    }
}

/// worker-0 about to start, with every check on, a budget at zero in `db` and the alert check matching critical
/// alerts.
fn about_to_start() -> Fixture {
    let mut f = Fixture::new(2);
    let alerts = AlertsCheck { matchers: vec![r#"severity="critical""#.into()], ..Default::default() };
    f.s.run_config.spec.health_checks = Some(HealthChecks { alerts: Some(alerts), ..Default::default() });
    f.s.health.budgets_at_zero =
        Ok(vec![BudgetView { namespace: "db".into(), name: "pg-pdb".into(), selector: Some(selector("app")) }]);
    f.advance_to_gating();
    f
}

fn checks(p: &Plan) -> Vec<&str> {
    p.status.blocked_by.iter().map(|b| b.check.as_str()).collect()
}

fn on_worker_0() -> BudgetPods {
    BTreeMap::from([("db/pg-pdb".into(), vec![("pg-1".into(), "worker-0".into())])])
}

fn critical() -> FiringAlert {
    let labels = BTreeMap::from([("alertname".to_string(), "EtcdMembersDown".to_string())]);
    FiringAlert { name: "EtcdMembersDown".into(), labels }
}

fn run<T>(future: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(future)
}

#[test]
fn both_questions_are_asked_once_and_their_answers_hold_the_node() {
    let mut f = about_to_start();
    let ask = Fixed::new(on_worker_0(), Ok(vec![critical()]));
    let p = run(on_demand::plan(&mut f.s, &ask, &Default::default()));
    assert_eq!(ask.asked(), ["pods of db/pg-pdb on worker-0", r#"alerts severity="critical""#]);
    assert_eq!(checks(&p), [check::POD_DISRUPTION_BUDGETS, check::ALERTS]);
    assert!(jobs_created(&p).is_empty());
    assert!(p.asks.is_empty(), "answered: nothing is asked again");
}

#[test]
fn an_alertmanager_that_cannot_be_asked_holds_saying_why() {
    let mut f = about_to_start();
    let ask = Fixed::new(BudgetPods::new(), Err("Alertmanager at http://am cannot be queried: refused".into()));
    let p = run(on_demand::plan(&mut f.s, &ask, &Default::default()));
    assert_eq!(checks(&p), [check::ALERTS]);
    assert_eq!(
        p.status.blocked_by[0].message,
        "Alertmanager at http://am cannot be queried: refused; alerts are unknown"
    );
}

#[test]
fn with_nothing_holding_the_node_starts_and_a_plan_without_questions_asks_nothing() {
    let mut f = about_to_start();
    let ask = Fixed::new(BudgetPods::new(), Ok(Vec::new()));
    let p = run(on_demand::plan(&mut f.s, &ask, &Default::default()));
    assert_eq!(jobs_created(&p), vec![("worker-0".to_string(), "gate".to_string(), 1)]);

    let f = Fixture::new(2);
    let ask = Fixed::new(on_worker_0(), Ok(vec![critical()]));
    run(on_demand::plan(&mut f.s.clone(), &ask, &Default::default()));
    assert!(ask.asked().is_empty(), "no health checks: nothing to ask");
}
