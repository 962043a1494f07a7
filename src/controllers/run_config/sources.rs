//! What the run-config controller watches, a row per kind: the watch (and what of each object its cache keeps), the
//! predicate that lets only the changes the planner reads through, and whom a change wakes. The rows fill the
//! caches the snapshot reads ([`observe::Stores`]) and the wake-ups the controller runs on. numo's ClusterRole
//! grants each kind in `crate::access::GRANTS` (a test ties every row to a grant that lets it list and watch).
//!
//! A kind a health check reads only the conditions of (MachineConfigNodes, ClusterOperators) needs no new row: the
//! check names the conditions ([`checks::Check::reads`]), the rows keep and watch them.

use futures::stream::BoxStream;
use futures::{Stream, StreamExt};
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Resource, ResourceExt};

use super::{checks, custom_sources, drain_wakes, node_interest, node_views, observe, predicates, snapshot};
use crate::api::{MutexRule, MutexRunConfig, MutexTarget};
use crate::cached_job::CachedJob;
use crate::guard;
use crate::labels;
use crate::openshift::{
    self, ClusterOperator, ClusterVersion, MachineConfig, MachineConfigNode, MachineConfigPool, MachineOSConfig,
    StorageCluster,
};
use crate::watches::Watches;

type Guarded = guard::Guarded<MutexRunConfig>;

/// A stream of the run configs to reconcile.
pub type Wake = BoxStream<'static, ObjectRef<Guarded>>;

/// What the controller watches.
pub struct Watching {
    /// The run configs' own events (the controller's primary stream; every change of a spec or an annotation).
    pub run_config_events: BoxStream<'static, Result<Guarded, watcher::Error>>,
    /// The caches.
    pub stores: observe::Stores,
    /// The wake-ups of every other kind.
    pub wakes: Vec<Wake>,
    /// What each run config's next plan reads of the nodes (the planner says it, the node row wakes by it).
    pub interest: node_interest::NodeInterest,
}

