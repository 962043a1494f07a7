//! `healthChecks.machineConfigNodes`: hold while a MachineConfigNode says its node is degraded (`NodeDegraded=True`,
//! with the machine-config daemon's reason), naming each node; a node an admin skipped is left out (numo reported
//! its failure already). One numo cannot decode holds too, saying why. Off unless present. MachineConfigNodes are
//! served from OpenShift 4.20; where they cannot be read, the check holds and says why.
//!
//! The machine-config daemon writes the condition (openshift/machine-config-operator, release-4.20:
//! `pkg/upgrademonitor/upgrade_monitor.go`, `GenerateAndApplyMachineConfigNodes` with `NodeDegraded` on an update
//! failure, False again once the node updates).

use super::{blocker, listed, Check, ConditionRead, Input, Readiness, Switch};
use crate::api::{check, HealthChecks};
use crate::controllers::run_config::snapshot::{Watched, CANNOT_BE_READ};

/// See the module.
pub struct MachineConfigNodes;

/// The condition the check reads.
const NODE_DEGRADED: &str = "NodeDegraded";

impl Check for MachineConfigNodes {
    fn name(&self) -> &'static str {
        check::MACHINE_CONFIG_NODES
    }

    fn enabled(&self, checks: &HealthChecks) -> bool {
        checks.machine_config_nodes.as_ref().is_some_and(|c| c.enabled)
    }

    fn switch(&self) -> Switch {
        Switch {
            field: "machineConfigNodes",
            shape: "`{enabled}`",
            default: "unset: off",
            more: "Names the node and the machine-config daemon's reason; a node an admin skipped is left out. \
                MachineConfigNodes are served from OpenShift 4.20: where they cannot be read the check holds, saying \
                why.",
        }
    }

    fn reads(&self) -> &'static [ConditionRead] {
        &[ConditionRead { kind: Watched::MachineConfigNode, condition: NODE_DEGRADED }]
    }

    fn assess(&self, input: &Input<'_>, out: &mut Readiness) {
        let said = match input.conditions(Watched::MachineConfigNode, NODE_DEGRADED) {
            None => return,
            Some(Err(why)) => {
                let message = format!(
                    "MachineConfigNodes cannot be read (OpenShift serves them from 4.20), so whether a node is \
                     degraded is unknown: {why}"
                );
                return out.blockers.push(blocker(check::MACHINE_CONFIG_NODES, message));
            }
            Some(Ok(said)) => said,
        };
        let skip = &input.snapshot.run_config.skip;
        let mut problems = Vec::new();
        for unread in said.iter().filter(|s| s.reason == CANNOT_BE_READ) {
            problems.push(format!("MachineConfigNode {} cannot be read: {}", unread.object, unread.message));
        }
        for degraded in said.iter().filter(|s| s.status == "True") {
            let why = if degraded.message.is_empty() { &degraded.reason } else { &degraded.message };
            if skip.contains(&degraded.object) {
                out.left_out.push(format!(
                    "MachineConfigNode {} is NodeDegraded ({why}), and an admin skipped the node",
                    degraded.object
                ));
            } else {
                problems.push(format!("MachineConfigNode {} is NodeDegraded: {why}", degraded.object));
            }
        }
        if !problems.is_empty() {
            out.blockers.push(blocker(check::MACHINE_CONFIG_NODES, listed(&problems)));
        }
    }
}
