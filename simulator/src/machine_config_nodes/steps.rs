//! The MachineConfigNode writes of one node's update, stage by stage, with the reasons and messages of the real
//! daemon and drain controller (openshift/machine-config-operator release-4.20; release-4.21 and release-4.22 write
//! the same without image mode). Pure: the daemon ([`crate::daemon`]) names the stage it reached, and writes the
//! steps of [`steps()`] in order, each through [`super::conditions::next`].
//!
//! An update that cordons (a reboot: not a rebootless one, [`crate::daemon::is_rebootless`], unless it is to fail)
//! goes:
//!
//! | stage | writer | parent (+ child) |
//! | --- | --- | --- |
//! | [`Stage::Start`] | daemon | `Updated=False` `Node <n> needs an update`; `UpdatePrepared=True` `Update Compatible. Post Cfg Actions: [] Drain Required: true` |
//! | [`Stage::DrainStarted`] | controller | `UpdateExecuted=Unknown` + `Cordoned=True`; `UpdateExecuted=Unknown` + `Drained=Unknown` `Draining node. ...` |
//! | [`Stage::Drained`] | controller | `UpdateExecuted=Unknown` + `Drained=True` `Drained node. The drain is complete ...` |
//! | [`Stage::Applying`] | daemon | `UpdateExecuted=Unknown` + `AppliedFilesAndOS=Unknown` |
//! | [`Stage::Applied`] | daemon | `UpdateExecuted=True` + `AppliedFilesAndOS=True`; `RebootedNode=Unknown` `Upgrade requires a reboot.`; `NodeDegraded=False` `Node <n> upgrade succeeded` |
//! | [`Stage::Resuming`] | daemon | `RebootedNode=True` `Node has rebooted`; `Resumed=True` `... Applying proper annotations.` |
//! | [`Stage::Completed`] | controller, daemon | `UpdateComplete=True` + `Uncordoned=True`; `Resumed=True` `... Resumed normal operations.`; `Updated=True` `Node <n> Updated` (the reset) |
//! | [`Stage::Failed`] | daemon | `NodeDegraded=True` `Node <n> upgrade failure. <reason>` |
//! | [`Stage::Unreconcilable`] | daemon | `Updated=False` `Node <n> needs an update`; `UpdatePrepared=Unknown` `Update Failed compatibility validation. ...` |
//!
//! A rebootless update has `Drain Required: false`, `UpdateExecuted=Unknown` + `Drained=False` `Node Drain Not
//! required for this update.` instead of the cordon and drain, `UpdatePostActionComplete=True` (reason `None`)
//! `Changes do not require a reboot` instead of the reboot, and its `NodeDegraded=False` after the uncordon.

use super::conditions::{Phase, FALSE, TRUE, UNKNOWN};
use super::*;

/// Which component writes a step, hence as whom it is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Writer {
    /// The machine-config daemon on the node.
    Daemon,
    /// The machine-config controller (its drain controller).
    Controller,
}

/// One write: a parent condition and maybe a child.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// As whom.
    pub writer: Writer,
    /// The parent condition.
    pub parent: Phase,
    /// The child condition.
    pub child: Option<Phase>,
}

/// What the writes of one update depend on.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Update<'a> {
    /// The node.
    pub node: &'a str,
    /// Its `currentConfig` when the update starts.
    pub current: &'a str,
    /// The config it moves to.
    pub desired: &'a str,
    /// Cordoned, drained and rebooted (else rebootless: none of them).
    pub disruptive: bool,
    /// The OS image changes.
    pub os_update: bool,
    /// The node was cordoned before the update.
    pub was_cordoned: bool,
}

/// How far the update got.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The daemon found work and the update compatible.
    Start,
    /// Cordoned and draining (or, rebootless, found no drain needed).
    DrainStarted,
    /// The drain ended.
    Drained,
    /// Writing files and OS.
    Applying,
    /// Files and OS written; the reboot (or none) is next.
    Applied,
    /// Back from the reboot (or not rebooting), on the new config.
    Resuming,
    /// Done and uncordoned.
    Completed,
    /// The update failed with this reason.
    Failed(String),
    /// The configs cannot be reconciled ([`crate::reconcile`]): `update.go` `reconcilable`'s error.
    Unreconcilable(String),
}

