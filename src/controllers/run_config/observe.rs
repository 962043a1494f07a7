//! Reads what the planner needs from the controller's caches (reflector stores fed by watches) into a [`Snapshot`].
//!
//! Every cache holds [`Guarded`] objects, so an object numo cannot decode never stops the others from being read.
//! The planner sees only decoded objects; an undecodable one that matters is reported instead of being ignored: a
//! target whose pool (or a node its pools select) cannot be read is invalid, and so is a rule that cannot be read;
//! a numo Job that cannot be read counts as failed (never as missing, which would run it again).

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use k8s_openapi::jiff::Timestamp;
use kube::core::PartialObjectMeta;
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Resource, ResourceExt};

use super::custom_sources::{CustomSources, SourceKey};
use super::node_views::{JobViews, NodeViews};
use super::snapshot::{
    BudgetPods, BudgetView, ClusterView, ConditionFacts, ConditionSaid, FoundRule, HealthFacts, JobView, NodeView,
    PoolClaim, PoolView, PoolWriters, RuleView, RunConfigView, Snapshot, Source, TargetView, Unusable, Watched,
    CANNOT_BE_READ,
};
use crate::api::{JobResult, MutexRule, MutexRunConfig, MutexTarget, RuleUnusable, VersionSource};
use crate::cached_job::{CachedJob, JobFacts};
use crate::field_managers;
use crate::guard::Guarded;
use crate::jobs;
use crate::labels;
use crate::membership;
use crate::openshift::{
    self, ClusterOperator, ClusterVersion, MachineConfig, MachineConfigNode, MachineConfigPool, MachineOSConfig,
    StorageCluster,
};
use crate::watches::Sources;

/// The caches the run-config controller reads; every one is fed by a watch.
#[derive(Clone)]
pub struct Stores {
    /// Every MutexRunConfig.
    pub run_configs: Store<Guarded<MutexRunConfig>>,
    /// Every MutexRule.
    pub rules: Store<Guarded<MutexRule>>,
    /// Every MutexTarget.
    pub targets: Store<Guarded<MutexTarget>>,
    /// Every MachineConfigPool.
    pub pools: Store<Guarded<MachineConfigPool>>,
    /// Every node.
    pub nodes: Store<Guarded<Node>>,
    /// Metadata of every MachineConfig (the rendered configs' release-version annotation).
    pub machine_configs: Store<Guarded<PartialObjectMeta<MachineConfig>>>,
    /// The ClusterVersion.
    pub cluster_versions: Store<Guarded<ClusterVersion>>,
    /// numo's Jobs (the watch selects them by label).
    pub jobs: Store<Guarded<CachedJob>>,
    /// Every ClusterOperator (an optional watch: see [`crate::watches::Watches::watch_optional`]).
    pub cluster_operators: Store<Guarded<ClusterOperator>>,
    /// Every PodDisruptionBudget (an optional watch).
    pub budgets: Store<Guarded<PodDisruptionBudget>>,
    /// Every MachineOSConfig (an optional watch: the API exists from OpenShift 4.19).
    pub machine_os_configs: Store<Guarded<MachineOSConfig>>,
    /// Every MachineConfigNode (an optional watch: the API is served from OpenShift 4.20).
    pub machine_config_nodes: Store<Guarded<MachineConfigNode>>,
    /// Every OpenShift Data Foundation StorageCluster (an optional watch: served where ODF is installed).
    pub storage_clusters: Store<Guarded<StorageCluster>>,
    /// The health of the watches behind the caches, to tell whether an optional one can be read.
    pub sources: Sources,
    /// The objects custom health checks read (watched on demand); None where there is no runtime for watches.
    pub custom: Option<CustomSources>,
    /// The node views of earlier snapshots, reused for the nodes that did not change.
    pub node_views: NodeViews,
    /// The Job views of earlier snapshots, reused for the Jobs that did not change.
    pub job_views: JobViews,
}

