//! `healthChecks.alerts`: hold while an alert matching the matchers fires (not in `ignore`). Alertmanager is asked
//! only when a node would start: until then the check asks for it ([`Question::FiringAlerts`]).

use super::{blocker, listed, Check, Input, Question, Readiness, Switch};
use crate::api::{check, HealthChecks};

/// See the module.
pub struct Alerts;

impl Check for Alerts {
    fn name(&self) -> &'static str {
        check::ALERTS
    }

    fn enabled(&self, checks: &HealthChecks) -> bool {
        checks.alerts.as_ref().is_some_and(|a| a.enabled)
    }

    fn switch(&self) -> Switch {
        Switch {
            field: "alerts",
            shape: "`{enabled, matchers[], ignore[]}`",
            default: "unset: off",
            more: "An alert counts when it is active, unsilenced, uninhibited and matches every one of `matchers` \
                (Alertmanager matchers, default `severity=\"critical\"`), unless `ignore` names it. See \
                [alerts](#alerts).",
        }
    }

    fn assess(&self, input: &Input<'_>, out: &mut Readiness) {
        let Some(alerts) = input.checks.alerts.as_ref().filter(|_| !input.next.is_empty()) else { return };
        match &input.snapshot.health.alerts {
            None => out.asks.push(Question::FiringAlerts),
            Some(Err(why)) => out.blockers.push(blocker(check::ALERTS, format!("{why}; alerts are unknown"))),
            Some(Ok(firing)) => {
                let firing: Vec<String> = firing
                    .iter()
                    .filter(|a| !alerts.ignore.contains(&a.name))
                    .map(|a| format!("alert {} fires", a.describe()))
                    .collect();
                if !firing.is_empty() {
                    out.blockers.push(blocker(check::ALERTS, listed(&firing)));
                }
            }
        }
    }
}
