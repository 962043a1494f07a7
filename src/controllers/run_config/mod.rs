//! The MutexRunConfig controller: the whole gated rollout. `observe` reads the cluster (from watch-fed caches) into a
//! [`snapshot::Snapshot`], `plan` (pure) decides, `apply` carries the intents out idempotently, `status` writes what
//! happened and publishes Events.

pub mod apply;
pub mod checks;
mod created_jobs;
mod custom_sources;
mod drain_wakes;
mod malformed;
pub mod node_interest;
pub mod node_views;
pub mod observe;
pub mod on_demand;
pub mod plan;
mod predicates;
pub mod preview;
pub mod snapshot;
pub mod status;
pub mod version;

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use kube::core::PartialObjectMeta;
use kube::runtime::controller::Action;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{watcher, Controller, WatchStreamExt};
use kube::{Resource, ResourceExt};
use tracing::instrument;

use crate::api::{MutexRule, MutexRunConfig, MutexTarget};
use crate::cached_job::CachedJob;
use crate::guard;
use crate::labels;
use crate::openshift::{
    self, ClusterOperator, ClusterVersion, MachineConfig, MachineConfigNode, MachineConfigPool, MachineOSConfig,
    StorageCluster,
};
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
}

type Guarded = guard::Guarded<MutexRunConfig>;

