//! The MutexTarget controller: checks that every listed MachineConfigPool exists and keeps `status.nodes` equal to
//! the nodes those pools hold, as the Machine Config Operator decides membership (`crate::membership`).
//!
//! Kept current by watches, not by a resync: a metadata-only watch on nodes and a watch on pools fill shared
//! caches, and only a change of a node's labels, of a pool's effective selector, or a node/pool coming or going
//! re-gathers every target (targets are few; each reconcile reads the caches, makes no list call, and writes
//! status only when it changed). Node heartbeats and pool status updates cause no reconcile.

pub mod observe;
pub mod plan;
pub mod status;
pub mod triggers;

use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{future, Stream, StreamExt};
use k8s_openapi::api::core::v1::Node;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::{Action, Config};
use kube::runtime::reflector::Store;
use kube::runtime::{predicates, watcher, Controller, WatchStreamExt};
use kube::{Resource, ResourceExt};
use tracing::instrument;

use crate::api::MutexTarget;
use crate::guard::Guarded;
use crate::openshift::MachineConfigPool;
use crate::watches::Watches;
use crate::{Context, Error, Result};
use triggers::{hash_json, hash_of, labels_fingerprint, ChangeFilter};

/// The controller's name in metrics, logs and readiness.
pub const CONTROLLER: &str = "mutex_target";
/// The field manager of the status of a malformed target.
const MALFORMED_FIELD_MANAGER: &str = "numo-mutex-target-malformed";
/// Bursts of node label changes (a rollout labels many nodes at once) are gathered into one reconcile.
const DEBOUNCE: Duration = Duration::from_millis(100);

/// What the reconcile reads: the shared context and the watch caches of nodes and pools.
struct TargetContext {
    ctx: Context,
    nodes: Store<Guarded<PartialObjectMeta<Node>>>,
    pools: Store<Guarded<MachineConfigPool>>,
    /// The watches behind the caches, to wait for their first full lists.
    watches: Watches,
}

/// Runs the controller until the process shuts down.
pub async fn run(ctx: Context) {
    let watches = Watches::new(CONTROLLER, ctx.client.clone(), ctx.readiness.clone());
    let any = watcher::Config::default().any_semantic();
    // `PartialObjectMeta<Node>`: metadata only (what kube 5 made of `metadata_watcher`).
    let (nodes, node_events) = watches.watch::<Guarded<PartialObjectMeta<Node>>>("Nodes", any.clone());
    let (pools, pool_events) = watches.watch::<Guarded<MachineConfigPool>>("MachineConfigPools", any.clone());
    let (targets, target_events) = watches.watch::<Guarded<MutexTarget>>("MutexTargets", any);

    let node_triggers =
        changes(node_events, ChangeFilter::new(|n: &Guarded<PartialObjectMeta<Node>>| labels_fingerprint(n.labels())));
    let pool_triggers = changes(pool_events, ChangeFilter::new(pool_fingerprint));
    let target_triggers = target_events.applied_objects().predicate_filter(predicates::generation, Default::default());
    let context = Arc::new(TargetContext { ctx, nodes, pools, watches });
    Controller::for_stream(target_triggers, targets)
        .with_config(Config::default().debounce(DEBOUNCE))
        .reconcile_all_on(futures::stream::select(node_triggers, pool_triggers))
        .run(reconcile, error_policy, context)
        .for_each(|result| async move {
            match result {
                Ok((target, _)) => tracing::debug!(%target, "reconciled"),
                Err(error) => tracing::warn!(%error, "reconcile failed"),
            }
        })
        .await;
}

/// One `()` per watch event that changes what targets see (the watches never yield an error).
fn changes<K, F>(
    events: impl Stream<Item = Result<watcher::Event<K>, watcher::Error>>,
    mut filter: ChangeFilter<K, F>,
) -> impl Stream<Item = ()>
where
    K: kube::Resource,
    F: Fn(&K) -> u64,
{
    events.filter_map(move |event| future::ready(event.ok().filter(|event| filter.observe(event)).map(|_| ())))
}

/// What of a pool decides membership: its effective node selector (or, unreadable, its parse error).
fn pool_fingerprint(guard: &Guarded<MachineConfigPool>) -> u64 {
    match &guard.0 {
        Ok(pool) => hash_json(&crate::membership::effective_node_selector(pool)),
        Err(invalid) => hash_of(&invalid.error),
    }
}

/// Gathers one target's node list and writes its status.
#[instrument(skip_all, fields(target = %guard.name_any(), namespace = guard.namespace().unwrap_or_default()))]
async fn reconcile(guard: Arc<Guarded<MutexTarget>>, context: Arc<TargetContext>) -> Result<Action> {
    let started = Instant::now();
    let ctx = &context.ctx;
    let result = match &guard.0 {
        Ok(target) => reconcile_target(target, &context).await,
        Err(invalid) => {
            tracing::warn!(error = %invalid.error, "malformed MutexTarget");
            crate::controllers::malformed::report(ctx, &guard, invalid, plan::VALID_CONFIG, MALFORMED_FIELD_MANAGER)
                .await
                .map(|()| Action::await_change())
        }
    };
    ctx.metrics.reconcile_duration(CONTROLLER, started.elapsed().as_secs_f64());
    result
}

async fn reconcile_target(target: &MutexTarget, context: &TargetContext) -> Result<Action> {
    // Before the caches hold their first full list, an empty cache would read as "no pools, no nodes".
    context.watches.wait_listed().await;
    let pools = observe::pools(&context.pools);
    let nodes = observe::nodes(&context.nodes);
    let plan = plan::plan(
        &target.spec.machine_config_pools,
        &pools,
        nodes.iter().map(|n| (n.meta().name.as_deref().unwrap_or_default(), n.labels())),
    );
    if status::write(&context.ctx, target, &plan).await? {
        tracing::info!(nodes = plan.nodes.len(), missing = ?plan.missing, "status updated");
    }
    Ok(Action::await_change())
}

fn error_policy(_guard: Arc<Guarded<MutexTarget>>, error: &Error, context: Arc<TargetContext>) -> Action {
    context.ctx.metrics.reconcile_error(CONTROLLER, error);
    Action::requeue(error.retry_after())
}
