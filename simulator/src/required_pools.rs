//! The machine-config operator's reaction to its pools: the last step of its sync, `RequiredPools`, and its
//! `Upgradeable` condition (openshift/machine-config-operator `pkg/operator/sync.go`
//! `syncRequiredMachineConfigPools` and `pkg/operator/status.go` `syncUpgradeableStatus`, the same from release-4.16
//! to release-4.23).
//!
//! - **RequiredPools** waits, polling the pools, until no pool is `Degraded` and every *required* pool (labelled
//!   [`REQUIRED_FOR_UPGRADE`]: the `master` pool's manifest carries the label) is `Updated` at its generation. The
//!   wait lasts at most 10 minutes per machine of the required pools (their `status.machineCount` when it starts;
//!   [`crate::SimConfig::required_pool_wait_per_machine`] shortens it for tests). While it waits the operator's whole
//!   sync waits with it: nothing before it runs again (its MachineConfigNode and pool syncs), until the wait ends.
//!   When the time is up the step fails with `error during syncRequiredMachineConfigPools: [context deadline
//!   exceeded, <the last reason>]`, so `machine-config` goes `Degraded=True`, reason `RequiredPoolsFailed`; the next
//!   sync runs every step again and waits again. A required pool that is paused and not Updated ends the wait at
//!   once with its own error. The condition clears only when a later wait ends well. (A required pool without a
//!   status, which only the simulator's first moments show, defers the step: [`Outcome::NotYet`].)
//! - **Upgradeable**: any pool `Degraded` makes `machine-config` `Upgradeable=False`, reason `DegradedPool`,
//!   "One or more machine config pools are degraded, please see `oc get mcp` for further details and resolve before
//!   upgrading"; the operator writes it at the end of every sync and at every poll of the wait, so it follows the
//!   pools. It goes back to `True` when no pool is degraded.
//!
//! Not modelled: the check that a required pool's configuration was rendered by the running operator
//! (`isMachineConfigPoolConfigurationValid`), the poll's one-second period (the simulator looks on every change of
//! the pools), and the other reasons of `Upgradeable=False` (kubelet skew, cgroup v1, interrupted builds, boot
//! image skew).

use std::time::Duration;

use numo::openshift::MachineConfigPool;
use tokio::time::Instant;

use crate::status::{DEGRADED, UPDATED};

/// The label of the pools the operator waits for (`requiredForUpgradeMachineConfigPoolLabelKey`).
pub const REQUIRED_FOR_UPGRADE: &str = "operator.machineconfiguration.openshift.io/required-for-upgrade";
/// The sync step (`RequiredPools`); its failure's reason is `RequiredPoolsFailed`.
pub const TASK: &str = "RequiredPools";
/// The reason of `Upgradeable=False` while a pool is degraded.
pub const DEGRADED_POOL: &str = "DegradedPool";
/// The message of `Upgradeable=False` while a pool is degraded.
pub const DEGRADED_POOL_MESSAGE: &str = "One or more machine config pools are degraded, please see `oc get mcp` for \
                                         further details and resolve before upgrading";
/// How long the operator waits per machine of the required pools.
pub const WAIT_PER_MACHINE: Duration = Duration::from_secs(10 * 60);

/// Whether a pool's condition `type_` is True.
fn holds(pool: &MachineConfigPool, type_: &str) -> bool {
    pool.status.as_ref().is_some_and(|s| s.conditions.iter().any(|c| c.type_ == type_ && c.status == "True"))
}

fn degraded_message(pool: &MachineConfigPool) -> String {
    let conditions = pool.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    conditions.iter().find(|c| c.type_ == DEGRADED).and_then(|c| c.message.clone()).unwrap_or_default()
}

/// Whether `pool` is required for upgrades.
pub fn is_required(pool: &MachineConfigPool) -> bool {
    pool.metadata.labels.as_ref().is_some_and(|l| l.contains_key(REQUIRED_FOR_UPGRADE))
}

/// Whether any pool is degraded: then `machine-config` is `Upgradeable=False`, [`DEGRADED_POOL`].
pub fn any_degraded<'a>(pools: impl IntoIterator<Item = &'a MachineConfigPool>) -> bool {
    pools.into_iter().any(|p| holds(p, DEGRADED))
}

