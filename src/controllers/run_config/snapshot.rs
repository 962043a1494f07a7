//! What the run-config planner sees: a snapshot of the cluster as observed for one reconcile, reduced to the facts
//! the procedure needs. Built by `observe`, consumed by the pure `plan`; unit tests build it by hand.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use k8s_openapi::jiff::Timestamp;

pub use super::node_labels::NodeLabels;
use crate::api::{JobResult, MutexRunConfigSpec, MutexRunConfigStatus};
pub use crate::field_managers::Writer;
use crate::jobs::JobPhase;
pub use crate::pool_claim::{ClaimAnnotations, PoolClaim, PoolOriginal};

/// Everything observed for one reconcile of one run config.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// The time of the observation.
    pub now: Timestamp,
    /// The run config being reconciled.
    pub run_config: RunConfigView,
    /// The referenced rules, in spec order.
    pub rules: Vec<RuleView>,
    /// The referenced targets, in spec order.
    pub targets: Vec<TargetView>,
    /// Every MachineConfigPool, by name.
    pub pools: BTreeMap<String, PoolView>,
    /// Every node, by name: the map is shared with the snapshots before it while no node changed, and each view
    /// while its node did not change ([`Snapshot::nodes_mut`] to change them).
    pub nodes: std::sync::Arc<Nodes>,
    /// The ClusterVersion `version`, if it exists.
    pub cluster: Option<ClusterView>,
    /// The Jobs this run config created (any version, any node), shared with the snapshots before it while a Job
    /// does not change.
    pub jobs: Vec<std::sync::Arc<JobView>>,
    /// The pools numo claimed whose cache still shows them as before the claim: the cache is behind numo's own
    /// write, so a pool of these without numo's claim is not one whose claim someone dropped
    /// (`run_config::claimed_pools`).
    pub pools_behind: BTreeSet<String>,
    /// `namespace/name` of every existing run config (to tell a live claim on a pool from a stale one).
    pub run_configs: BTreeSet<String>,
    /// What the health checks read; gathered only when the run config has `healthChecks`.
    pub health: HealthFacts,
    /// Whether numo's admission policy refuses other hands' writes to what numo holds (`Err`: why not); None
    /// before numo knows.
    pub policy: Option<Result<(), String>>,
    /// Pool name → the MachineOSConfig that builds its OS image on the cluster (image mode); empty where the API is
    /// not served (before OpenShift 4.19) or cannot be read.
    pub image_builds: BTreeMap<String, String>,
    /// The node label that names a node's failure domain, as an OpenShift Data Foundation StorageCluster says it
    /// (`status.failureDomainKey`); None where no StorageCluster says one, or the API is not served.
    pub storage_domain_key: Option<String>,
    /// Why the `kube-apiserver` ClusterOperator says kubelets too far behind the API server hold the cluster's next
    /// minor update (its `Upgradeable` reason); None when they do not, or it cannot be read.
    pub kubelet_skew: Option<String>,
    /// A number drawn at random for this reconcile: the Job names numo asks for in it are hashed with it, so that
    /// nobody can know them before numo records them (see `JobKey::job_name`).
    pub nonce: u64,
    /// Whether the plan gives the projection of the rest of the rollout even where the estimate stands: numo holds
    /// none for this run config's rollout yet (it just started), and the console's timeline draws from it.
    pub project: bool,
}

/// Every node's view, by name, and which changed since each of the map's states.
pub type Nodes = super::node_map::NodeMap<NodeView>;

impl Snapshot {
    /// The nodes, to change (a copy of the map when an earlier snapshot shares it).
    pub fn nodes_mut(&mut self) -> &mut Nodes {
        std::sync::Arc::make_mut(&mut self.nodes)
    }
}

/// What a source of the health checks said, or why it cannot be read (a check that cannot read holds the rollout).
pub type Source<T> = Result<T, String>;

/// Where the pods of budgets run: budget `namespace/name` → (pod name, node name).
pub type BudgetPods = BTreeMap<String, Vec<(String, String)>>;