/// Runs the controller until the process shuts down.
pub async fn run(ctx: Context) {
    let watches = Watches::new(CONTROLLER, ctx.client.clone(), ctx.readiness.clone());
    let any = watcher::Config::default().any_semantic();
    let the_cluster_version = any.clone().fields(&format!("metadata.name={}", openshift::CLUSTER_VERSION_NAME));
    let numo_jobs = any.clone().labels(&format!("{}={}", labels::JOB_MANAGED_BY, labels::MANAGER));
    let (run_configs, rc_events) = watches.watch::<Guarded>("MutexRunConfigs", any.clone());
    let (rules, rule_events) = watches.watch::<guard::Guarded<MutexRule>>("MutexRules", any.clone());
    let (targets, target_events) = watches.watch::<guard::Guarded<MutexTarget>>("MutexTargets", any.clone());
    // Who set a pool's paused flag and selector is kept, to name whoever changes what numo holds.
    let (pools, pool_events) = watches.watch_keeping_writers(
        "MachineConfigPools",
        any.clone(),
        |_: &mut guard::Guarded<MachineConfigPool>| {},
        crate::field_managers::POOL_FIELDS,
    );
    let (nodes, node_events) = watches.watch_trimmed("Nodes", any.clone(), crate::trim::node);
    let (machine_configs, mc_events) =
        watches.watch::<guard::Guarded<PartialObjectMeta<MachineConfig>>>("MachineConfigs", any.clone());
    let (cluster_versions, cv_events) =
        watches.watch::<guard::Guarded<ClusterVersion>>("ClusterVersions", the_cluster_version);
    let (jobs, job_events) = watches.watch::<guard::Guarded<CachedJob>>("Jobs", numo_jobs);
    let (cluster_operators, co_events) =
        watches.watch_optional::<guard::Guarded<ClusterOperator>>(observe::CLUSTER_OPERATORS, any.clone());
    let (budgets, budget_events) =
        watches.watch_optional::<guard::Guarded<PodDisruptionBudget>>(observe::BUDGETS, any.clone());
    let (machine_os_configs, mosc_events) =
        watches.watch_optional::<guard::Guarded<MachineOSConfig>>(observe::MACHINE_OS_CONFIGS, any.clone());
    let checked = checks::conditions_read(snapshot::Watched::MachineConfigNode);
    let (machine_config_nodes, mcn_events) = watches.watch_optional_trimmed::<guard::Guarded<MachineConfigNode>, _>(
        observe::MACHINE_CONFIG_NODES,
        any.clone(),
        move |progress| crate::trim::machine_config_node(progress, checked),
    );
    let (storage_clusters, storage_events) =
        watches.watch_optional::<guard::Guarded<StorageCluster>>(observe::STORAGE_CLUSTERS, any.clone());

    let all = {
        let store = run_configs.clone();
        move || all_run_configs(&store)
    };
    let (all_for_pools, all_for_mcs, all_for_cv, all_for_moscs) = (all.clone(), all.clone(), all.clone(), all.clone());
    let (all_for_storage, all_for_skew) = (all.clone(), all);
    let interest = node_interest::NodeInterest::default();
    let waking = {
        let (store, configs, interest) = (run_configs.clone(), machine_configs.clone(), interest.clone());
        move |node: guard::Guarded<Node>| interest.woken_by(&store, &configs, &node)
    };
    let checking = {
        let store = run_configs.clone();
        move || checking_health(&store)
    };
    // Each MachineConfigNode event goes two ways: a drain's end, and the conditions the health checks read.
    let (progress_checked, progress_to_check) = futures::channel::mpsc::unbounded();
    let drains = drain_wakes::late(
        mcn_events
            .touched_objects()
            .inspect(move |event| {
                if let Ok(progress) = event {
                    // The receiver lives as long as the controller.
                    let _ = progress_checked.unbounded_send(progress.clone());
                }
            })
            .predicate_filter(predicates::drain_predicate, Default::default()),
        run_configs.clone(),
    );
    let checked_progress = {
        let store = run_configs.clone();
        progress_to_check
            .map(Ok::<_, watcher::Error>)
            .predicate_filter(predicates::checked_conditions_predicate, Default::default())
            .filter_map(|event| std::future::ready(event.ok()))
            .flat_map(move |_| futures::stream::iter(reading(&store, snapshot::Watched::MachineConfigNode)))
    };
    let checking_for_budgets = checking.clone();
    let (custom, custom_changes) = custom_sources::CustomSources::new(ctx.client.clone());
    let custom_triggers = {
        let store = run_configs.clone();
        custom_changes.flat_map(move |key| futures::stream::iter(checking_source(&store, &key)))
    };
    let referencing_rule = {
        let store = run_configs.clone();
        move |rule: guard::Guarded<MutexRule>| referencing(&store, &rule, |spec| &spec.mutex_rules)
    };
    let referencing_target = {
        let store = run_configs.clone();
        move |target: guard::Guarded<MutexTarget>| referencing(&store, &target, |spec| &spec.mutex_targets)
    };
    let controller = Controller::for_stream(
        rc_events.applied_objects().predicate_filter(predicates::run_config_predicate, Default::default()),
        run_configs.clone(),
    )
    .watches_stream(rule_events.touched_objects(), referencing_rule)
    .watches_stream(target_events.touched_objects(), referencing_target)
    .watches_stream(
        pool_events.touched_objects().predicate_filter(predicates::pool_predicate, Default::default()),
        move |_| all_for_pools(),
    )
    .watches_stream(
        node_events.touched_objects().predicate_filter(predicates::node_predicate, Default::default()),
        waking,
    )
    .watches_stream(
        mc_events.touched_objects().predicate_filter(predicates::machine_config_predicate, Default::default()),
        move |_| all_for_mcs(),
    )
    .watches_stream(cv_events.touched_objects(), move |_| all_for_cv())
    .watches_stream(mosc_events.touched_objects(), move |_| all_for_moscs())
    .watches_stream(
        storage_events.touched_objects().predicate_filter(predicates::storage_predicate, Default::default()),
        move |_| all_for_storage(),
    )
    .watches_stream(
        job_events.touched_objects().predicate_filter(predicates::job_predicate, Default::default()),
        job_owner,
    )
    .watches_stream(
        co_events.touched_objects().predicate_filter(predicates::operator_predicate, Default::default()),
        // Every run config tells whether kubelet skew holds the next minor update (condition NextMinorUpdateHeld).
        move |co| match co.meta().name.as_deref() == Some(openshift::KUBE_APISERVER) {
            true => all_for_skew(),
            false => checking(),
        },
    )
    .watches_stream(
        budget_events.touched_objects().predicate_filter(predicates::budget_predicate, Default::default()),
        move |_| checking_for_budgets(),
    )
    .reconcile_on(custom_triggers)
    .reconcile_on(checked_progress)
    .reconcile_on(drains)
    // Whether numo-holds is in force is told in every run config's ForeignWritesRefused condition.
    .reconcile_all_on(ctx.policy.changes())
    .shutdown_on_signal();

    let stores = observe::Stores {
        run_configs,
        rules,
        targets,
        pools,
        nodes,
        machine_configs,
        cluster_versions,
        jobs,
        cluster_operators,
        budgets,
        machine_os_configs,
        machine_config_nodes,
        storage_clusters,
        sources: watches.sources(),
        custom: Some(custom),
        node_views: Default::default(),
        job_views: Default::default(),
    };
    let shared = Arc::new(RunConfigContext {
        ctx,
        stores,
        watches,
        written: Default::default(),
        interest,
        created: Default::default(),
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

fn all_run_configs(store: &Store<Guarded>) -> Vec<ObjectRef<Guarded>> {
    store.state().iter().map(|rc| ObjectRef::from_obj(rc.as_ref())).collect()
}

/// The run configs with health checks (the only readers of ClusterOperators and PodDisruptionBudgets).
fn checking_health(store: &Store<Guarded>) -> Vec<ObjectRef<Guarded>> {
    store
        .state()
        .iter()
        .filter(|rc| rc.0.as_ref().is_ok_and(|rc| rc.spec.health_checks.is_some()))
        .map(|rc| ObjectRef::from_obj(rc.as_ref()))
        .collect()
}

/// The run configs with a health check switched on that reads conditions of `kind`.
fn reading(store: &Store<Guarded>, kind: snapshot::Watched) -> Vec<ObjectRef<Guarded>> {
    store
        .state()
        .iter()
        .filter(|rc| {
            let checks = rc.0.as_ref().ok().and_then(|rc| rc.spec.health_checks.as_ref());
            checks.is_some_and(|checks| checks::reads_of(checks).iter().any(|read| read.kind == kind))
        })
        .map(|rc| ObjectRef::from_obj(rc.as_ref()))
        .collect()
}

/// The run configs with a custom check that reads `key`.
fn checking_source(store: &Store<Guarded>, key: &custom_sources::SourceKey) -> Vec<ObjectRef<Guarded>> {
    store
        .state()
        .iter()
        .filter(|rc| {
            rc.0.as_ref().is_ok_and(|rc| {
                let custom = rc.spec.health_checks.as_ref().map(|h| h.custom.as_slice()).unwrap_or_default();
                custom.iter().any(|check| custom_sources::SourceKey::of(check) == *key)
            })
        })
        .map(|rc| ObjectRef::from_obj(rc.as_ref()))
        .collect()
}

/// The run configs whose spec references `obj` (a rule or target).
fn referencing<K: Resource>(
    store: &Store<Guarded>,
    obj: &K,
    refs: impl Fn(&crate::api::MutexRunConfigSpec) -> &Vec<crate::api::ObjectReference>,
) -> Vec<ObjectRef<Guarded>> {
    let (Some(name), Some(namespace)) = (obj.meta().name.as_deref(), obj.meta().namespace.as_deref()) else {
        return Vec::new();
    };
    store
        .state()
        .iter()
        .filter(|guard| match &guard.0 {
            Ok(rc) => {
                let own = rc.namespace().unwrap_or_default();
                refs(&rc.spec).iter().any(|r| r.name == name && r.namespace_or(&own) == namespace)
            }
            Err(_) => false,
        })
        .map(|rc| ObjectRef::from_obj(rc.as_ref()))
        .collect()
}

/// The run config a Job belongs to, from its annotation (its labels may be shortened with a hash).
fn job_owner(job: guard::Guarded<CachedJob>) -> Option<ObjectRef<Guarded>> {
    let run_config = match &job.0 {
        Ok(job) => job.run_config.clone()?,
        Err(invalid) => crate::cached_job::run_config_of(&invalid.metadata)?,
    };
    let (namespace, name) = run_config.split_once('/')?;
    Some(ObjectRef::new(name).within(namespace))
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
    let mut plan = on_demand::plan(&mut snapshot, &ask).await;
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
    if let Err(failed) = &applied {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_wakes_its_run_config_even_when_the_name_is_too_long_for_a_label() {
        let name = "a-run-config-whose-name-is-much-longer-than-a-label-value-may-ever-be";
        let job: CachedJob = serde_json::from_value(serde_json::json!({
            "metadata": {
                "name": "check-0123456789",
                "namespace": "ops",
                "labels": {labels::JOB_RUN_CONFIG: labels::label_value(name)},
                "annotations": {crate::jobs::RUN_CONFIG_ANNOTATION: format!("ops/{name}")},
            }
        }))
        .unwrap_or_default();
        let owner = job_owner(guard::Guarded(Ok(job)));
        assert_eq!(owner, Some(ObjectRef::new(name).within("ops")));
    }
}
