//! The run-config state machine as small pure steps: a [`Snapshot`] of the cluster in, the [`Plan`] (intents to
//! apply, the status to write, the Events to publish, when to look again) out. Every step of the rollout (claim and
//! pause the pools, label, gate, release, wait for the upgrade, clean up, restore) is decided here; `apply` only
//! carries the intents out, idempotently.
//!
//! The steps, each its own module: `resolve` validates into a typed [`resolve::Resolved`] configuration; `foreign`
//! notices and puts back what others changed of what numo holds; `trigger` is what `spec.trigger` decides, a strategy
//! per trigger: `rollout` (`Upgrade`) and `config_change` (`AnyConfigChange`) run the rollout, siblings that take the
//! steps they share from `shared_steps`; `node_state` derives each node's state once; `pools` writes the pools (claim,
//! steer, restore); `gate` holds, starts and moves nodes on, asking `readiness` what holds the next one; `record`
//! writes the per-node status; `stage` says where the rollout is and states every condition; `finalize` handles the end
//! and deletion; `next_minor` tells whether the workers held behind hold the cluster's next minor update. They write
//! into a `draft`; this module only composes them. Shared vocabulary (`intent`, `notice`, `node_state::GatedNode`, the
//! check names in `crate::api::check`, the phase table in `crate::api::node_phases`) sits below its users.
//!
//! The state a rollout needs lives in the cluster, so a restarted operator derives the same plan: which pools numo
//! drives and how they were before (pool annotations), which nodes are held (rule labels), which steps ran (Jobs
//! with deterministic names, and their results recorded in the status).

mod admin_hold;
mod canary;
mod config_change;
mod domains;
mod draft;
mod earlier_turn;
pub(crate) mod eta;
mod finalize;
mod finished;
mod foreign;
mod gate;
mod gated_index;
mod held;
mod intent;
mod learn;
mod next_minor;
mod node_reads;
mod node_state;
mod notice;
mod other_operator;
mod pools;
mod readiness;
mod record;
mod resolve;
mod rollout;
mod shared_steps;
mod stage;
mod target;
mod topology;
mod trigger;
mod untouched;

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::snapshot::Snapshot;
pub use crate::api::check;
use crate::api::{MutexRunConfigStatus, RunPhase, WindowTimes};
use crate::conditions;
use crate::windows;
use draft::Draft;
use foreign::Ledger;
pub use foreign::{as_is, written_after};
pub use gated_index::Kept;
pub use intent::{Intent, PoolPrecondition, PoolSpec, PutBack};
pub use node_reads::NodeReads;
pub use notice::{aggregated, Notice};
use resolve::Verdict;
pub use stage::condition;
use stage::Stage;
pub use topology::shown_domain;
/// The outcome of planning.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Changes to make before the status is written, in order; apply stops at the first failure.
    pub intents: Vec<Intent>,
    /// The status to write (not written when the run config is let go: [`Intent::RemoveFinalizer`]).
    pub status: MutexRunConfigStatus,
    /// Changes that need the status written first (Jobs let go once their results are recorded).
    pub after_status: Vec<Intent>,
    /// Events to publish.
    pub notices: Vec<Notice>,
    /// When to reconcile again without a change (a node's timeout, the end of a soak, a window's edge).
    pub requeue_after: Option<Duration>,
    /// What the checks ask before a node starts (never watched): ask, keep the answers in the snapshot and plan
    /// again (`on_demand`).
    pub asks: Vec<crate::controllers::run_config::checks::Question>,
    /// The projection of the rest of the rollout (each node's steps and times), when the estimate was worked out
    /// again in this plan.
    pub projection: Option<crate::estimate::Projected>,
    /// What of the nodes the next plan reads: the controller wakes the run config only for node changes to that.
    pub node_reads: NodeReads,
    /// The finished Jobs of the nodes in flight and of those that finished in this plan, for the metrics.
    pub finished_jobs: Vec<crate::api::JobRecord>,
}