/// What the health checks read.
#[derive(Clone, Debug)]
pub struct HealthFacts {
    /// Unhealthy ClusterOperators: name and why.
    pub cluster_operators: Source<Vec<(String, String)>>,
    /// PodDisruptionBudgets that allow no disruption now.
    pub budgets_at_zero: Source<Vec<BudgetView>>,
    /// The pods covered by [`HealthFacts::budgets_at_zero`] on the nodes about to start, once fetched (only when a
    /// node would start and some budget allows no disruption).
    pub budget_pods: Option<Source<BudgetPods>>,
    /// The alerts matching the run config's matchers that fire, once asked (only when a node would start).
    pub alerts: Option<Source<Vec<crate::alerts::FiringAlert>>>,
    /// For each of `healthChecks.custom`, in order: the objects it selects (as JSON), or why they cannot be read.
    pub custom: Vec<Source<Vec<serde_json::Value>>>,
    /// The conditions the switched-on checks read ([`crate::controllers::run_config::checks::Check::reads`]): for
    /// each kind and condition type, what every object of the kind says of it.
    pub conditions: Vec<((Watched, &'static str), ConditionFacts)>,
}

/// A kind numo watches whose objects' conditions a health check may read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Watched {
    /// `machineconfiguration.openshift.io/v1` MachineConfigNode (served from OpenShift 4.20).
    MachineConfigNode,
    /// `config.openshift.io/v1` ClusterOperator.
    ClusterOperator,
}

/// What each object of a kind says of one condition type (the objects that report it), or why they cannot be read.
pub type ConditionFacts = Source<Vec<ConditionSaid>>;

/// The reason of the `Unknown` condition numo reads for an object it cannot decode (its message says why).
pub const CANNOT_BE_READ: &str = "CannotBeRead";

/// One object's condition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConditionSaid {
    /// The object's name (`namespace/name` for a namespaced kind).
    pub object: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// Its reason.
    pub reason: String,
    /// Its message.
    pub message: String,
}

impl Default for HealthFacts {
    fn default() -> Self {
        Self {
            cluster_operators: Ok(Vec::new()),
            budgets_at_zero: Ok(Vec::new()),
            budget_pods: None,
            alerts: None,
            custom: Vec::new(),
            conditions: Vec::new(),
        }
    }
}

/// A PodDisruptionBudget that allows no disruption.
#[derive(Clone, Debug, Default)]
pub struct BudgetView {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// `spec.selector` (empty selects every pod of the namespace, absent selects none).
    pub selector: Option<LabelSelector>,
}

