//! Whether the workers numo holds behind hold the cluster's next minor update.
//!
//! The kube-apiserver operator's kubelet version skew controller says `Upgradeable=False` while a kubelet would be
//! too far behind the API server after the next minor update: after an update to an even minor (4.16, 4.18, …),
//! every worker still one minor behind. A rollout numo gates keeps workers behind for as long as it lasts, so the
//! next minor update waits for numo. numo says so (condition [`condition::NEXT_MINOR_UPDATE_HELD`], an Event, the
//! metric behind the `NumoHoldsNextMinorUpdate` alert) with what is left and when it expects to be done. It holds
//! nothing: it is a notice.

use super::stage::{condition, Stage};
use super::Notice;
use crate::api::MutexRunConfigStatus;
use crate::controllers::run_config::snapshot::Snapshot;

/// Why the next minor update waits for numo's rollout, as the condition's message; None when it does not.
pub fn held(snapshot: &Snapshot, stage: &Stage, status: &MutexRunConfigStatus) -> Option<String> {
    let reason = snapshot.kubelet_skew.as_ref()?;
    let upgrade = stage.held_behind()?;
    let expected = match &status.estimate {
        Some(estimate) => format!("numo expects to finish at {}", estimate.end.0),
        None => "numo has no estimate of when it finishes yet".to_string(),
    };
    Some(format!(
        "The cluster's next minor update waits for numo: the kube-apiserver operator says Upgradeable=False ({reason}: \
         kubelets too far behind the API server for the next minor), and {behind} of the {total} node(s) numo gates \
         are not at {goal} yet; {expected}. Nothing to do but let the rollout finish (see the \
         NumoHoldsNextMinorUpdate runbook).",
        behind = upgrade.behind,
        total = upgrade.total,
        goal = upgrade.goal,
    ))
}

/// The Event of a plan that starts saying the next minor update waits for numo.
pub fn notice(snapshot: &Snapshot, held: Option<&String>) -> Option<Notice> {
    let before = crate::conditions::is_true(&snapshot.run_config.status.conditions, condition::NEXT_MINOR_UPDATE_HELD);
    let message = held.filter(|_| !before)?;
    Some(Notice::normal("NextMinorUpdateHeld", "Reconcile", message.clone()))
}