impl Plan {
    /// The plan's writes before its status failed (a conflict, a refusal): the status it writes still records only
    /// the pools that carry this run config's claim in `snapshot` (the cluster as the plan read it), not those the
    /// plan set out to claim. A pool the record holds that is found without the claim reads as replaced by someone
    /// else; a claim that did not land is only tried again.
    pub fn writes_failed(&mut self, snapshot: &Snapshot) {
        let previous = &snapshot.run_config.status.held_pools;
        self.status.held_pools = held::track(previous, snapshot, &snapshot.run_config.key(), &[]);
    }
}

/// Plans one reconcile, working out from every node what a run config's plans keep between them (see
/// [`plan_kept`]). Under test, each test keeps it between its plans.
pub fn plan(snapshot: &Snapshot) -> Plan {
    #[cfg(test)]
    return KEPT.with(|kept| plan_kept(snapshot, kept));
    #[cfg(not(test))]
    plan_kept(snapshot, &Kept::default())
}

#[cfg(test)]
thread_local! {
    /// What a test's plans keep between them.
    static KEPT: Kept = Kept::default();
}

/// Plans one reconcile of a run config, with what its earlier plans kept (`kept`): the gated nodes are read from an
/// index brought up to date from the nodes that changed since, and those nothing touched yet and those done are
/// counted and listed, not read one by one (`untouched`).
pub fn plan_kept(snapshot: &Snapshot, kept: &Kept) -> Plan {
    let plan = plan_reading(snapshot, Some(kept));
    // Every plan the tests make is made a second time reading every node one by one, from an index worked out from
    // every node: what was kept and the nodes set apart change nothing in it.
    #[cfg(test)]
    {
        let whole = plan_reading(snapshot, None);
        assert_eq!(format!("{plan:#?}"), format!("{whole:#?}"), "what the planner kept changed the plan");
    }
    plan
}

/// [`plan_kept`]; with nothing kept, reading every gated node one by one.
fn plan_reading(snapshot: &Snapshot, kept: Option<&Kept>) -> Plan {
    if snapshot.run_config.deleting {
        let (intents, restoring) = finalize::plan(snapshot);
        let draft = Draft { intents, ledger: Ledger::default(), ..Draft::new(snapshot) };
        return finish(snapshot, draft, Stage::Deleting { restoring }, "");
    }
    let previous = &snapshot.run_config.status;
    let mut draft = Draft { every_node: kept.is_none(), ..Draft::new(snapshot) };
    if !snapshot.run_config.has_finalizer {
        draft.intents.push(Intent::AddFinalizer);
    }
    let owner = snapshot.run_config.key();
    // numo holds pools it claimed, and pools its record says it holds though their claim is gone (replaced, or
    // deleted and created again).
    let holding = snapshot.pools.values().any(|p| p.owner() == Some(owner.as_str())) || !previous.held_pools.is_empty();
    // Whatever else happens, what others changed of the pools numo holds goes back first.
    draft.put_back = foreign::pools(snapshot, &owner, &mut draft.ledger);
    let slot = std::cell::OnceCell::new();
    let resolved = match resolve::resolve(snapshot, kept, &slot) {
        Verdict::Valid(resolved) => resolved,
        Verdict::Awaiting(message) => return finish(snapshot, draft, Stage::Awaiting { message, holding }, ""),
        Verdict::Invalid(problems) => {
            let stage = Stage::Invalid { message: problems.join("; "), holding };
            if previous.phase != Some(RunPhase::Invalid) {
                draft.notices.push(Notice::warning("InvalidConfig", "Validate", stage.phase_and_message().1));
            }
            return finish(snapshot, draft, stage, "");
        }
    };
    // An admin's go-ahead for a target pool they paused before numo held it goes first.
    let (go_ahead, told) = admin_hold::go_ahead(snapshot, &resolved);
    draft.put_back.extend(go_ahead);
    draft.notices.extend(told);
    let mut validated =
        "Every MutexRule and MutexTarget exists and is valid, and the canary pool is usable.".to_string();
    for finding in &resolved.findings {
        validated.push(' ');
        validated.push_str(finding);
        validated.push('.');
    }
    let Some(version) = snapshot.cluster.as_ref().and_then(|c| c.target_version.clone()) else {
        return finish(snapshot, draft, Stage::NoClusterVersion { holding }, &validated);
    };
    let trigger = trigger::of(snapshot.run_config.spec.trigger);
    let stage = trigger.rollout(snapshot, &resolved, &version, holding, &mut draft);
    // The windows are shown (and numo wakes at their edges) whatever the stage.
    let verdict = readiness::windows_now(snapshot, &resolved.schedule);
    draft.status.next_window = verdict.next.as_ref().map(|(start, end)| WindowTimes {
        start: Time(windows::to_api(start)),
        end: end.as_ref().map(|end| Time(windows::to_api(end))),
    });
    if let Some(edge) = verdict.changes_at {
        let wait = (edge - windows::utc(&snapshot.now)).to_std().unwrap_or_default() + Duration::from_millis(50);
        draft.requeue_after = Some(draft.requeue_after.map_or(wait, |r| r.min(wait)));
    }
    let node_reads = trigger.node_reads(&stage, holding);
    Plan { node_reads, ..finish(snapshot, draft, stage, &validated) }
}