/// The writes of `update` on reaching `stage`, in order.
pub fn steps(update: &Update<'_>, stage: &Stage) -> Vec<Step> {
    let node = update.node;
    let desired = update.desired;
    match (stage, update.disruptive) {
        (Stage::Start, drain) => vec![needs_update(node), update_prepared(drain)],
        (Stage::DrainStarted, true) => {
            let last_applied = match update.current {
                "" => String::new(),
                current => format!("uncordon-{current}"),
            };
            vec![cordoned(update.was_cordoned), draining(&format!("drain-{desired}"), &last_applied)]
        }
        (Stage::DrainStarted, false) => vec![drain_not_required()],
        (Stage::Drained, true) => vec![drained(&format!("drain-{desired}"))],
        (Stage::Drained, false) => vec![],
        (Stage::Applying, _) => vec![applying_files_and_os(update.os_update)],
        (Stage::Applied, true) => {
            vec![applied_files_and_os(update.os_update), reboot_required(), degraded(node, None)]
        }
        (Stage::Applied, false) => vec![applied_files_and_os(update.os_update), no_reboot_required()],
        (Stage::Resuming, true) => vec![rebooted(), resumed_applying(desired)],
        (Stage::Resuming, false) => vec![resumed_applying(desired)],
        (Stage::Completed, true) => vec![uncordoned(true), resumed(desired), updated(node)],
        (Stage::Completed, false) => vec![uncordoned(update.was_cordoned), degraded(node, None), updated(node)],
        (Stage::Failed(reason), _) => vec![degraded(node, Some(reason))],
        (Stage::Unreconcilable(error), _) => {
            vec![needs_update(node), update_not_compatible(update.current, desired, error)]
        }
    }
}

fn daemon(parent: Phase) -> Step {
    Step { writer: Writer::Daemon, parent, child: None }
}

/// `pkg/daemon/daemon.go` `syncNode`: the node's desired config differs from its current one.
fn needs_update(node: &str) -> Step {
    daemon(Phase::new(UPDATED, FALSE, UPDATED, format!("Node {node} needs an update")))
}

/// `pkg/daemon/daemon.go` `syncNode`, the next sync after the update: nothing left to do. Resets the rest.
fn updated(node: &str) -> Step {
    daemon(Phase::new(UPDATED, TRUE, UPDATED, format!("Node {node} Updated")))
}

/// `pkg/daemon/update.go` `update`: the configs are reconcilable. `actions` are empty outside first boot (node
/// disruption policies decide instead).
fn update_prepared(drain: bool) -> Step {
    let message = format!("Update Compatible. Post Cfg Actions: [] Drain Required: {drain}");
    daemon(Phase::new(UPDATE_PREPARED, TRUE, UPDATE_PREPARED, message))
}

/// `pkg/daemon/update.go` `update` (release-4.20 to release-4.22): the configs are not reconcilable; the daemon
/// writes no `NodeDegraded` for it (`updateErrorState` → `SetUnreconcilable` reports no MachineConfigNode condition).
fn update_not_compatible(current: &str, desired: &str, error: &str) -> Step {
    let message = format!(
        "Update Failed compatibility validation. MachineConfigs {current} and {desired} are not compatible. Err: {error}"
    );
    daemon(Phase::new(UPDATE_PREPARED, UNKNOWN, UPDATE_PREPARED, message))
}

/// `pkg/controller/drain/drain_controller.go` `drainNode`: cordoned; `unschedulable` is the node as the controller
/// read it before the cordon.
fn cordoned(unschedulable: bool) -> Step {
    Step {
        writer: Writer::Controller,
        parent: Phase::new(UPDATE_EXECUTED, UNKNOWN, CORDONED, "Cordoned Node as part of update executed phase"),
        child: Some(Phase::new(
            CORDONED,
            TRUE,
            "UpdateExecutedCordoned",
            format!("Cordoned node. The node is reporting Unschedulable = {unschedulable}"),
        )),
    }
}

/// `drain_controller.go` `drainNode`: the drain starts; the drainer annotations are `drain-<desired>` and the last
/// applied one (`uncordon-<current>` after an earlier update).
fn draining(desired_drainer: &str, last_applied_drainer: &str) -> Step {
    Step {
        writer: Writer::Controller,
        parent: Phase::new(UPDATE_EXECUTED, UNKNOWN, DRAINED, "Draining Node as part of update executed phase"),
        child: Some(Phase::new(
            DRAINED,
            UNKNOWN,
            "UpdateExecutedDrained",
            format!(
                "Draining node. The drain will not be complete until desired drainer {desired_drainer} matches \
                 current drainer {last_applied_drainer}"
            ),
        )),
    }
}