/// One look at the pools, as one poll of the wait.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Poll {
    /// Nothing to wait for.
    Ready,
    /// Wait on; the reason the operator keeps.
    NotReady(String),
    /// The wait ends with this error (a required pool is paused).
    Stop(String),
}

/// One poll over `pools` (in name order, as the simulator lists them; the operator's lister has no set order).
pub fn poll(pools: &[&MachineConfigPool]) -> Poll {
    let mut pools = pools.to_vec();
    pools.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for pool in pools {
        let name = pool.metadata.name.as_deref().unwrap_or_default();
        let s = pool.status.clone().unwrap_or_default();
        if holds(pool, DEGRADED) {
            return Poll::NotReady(format!(
                "error MachineConfigPool {name} is not ready, retrying. Status: (pool degraded: true total: {}, \
                 ready {}, updated: {}, unavailable: {}, reason: {})",
                s.machine_count,
                s.ready_machine_count,
                s.updated_machine_count,
                s.unavailable_machine_count,
                degraded_message(pool)
            ));
        }
        if !is_required(pool) {
            continue;
        }
        let updated = holds(pool, UPDATED);
        if pool.metadata.generation.unwrap_or_default() <= s.observed_generation && updated {
            continue;
        }
        if pool.spec.paused {
            return Poll::Stop(if updated {
                format!(
                    "the required MachineConfigPool {name} was paused with no pending updates; no further syncing \
                     will occur until it is unpaused"
                )
            } else {
                format!("error required MachineConfigPool {name} is paused and cannot sync until it is unpaused")
            });
        }
        return Poll::NotReady(format!(
            "error required MachineConfigPool {name} is not ready, retrying. Status: (total: {}, ready {}, updated: \
             {}, unavailable: {}, degraded: {})",
            s.machine_count,
            s.ready_machine_count,
            s.updated_machine_count,
            s.unavailable_machine_count,
            s.degraded_machine_count
        ));
    }
    Poll::Ready
}

/// How the step went, this time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The pools are ready: the step (and the sync) passed.
    Passed,
    /// The operator waits until this instant at the latest; its sync does nothing else meanwhile.
    Waiting(Instant),
    /// The step failed with this error.
    Failed(String),
    /// A required pool has no status yet (the simulator's first moments, before its controller counted the
    /// machines; a real cluster's pools always have one): the step waits for it, without a deadline.
    NotYet,
}

/// The step's memory: the wait under way, if any.
#[derive(Clone, Debug)]
pub struct RequiredPools {
    per_machine: Duration,
    /// The end of the wait under way, the operator release it began under, and the last reason.
    wait: Option<(Instant, String, String)>,
}

impl RequiredPools {
    /// The step, waiting `per_machine` per machine of the required pools.
    pub fn new(per_machine: Duration) -> Self {
        Self { per_machine, wait: None }
    }

    /// Whether the operator of `release` is in the middle of a wait (its earlier steps do not run). A new release
    /// is a new operator pod (the CVO replaced it), whose sync starts from the top.
    pub fn waiting(&mut self, release: &str) -> bool {
        if self.wait.as_ref().is_some_and(|(_, r, _)| r != release) {
            self.wait = None;
        }
        self.wait.is_some()
    }

