//! The MutexRunConfig controller: the whole gated rollout. `sources` watches what the planner reads (a row per kind:
//! its cache and whom a change wakes), `observe` reads those caches into a [`snapshot::Snapshot`], `plan` (pure)
//! decides, `apply` carries the intents out idempotently, `status` writes what happened and publishes Events.

pub mod apply;
pub mod checks;
mod claimed_pools;
mod created_jobs;
mod custom_sources;
mod drain_wakes;
mod kept_plans;
mod malformed;
pub mod node_interest;
pub mod node_labels;
pub mod node_map;
pub mod node_views;
pub mod observe;
pub mod on_demand;
pub mod plan;
mod predicates;
pub mod preview;
pub mod snapshot;
mod sources;
pub mod status;
pub mod version;

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::Controller;
use kube::{Resource, ResourceExt};
use tracing::instrument;

use crate::api::MutexRunConfig;
use crate::guard;
use crate::watches::Watches;
use crate::{Context, Error, Result};

/// The name of this controller in metrics and logs.
pub const CONTROLLER: &str = "mutexrunconfig";

/// What the reconciler shares: the operator context and the watch-fed caches.
struct RunConfigContext {
    ctx: Context,
    stores: observe::Stores,
    /// The watches behind the caches, to wait for their first full lists.
    watches: Watches,
    /// The status each run config was last written with, until the cache shows it.
    written: status::Written,
    /// What each run config's next plan reads of the nodes, so that a node event wakes only the ones it concerns.
    interest: node_interest::NodeInterest,
    /// The Jobs numo created that the cache does not show yet: never created twice.
    created: created_jobs::CreatedJobs,
    /// The pools numo claimed that the cache may not show claimed yet: never read as replaced.
    claimed: claimed_pools::ClaimedPools,
    /// What each run config's plans keep between them: a plan after one node event reads that node again, not all.
    kept: kept_plans::KeptPlans,
}

type Guarded = guard::Guarded<MutexRunConfig>;

/// Runs the controller until the process shuts down.
pub async fn run(ctx: Context) {
    let watches = Watches::new(CONTROLLER, ctx.client.clone(), ctx.readiness.clone());
    let sources::Watching { run_config_events, stores, wakes, interest } = sources::watch(&watches, ctx.client.clone());
    let mut controller = Controller::for_stream(run_config_events, stores.run_configs.clone());
    for wake in wakes {
        controller = controller.reconcile_on(wake);
    }
    // Whether numo-holds is in force is told in every run config's ForeignWritesRefused condition.
    let controller = controller.reconcile_all_on(ctx.policy.changes()).shutdown_on_signal();
    let shared = Arc::new(RunConfigContext {
        ctx,
        stores,
        watches,
        written: Default::default(),
        interest,
        created: Default::default(),
        claimed: Default::default(),
        kept: Default::default(),
    });
    controller
        .run(reconcile, error_policy, shared)
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "run-config reconcile did not complete");
            }
        })
        .await;
}

#[instrument(skip_all, fields(run_config = %obj.meta().name.as_deref().unwrap_or_default(),
    namespace = %obj.meta().namespace.as_deref().unwrap_or_default()))]