/// `drain_controller.go` `drainNode`: the drain succeeded.
fn drained(desired_drainer: &str) -> Step {
    Step {
        writer: Writer::Controller,
        parent: Phase::new(UPDATE_EXECUTED, UNKNOWN, DRAINED, "Drained Node as part of update executed phase"),
        child: Some(Phase::new(
            DRAINED,
            TRUE,
            "UpdateExecutedDrained",
            format!(
                "Drained node. The drain is complete as the desired drainer matches current drainer: {desired_drainer}"
            ),
        )),
    }
}

/// `pkg/daemon/update.go` `update`: the changes need no drain (the child is written False).
fn drain_not_required() -> Step {
    let message = "Node Drain Not required for this update.";
    Step {
        writer: Writer::Daemon,
        parent: Phase::new(UPDATE_EXECUTED, UNKNOWN, DRAINED, message),
        child: Some(Phase::new(DRAINED, FALSE, "UpdateExecutedDrained", message)),
    }
}

/// `""` or `"not"`, as `update.go` fills `updatesNeeded` (the empty word leaves two spaces in the message, as
/// there).
fn need(yes: bool) -> &'static str {
    if yes {
        ""
    } else {
        "not"
    }
}

/// `pkg/daemon/update.go` `update`: writing files and OS (SSH keys never change in the simulator).
fn applying_files_and_os(os_update: bool) -> Step {
    Step {
        writer: Writer::Daemon,
        parent: Phase::new(
            UPDATE_EXECUTED,
            UNKNOWN,
            APPLIED_FILES_AND_OS,
            "Updating the Files and OS on disk as a part of the in progress phase",
        ),
        child: Some(Phase::new(
            APPLIED_FILES_AND_OS,
            UNKNOWN,
            "UpdateExecutedAppliedFilesAndOS",
            format!(
                "Applying files and new OS config to node. OS will {} need an update. SSH Keys will not need an update",
                need(os_update)
            ),
        )),
    }
}

/// `pkg/daemon/update.go` `update`: files and OS written.
fn applied_files_and_os(os_update: bool) -> Step {
    Step {
        writer: Writer::Daemon,
        parent: Phase::new(
            UPDATE_EXECUTED,
            TRUE,
            APPLIED_FILES_AND_OS,
            "Updated the Files and OS on disk as a part of the in progress phase",
        ),
        child: Some(Phase::new(
            APPLIED_FILES_AND_OS,
            TRUE,
            "UpdateExecutedAppliedFilesAndOS",
            format!(
                "Applied files and new OS config to node. OS did {} need an update. SSH Keys did not need an update",
                need(os_update)
            ),
        )),
    }
}

/// `pkg/daemon/update.go` `performPostConfigChangeNodeDisruptionAction`, action Reboot.
fn reboot_required() -> Step {
    daemon(Phase::new(REBOOTED_NODE, UNKNOWN, REBOOTED_NODE, "Upgrade requires a reboot."))
}

/// `update.go` `performPostConfigChangeNodeDisruptionAction`, action None.
fn no_reboot_required() -> Step {
    daemon(Phase::new(UPDATE_POST_ACTION_COMPLETE, TRUE, "None", "Changes do not require a reboot"))
}

/// `pkg/daemon/update.go` `reportMachineNodeDegradeStatus`, deferred in `update` (and `daemon.go`
/// `updateDegradedState` for errors outside it): the update's result.
fn degraded(node: &str, error: Option<&str>) -> Step {
    daemon(match error {
        None => Phase::new(NODE_DEGRADED, FALSE, NODE_DEGRADED, format!("Node {node} upgrade succeeded")),
        Some(error) => Phase::new(NODE_DEGRADED, TRUE, NODE_DEGRADED, format!("Node {node} upgrade failure. {error}")),
    })
}

/// `pkg/daemon/daemon.go` `syncNode`: the daemon finds the rebooting annotation after the reboot.
fn rebooted() -> Step {
    daemon(Phase::new(REBOOTED_NODE, TRUE, REBOOTED_NODE, "Node has rebooted"))
}

/// `pkg/daemon/daemon.go` `updateConfigAndState`: on the desired config, before completing the update.
fn resumed_applying(config: &str) -> Step {
    let message = format!("In desired config {config}. Resumed normal operations. Applying proper annotations.");
    daemon(Phase::new(RESUMED, TRUE, RESUMED, message))
}

