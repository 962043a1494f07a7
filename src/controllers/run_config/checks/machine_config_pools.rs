//! `healthChecks.machineConfigPools`: hold while a MachineConfigPool is `Degraded` or `NodeDegraded`, unless only
//! because a node an admin skipped fails its update (numo reported it; the machine-config daemon keeps retrying).

use super::{blocker, listed, Check, Input, Readiness, Switch};
use crate::api::{check, HealthChecks};

/// See the module.
pub struct MachineConfigPools;

impl Check for MachineConfigPools {
    fn name(&self) -> &'static str {
        check::MACHINE_CONFIG_POOLS
    }

    fn enabled(&self, checks: &HealthChecks) -> bool {
        checks.machine_config_pools.enabled
    }

    fn switch(&self) -> Switch {
        Switch { field: "machineConfigPools", shape: "`{enabled}`", default: "`{enabled: true}`", more: "" }
    }

    fn assess(&self, input: &Input<'_>, out: &mut Readiness) {
        let mut degraded = Vec::new();
        for pool in input.snapshot.pools.values() {
            let Some(why) = &pool.degraded else { continue };
            if !input.skipped.is_empty() && pool.render_failure.is_none() {
                out.left_out.push(format!(
                    "MachineConfigPool {} is degraded while {} (numo reported the failure; the machine-config \
                     daemon keeps retrying the update)",
                    pool.name,
                    input.skipped_nodes()
                ));
            } else {
                degraded.push(format!("MachineConfigPool {} is {why}", pool.name));
            }
        }
        if !degraded.is_empty() {
            out.blockers.push(blocker(check::MACHINE_CONFIG_POOLS, listed(&degraded)));
        }
    }
}
