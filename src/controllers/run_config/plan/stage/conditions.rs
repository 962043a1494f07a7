//! Every condition type the run-config controller owns, as each stage states it.

use super::{condition, Stage, Upgrade};
use crate::conditions::Desired;

/// The conditions whose truth does not depend on the stage.
#[derive(Clone, Debug, Default)]
pub struct Besides {
    /// Why a config change is overdue (see [`condition::CONFIG_CHANGE_OVERDUE`]), if it is.
    pub overdue: Option<String>,
    /// What others changed of what numo holds, unresolved or fought over (see [`condition::CONTESTED`]): the
    /// reason and the message.
    pub contested: Option<(&'static str, String)>,
    /// Whether numo's admission policy refuses other hands' writes (`Err`: why not); None before numo knows.
    pub policy: Option<Result<(), String>>,
    /// Why the cluster's next minor update waits for numo's rollout (see [`condition::NEXT_MINOR_UPDATE_HELD`]), if
    /// it does.
    pub next_minor: Option<String>,
    /// Why another operator waits for numo (see [`condition::OTHER_OPERATOR_WAITS`]), if one does.
    pub other_operator: Option<String>,
}

impl Stage {
    /// Every condition type the controller owns, as this stage states it, with those `besides` it.
    pub fn conditions(&self, validated_message: &str, besides: &Besides) -> Vec<Desired> {
        let mut all = self.stage_conditions(validated_message);
        all.push(match &besides.overdue {
            Some(message) => Desired::true_(condition::CONFIG_CHANGE_OVERDUE, "Overdue", message.clone()),
            None => Desired::false_(
                condition::CONFIG_CHANGE_OVERDUE,
                "NotOverdue",
                "No target node has been behind its pool's rendered config for longer than overdueAfter.",
            ),
        });
        all.push(match &besides.contested {
            Some((reason, message)) => Desired::true_(condition::CONTESTED, *reason, message.clone()),
            None => Desired::false_(
                condition::CONTESTED,
                "NoForeignChange",
                "Nobody else changed what numo holds (pool paused flags and selectors, numo's claims, rule labels).",
            ),
        });
        all.push(match &besides.policy {
            Some(Ok(())) => Desired::true_(
                condition::FOREIGN_WRITES_REFUSED,
                "PolicyInForce",
                "The ValidatingAdmissionPolicy numo-holds refuses other writers' changes to the paused flag and \
                 selector of pools numo holds and to the rule labels of held nodes.",
            ),
            Some(Err(why)) => Desired::false_(
                condition::FOREIGN_WRITES_REFUSED,
                "PolicyUnavailable",
                format!(
                    "{why}. numo cannot refuse other writers' changes up front; it notices them, puts them back and \
                     reports them (condition Contested)."
                ),
            ),
            None => Desired::unknown(
                condition::FOREIGN_WRITES_REFUSED,
                "NotKnownYet",
                "numo has not finished putting its admission policy in place yet: whether it is in force is not known.",
            ),
        });
        all.push(match &besides.next_minor {
            Some(message) => Desired::true_(condition::NEXT_MINOR_UPDATE_HELD, "KubeletSkew", message.clone()),
            None => Desired::false_(
                condition::NEXT_MINOR_UPDATE_HELD,
                "NotHeld",
                "The nodes numo holds do not hold the cluster's next minor update.",
            ),
        });
        all.push(match &besides.other_operator {
            Some(message) => Desired::true_(condition::OTHER_OPERATOR_WAITS, "SriovUnpauseRefused", message.clone()),
            None => Desired::false_(
                condition::OTHER_OPERATOR_WAITS,
                "NoneWaits",
                "No other operator that pauses pools waits for numo to let go of a pool.",
            ),
        });
        all
    }