    /// Runs (or goes on with) the step at `now` over `pools`, for the operator of `release`.
    pub fn step(&mut self, now: Instant, pools: &[&MachineConfigPool], release: &str) -> Outcome {
        let until = match &self.wait {
            Some((until, _, _)) => *until,
            None if pools.iter().any(|p| is_required(p) && p.status.is_none()) => return Outcome::NotYet,
            None => {
                let machines: i32 = pools
                    .iter()
                    .filter(|p| is_required(p))
                    .map(|p| p.status.as_ref().map(|s| s.machine_count).unwrap_or_default())
                    .sum();
                now + self.per_machine * u32::try_from(machines).unwrap_or_default()
            }
        };
        match poll(pools) {
            Poll::Ready => {
                self.wait = None;
                Outcome::Passed
            }
            Poll::Stop(error) => {
                self.wait = None;
                Outcome::Failed(error)
            }
            Poll::NotReady(reason) if now >= until => {
                self.wait = None;
                Outcome::Failed(format!(
                    "error during syncRequiredMachineConfigPools: [context deadline exceeded, {reason}]"
                ))
            }
            Poll::NotReady(reason) => {
                self.wait = Some((until, release.to_string(), reason));
                Outcome::Waiting(until)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use numo::openshift::{MachineConfigPoolCondition, MachineConfigPoolSpec, MachineConfigPoolStatus};

    fn pool(name: &str, required: bool, conditions: &[(&str, &str)]) -> MachineConfigPool {
        let mut p = MachineConfigPool::new(name, MachineConfigPoolSpec::default());
        if required {
            p.metadata.labels = Some([(REQUIRED_FOR_UPGRADE.to_string(), String::new())].into());
        }
        p.status = Some(MachineConfigPoolStatus {
            machine_count: 3,
            conditions: conditions
                .iter()
                .map(|(t, s)| MachineConfigPoolCondition {
                    type_: t.to_string(),
                    status: s.to_string(),
                    message: Some(format!("{t} message")),
                    ..MachineConfigPoolCondition::default()
                })
                .collect(),
            ..MachineConfigPoolStatus::default()
        });
        p
    }

    #[test]
    fn ready_when_no_pool_is_degraded_and_the_required_ones_are_updated() {
        let master = pool("master", true, &[(UPDATED, "True"), (DEGRADED, "False")]);
        let worker = pool("worker", false, &[(UPDATED, "False"), (DEGRADED, "False")]);
        assert_eq!(poll(&[&master, &worker]), Poll::Ready, "a non-required pool may be behind");
        assert!(!any_degraded([&master, &worker]));
        let rolling = pool("master", true, &[(UPDATED, "False")]);
        assert!(
            matches!(poll(&[&rolling]), Poll::NotReady(r) if r.starts_with("error required MachineConfigPool master"))
        );
        let mut paused = rolling.clone();
        paused.spec.paused = true;
        assert_eq!(
            poll(&[&paused]),
            Poll::Stop("error required MachineConfigPool master is paused and cannot sync until it is unpaused".into())
        );
    }

    #[test]
    fn a_degraded_pool_keeps_the_operator_waiting_until_its_time_is_up() {
        let master = pool("master", true, &[(UPDATED, "True")]);
        let worker = pool("worker", false, &[(DEGRADED, "True")]);
        assert!(any_degraded([&master, &worker]));
        let (t0, minute) = (Instant::now(), Duration::from_secs(60));
        let mut step = RequiredPools::new(minute);
        assert!(!step.waiting("4.16.4"));
        assert_eq!(step.step(t0, &[&master, &worker], "4.16.4"), Outcome::Waiting(t0 + 3 * minute), "3 masters");
        assert!(step.waiting("4.16.4"));
        assert_eq!(step.step(t0 + 2 * minute, &[&master, &worker], "4.16.4"), Outcome::Waiting(t0 + 3 * minute));
        let failed = step.step(t0 + 3 * minute, &[&master, &worker], "4.16.4");
        assert_eq!(
            failed,
            Outcome::Failed(
                "error during syncRequiredMachineConfigPools: [context deadline exceeded, error MachineConfigPool \
                 worker is not ready, retrying. Status: (pool degraded: true total: 3, ready 0, updated: 0, \
                 unavailable: 0, reason: Degraded message)]"
                    .into()
            )
        );
        assert!(!step.waiting("4.16.4"), "the next sync starts from the top");
        assert_eq!(step.step(t0 + 4 * minute, &[&master, &worker], "4.16.4"), Outcome::Waiting(t0 + 7 * minute));
        assert!(!step.waiting("4.16.5"), "a new operator starts over");
        let mut unknown = master.clone();
        unknown.status = None;
        assert_eq!(step.step(t0, &[&unknown], "4.16.5"), Outcome::NotYet, "no machine count yet: no deadline");
        let healed = pool("worker", false, &[(DEGRADED, "False")]);
        assert_eq!(step.step(t0 + 5 * minute, &[&master, &healed], "4.16.5"), Outcome::Passed);
    }
}