/// Watches every kind the planner reads, through `watches`; custom checks' sources through `client`.
pub fn watch(watches: &Watches, client: kube::Client) -> Watching {
    let any = watcher::Config::default().any_semantic();
    let (run_configs, rc_events) = watches.watch::<Guarded>("MutexRunConfigs", any.clone());
    let mut wakes = Wakes { run_configs: run_configs.clone(), streams: Vec::new() };
    let interest = node_interest::NodeInterest::default();

    let (rules, events) = watches.watch::<guard::Guarded<MutexRule>>("MutexRules", any.clone());
    wakes.add(events.touched_objects(), referencing(&run_configs, |spec| &spec.mutex_rules));

    let (targets, events) = watches.watch::<guard::Guarded<MutexTarget>>("MutexTargets", any.clone());
    wakes.add(events.touched_objects(), referencing(&run_configs, |spec| &spec.mutex_targets));

    // Who set a pool's paused flag and selector is kept, to name whoever changes what numo holds.
    let (pools, events) = watches.watch_keeping_writers(
        "MachineConfigPools",
        any.clone(),
        |_: &mut guard::Guarded<MachineConfigPool>| {},
        crate::field_managers::POOL_FIELDS,
    );
    wakes.add(events.touched_objects().predicate_filter(predicates::pool_predicate, Default::default()), wakes.all());

    // The node views read again only the nodes (and MachineConfigNodes) these watches say changed.
    let node_views = node_views::NodeViews::fed();
    let (nodes, events) = watches.watch_trimmed("Nodes", any.clone(), crate::trim::node);
    let events = events.inspect(seen_by(&node_views));
    let (machine_configs, mc_events) =
        watches.watch::<guard::Guarded<PartialObjectMeta<MachineConfig>>>("MachineConfigs", any.clone());
    let waking = {
        let (store, configs, interest) = (run_configs.clone(), machine_configs.clone(), interest.clone());
        move |node: guard::Guarded<Node>| interest.woken_by(&store, &configs, &node)
    };
    wakes.add(events.touched_objects().predicate_filter(predicates::node_predicate, Default::default()), waking);
    wakes.add(
        mc_events.touched_objects().predicate_filter(predicates::machine_config_predicate, Default::default()),
        wakes.all(),
    );

    let the_cluster_version = any.clone().fields(&format!("metadata.name={}", openshift::CLUSTER_VERSION_NAME));
    let (cluster_versions, events) =
        watches.watch::<guard::Guarded<ClusterVersion>>("ClusterVersions", the_cluster_version);
    wakes.add(events.touched_objects(), wakes.all());

    let numo_jobs = any.clone().labels(&format!("{}={}", labels::JOB_MANAGED_BY, labels::MANAGER));
    let (jobs, events) = watches.watch::<guard::Guarded<CachedJob>>("Jobs", numo_jobs);
    wakes.add(events.touched_objects().predicate_filter(predicates::job_predicate, Default::default()), job_owner);

    let (cluster_operators, events) =
        watches.watch_optional::<guard::Guarded<ClusterOperator>>(observe::CLUSTER_OPERATORS, any.clone());
    let store = run_configs.clone();
    wakes.add(
        events.touched_objects().predicate_filter(predicates::operator_predicate, Default::default()),
        // Every run config tells whether kubelet skew holds the next minor update (condition NextMinorUpdateHeld).
        move |co: guard::Guarded<ClusterOperator>| match co.meta().name.as_deref() == Some(openshift::KUBE_APISERVER) {
            true => every_run_config(&store),
            false => checking_health(&store),
        },
    );

    let (budgets, events) =
        watches.watch_optional::<guard::Guarded<PodDisruptionBudget>>(observe::BUDGETS, any.clone());
    wakes.add(
        events.touched_objects().predicate_filter(predicates::budget_predicate, Default::default()),
        wakes.checking(),
    );

    let (machine_os_configs, events) =
        watches.watch_optional::<guard::Guarded<MachineOSConfig>>(observe::MACHINE_OS_CONFIGS, any.clone());
    wakes.add(events.touched_objects(), wakes.all());

    let checked = checks::conditions_read(snapshot::Watched::MachineConfigNode);
    let (machine_config_nodes, events) = watches.watch_optional_trimmed::<guard::Guarded<MachineConfigNode>, _>(
        observe::MACHINE_CONFIG_NODES,
        any.clone(),
        move |progress| crate::trim::machine_config_node(progress, checked),
    );
    machine_config_node_wakes(events.inspect(seen_by(&node_views)), &mut wakes);

    let (storage_clusters, events) =
        watches.watch_optional::<guard::Guarded<StorageCluster>>(observe::STORAGE_CLUSTERS, any);
    wakes
        .add(events.touched_objects().predicate_filter(predicates::storage_predicate, Default::default()), wakes.all());

    // The objects custom health checks read, watched on demand.
    let (custom, changes) = custom_sources::CustomSources::new(client);
    let store = run_configs.clone();
    wakes.streams.push(changes.flat_map(move |key| futures::stream::iter(checking_source(&store, &key))).boxed());

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
        node_views,
        job_views: Default::default(),
    };
    let run_config_events =
        rc_events.applied_objects().predicate_filter(predicates::run_config_predicate, Default::default()).boxed();
    Watching { run_config_events, stores, wakes: wakes.streams, interest }
}

/// Each MachineConfigNode event goes two ways: a drain's end (recorded as it happens), and the conditions the
/// health checks read (waking the run configs whose checks read them).
fn machine_config_node_wakes<S>(events: S, wakes: &mut Wakes)
where
    S: Stream<Item = Result<watcher::Event<guard::Guarded<MachineConfigNode>>, watcher::Error>> + Send + 'static,
{
    let (to_check, checked) = futures::channel::mpsc::unbounded();
    let drains = drain_wakes::late(
        events
            .touched_objects()
            .inspect(move |event| {
                if let Ok(progress) = event {
                    // The receiver lives as long as the controller.
                    let _ = to_check.unbounded_send(progress.clone());
                }
            })
            .predicate_filter(predicates::drain_predicate, Default::default()),
        wakes.run_configs.clone(),
    );
    wakes.streams.push(drains.boxed());
    let store = wakes.run_configs.clone();
    let reading_them = checked
        .map(Ok::<_, watcher::Error>)
        .predicate_filter(predicates::checked_conditions_predicate, Default::default())
        .filter_map(|event| std::future::ready(event.ok()))
        .flat_map(move |_| futures::stream::iter(reading(&store, snapshot::Watched::MachineConfigNode)));
    wakes.streams.push(reading_them.boxed());
}