    fn stage_conditions(&self, validated_message: &str) -> Vec<Desired> {
        use condition::*;
        let not_checked =
            |type_| Desired::unknown(type_, "NotChecked", "Not checked: the configuration is not usable.");
        let valid = Desired::true_(CONFIG_VALIDATED, "Valid", validated_message);
        let no_conflict = Desired::false_(CONFLICT, "NoConflict", "No other run config drives these pools.");
        let no_job_failed = Desired::true_(JOB_RUN, "NoJobFailed", "No Job of this rollout failed.");
        let not_paused = Desired::false_(TARGET_POOLS_PAUSED, "NotPaused", "numo holds no target pool paused.");
        let not_labelled = Desired::false_(MUTEX_RULES_APPLIED, "NotApplied", "No node carries the rule labels.");
        let not_steered = Desired::false_(MCP_UPDATED, "NotSteered", "The pool selectors are not steered.");
        let not_started = Desired::true_(NODE_UPGRADE, "NotStarted", "No node is being upgraded.");
        let nothing_waits = Desired::true_(READY_FOR_NEXT_NODE, "NoNodeWaiting", "No node waits to start.");
        match self {
            Stage::Deleting { .. } => vec![
                Desired::true_(CONFIG_VALIDATED, "Deleting", "The run config is being deleted."),
                not_checked(UPGRADE_CHECKED),
                Desired::false_(UPGRADE_AVAILABLE, "Deleting", "The run config is being deleted."),
                not_checked(UPGRADE_READY),
                Desired::false_(TARGET_POOLS_PAUSED, "Restoring", "The pools are being restored."),
                Desired::false_(MUTEX_RULES_APPLIED, "Removing", "The rule labels are being removed."),
                Desired::false_(MCP_UPDATED, "Restoring", "The pool selectors are being restored."),
                no_job_failed,
                Desired::true_(NODE_UPGRADE, "Deleting", "The run config is being deleted."),
                no_conflict,
                nothing_waits,
            ],
            Stage::Awaiting { message, holding } | Stage::Invalid { message, holding } => {
                let holding = *holding;
                vec![
                    if matches!(self, Stage::Invalid { .. }) {
                        Desired::false_(CONFIG_VALIDATED, "InvalidConfig", message.clone())
                    } else {
                        Desired::unknown(CONFIG_VALIDATED, "AwaitingValidation", message.clone())
                    },
                    not_checked(UPGRADE_CHECKED),
                    not_checked(UPGRADE_AVAILABLE),
                    not_checked(UPGRADE_READY),
                    if holding {
                        Desired::true_(
                            TARGET_POOLS_PAUSED,
                            "Held",
                            "The target pools stay paused until the configuration is fixed or the run config deleted.",
                        )
                    } else {
                        not_paused
                    },
                    not_labelled,
                    not_steered,
                    no_job_failed,
                    not_started.clone(),
                    no_conflict,
                    nothing_waits,
                ]
            }
            Stage::NoClusterVersion { .. } => vec![
                valid,
                Desired::false_(
                    UPGRADE_CHECKED,
                    "ClusterVersionNotFound",
                    "The ClusterVersion 'version' does not exist or names no version.",
                ),
                not_checked(UPGRADE_AVAILABLE),
                not_checked(UPGRADE_READY),
                not_paused,
                not_labelled,
                not_steered,
                no_job_failed,
                not_started.clone(),
                no_conflict,
                nothing_waits,
            ],
            Stage::Idle(u) | Stage::Completed { upgrade: u, .. } => {
                let completed = matches!(self, Stage::Completed { .. });
                vec![
                    valid,
                    checked(u),
                    Desired::false_(
                        UPGRADE_AVAILABLE,
                        if completed { "UpgradeCompleted" } else { "NoUpgrade" },
                        format!("Every target node runs {}.", u.goal),
                    ),
                    ready(u),
                    if completed {
                        Desired::false_(TARGET_POOLS_PAUSED, "PoolsRestored", "The target pools were restored.")
                    } else {
                        not_paused
                    },
                    if completed {
                        Desired::false_(MUTEX_RULES_APPLIED, "LabelsRemoved", "The rule labels were removed.")
                    } else {
                        not_labelled
                    },
                    if completed {
                        Desired::false_(MCP_UPDATED, "PoolsRestored", "Every pool selector was restored.")
                    } else {
                        not_steered
                    },
                    no_job_failed,
                    match self {
                        Stage::Completed { progress, .. } => Desired::true_(
                            NODE_UPGRADE,
                            "NodesUpgraded",
                            format!("{progress} nodes upgraded to {}.", u.goal),
                        ),
                        _ => Desired::true_(NODE_UPGRADE, "NoUpgrade", format!("Every target node runs {}.", u.goal)),
                    },
                    no_conflict,
                    nothing_waits,
                ]
            }
            Stage::Standby { upgrade: u, rolled, settling, .. } => vec![
                valid,
                checked(u),
                Desired::false_(
                    UPGRADE_AVAILABLE,
                    if *rolled { "UpgradeCompleted" } else { "NoUpgrade" },
                    format!("Every target node runs {}.", u.goal),
                ),
                ready(u),
                Desired::true_(
                    TARGET_POOLS_PAUSED,
                    "HeldForConfigChanges",
                    "The target pools stay paused while the run config exists (trigger AnyConfigChange).",
                ),
                if *settling {
                    Desired::false_(MUTEX_RULES_APPLIED, "Removing", "The rule labels are being removed.")
                } else {
                    not_labelled
                },
                if *settling {
                    Desired::false_(MCP_UPDATED, "Restoring", "The pool selectors are being restored.")
                } else {
                    not_steered
                },
                no_job_failed,
                Desired::true_(NODE_UPGRADE, "NoUpgrade", format!("Every target node runs {}.", u.goal)),
                no_conflict,
                nothing_waits,
            ],
            Stage::Conflict { upgrade, holding, .. } => {
                let (_, message) = self.phase_and_message();
                vec![
                    valid,
                    checked(upgrade),
                    available(upgrade, *holding),
                    ready(upgrade),
                    if *holding {
                        Desired::true_(TARGET_POOLS_PAUSED, "Paused", "The target pools are paused.")
                    } else {
                        not_paused
                    },
                    not_labelled,
                    not_steered,
                    no_job_failed,
                    not_started.clone(),
                    Desired::true_(CONFLICT, "PoolInUse", message),
                    nothing_waits,
                ]
            }
            Stage::Pausing(u) => vec![
                valid,
                checked(u),
                available(u, false),
                ready(u),
                Desired::false_(TARGET_POOLS_PAUSED, "Pausing", "Pausing the target pools."),
                labels_pending(u),
                not_steered,
                no_job_failed,
                Desired::true_(NODE_UPGRADE, "NotStarted", "No node is being upgraded yet."),
                no_conflict,
                nothing_waits,
            ],
            Stage::Gating(u, g) => vec![
                valid,
                checked(u),
                available(u, true),
                ready(u),
                Desired::true_(TARGET_POOLS_PAUSED, "Paused", "The target pools are paused."),
                if g.labels_applied {
                    Desired::true_(MUTEX_RULES_APPLIED, "NodesLabelled", "Every held node carries the rule labels.")
                } else {
                    labels_pending(u)
                },
                if g.steered {
                    Desired::true_(
                        MCP_UPDATED,
                        "PoolsSteered",
                        "Target pools select only held nodes; the canary selects released ones.",
                    )
                } else {
                    not_steered
                },
                match &g.job_failure {
                    Some(message) => Desired::false_(JOB_RUN, "JobFailed", message.clone()),
                    None => no_job_failed,
                },
                match &g.failed {
                    Some(f) => Desired::false_(NODE_UPGRADE, f.cause.reason(), f.message.clone()),
                    None => Desired::true_(
                        NODE_UPGRADE,
                        "NodesProgressing",
                        format!("{} nodes upgraded to {}.", g.progress, u.goal),
                    ),
                },
                no_conflict,
                match &g.blockers {
                    None => nothing_waits,
                    Some(blockers) if blockers.is_empty() && g.left_out.is_empty() => Desired::true_(
                        READY_FOR_NEXT_NODE,
                        "NothingHolds",
                        "No window, health check or soak holds the next node.",
                    ),
                    Some(blockers) if blockers.is_empty() => Desired::true_(
                        READY_FOR_NEXT_NODE,
                        "NothingHolds",
                        format!(
                            "No window, health check or soak holds the next node. The health checks leave out: {}.",
                            g.left_out.join("; ")
                        ),
                    ),
                    Some(blockers) => Desired::false_(
                        READY_FOR_NEXT_NODE,
                        blockers[0].check.clone(),
                        blockers.iter().map(|b| b.message.as_str()).collect::<Vec<_>>().join("; "),
                    ),
                },
            ],
            Stage::Restoring { upgrade, progress, skipped_behind, .. } => vec![
                valid,
                checked(upgrade),
                available(upgrade, true),
                ready(upgrade),
                Desired::false_(TARGET_POOLS_PAUSED, "Restoring", "The target pools are being restored."),
                Desired::false_(MUTEX_RULES_APPLIED, "Removing", "The rule labels are being removed."),
                Desired::false_(MCP_UPDATED, "Restoring", "The pool selectors are being restored."),
                no_job_failed,
                match skipped_behind.as_slice() {
                    [] => Desired::true_(
                        NODE_UPGRADE,
                        "NodesUpgraded",
                        format!("{progress} nodes upgraded to {}.", upgrade.goal),
                    ),
                    behind => Desired::false_(
                        NODE_UPGRADE,
                        SKIPPED_NODE_NOT_UPDATED,
                        format!(
                            "Every node was gated or skipped, but not every one runs {}: {}.",
                            upgrade.goal,
                            behind.join("; ")
                        ),
                    ),
                },
                no_conflict,
                nothing_waits,
            ],
        }
    }
}

fn checked(u: &Upgrade) -> Desired {
    let mut message = format!("The cluster's target version is {}.", u.version);
    if !u.unknown.is_empty() {
        let shown: Vec<&str> = u.unknown.iter().take(5).map(String::as_str).collect();
        message.push_str(&format!(
            " The version of {} target node(s) cannot be read with versionSource {} ({}{}); they start no rollout: \
             check the node's machineconfiguration.openshift.io/currentConfig annotation and its rendered \
             MachineConfig, or the release-image-version label.",
            u.unknown.len(),
            u.version_source,
            shown.join(", "),
            if u.unknown.len() > shown.len() { ", ..." } else { "" }
        ));
    }
    Desired::true_(condition::UPGRADE_CHECKED, "ClusterVersionRead", message)
}

fn available(u: &Upgrade, in_progress: bool) -> Desired {
    Desired::true_(
        condition::UPGRADE_AVAILABLE,
        if in_progress { "RolloutInProgress" } else { "NodesBehind" },
        if u.goal == u.version {
            format!("{} of {} target nodes run a version below {}.", u.behind, u.total, u.version)
        } else {
            format!("{} of {} target nodes do not run {} (or {}) yet.", u.behind, u.total, u.goal, u.version)
        },
    )
}

fn ready(u: &Upgrade) -> Desired {
    if u.control_plane_done {
        Desired::true_(
            condition::UPGRADE_READY,
            "ControlPlaneUpgraded",
            format!("The control plane runs {}.", u.version),
        )
    } else {
        Desired::false_(
            condition::UPGRADE_READY,
            "ControlPlaneUpgrading",
            format!("The control plane has not completed its upgrade to {}.", u.version),
        )
    }
}

fn labels_pending(u: &Upgrade) -> Desired {
    if u.control_plane_done {
        Desired::false_(condition::MUTEX_RULES_APPLIED, "Labelling", "Adding the rule labels to the target nodes.")
    } else {
        Desired::false_(
            condition::MUTEX_RULES_APPLIED,
            "WaitingForControlPlane",
            "Nodes are labelled once the control plane completed its upgrade.",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::Gating;
    use super::*;
    use crate::conditions::Status;

    fn upgrade() -> Upgrade {
        Upgrade {
            version: "4.16.5".into(),
            goal: "4.16.5".into(),
            control_plane_done: true,
            behind: 1,
            total: 2,
            unknown: Vec::new(),
            version_source: "Auto".into(),
        }
    }

    #[test]
    fn the_policy_is_unknown_until_numo_knows_whether_it_is_in_force() {
        let said = |policy| {
            let besides = Besides { policy, ..Besides::default() };
            let all = Stage::Idle(upgrade()).conditions("ok", &besides);
            all.into_iter().find(|d| d.type_ == condition::FOREIGN_WRITES_REFUSED).map(|d| (d.status, d.reason))
        };
        assert_eq!(said(None), Some((Status::Unknown, "NotKnownYet".to_string())));
        assert_eq!(said(Some(Ok(()))), Some((Status::True, "PolicyInForce".to_string())));
        assert_eq!(said(Some(Err("no".into()))), Some((Status::False, "PolicyUnavailable".to_string())));
    }

    #[test]
    fn every_stage_states_every_condition_type_once() {
        let gating = Gating {
            labels_applied: true,
            steered: true,
            in_flight: 1,
            pending: 0,
            failed: None,
            job_failure: None,
            hold: true,
            paused_by_spec: false,
            progress: "1/2".into(),
            blockers: None,
            left_out: Vec::new(),
        };
        let stages = [
            Stage::Deleting { restoring: true },
            Stage::Awaiting { message: "x".into(), holding: false },
            Stage::Invalid { message: "x".into(), holding: true },
            Stage::NoClusterVersion { holding: false },
            Stage::Idle(upgrade()),
            Stage::Conflict { upgrade: upgrade(), pool: "p".into(), owner: "o".into(), holding: false },
            Stage::Pausing(upgrade()),
            Stage::Gating(upgrade(), gating),
            Stage::Restoring {
                upgrade: upgrade(),
                progress: "2/2".into(),
                waiting_for: vec![],
                skipped_behind: vec![],
            },
            Stage::Completed { upgrade: upgrade(), progress: "2/2".into() },
            Stage::Standby { upgrade: upgrade(), rolled: true, settling: false, renaming: vec![] },
        ];
        for stage in stages {
            let mut types: Vec<&str> = stage.conditions("ok", &Besides::default()).iter().map(|d| d.type_).collect();
            types.sort();
            let mut expected = condition::ALL.to_vec();
            expected.sort();
            assert_eq!(types, expected, "{stage:?}");
        }
    }
}