impl BudgetView {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// The run config being reconciled.
#[derive(Clone, Debug)]
pub struct RunConfigView {
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its uid (for owner references).
    pub uid: String,
    /// `metadata.generation`.
    pub generation: Option<i64>,
    /// The spec.
    pub spec: MutexRunConfigSpec,
    /// The status as last written.
    pub status: MutexRunConfigStatus,
    /// Whether it is being deleted.
    pub deleting: bool,
    /// Whether numo's finalizer is present.
    pub has_finalizer: bool,
    /// The node named by the retry annotation.
    pub retry: Option<String>,
    /// The nodes named by the skip annotation.
    pub skip: BTreeSet<String>,
    /// The pools the go-ahead annotation names ([`crate::labels::GO_AHEAD_ANNOTATION`]).
    pub go_ahead: BTreeSet<String>,
}

impl RunConfigView {
    /// `namespace/name`, the value of a pool's claim annotation.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// Why a referenced MutexRule or MutexTarget cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unusable {
    /// Its controller has not judged its current spec yet (it was just created or changed).
    NotValidatedYet,
    /// Its controller found it invalid: why.
    Invalid(String),
}

/// A referenced MutexRule.
#[derive(Clone, Debug)]
pub struct RuleView {
    /// The rule's namespace (the reference's, defaulted to the run config's).
    pub namespace: String,
    /// The rule's name.
    pub name: String,
    /// The rule, if it exists.
    pub found: Option<FoundRule>,
}

/// A rule that exists.
#[derive(Clone, Debug)]
pub struct FoundRule {
    /// `Ok` when its ValidConfig condition is True for its current generation; else why not.
    pub valid: Result<(), Unusable>,
    /// `spec.jobName`.
    pub job_name: String,
    /// Where its Jobs run.
    pub job_namespace: String,
    /// `spec.jobSpec`.
    pub job_spec: serde_json::Value,
    /// `spec.cleanUpJobSpec`.
    pub cleanup: Option<serde_json::Value>,
}

impl RuleView {
    /// The node label that holds nodes in their target pool for this rule.
    pub fn label(&self) -> String {
        crate::labels::rule_label(&self.name, &self.namespace)
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// A referenced MutexTarget.
#[derive(Clone, Debug)]
pub struct TargetView {
    /// The target's namespace.
    pub namespace: String,
    /// The target's name.
    pub name: String,
    /// The target, if it exists: `Ok(pools)` when valid, else why not.
    pub found: Option<Result<Vec<String>, Unusable>>,
}

/// A MachineConfigPool.
#[derive(Clone, Debug, Default)]
pub struct PoolView {
    /// The pool's name.
    pub name: String,
    /// Its uid.
    pub uid: String,
    /// `metadata.resourceVersion`; numo's first claim of a pool is conditional on it.
    pub resource_version: String,
    /// `spec.paused`.
    pub paused: bool,
    /// `spec.nodeSelector`.
    pub node_selector: Option<LabelSelector>,
    /// `spec.maxUnavailable`.
    pub max_unavailable: Option<IntOrString>,
    /// `spec.machineConfigSelector`: the MachineConfigs the pool renders its config from.
    pub machine_config_selector: Option<LabelSelector>,
    /// `spec.osImageStream.name`: the OS image stream the pool names itself.
    pub os_image_stream: Option<String>,
    /// The OS image stream its nodes boot: its own, else for a custom pool `worker`'s, else None (the default).
    pub effective_os_image_stream: Option<String>,
    /// numo's claim annotations.
    pub claim: ClaimAnnotations,
    /// Whether the pool has any annotations (a JSON Patch must create the map first otherwise).
    pub has_annotations: bool,
    /// Whether the pool's status describes its current spec and says Updated (every node on its rendered config).
    pub updated: bool,
    /// `status.machineCount`: how many nodes the MCO counts in the pool; None when the pool has no status.
    pub machine_count: Option<u32>,
    /// Why the pool is `Degraded` or `NodeDegraded`; None when it is neither.
    pub degraded: Option<String>,
    /// `spec.configuration.name`: the rendered MachineConfig the pool's nodes should run.
    pub configuration: Option<String>,
    /// `spec.configuration.source` names: the MachineConfigs rendered into it.
    pub sources: Vec<String>,
    /// `status.configuration.source` names: the MachineConfigs of the config the pool last reported.
    pub status_sources: Vec<String>,
    /// Why the pool cannot render its configuration (`RenderDegraded=True`); None when it can.
    pub render_failure: Option<String>,
    /// The MachineConfigs its `machineConfigSelector` selects now differ from those its rendered config was merged
    /// from: the MCO has a render to do (it debounces them by seconds).
    pub render_pending: bool,
    /// Who last set `spec.paused`, `spec.nodeSelector` and `spec.maxUnavailable` (from `managedFields`).
    pub writers: PoolWriters,
    /// The SR-IOV network operator says it holds the pool paused for its drain
    /// ([`crate::taking_turns::sriov_holds`]).
    pub sriov_holds: bool,
}

/// Who last set each pool field numo holds.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PoolWriters {
    /// `spec.paused`.
    pub paused: Option<Writer>,
    /// `spec.nodeSelector`.
    pub node_selector: Option<Writer>,
    /// `spec.maxUnavailable`.
    pub max_unavailable: Option<Writer>,
    /// `spec.machineConfigSelector`.
    pub machine_config_selector: Option<Writer>,
}

impl PoolView {
    /// Whether the SR-IOV network operator paused the pool for a drain of its own while numo keeps it unpaused
    /// (`numo_paused` false): SR-IOV unpauses it when its drain is done (`AfterCompleteDrainNode`).
    pub fn sriov_turn(&self, numo_paused: bool) -> bool {
        self.paused && !numo_paused && self.sriov_holds
    }