/// `pkg/daemon/daemon.go` `syncNode`, the first sync after booting.
fn resumed(config: &str) -> Step {
    daemon(Phase::new(RESUMED, TRUE, RESUMED, format!("In desired config {config}. Resumed normal operations.")))
}

/// `pkg/controller/drain/drain_controller.go` `syncNode`, verb uncordon (`completeUpdate` asks for it on every
/// update); `unschedulable` is the node as the controller read it before the uncordon.
fn uncordoned(unschedulable: bool) -> Step {
    Step {
        writer: Writer::Controller,
        parent: Phase::new(UPDATE_COMPLETE, TRUE, UNCORDONED, "Uncordoned Node as part of completing upgrade phase"),
        child: Some(Phase::new(
            UNCORDONED,
            TRUE,
            "UpdateCompleteUncordoned",
            format!("UnCordoned node. The node is reporting Unschedulable = {unschedulable}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::super::conditions::{next, tests::at, tests::ON_4_20};
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;

    const ALL: [Stage; 7] = [
        Stage::Start,
        Stage::DrainStarted,
        Stage::Drained,
        Stage::Applying,
        Stage::Applied,
        Stage::Resuming,
        Stage::Completed,
    ];

    fn update(disruptive: bool) -> Update<'static> {
        Update {
            node: "worker-0",
            current: "rendered-worker-1",
            desired: "rendered-worker-2",
            disruptive,
            os_update: disruptive,
            was_cordoned: false,
        }
    }

    fn line(step: &Step) -> String {
        let phase = |p: &Phase| format!("{}={} {:?}", p.type_, p.status, p.message);
        match &step.child {
            None => phase(&step.parent),
            Some(child) => format!("{} + {}", phase(&step.parent), phase(child)),
        }
    }

    /// Every write of the update through [`next`], stage `i` at second `i`; the conditions after each stage.
    fn run(update: &Update<'_>, stages: &[Stage]) -> Vec<Vec<Condition>> {
        let mut conditions: Vec<Condition> = Vec::new();
        let mut after = Vec::new();
        for (i, stage) in stages.iter().enumerate() {
            for step in steps(update, stage) {
                let now = at(i as i64);
                if let Some(written) =
                    next(&conditions, &step.parent, step.child.as_ref(), update.desired, ON_4_20, &now)
                {
                    conditions = written;
                }
            }
            after.push(conditions.clone());
        }
        after
    }

    fn find<'a>(conditions: &'a [Condition], type_: &str) -> &'a Condition {
        conditions.iter().find(|c| c.type_ == type_).unwrap_or_else(|| panic!("no {type_}"))
    }

    #[test]
    fn an_update_with_a_reboot_writes_the_daemons_and_drain_controllers_sequence() {
        let lines: Vec<String> = ALL.iter().flat_map(|s| steps(&update(true), s)).map(|s| line(&s)).collect();
        assert_eq!(
            lines,
            [
                r#"Updated=False "Node worker-0 needs an update""#,
                r#"UpdatePrepared=True "Update Compatible. Post Cfg Actions: [] Drain Required: true""#,
                r#"UpdateExecuted=Unknown "Cordoned Node as part of update executed phase" + Cordoned=True "Cordoned node. The node is reporting Unschedulable = false""#,
                r#"UpdateExecuted=Unknown "Draining Node as part of update executed phase" + Drained=Unknown "Draining node. The drain will not be complete until desired drainer drain-rendered-worker-2 matches current drainer uncordon-rendered-worker-1""#,
                r#"UpdateExecuted=Unknown "Drained Node as part of update executed phase" + Drained=True "Drained node. The drain is complete as the desired drainer matches current drainer: drain-rendered-worker-2""#,
                r#"UpdateExecuted=Unknown "Updating the Files and OS on disk as a part of the in progress phase" + AppliedFilesAndOS=Unknown "Applying files and new OS config to node. OS will  need an update. SSH Keys will not need an update""#,
                r#"UpdateExecuted=True "Updated the Files and OS on disk as a part of the in progress phase" + AppliedFilesAndOS=True "Applied files and new OS config to node. OS did  need an update. SSH Keys did not need an update""#,
                r#"RebootedNode=Unknown "Upgrade requires a reboot.""#,
                r#"NodeDegraded=False "Node worker-0 upgrade succeeded""#,
                r#"RebootedNode=True "Node has rebooted""#,
                r#"Resumed=True "In desired config rendered-worker-2. Resumed normal operations. Applying proper annotations.""#,
                r#"UpdateComplete=True "Uncordoned Node as part of completing upgrade phase" + Uncordoned=True "UnCordoned node. The node is reporting Unschedulable = true""#,
                r#"Resumed=True "In desired config rendered-worker-2. Resumed normal operations.""#,
                r#"Updated=True "Node worker-0 Updated""#,
            ]
        );
        let writers: Vec<Writer> = [Stage::DrainStarted, Stage::Drained]
            .iter()
            .flat_map(|s| steps(&update(true), s))
            .map(|s| s.writer)
            .collect();
        assert_eq!(writers, [Writer::Controller; 3], "the drain controller cordons and drains");
    }

    #[test]
    fn the_drain_ends_before_the_reboot_and_the_end_resets_both() {
        let after = run(&update(true), &ALL);
        let draining = find(&after[1], DRAINED);
        assert_eq!((draining.status.as_str(), draining.reason.as_str()), (UNKNOWN, "UpdateExecutedDrained"));
        let drained = find(&after[2], DRAINED);
        assert_eq!((drained.status.as_str(), &drained.last_transition_time), (TRUE, &at(2)));
        assert_eq!(find(&after[4], REBOOTED_NODE).status, UNKNOWN);
        let rebooted = find(&after[5], REBOOTED_NODE);
        assert_eq!((rebooted.status.as_str(), &rebooted.last_transition_time), (TRUE, &at(5)));
        let end = &after[6];
        assert_eq!(find(end, UPDATED).status, TRUE);
        for type_ in [DRAINED, REBOOTED_NODE, CORDONED, UNCORDONED, RESUMED, UPDATE_PREPARED] {
            let c = find(end, type_);
            assert_eq!(c.status, FALSE, "{type_} reset");
            assert!(c.message.starts_with("Action during update to rendered-worker-2: "), "{}", c.message);
        }
        assert_eq!(find(end, NODE_DEGRADED).message, "Node worker-0 upgrade succeeded", "it was False already");
        assert_eq!(find(end, UPDATE_POST_ACTION_COMPLETE).reason, conditions::NOT_YET_OCCURRED);
    }

    #[test]
    fn a_rebootless_update_neither_drains_nor_reboots() {
        let lines: Vec<String> = ALL.iter().flat_map(|s| steps(&update(false), s)).map(|s| line(&s)).collect();
        assert!(lines.contains(
            &r#"UpdatePrepared=True "Update Compatible. Post Cfg Actions: [] Drain Required: false""#.to_string()
        ));
        assert!(lines.contains(&r#"UpdateExecuted=Unknown "Node Drain Not required for this update." + Drained=False "Node Drain Not required for this update.""#.to_string()));
        assert!(lines.contains(&r#"UpdatePostActionComplete=True "Changes do not require a reboot""#.to_string()));
        assert!(lines.iter().all(|l| !l.contains("RebootedNode") && !l.contains("Cordoned=")), "{lines:#?}");
        assert!(lines.iter().any(|l| l.contains("OS did not need an update")));
        let end = run(&update(false), &ALL).pop().unwrap_or_default();
        assert_eq!(find(&end, UPDATED).status, TRUE);
        assert_eq!(find(&end, REBOOTED_NODE).reason, conditions::NOT_YET_OCCURRED);
        assert_eq!(find(&end, UPDATE_POST_ACTION_COMPLETE).reason, "None");
    }

    #[test]
    fn a_failed_update_keeps_its_conditions_and_reports_the_reason() {
        let stages = [Stage::Start, Stage::DrainStarted, Stage::Drained, Stage::Applying, Stage::Failed("boom".into())];
        let end = run(&update(true), &stages).pop().unwrap_or_default();
        let degraded = find(&end, NODE_DEGRADED);
        assert_eq!(
            (degraded.status.as_str(), degraded.message.as_str()),
            (TRUE, "Node worker-0 upgrade failure. boom")
        );
        assert_eq!(find(&end, DRAINED).status, TRUE);
        assert_eq!(find(&end, APPLIED_FILES_AND_OS).status, UNKNOWN);
        assert_eq!(find(&end, UPDATED).status, FALSE);
    }
}
