//! The MutexRule controller: validates each rule's Job templates (JSON Schema, the shape Jobs need, a server-side
//! dry run of each Job with and without numo's anti-affinity), its job namespace against the operator's allow-list
//! and the ServiceAccounts its Jobs run as against their opt-in annotation, and reports `ValidConfig` and
//! `jobRenderings`. It changes nothing else in the cluster.
//!
//! Reconciles run when a rule's spec changes (a generation filter keeps its own status writes from triggering
//! it again) and when a ServiceAccount its Jobs would run as under an opt-in changes (a metadata-only watch); a
//! rule the apiserver rejected is looked at again every few minutes, since what the apiserver said (a missing
//! namespace, a quota) can change without the rule changing.

pub mod access;
pub mod observe;
pub mod plan;
pub mod renderings;
pub mod schema;
pub mod status;
pub mod verdict;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
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
    let (_, accounts) = watches
        .watch::<PartialObjectMeta<ServiceAccount>>("ServiceAccounts", watcher::Config::default().any_semantic());
    let depending = {
        let store = rules.clone();
        move |account: PartialObjectMeta<ServiceAccount>| depending_on(&store, &account)
    };
    Controller::for_stream(triggers, rules)
        .watches_stream(accounts.touched_objects(), depending)
        .run(reconcile, error_policy, Arc::new(ctx))
        .for_each(|result| async move {
            match result {
                Ok((rule, _)) => tracing::debug!(%rule, "reconciled"),
                Err(error) => tracing::warn!(%error, "reconcile failed"),
            }
        })
        .await;
}

/// The rules whose Jobs would run as `account` under an opt-in: they are judged again when it changes or goes.
fn depending_on(
    store: &Store<Guarded<MutexRule>>,
    account: &PartialObjectMeta<ServiceAccount>,
) -> Vec<ObjectRef<Guarded<MutexRule>>> {
    let (Some(namespace), Some(name)) = (account.metadata.namespace.as_deref(), account.metadata.name.as_deref())
    else {
        return Vec::new();
    };
    store
        .state()
        .iter()
        .filter(|guard| guard.0.as_ref().is_ok_and(|rule| access::depends_on(rule, namespace, name)))
        .map(|guard| ObjectRef::from_obj(guard.as_ref()))
        .collect()
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
        Step::Remote(remote) => {
            let namespace = rule.namespace().unwrap_or_default();
            let accounts = observe::service_accounts(&ctx.client, &remote.accounts).await?;
            match access::verdict(&namespace, &accounts) {
                Some(verdict) => verdict,
                None => renderings::verdict(&observe::dry_run(&ctx.client, &remote.runs).await?),
            }
        }
    };
    if status::write(ctx, rule, &verdict).await? {
        tracing::info!(valid = verdict.is_valid(), reason = verdict.reason.as_str(), message = %verdict.message, "status updated");
    }
    // A rejection (of either rendering) may be transient: a missing namespace, a quota, an admission webhook.
    Ok(match verdict.reason {
        plan::Reason::DryRunRejected
        | plan::Reason::AvoidTargetNodeRequired
        | plan::Reason::AvoidTargetNodeUnsupported => Action::requeue(RECHECK_REJECTED),
        _ => Action::await_change(),
    })
}

fn error_policy(_guard: Arc<Guarded<MutexRule>>, error: &Error, ctx: Arc<Context>) -> Action {
    ctx.metrics.reconcile_error(CONTROLLER, error);
    Action::requeue(error.retry_after())
}