impl Default for Stores {
    /// Empty caches (for tests and benches, which fill those they need).
    fn default() -> Self {
        fn empty<K: Resource<DynamicType = ()> + Clone + 'static>() -> Store<K> {
            kube::runtime::reflector::store().0
        }
        Self {
            run_configs: empty(),
            rules: empty(),
            targets: empty(),
            pools: empty(),
            nodes: empty(),
            machine_configs: empty(),
            cluster_versions: empty(),
            jobs: empty(),
            cluster_operators: empty(),
            budgets: empty(),
            machine_os_configs: empty(),
            machine_config_nodes: empty(),
            storage_clusters: empty(),
            sources: Sources::default(),
            custom: None,
            node_views: NodeViews::default(),
            job_views: JobViews::default(),
        }
    }
}

/// Watch names of the optional sources, as [`Sources::readable`] knows them.
pub const CLUSTER_OPERATORS: &str = "ClusterOperators";
/// See [`CLUSTER_OPERATORS`].
pub const BUDGETS: &str = "PodDisruptionBudgets";
/// See [`CLUSTER_OPERATORS`].
pub const MACHINE_OS_CONFIGS: &str = "MachineOSConfigs";
/// See [`CLUSTER_OPERATORS`].
pub const MACHINE_CONFIG_NODES: &str = "MachineConfigNodes";
/// See [`CLUSTER_OPERATORS`].
pub const STORAGE_CLUSTERS: &str = "StorageClusters";

/// Builds the snapshot for one run config.
pub fn snapshot(stores: &Stores, rc: &MutexRunConfig, now: Timestamp) -> Snapshot {
    let namespace = rc.namespace().unwrap_or_default();
    let annotations = rc.annotations();
    let run_config = RunConfigView {
        namespace: namespace.clone(),
        name: rc.name_any(),
        uid: rc.uid().unwrap_or_default(),
        generation: rc.metadata.generation,
        spec: rc.spec.clone(),
        status: rc.status.clone().unwrap_or_default(),
        deleting: rc.metadata.deletion_timestamp.is_some(),
        has_finalizer: rc.finalizers().iter().any(|f| f == labels::FINALIZER),
        retry: annotations.get(labels::RETRY_ANNOTATION).map(|v| v.trim().to_string()).filter(|v| !v.is_empty()),
        skip: listed(annotations.get(labels::SKIP_ANNOTATION)),
        go_ahead: listed(annotations.get(labels::GO_AHEAD_ANNOTATION)),
    };
    let avoid = rc.spec.avoid_target_node;
    let rules =
        rc.spec.mutex_rules.iter().map(|r| rule_view(stores, r.namespace_or(&namespace), &r.name, avoid)).collect();
    let configs = stores.machine_configs.state();
    let sources: Vec<(String, &BTreeMap<String, String>)> = configs
        .iter()
        .map(|mc| (mc.name_any(), mc.labels()))
        .filter(|(name, _)| !name.starts_with("rendered-"))
        .collect();
    let pool_objects = stores.pools.state();
    let worker = pool_objects.iter().filter_map(|p| p.decoded()).find(|p| p.name_any() == membership::WORKER);
    let pools = pool_objects
        .iter()
        .filter_map(|p| p.decoded().map(|p| (p.name_any(), pool_view(p, worker, &sources))))
        .collect();
    let rendered_versions: BTreeMap<String, String> = configs
        .iter()
        .filter_map(|mc| Some((mc.name_any(), mc.annotations().get(openshift::RELEASE_VERSION)?.clone())))
        .collect();
    let progress = stores.sources.readable(MACHINE_CONFIG_NODES).is_ok().then_some(&stores.machine_config_nodes);
    let source = rc.spec.version_source;
    let selectors = super::snapshot::pool_selectors(&pools);
    let fingerprint = super::snapshot::selectors_fingerprint(&selectors);
    let nodes = stores.node_views.of(
        &stores.nodes,
        progress,
        source,
        (rendered_versions, fingerprint),
        |node, progress, rendered| {
            let mut view = node_view(node, source, rendered);
            view.drained_at =
                progress.zip(view.desired_config.as_deref()).and_then(|(p, desired)| p.drained_for(desired));
            view.keep_membership(&selectors, fingerprint);
            view
        },
    );
    let undecodable = stores.node_views.undecodable(source);
    let targets = rc
        .spec
        .mutex_targets
        .iter()
        .map(|t| target_view(stores, &undecodable, t.namespace_or(&namespace), &t.name))
        .collect();
    let cluster_version = stores.cluster_versions.get(&ObjectRef::new(openshift::CLUSTER_VERSION_NAME));
    let cluster = cluster_version.as_deref().and_then(Guarded::decoded).map(|cv| {
        let target_version = cv.target_version().map(String::from);
        let control_plane_completed = target_version.as_deref().is_some_and(|v| cv.control_plane_completed(v));
        ClusterView { target_version, control_plane_completed }
    });
    let own = crate::cached_job::run_config_labels(&namespace, &run_config.name);
    let jobs = stores.job_views.of(&stores.jobs, &own, job_view);
    let run_configs: BTreeSet<String> = stores
        .run_configs
        .state()
        .iter()
        .filter_map(|g| {
            let meta = match &g.0 {
                Ok(rc) => &rc.metadata,
                Err(invalid) => &invalid.metadata,
            };
            Some(format!("{}/{}", meta.namespace.as_ref()?, meta.name.as_ref()?))
        })
        .collect();
    let health = match &rc.spec.health_checks {
        Some(checks) => HealthFacts {
            custom: custom_facts(stores, &checks.custom),
            conditions: super::checks::reads_of(checks).into_iter().map(|read| conditions(stores, read)).collect(),
            ..health_facts(stores)
        },
        None => HealthFacts::default(),
    };
    let image_builds = match stores.sources.readable(MACHINE_OS_CONFIGS) {
        Ok(()) => stores
            .machine_os_configs
            .state()
            .iter()
            .filter_map(|m| m.decoded())
            .map(|m| (m.spec.machine_config_pool.name.clone(), m.name_any()))
            .collect(),
        Err(_) => BTreeMap::new(),
    };
    Snapshot {
        storage_domain_key: storage_domain_key(stores),
        kubelet_skew: kubelet_skew(stores),
        now,
        run_config,
        rules,
        targets,
        pools,
        nodes,
        cluster,
        jobs,
        run_configs,
        pools_behind: BTreeSet::new(),
        health,
        policy: None,
        image_builds,
        nonce: nonce(),
        project: false,
    }
}