async fn reconcile(obj: Arc<Guarded>, shared: Arc<RunConfigContext>) -> Result<Action> {
    let started = std::time::Instant::now();
    // Before every watch delivered its first list, a half-filled cache would read as missing pools or nodes.
    shared.watches.wait_listed().await;
    let rc = match &obj.0 {
        Ok(rc) => rc,
        Err(invalid) => return malformed::reconcile(&shared.ctx, &shared.stores, &obj, invalid).await,
    };
    // Plan from the status numo wrote last, even if the cache has not shown it yet.
    let latest = shared.written.latest(rc);
    let rc = latest.as_ref().unwrap_or(rc);
    let mut snapshot = observe::snapshot(&shared.stores, rc, Timestamp::now());
    snapshot.pools_behind = shared.claimed.behind(&snapshot.pools, std::time::Instant::now());
    // Just started, numo holds no projection for the console's timeline: the plan gives one even if the estimate
    // stands.
    let rollout = rc.status.as_ref().and_then(|s| s.rollout_key());
    snapshot.project = !shared.ctx.projections.holds(&rc.namespace().unwrap_or_default(), &rc.name_any(), rollout);
    snapshot.policy = shared.ctx.policy.get().map(|status| match status {
        crate::admission_policy::PolicyStatus::InForce => Ok(()),
        crate::admission_policy::PolicyStatus::Unavailable(why) => Err(why),
    });
    // A node would start and a check needs what numo only asks for at that moment (never watched): the pods on
    // those nodes that a PodDisruptionBudget at zero covers, and the alerts that fire. Asked, then planned again.
    let ask = on_demand::Operator { client: &shared.ctx.client, alertmanager: &shared.ctx.config.alertmanager };
    let kept = shared.kept.of(&snapshot.run_config.key());
    let mut plan = on_demand::plan(&mut snapshot, &ask, &kept).await;
    if plan.status.blocked_by.iter().any(|b| b.check == crate::api::check::ALERTS) {
        // Alerts and silences come without an event: ask again after a while, as long as alerts hold the rollout.
        let poll = shared.ctx.config.alertmanager.poll_interval;
        plan.requeue_after = Some(plan.requeue_after.map_or(poll, |r| r.min(poll)));
    }
    tracing::debug!(intents = plan.intents.len(), phase = ?plan.status.phase, "planned");
    if let Some(projected) = &plan.projection {
        let (namespace, name) = (rc.namespace().unwrap_or_default(), rc.name_any());
        shared.ctx.projections.keep(&namespace, &name, plan.status.rollout_key(), projected.clone());
    }
    shared.interest.planned(&snapshot.run_config.key(), plan.node_reads);
    // What only numo's status may vouch for goes out once that status is written: the Jobs numo asks for (the status
    // names them first) and the restore of the pools (the status stops holding them first, so a pool without its
    // claim never looks replaced while the status still holds it), with every write after the first restore.
    let letting_go_now = plan.intents.contains(&plan::Intent::RemoveFinalizer);
    let restores = (!letting_go_now)
        .then(|| plan.intents.iter().position(|i| matches!(i, plan::Intent::RestorePool { .. })))
        .flatten()
        .unwrap_or(plan.intents.len());
    let (before, after) = plan.intents.split_at(restores);
    let (mut vouched, writes): (Vec<plan::Intent>, Vec<plan::Intent>) =
        before.iter().cloned().partition(|i| matches!(i, plan::Intent::CreateJob(_)));
    vouched.extend(after.iter().cloned());
    // A Job numo created and the cache does not show yet is not created again.
    shared.created.saw(&snapshot.jobs, std::time::Instant::now());
    let vouched = shared.created.not_created(vouched);
    let applied = apply::apply(&shared.ctx.client, rc, &snapshot, &writes).await;
    if applied.is_ok() {
        shared.claimed.claimed(&writes, std::time::Instant::now());
    }
    if let Err(failed) = &applied {
        // The status records the pools that carry numo's claim, not the claims that did not land.
        plan.writes_failed(&snapshot);
        if !matches!(failed.error, Error::Conflict(_)) {
            // A refused write (a webhook, a quota, RBAC) is said in the status and an Event, not only in the log.
            let note = format!("Could not {}: {}; numo retries.", failed.what, failed.error);
            plan.status.message = Some(format!("{} {note}", plan.status.message.as_deref().unwrap_or_default()));
            plan.notices.push(plan::Notice::warning("WriteFailed", "Apply", note));
        }
    }
    // Events are queued before the status is written, so they are on their way when the status shows the transition.
    status::log_transitions(rc, &plan);
    status::publish(&shared.ctx.recorder, rc, &plan.notices);
    let letting_go = applied.is_ok() && plan.intents.contains(&plan::Intent::RemoveFinalizer);
    if letting_go {
        shared.ctx.metrics.forget_run_config(&snapshot.run_config.key());
        shared.written.forget(rc);
        shared.interest.forget(&snapshot.run_config.key());
        shared.kept.forget(&snapshot.run_config.key());
        shared.ctx.projections.forget(&rc.namespace().unwrap_or_default(), &rc.name_any());
        return Ok(Action::await_change());
    }
    status::write(&shared.ctx.client, &shared.ctx.metrics, &shared.written, rc, &plan.status).await?;
    let vouched = match (&applied, vouched.is_empty()) {
        (Ok(()), false) => {
            let done = apply::apply(&shared.ctx.client, rc, &snapshot, &vouched).await;
            if done.is_ok() {
                shared.created.created(&vouched, std::time::Instant::now());
            }
            done
        }
        _ => Ok(()),
    };
    if let Err(failed) = &vouched {
        if !matches!(failed.error, Error::Conflict(_)) {
            // As any refused write: said in the status and an Event (the status is written again, on this path only).
            // A Job not created stays requested and a restore that failed keeps the pool's claim: the next plan
            // creates or restores again.
            let note = format!("Could not {}: {}; numo retries.", failed.what, failed.error);
            plan.status.message = Some(format!("{} {note}", plan.status.message.as_deref().unwrap_or_default()));
            status::publish(&shared.ctx.recorder, rc, &[plan::Notice::warning("WriteFailed", "Apply", note)]);
            status::write(&shared.ctx.client, &shared.ctx.metrics, &shared.written, rc, &plan.status).await?;
        }
    }
    let applied = applied.and(vouched);
    if applied.is_ok() {
        if let Err(failed) = apply::apply(&shared.ctx.client, rc, &snapshot, &plan.after_status).await {
            tracing::warn!(error = %failed.error, "could not {}", failed.what);
        }
    }
    status::record_metrics(&shared.ctx.metrics, rc, &plan.status, &plan.finished_jobs, snapshot.now);
    shared.ctx.metrics.reconcile_duration(CONTROLLER, started.elapsed().as_secs_f64());
    applied.map_err(|failed| failed.error)?;
    Ok(plan.requeue_after.map_or_else(Action::await_change, Action::requeue))
}

fn error_policy(_obj: Arc<Guarded>, error: &Error, shared: Arc<RunConfigContext>) -> Action {
    tracing::warn!(%error, "run-config reconcile failed");
    shared.ctx.metrics.reconcile_error(CONTROLLER, error);
    Action::requeue(error.retry_after())
}
