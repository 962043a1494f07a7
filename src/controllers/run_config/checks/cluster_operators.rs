//! `healthChecks.clusterOperators`: hold while a ClusterOperator is `Degraded=True` or `Available=False` (those
//! not in `ignore`). The machine-config operator's wait for pools that a skipped node degrades is left out.

use super::{blocker, listed, Check, Input, Readiness, Switch};
use crate::api::{check, HealthChecks};

/// See the module.
pub struct ClusterOperators;

impl Check for ClusterOperators {
    fn name(&self) -> &'static str {
        check::CLUSTER_OPERATORS
    }

    fn enabled(&self, checks: &HealthChecks) -> bool {
        checks.cluster_operators.enabled
    }

    fn switch(&self) -> Switch {
        Switch {
            field: "clusterOperators",
            shape: "`{enabled, ignore[]}`",
            default: "`{enabled: true}`",
            more: "`ignore` lists ClusterOperator names whose state never holds.",
        }
    }

    fn assess(&self, input: &Input<'_>, out: &mut Readiness) {
        let ignore = &input.checks.cluster_operators.ignore;
        let message = match &input.snapshot.health.cluster_operators {
            Err(why) => format!("ClusterOperators cannot be read, so their health is unknown: {why}"),
            Ok(unhealthy) => {
                let mut problems = Vec::new();
                for (name, why) in unhealthy.iter().filter(|(name, _)| !ignore.contains(name)) {
                    if waits_for_skipped(name, why, &input.skipped) {
                        out.left_out.push(format!("ClusterOperator {name} {why}, while {}", input.skipped_nodes()));
                    } else {
                        problems.push(format!("ClusterOperator {name} {why}"));
                    }
                }
                if problems.is_empty() {
                    return;
                }
                listed(&problems)
            }
        };
        out.blockers.push(blocker(check::CLUSTER_OPERATORS, message));
    }
}

/// Whether the machine-config operator's problem is only its wait for pools that a skipped node degrades
/// (`Degraded=True` `RequiredPoolsFailed`: openshift/machine-config-operator `pkg/operator/sync.go`
/// `syncRequiredMachineConfigPools` waits while any pool is degraded).
fn waits_for_skipped(name: &str, why: &str, skipped: &[&str]) -> bool {
    name == "machine-config"
        && !skipped.is_empty()
        && why.contains("RequiredPoolsFailed")
        && !why.contains("not Available")
}