/// Tells `views` each event of a watch of nodes or of MachineConfigNodes (which are named after their node).
fn seen_by<K: kube::Resource>(
    views: &node_views::NodeViews,
) -> impl FnMut(&Result<watcher::Event<K>, watcher::Error>) + Send + 'static {
    let views = views.clone();
    move |event| {
        if let Ok(event) = event {
            views.saw(event.into());
        }
    }
}

/// The wake-ups, as the rows add them.
struct Wakes {
    run_configs: Store<Guarded>,
    streams: Vec<Wake>,
}

impl Wakes {
    /// Wakes, for every object `events` lets through, the run configs `whom` names.
    fn add<K: Send + 'static, I>(
        &mut self,
        events: impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
        whom: impl Fn(K) -> I + Send + Sync + 'static,
    ) where
        I: IntoIterator<Item = ObjectRef<Guarded>>,
        I::IntoIter: Send + 'static,
    {
        // The watches' events are never an `Err` (`Watches::watch` logs and drops errors).
        let objects = events.filter_map(|event| std::future::ready(event.ok()));
        self.streams.push(objects.flat_map(move |object| futures::stream::iter(whom(object))).boxed());
    }

    /// Whom a change of what every run config reads wakes: all of them.
    fn all<K>(&self) -> impl Fn(K) -> Vec<ObjectRef<Guarded>> + Send + Sync + 'static {
        let store = self.run_configs.clone();
        move |_| every_run_config(&store)
    }

    /// Whom a change of what only health checks read wakes: the run configs with health checks.
    fn checking<K>(&self) -> impl Fn(K) -> Vec<ObjectRef<Guarded>> + Send + Sync + 'static {
        let store = self.run_configs.clone();
        move |_| checking_health(&store)
    }
}

/// Every run config.
fn every_run_config(store: &Store<Guarded>) -> Vec<ObjectRef<Guarded>> {
    store.state().iter().map(|rc| ObjectRef::from_obj(rc.as_ref())).collect()
}

/// The run configs with health checks.
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

/// Whom a rule or target wakes: the run configs whose spec references it (`refs`: the references of a spec).
fn referencing<K: Resource>(
    store: &Store<Guarded>,
    refs: fn(&crate::api::MutexRunConfigSpec) -> &Vec<crate::api::ObjectReference>,
) -> impl Fn(K) -> Vec<ObjectRef<Guarded>> + Send + Sync + 'static {
    let store = store.clone();
    move |obj: K| {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn numo_s_cluster_role_lets_it_list_and_watch_every_kind_the_controller_watches() {
        // A client that is never used: nothing is polled.
        let config = kube::Config::new("https://127.0.0.1:9".parse().expect("a URL"));
        let client = kube::Client::try_from(config).expect("a client");
        let watches = Watches::new("test", client.clone(), crate::server::Readiness::default());
        let _watching = watch(&watches, client);
        let watched = watches.watched();
        assert!(watched.len() >= 13, "{watched:?}");
        for (group, resource) in watched {
            let granted = |verb: &str| {
                crate::access::GRANTS.iter().any(|g| {
                    g.groups.contains(&group.as_str())
                        && g.resources.iter().any(|(r, _)| *r == resource)
                        && g.names.is_empty()
                        && g.verbs.contains(&verb)
                })
            };
            assert!(granted("list") && granted("watch"), "no grant lets numo list and watch {resource}.{group}");
        }
    }

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