    /// The selector to compute membership with: the recorded original while numo steers the pool, else the current.
    pub fn effective_selector(&self) -> Option<&LabelSelector> {
        self.claim.effective_selector(self.node_selector.as_ref())
    }

    /// The run config (`namespace/name`) that claims this pool.
    pub fn owner(&self) -> Option<&str> {
        self.claim.claim().map(|c| c.owner.as_str())
    }
}

/// A node.
#[derive(Clone, Debug, Default)]
pub struct NodeView {
    /// The node's name.
    pub name: String,
    /// Its labels, with numo's own among them worked out once (see [`NodeLabels`]).
    pub labels: NodeLabels,
    /// Whether its Ready condition is True.
    pub ready: bool,
    /// Whether it is cordoned (`spec.unschedulable`).
    pub cordoned: bool,
    /// The machine-config daemon's state annotation (`Done`, `Working`, `Degraded`).
    pub mcd_state: Option<String>,
    /// Why the machine-config daemon says `Degraded` or `Unreconcilable` (its `reason` annotation).
    pub mcd_reason: Option<String>,
    /// Its release version, read as the run config's `versionSource` says; None if unknown.
    pub version: Option<String>,
    /// The rendered MachineConfig it runs (the daemon's `currentConfig` annotation).
    pub current_config: Option<String>,
    /// The rendered MachineConfig the MCO wants it on (the `desiredConfig` annotation).
    pub desired_config: Option<String>,
    /// The release version of that rendered config, if known.
    pub desired_version: Option<String>,
    /// When the machine-config operator had drained it for the update to its desired config (its
    /// MachineConfigNode's `Drained` condition); None while it drains, outside an update, or where MachineConfigNodes
    /// are not served (before OpenShift 4.20).
    pub drained_at: Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>,
    /// The pool the machine-config operator puts it in ([`crate::membership::pool_of`]), worked out when the view
    /// was, under the pools' selectors of that [`selectors_fingerprint`], as its place among those pools (see
    /// [`NodeView::pool_among`]): a reconcile whose pools have the same selectors reads it instead of matching every
    /// pool's selector against every node again, or comparing pool names. None when not worked out; whoever changes
    /// `labels` sets it to None.
    pub membership: Option<(u64, Result<Option<usize>, crate::membership::AmbiguousPools>)>,
}

impl NodeView {
    /// The pool the node belongs to among `pools` (whose [`selectors_fingerprint`] is `fingerprint`): the one worked
    /// out with the view when it was under the same selectors, else worked out now.
    pub fn pool_among<'p>(
        &self,
        pools: &[crate::membership::PoolSelector<'p>],
        fingerprint: u64,
    ) -> Result<Option<&'p str>, crate::membership::AmbiguousPools> {
        match &self.membership {
            Some((kept, Ok(Some(place)))) if *kept == fingerprint => Ok(pools.get(*place).map(|p| p.name)),
            Some((kept, Ok(None))) if *kept == fingerprint => Ok(None),
            Some((kept, Err(ambiguous))) if *kept == fingerprint => Err(ambiguous.clone()),
            _ => crate::membership::pool_of(&self.labels, pools),
        }
    }