/// The failure-domain key the first StorageCluster (by namespace and name) that says one gives; None where none
/// does or the API cannot be read.
pub fn storage_domain_key(stores: &Stores) -> Option<String> {
    stores.sources.readable(STORAGE_CLUSTERS).ok()?;
    let mut said: Vec<(String, String)> = stores
        .storage_clusters
        .state()
        .iter()
        .filter_map(|c| c.decoded())
        .filter_map(|c| {
            let key = c.status.as_ref()?.failure_domain_key.clone().filter(|k| !k.is_empty())?;
            Some((format!("{}/{}", c.namespace().unwrap_or_default(), c.name_any()), key))
        })
        .collect();
    said.sort();
    said.into_iter().next().map(|(_, key)| key)
}

/// A number nobody outside this process can predict: SipHash under the process's random keys (the standard library
/// seeds them from the operating system) of the time and a counter.
fn nonce() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    static DRAWN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(DRAWN.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    hasher.write_u128(now.as_nanos());
    hasher.finish()
}

/// What the `kube-apiserver` ClusterOperator says of kubelet skew, when it holds the next minor update.
fn kubelet_skew(stores: &Stores) -> Option<String> {
    let operator = stores.cluster_operators.get(&ObjectRef::new(crate::openshift::KUBE_APISERVER))?;
    operator.decoded()?.kubelet_skew()
}