/// Puts the status together from the stage: phase, message, every condition, and the Events of a phase change.
fn finish(snapshot: &Snapshot, mut draft: Draft, stage: Stage, validated: &str) -> Plan {
    let previous = &snapshot.run_config.status;
    let (phase, message) = stage.phase_and_message();
    if previous.phase != Some(phase) && phase != RunPhase::Invalid {
        draft.notices.push(Notice::normal("PhaseChanged", "Reconcile", format!("{phase:?}: {message}")));
    }
    let generation = snapshot.run_config.generation;
    let now = Time(snapshot.now);
    let others = foreign::settle(draft.ledger, draft.put_back, draft.intents);
    let intents = others.intents;
    let mut notices = others.notices;
    notices.append(&mut draft.notices);
    notices.extend(foreign::policy_notice(snapshot));
    let mut status = draft.status;
    status.observed_generation = generation;
    status.phase = Some(phase);
    status.message = Some(message);
    status.foreign_changes = others.records;
    status.held_pools = held::track(&previous.held_pools, snapshot, &snapshot.run_config.key(), &intents);
    learn::rollout_end(snapshot, &mut status, phase);
    let mut record = draft.record;
    record.extend(learn::holds(snapshot, &mut status));
    let slow_at = eta::slow(snapshot, &mut status);
    let hold_at = eta::hold_refresh(snapshot, &status);
    let requeue_after = [draft.requeue_after, others.requeue_after, slow_at, hold_at].into_iter().flatten().min();
    let next_minor = next_minor::held(snapshot, &stage, &status);
    notices.extend(next_minor::notice(snapshot, next_minor.as_ref()));
    let other_operator = other_operator::waiting(snapshot, &status);
    notices.extend(other_operator::notice(snapshot, other_operator.as_ref()));
    let besides = stage::Besides {
        overdue: draft.overdue,
        contested: others.contested,
        policy: snapshot.policy.clone(),
        next_minor,
        other_operator,
    };
    let mut desired = stage.conditions(validated, &besides);
    // Whatever the stage, an unresolved foreign change holds the next node.
    if let Some(blocker) = others.blocker {
        let ready = desired
            .iter_mut()
            .find(|d| d.type_ == condition::READY_FOR_NEXT_NODE && d.status == conditions::Status::True);
        if let Some(ready) = ready {
            *ready =
                conditions::Desired::false_(condition::READY_FOR_NEXT_NODE, "ForeignChange", blocker.message.clone());
        }
        if !status.blocked_by.iter().any(|b| b.check == blocker.check) {
            status.blocked_by.push(blocker);
        }
    }
    status.conditions = conditions::merge(&previous.conditions, &desired, generation, &now);
    let mut after_status = if draft.release_jobs { finalize::release_deleted_jobs(snapshot) } else { Vec::new() };
    // The timeline's record never holds the rollout up: it is written after the status, and a failure is logged.
    after_status.extend(learn::record(snapshot, &status, record));
    Plan {
        intents,
        status,
        after_status,
        notices,
        requeue_after,
        asks: draft.asks,
        projection: draft.projection,
        node_reads: NodeReads::Everything,
        finished_jobs: draft.finished_jobs,
    }
}

#[cfg(test)]
mod tests;
