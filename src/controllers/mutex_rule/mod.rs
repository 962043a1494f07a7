//! The MutexRule controller: validates each rule's Job templates (JSON Schema, the shape Jobs need, a server-side
//! dry run) and its job namespace against the operator's allow-list, and reports `ValidConfig`. It changes nothing
//! else in the cluster.
//!
//! Reconciles run when a rule's spec changes (a generation filter keeps its own status writes from triggering
//! it again); a rule the apiserver rejected is looked at again every few minutes, since what the apiserver said
//! (a missing namespace, a quota) can change without the rule changing.

pub mod observe;
pub mod plan;
pub mod schema;
pub mod status;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use kube::runtime::controller::Action;
use kube::runtime::{predicates, watcher, Controller, WatchStreamExt};
use kube::ResourceExt;
use tracing::instrument;

use crate::api::MutexRule;
use crate::guard::Guarded;
use crate::watches::Watches;
use crate::{Context, Error, Result};
use plan::{Step, Verdict};

/// The controller's name in metrics, logs and readiness.
pub const CONTROLLER: &str = "mutex_rule";
/// How soon a rule the apiserver rejected is checked again.
const RECHECK_REJECTED: Duration = Duration::from_secs(300);
/// The field manager of the status of a malformed rule.
const MALFORMED_FIELD_MANAGER: &str = "numo-mutex-rule-malformed";

/// Runs the controller until the process shuts down.
pub async fn run(ctx: Context) {
    let watches = Watches::new(CONTROLLER, ctx.client.clone(), ctx.readiness.clone());
    let (rules, events) = watches.watch::<Guarded<MutexRule>>("MutexRules", watcher::Config::default().any_semantic());
    let triggers = events.applied_objects().predicate_filter(predicates::generation, Default::default());
    Controller::for_stream(triggers, rules)
        .run(reconcile, error_policy, Arc::new(ctx))
        .for_each(|result| async move {
            match result {
                Ok((rule, _)) => tracing::debug!(%rule, "reconciled"),
                Err(error) => tracing::warn!(%error, "reconcile failed"),
            }
        })
        .await;
}

/// Validates one rule and writes its status.
#[instrument(skip_all, fields(rule = %guard.name_any(), namespace = guard.namespace().unwrap_or_default()))]
async fn reconcile(guard: Arc<Guarded<MutexRule>>, ctx: Arc<Context>) -> Result<Action> {
    let started = Instant::now();
    let result = match &guard.0 {
        Ok(rule) => reconcile_rule(rule, &ctx).await,
        Err(invalid) => {
            tracing::warn!(error = %invalid.error, "malformed MutexRule");
            crate::controllers::malformed::report(&ctx, &guard, invalid, plan::VALID_CONFIG, MALFORMED_FIELD_MANAGER)
                .await
                .map(|()| Action::await_change())
        }
    };
    ctx.metrics.reconcile_duration(CONTROLLER, started.elapsed().as_secs_f64());
    result
}

async fn reconcile_rule(rule: &MutexRule, ctx: &Context) -> Result<Action> {
    let verdict: Verdict = match plan::check(rule, &ctx.config)? {
        Step::Invalid(verdict) => verdict,
        Step::DryRun(runs) => plan::verdict(&observe::dry_run(&ctx.client, &runs).await?),
    };
    if status::write(ctx, rule, &verdict).await? {
        tracing::info!(valid = verdict.is_valid(), reason = verdict.reason.as_str(), message = %verdict.message, "status updated");
    }
    Ok(match verdict.reason {
        plan::Reason::DryRunRejected => Action::requeue(RECHECK_REJECTED),
        _ => Action::await_change(),
    })
}

fn error_policy(_guard: Arc<Guarded<MutexRule>>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconcile_error(CONTROLLER, error);
    Action::requeue(error.retry_after())
}