/// The unhealthy ClusterOperators and the PodDisruptionBudgets at zero, or why they cannot be read.
fn health_facts(stores: &Stores) -> HealthFacts {
    let cluster_operators = stores.sources.readable(CLUSTER_OPERATORS).map(|()| {
        let mut unhealthy: Vec<(String, String)> = stores
            .cluster_operators
            .state()
            .iter()
            .filter_map(|co| match &co.0 {
                Ok(co) => Some((co.name_any(), co.problem()?)),
                Err(invalid) => Some((co.name_any(), format!("cannot be read ({})", invalid.error))),
            })
            .collect();
        unhealthy.sort();
        unhealthy
    });
    let budgets_at_zero = stores.sources.readable(BUDGETS).map(|()| {
        let mut budgets: Vec<BudgetView> = stores
            .budgets
            .state()
            .iter()
            .filter_map(|pdb| {
                let pdb = pdb.decoded()?;
                let allowed = pdb.status.as_ref().map_or(0, |s| s.disruptions_allowed);
                (allowed <= 0).then(|| BudgetView {
                    namespace: pdb.namespace().unwrap_or_default(),
                    name: pdb.name_any(),
                    selector: pdb.spec.as_ref().and_then(|s| s.selector.clone()),
                })
            })
            .collect();
        budgets.sort_by_key(BudgetView::key);
        budgets
    });
    HealthFacts { cluster_operators, budgets_at_zero, ..HealthFacts::default() }
}

