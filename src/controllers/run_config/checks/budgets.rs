//! `healthChecks.podDisruptionBudgets`: hold while a PodDisruptionBudget that allows no disruption covers a pod on
//! a node about to start (its drain would stall). The pods are listed only when a node would start and some budget
//! is at zero: until then the check asks for them ([`Question::BudgetPods`]).

use std::collections::BTreeSet;

use super::{blocker, listed, Check, Input, Question, Readiness, Switch};
use crate::api::{check, HealthChecks};

/// See the module.
pub struct PodDisruptionBudgets;

impl Check for PodDisruptionBudgets {
    fn name(&self) -> &'static str {
        check::POD_DISRUPTION_BUDGETS
    }

    fn enabled(&self, checks: &HealthChecks) -> bool {
        checks.pod_disruption_budgets.enabled
    }

    fn switch(&self) -> Switch {
        Switch {
            field: "podDisruptionBudgets",
            shape: "`{enabled}`",
            default: "`{enabled: true}`",
            more: "Its drain would stall until `nodeTimeout`. numo watches the budgets; only when a node is about to \
                start and some budget is at zero does it list the pods on that node (metadata only).",
        }
    }

    fn assess(&self, input: &Input<'_>, out: &mut Readiness) {
        if input.next.is_empty() {
            return;
        }
        let health = &input.snapshot.health;
        let at_zero = match &health.budgets_at_zero {
            Err(why) => {
                let message = format!("PodDisruptionBudgets cannot be read, so a drain may stall: {why}");
                return out.blockers.push(blocker(check::POD_DISRUPTION_BUDGETS, message));
            }
            Ok(at_zero) if at_zero.is_empty() => return,
            Ok(at_zero) => at_zero,
        };
        let placed = match &health.budget_pods {
            None => return out.asks.push(Question::BudgetPods(input.next.iter().map(|n| n.name.clone()).collect())),
            Some(Err(why)) => {
                let message = format!("the pods PodDisruptionBudgets cover cannot be read: {why}");
                return out.blockers.push(blocker(check::POD_DISRUPTION_BUDGETS, message));
            }
            Some(Ok(placed)) => placed,
        };
        let next: BTreeSet<&str> = input.next.iter().map(|n| n.name.as_str()).collect();
        let problems: Vec<String> = at_zero
            .iter()
            .flat_map(|budget| {
                let pods = placed.get(&budget.key()).map(Vec::as_slice).unwrap_or_default();
                pods.iter().filter(|(_, node)| next.contains(node.as_str())).map(move |(pod, node)| {
                    format!(
                        "PodDisruptionBudget {} allows no disruption and covers pod {}/{pod} on {node}",
                        budget.key(),
                        budget.namespace
                    )
                })
            })
            .collect();
        if !problems.is_empty() {
            out.blockers.push(blocker(check::POD_DISRUPTION_BUDGETS, listed(&problems)));
        }
    }
}
