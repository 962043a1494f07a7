//! What `spec.trigger` decides, one strategy per trigger: what the rollout is and when it starts (its steps 2–7, from
//! the shared steps), and what of the nodes the next plan reads. `plan` asks [`of`] and knows no trigger by name.
//!
//! - `Upgrade` ([`Upgrade`], `rollout`): the cluster's target release; a rollout starts when an upgrade is available
//!   and the control plane moves, and the target pools are held only while it runs.
//! - `AnyConfigChange` ([`AnyConfigChange`], `config_change`): every change of a target pool's rendered config, an
//!   upgrade among them; the target pools are held for as long as the run config exists.

use super::draft::Draft;
use super::node_reads::NodeReads;
use super::resolve::Resolved;
use super::stage::Stage;
use super::target::Target;
use super::{config_change, rollout};
use crate::controllers::run_config::snapshot::Snapshot;

/// A trigger's part of the plan.
pub trait Strategy: Sync {
    /// Steps 2–7 of a valid configuration, the cluster's target release being `version`; `holding`: numo held
    /// pools when it planned.
    fn rollout(
        &self,
        snapshot: &Snapshot,
        resolved: &Resolved<'_>,
        version: &str,
        holding: bool,
        draft: &mut Draft,
    ) -> Stage;

    /// What of the nodes the next plan reads once this one left the rollout at `stage`.
    fn node_reads(&self, stage: &Stage, holding: bool) -> NodeReads;
}

/// The strategy of `trigger`.
pub fn of(trigger: crate::api::Trigger) -> &'static dyn Strategy {
    match trigger {
        crate::api::Trigger::Upgrade => &Upgrade,
        crate::api::Trigger::AnyConfigChange => &AnyConfigChange,
    }
}

/// `trigger: Upgrade`.
pub struct Upgrade;

impl Strategy for Upgrade {
    fn rollout(&self, s: &Snapshot, resolved: &Resolved<'_>, version: &str, holding: bool, d: &mut Draft) -> Stage {
        rollout::rollout(s, resolved, &Target::upgrade(version), holding, d)
    }

    /// Between rollouts and while the MCO moves restored nodes back into their own pools (no pool held), a node's
    /// readiness, cordon and machine-config annotations change nothing numo decides: no node is released, gated or
    /// checked.
    fn node_reads(&self, stage: &Stage, holding: bool) -> NodeReads {
        let between_rollouts = matches!(stage, Stage::Idle(_) | Stage::Completed { .. } | Stage::Restoring { .. });
        match between_rollouts && !holding {
            true => NodeReads::MembershipAndVersion,
            false => NodeReads::Everything,
        }
    }
}

/// `trigger: AnyConfigChange`.
pub struct AnyConfigChange;

impl Strategy for AnyConfigChange {
    fn rollout(&self, s: &Snapshot, resolved: &Resolved<'_>, version: &str, holding: bool, d: &mut Draft) -> Stage {
        config_change::rollout(s, resolved, version, holding, d)
    }

    /// Every node change may start a rollout (a node that falls behind its pool's rendered config).
    fn node_reads(&self, _: &Stage, _: bool) -> NodeReads {
        NodeReads::Everything
    }
}