/// What every object of `read`'s kind says of its condition type (those that report it), or why they cannot be
/// read.
fn conditions(stores: &Stores, read: super::checks::ConditionRead) -> ((Watched, &'static str), ConditionFacts) {
    let said = |object: String, status: &str, reason: Option<&str>, message: Option<&str>| ConditionSaid {
        object,
        status: status.to_string(),
        reason: reason.unwrap_or_default().to_string(),
        message: message.unwrap_or_default().to_string(),
    };
    // An object numo cannot decode says nothing it can trust: its condition is Unknown, reason `CannotBeRead`.
    let unread = |name: String, error: &str| said(name, "Unknown", Some(CANNOT_BE_READ), Some(error));
    let type_ = read.condition;
    let facts = match read.kind {
        Watched::MachineConfigNode => stores.sources.readable(MACHINE_CONFIG_NODES).map(|()| {
            let objects = stores.machine_config_nodes.state();
            let found = objects.iter().filter_map(|m| match &m.0 {
                Ok(m) => m.condition(type_).map(|c| said(m.name_any(), &c.status, Some(&c.reason), Some(&c.message))),
                Err(invalid) => Some(unread(m.name_any(), &invalid.error)),
            });
            found.collect()
        }),
        Watched::ClusterOperator => stores.sources.readable(CLUSTER_OPERATORS).map(|()| {
            let objects = stores.cluster_operators.state();
            let found = objects.iter().filter_map(|o| match &o.0 {
                Ok(o) => {
                    let c = o.status.as_ref()?.condition(type_)?;
                    Some(said(o.name_any(), &c.status, c.reason.as_deref(), c.message.as_deref()))
                }
                Err(invalid) => Some(unread(o.name_any(), &invalid.error)),
            });
            found.collect()
        }),
    };
    // In the order of the objects' names, so that what a check says does not change with the cache's order.
    let facts = facts.map(|mut said: Vec<ConditionSaid>| {
        said.sort_by(|a, b| a.object.cmp(&b.object));
        said
    });
    ((read.kind, type_), facts)
}

/// The objects each custom check selects: its source's objects, filtered by name and labels.
fn custom_facts(stores: &Stores, checks: &[crate::api::CustomCheck]) -> Vec<Source<Vec<serde_json::Value>>> {
    checks
        .iter()
        .map(|check| {
            // A reserved kind is never watched (the run config is invalid anyway).
            if let Some(why) = crate::cel_check::reserved(&check.api_version, &check.kind) {
                return Err(why);
            }
            let custom = stores.custom.as_ref().ok_or_else(|| "custom sources are not watched".to_string())?;
            Ok(selected(check, custom.objects(&SourceKey::of(check))?))
        })
        .collect()
}

/// Of a custom check's source objects, those it selects by name and labels.
pub fn selected(check: &crate::api::CustomCheck, objects: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    objects
        .into_iter()
        .filter(|o| check.name.as_deref().is_none_or(|n| o["metadata"]["name"].as_str() == Some(n)))
        .filter(|o| {
            let labels: BTreeMap<String, String> =
                serde_json::from_value(o["metadata"]["labels"].clone()).unwrap_or_default();
            check.label_selector.as_ref().is_none_or(|s| membership::selects(Some(s), &labels))
        })
        .collect()
}

/// Which pods of `budgets` run on `nodes`: the pods of each node, listed by their metadata only (a field selector on
/// the node, running pods only), matched against each budget's namespace and selector.
pub async fn budget_pods(client: &kube::Client, budgets: &[BudgetView], nodes: &[String]) -> Source<BudgetPods> {
    let mut placed = BudgetPods::new();
    let api = kube::Api::<Pod>::all(client.clone());
    for node in nodes {
        let fields = format!("spec.nodeName={node},status.phase!=Succeeded,status.phase!=Failed");
        let pods = api
            .list_metadata(&kube::api::ListParams::default().fields(&fields))
            .await
            .map_err(|e| format!("the pods on node {node} cannot be listed: {e}"))?;
        for pod in &pods.items {
            let namespace = pod.namespace().unwrap_or_default();
            for budget in budgets.iter().filter(|b| b.namespace == namespace) {
                if budget.selector.as_ref().is_some_and(|s| membership::selects(Some(s), pod.labels())) {
                    placed.entry(budget.key()).or_default().push((pod.name_any(), node.clone()));
                }
            }
        }
    }
    Ok(placed)
}

/// Whether a status condition `ValidConfig` is True for the object's current generation; else why not.
fn valid_config(
    conditions: &[k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition],
    generation: Option<i64>,
) -> Result<(), Unusable> {
    match crate::conditions::find(conditions, "ValidConfig") {
        None => Err(Unusable::NotValidatedYet),
        Some(c) if c.observed_generation.is_some() && c.observed_generation != generation => {
            Err(Unusable::NotValidatedYet)
        }
        Some(c) if c.status == "True" => Ok(()),
        Some(c) => Err(Unusable::Invalid(c.message.clone())),
    }
}

/// A referenced rule, usable when numo judged it valid for Jobs rendered as this run config renders them
/// (`avoid`: with numo's anti-affinity or without).
fn rule_view(stores: &Stores, namespace: &str, name: &str, avoid: bool) -> RuleView {
    let found = stores.rules.get(&ObjectRef::new(name).within(namespace)).map(|guard| match &guard.0 {
        Ok(rule) => FoundRule {
            valid: rule.usable(avoid).map_err(|why| match why {
                RuleUnusable::NotValidatedYet => Unusable::NotValidatedYet,
                RuleUnusable::Invalid(message) => Unusable::Invalid(message),
            }),
            job_name: rule.spec.job_name.clone(),
            job_namespace: rule.job_namespace().unwrap_or(namespace).to_string(),
            job_spec: rule.spec.job_spec.clone(),
            cleanup: rule.spec.clean_up_job_spec.clone(),
        },
        Err(invalid) => FoundRule {
            valid: Err(Unusable::Invalid(format!("malformed: {}", invalid.error))),
            job_name: String::new(),
            job_namespace: namespace.to_string(),
            job_spec: serde_json::Value::Null,
            cleanup: None,
        },
    });
    RuleView { namespace: namespace.to_string(), name: name.to_string(), found }
}

fn target_view(stores: &Stores, undecodable: &BTreeSet<String>, namespace: &str, name: &str) -> TargetView {
    let found = stores.targets.get(&ObjectRef::new(name).within(namespace)).map(|guard| match &guard.0 {
        Ok(target) => valid_config(
            target.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default(),
            target.metadata.generation,
        )
        .map(|()| target.spec.machine_config_pools.clone())
        .and_then(|pools| {
            unreadable_member(stores, undecodable, &pools).map_or(Ok(pools), |why| Err(Unusable::Invalid(why)))
        }),
        Err(invalid) => Err(Unusable::Invalid(format!("malformed: {}", invalid.error))),
    });
    TargetView { namespace: namespace.to_string(), name: name.to_string(), found }
}

/// Why a target's pools cannot be trusted: one of them, or a node one of them selects, cannot be decoded (a pool
/// that does not exist is the planner's to report). Only the nodes found `undecodable` are looked at.
fn unreadable_member(stores: &Stores, undecodable: &BTreeSet<String>, pools: &[String]) -> Option<String> {
    for name in pools {
        let Some(pool) = stores.pools.get(&ObjectRef::new(name)) else { continue };
        let pool = match &pool.0 {
            Ok(pool) => pool,
            Err(invalid) => return Some(format!("its MachineConfigPool {name} cannot be read: {}", invalid.error)),
        };
        let selector = membership::effective_node_selector(pool);
        for node in undecodable.iter().filter_map(|name| stores.nodes.get(&ObjectRef::new(name))) {
            if let Err(invalid) = &node.0 {
                if membership::selects(selector.as_ref(), node.labels()) {
                    return Some(format!(
                        "Node {} of its MachineConfigPool {name} cannot be read: {}",
                        node.name_any(),
                        invalid.error
                    ));
                }
            }
        }
    }
    None
}

/// `sources`: every MachineConfig that is not a rendered one, with its labels; `worker`: the `worker` pool (a custom
/// pool boots its OS image stream unless it names its own).
fn pool_view(
    pool: &MachineConfigPool,
    worker: Option<&MachineConfigPool>,
    sources: &[(String, &BTreeMap<String, String>)],
) -> PoolView {
    let status = pool.status.as_ref();
    let rendered_from: BTreeSet<String> =
        pool.spec.configuration.as_ref().map(|c| c.source_names()).unwrap_or_default().into_iter().collect();
    let selected: BTreeSet<String> = sources
        .iter()
        .filter(|(_, labels)| crate::selector::matches(pool.spec.machine_config_selector.as_ref(), labels))
        .map(|(name, _)| name.clone())
        .collect();
    // The status describes the spec: its generation, and the rendered config the spec names (the MCO renders a new
    // config without a new generation: a status from before says Updated for the config before).
    let spec_config = pool.spec.configuration.as_ref().and_then(|c| c.name.as_deref());
    let status_config = status.and_then(|st| st.configuration.as_ref()).and_then(|c| c.name.as_deref());
    let current = status.is_some_and(|st| Some(st.observed_generation) >= pool.metadata.generation)
        && (spec_config.is_none() || spec_config == status_config);
    PoolView {
        name: pool.name_any(),
        uid: pool.uid().unwrap_or_default(),
        resource_version: pool.resource_version().unwrap_or_default(),
        paused: pool.spec.paused,
        node_selector: pool.spec.node_selector.clone(),
        max_unavailable: pool.spec.max_unavailable.clone(),
        machine_config_selector: pool.spec.machine_config_selector.clone(),
        os_image_stream: pool.spec.os_image_stream.as_ref().map(|s| s.name.clone()),
        effective_os_image_stream: pool.effective_os_image_stream(worker).map(String::from),
        claim: PoolClaim::read(pool.annotations()),
        has_annotations: pool.metadata.annotations.is_some(),
        sriov_holds: crate::taking_turns::sriov_holds(pool.annotations()),
        updated: current && pool.condition_true("Updated"),
        machine_count: status.map(|s| u32::try_from(s.machine_count).unwrap_or_default()),
        degraded: degraded(pool),
        configuration: pool.spec.configuration.as_ref().and_then(|c| c.name.clone()),
        sources: pool.spec.configuration.as_ref().map(|c| c.source_names()).unwrap_or_default(),
        status_sources: status.and_then(|s| s.configuration.as_ref()).map(|c| c.source_names()).unwrap_or_default(),
        render_failure: pool
            .condition("RenderDegraded")
            .map(|c| c.message.clone().filter(|m| !m.is_empty()).unwrap_or_else(|| "RenderDegraded".to_string())),
        // A pool that names no sources (an older MCO) is taken at its word.
        render_pending: !rendered_from.is_empty() && selected != rendered_from,
        writers: {
            let managed = pool.metadata.managed_fields.as_deref();
            PoolWriters {
                paused: field_managers::writer_of(managed, field_managers::SPEC_PAUSED),
                node_selector: field_managers::writer_of(managed, field_managers::SPEC_NODE_SELECTOR),
                max_unavailable: field_managers::writer_of(managed, field_managers::SPEC_MAX_UNAVAILABLE),
                machine_config_selector: field_managers::writer_of(
                    managed,
                    field_managers::SPEC_MACHINE_CONFIG_SELECTOR,
                ),
            }
        },
    }
}

/// Why a pool is `Degraded` or `NodeDegraded`, from those conditions' messages.
fn degraded(pool: &MachineConfigPool) -> Option<String> {
    let conditions = pool.status.as_ref().map(|s| s.conditions.as_slice()).unwrap_or_default();
    let said: Vec<String> = conditions
        .iter()
        .filter(|c| matches!(c.type_.as_str(), "Degraded" | "NodeDegraded") && c.status == "True")
        .map(|c| match c.message.as_deref().filter(|m| !m.is_empty()) {
            Some(message) => format!("{}: {message}", c.type_),
            None => c.type_.clone(),
        })
        .collect();
    (!said.is_empty()).then(|| said.join("; "))
}

/// A node's release version, read as `source` says: its label, or the release of the rendered config it runs
/// (`rendered`: a rendered MachineConfig's release version, by name).
pub fn node_version(node: &Node, source: VersionSource, rendered: impl Fn(&str) -> Option<String>) -> Option<String> {
    let label = node.labels().get(openshift::RELEASE_VERSION).cloned();
    let from_config = || node.annotations().get(openshift::CURRENT_CONFIG).and_then(|c| rendered(c));
    match source {
        VersionSource::Label => label,
        VersionSource::RenderedConfig => from_config(),
        VersionSource::Auto => label.or_else(from_config),
    }
}

/// The release version of the rendered MachineConfig `name`, from the cache of MachineConfigs.
pub fn rendered_version(configs: &Store<Guarded<PartialObjectMeta<MachineConfig>>>, name: &str) -> Option<String> {
    let config = configs.get(&ObjectRef::new(name))?;
    config.annotations().get(openshift::RELEASE_VERSION).cloned()
}

fn node_view(node: &Node, source: VersionSource, rendered: &BTreeMap<String, String>) -> NodeView {
    let version = node_version(node, source, |config| rendered.get(config).cloned());
    let ready = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    NodeView {
        name: node.name_any(),
        labels: node.labels().clone().into(),
        ready,
        cordoned: node.spec.as_ref().and_then(|s| s.unschedulable).unwrap_or(false),
        mcd_state: node.annotations().get(openshift::MCD_STATE).cloned(),
        mcd_reason: node.annotations().get(openshift::MCD_REASON).cloned(),
        version,
        current_config: node.annotations().get(openshift::CURRENT_CONFIG).cloned(),
        desired_config: node.annotations().get(openshift::DESIRED_CONFIG).cloned(),
        desired_version: node.annotations().get(openshift::DESIRED_CONFIG).and_then(|c| rendered.get(c)).cloned(),
        drained_at: None,
        membership: None,
    }
}

/// A numo Job as the planner reads it, with the values of its run-config labels (whose Job it is); one that cannot be
/// decoded counts as failed, saying why (its labels and annotations, which say what it is for, are read all the
/// same).
pub fn job_view(job: &Guarded<CachedJob>) -> Option<((String, String), JobView)> {
    let read;
    let (facts, result, message) = match &job.0 {
        Ok(job) => (job.facts.as_ref()?, job.result, job.failure.clone()),
        Err(invalid) => {
            read = JobFacts::read(&invalid.metadata)?;
            (&read, JobResult::Failed, Some(format!("the Job cannot be read: {}", invalid.error)))
        }
    };
    let view = JobView {
        name: job.name_any(),
        namespace: job.namespace().unwrap_or_default(),
        node: facts.node.clone(),
        rule: facts.rule.clone(),
        phase: facts.phase,
        attempt: facts.attempt,
        target_version: facts.target_version.clone(),
        result,
        message,
        deleting: job.meta().deletion_timestamp.is_some(),
        holds_result: job.meta().finalizers.iter().flatten().any(|f| f == jobs::RESULT_FINALIZER),
        uid: job.meta().uid.clone().unwrap_or_default(),
        creator: job.0.as_ref().ok().and_then(|j| j.creator.clone()).unwrap_or_default(),
    };
    Some((facts.run_config_labels.clone(), view))
}

#[cfg(test)]
#[path = "observe_tests.rs"]
mod tests;

/// A comma-separated annotation's names.
fn listed(value: Option<&String>) -> BTreeSet<String> {
    value.map(|v| v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect()).unwrap_or_default()
}