    /// Works out and keeps the node's pool among `pools`, whose [`selectors_fingerprint`] is `fingerprint` (see
    /// [`NodeView::membership`]).
    pub fn keep_membership(&mut self, pools: &[crate::membership::PoolSelector<'_>], fingerprint: u64) {
        let place = match crate::membership::pool_of(&self.labels, pools) {
            Ok(Some(pool)) => pools.iter().position(|p| p.name == pool).map(|place| Ok(Some(place))),
            Ok(None) => Some(Ok(None)),
            Err(ambiguous) => Some(Err(ambiguous)),
        };
        self.membership = place.map(|place| (fingerprint, place));
    }
}

/// The pools as membership sees them: each one's name and the selector that decides which nodes it holds.
pub fn pool_selectors(pools: &BTreeMap<String, PoolView>) -> Vec<crate::membership::PoolSelector<'_>> {
    pools
        .values()
        .map(|p| crate::membership::PoolSelector { name: &p.name, node_selector: p.effective_selector() })
        .collect()
}

/// A fingerprint of `pools`' names and selectors: equal for the same selectors (see [`NodeView::membership`]).
pub fn selectors_fingerprint(pools: &[crate::membership::PoolSelector<'_>]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    for pool in pools {
        pool.name.hash(&mut hasher);
        serde_json::to_string(&pool.node_selector).unwrap_or_default().hash(&mut hasher);
    }
    hasher.finish()
}

/// The ClusterVersion.
#[derive(Clone, Debug, Default)]
pub struct ClusterView {
    /// `spec.desiredUpdate.version`, else `status.desired.version`.
    pub target_version: Option<String>,
    /// Whether `status.history[0]` is Completed for the target version.
    pub control_plane_completed: bool,
}

/// A Job this run config created.
#[derive(Clone, Debug)]
pub struct JobView {
    /// Its name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// The node it is for.
    pub node: String,
    /// The rule, `namespace/name`.
    pub rule: String,
    /// Gate or cleanup.
    pub phase: JobPhase,
    /// The attempt (1, 2, ...).
    pub attempt: u32,
    /// The target version it ran for.
    pub target_version: String,
    /// Its outcome so far.
    pub result: JobResult,
    /// Why it failed.
    pub message: Option<String>,
    /// Whether it is being deleted (its TTL ran out, or an admin deleted it).
    pub deleting: bool,
    /// Whether it still carries numo's result finalizer.
    pub holds_result: bool,
    /// Its uid.
    pub uid: String,
    /// Who created it, as its `managedFields` tell (a field manager's name), or empty when they do not.
    pub creator: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::membership::PoolSelector;

    fn selector(label: &str) -> LabelSelector {
        LabelSelector { match_labels: Some(BTreeMap::from([(label.to_string(), String::new())])), ..Default::default() }
    }

    #[test]
    fn a_node_reads_its_pool_from_its_view_only_under_the_selectors_it_was_worked_out_with() {
        let (worker, infra) = (selector("node-role.kubernetes.io/worker"), selector("node-role.kubernetes.io/infra"));
        let pools = [
            PoolSelector { name: "worker", node_selector: Some(&worker) },
            PoolSelector { name: "infra", node_selector: Some(&infra) },
        ];
        let fingerprint = selectors_fingerprint(&pools);
        let labels = BTreeMap::from([("node-role.kubernetes.io/worker".to_string(), String::new())]);
        let fresh = NodeView { name: "a".into(), labels: labels.into(), ..Default::default() };
        assert_eq!(fresh.pool_among(&pools, fingerprint), Ok(Some("worker")), "worked out when not kept");
        // A view that kept another answer gives it while the selectors are the same, and not once they changed.
        let mut kept = fresh.clone();
        kept.keep_membership(&pools, fingerprint);
        assert_eq!(kept.membership, Some((fingerprint, Ok(Some(0)))), "worker, the first of the pools");
        kept.membership = Some((fingerprint, Ok(Some(1))));
        assert_eq!(kept.pool_among(&pools, fingerprint), Ok(Some("infra")));
        let other = [PoolSelector { name: "worker", node_selector: Some(&worker) }];
        let changed = selectors_fingerprint(&other);
        assert_ne!(changed, fingerprint, "other selectors, another fingerprint");
        assert_eq!(kept.pool_among(&other, changed), Ok(Some("worker")));
    }
}
