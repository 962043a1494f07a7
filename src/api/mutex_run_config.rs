//! `MutexRunConfig`: one gated rollout policy tying rules, targets and a canary pool together.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::node_names::NodeNames;
use super::safe_to_proceed::{BlackoutWindow, Blocker, HealthChecks, MaintenanceWindow, WindowTimes};
use super::ObjectReference;

/// A gated rollout policy: when the cluster upgrades, the target pools are held paused and their nodes are
/// released one at a time (or `concurrency` at a time) into the canary pool, each after its gate Jobs succeeded.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "openshift-optional.skrzypek.io",
    version = "v1alpha1",
    kind = "MutexRunConfig",
    namespaced,
    status = "MutexRunConfigStatus",
    shortname = "mrc",
    category = "numo",
    doc = "MutexRunConfig ties MutexRules and MutexTargets to a canary MachineConfigPool: during a cluster upgrade numo holds the target pools paused and upgrades their nodes one at a time, each after its gate Jobs succeeded.",
    printcolumn = r#"{"name": "Phase", "type": "string", "jsonPath": ".status.phase", "description": "Where the rollout is"}"#,
    printcolumn = r#"{"name": "Progress", "type": "string", "jsonPath": ".status.progress", "description": "Nodes done / nodes gated"}"#,
    printcolumn = r#"{"name": "Target Version", "type": "string", "jsonPath": ".status.targetVersion", "description": "The version the nodes are upgraded to"}"#,
    printcolumn = r#"{"name": "ETA", "type": "string", "jsonPath": ".status.estimate.end", "description": "When the rollout should end (status.estimate; a timestamp, as kubectl shows a future date as invalid)"}"#,
    printcolumn = r#"{"name": "Held By", "type": "string", "jsonPath": ".status.blockedBy[0].check", "description": "The first check that holds the next node (a window, a health check, a soak); status.blockedBy lists all"}"#,
    printcolumn = r#"{"name": "Message", "type": "string", "jsonPath": ".status.message", "priority": 1, "description": "What the rollout is doing or waiting for"}"#,
    printcolumn = r#"{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct MutexRunConfigSpec {
    /// Accepted for compatibility with the Ansible operator; it has no effect (numo uses its in-cluster identity).
    #[serde(default, rename = "skipTLSVerify")]
    pub skip_tls_verify: bool,

    /// The unpaused custom MachineConfigPool that upgrades each released node. It must exist, must not be paused,
    /// must not be a built-in pool (`master`, `worker`, `arbiter`) or one of the target pools, and must own no node
    /// that a target pool selects. During a rollout its `matchExpressions` are replaced by
    /// `openshift-optional.skrzypek.io/released-to In [<canary>]`, so it takes only the nodes numo marked released;
    /// they are restored exactly afterwards.
    pub canary: CanaryPool,

    /// The MutexRules to run for every gated node, in this order.
    #[schemars(length(min = 1))]
    pub mutex_rules: Vec<ObjectReference>,

    /// The MutexTargets whose pools are gated; nodes are released in this order, then by node name.
    #[schemars(length(min = 1))]
    pub mutex_targets: Vec<ObjectReference>,

    /// How many nodes may be between their first gate Job and their last cleanup Job at once. During a rollout numo
    /// raises the canary pool's `maxUnavailable` to at least this number (so the MCO updates every released node at
    /// once) and puts it back afterwards.
    #[serde(default = "default_concurrency")]
    #[schemars(range(min = 1, max = 100))]
    pub concurrency: u32,

    /// The longest a node may take from its first gate Job until it reports the target version, e.g. `45m` or `2h`.
    /// A node that takes longer is marked Failed. Unset, numo waits as long as it takes (as the Ansible operator did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(s|m|h))+$"))]
    pub node_timeout: Option<String>,

    /// What a failed node does to the rollout. `Hold` (default) stops releasing further nodes; `Continue` goes on
    /// with the other nodes. Either way the target pools stay paused until the failed node is retried or skipped.
    #[serde(default)]
    pub on_failure: FailurePolicy,

    /// How a node's release version is read: `Label` (the `machineconfiguration.openshift.io/release-image-version`
    /// node label), `RenderedConfig` (the annotation on the node's current rendered MachineConfig) or `Auto` (default:
    /// the label when present, else the rendered config).
    #[serde(default)]
    pub version_source: VersionSource,

    /// While true, no further node starts its gate Jobs; nodes in flight finish. Pools stay as they are.
    #[serde(default)]
    pub paused: bool,

    /// Keep the Job pods off the node they gate (a required node anti-affinity merged into the template's own).
    #[serde(default = "default_true")]
    pub avoid_target_node: bool,

    /// When non-empty, a node starts its gate Jobs only inside one of these windows; nodes in flight finish when a
    /// window closes. numo wakes by itself when a window opens.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32))]
    pub maintenance_windows: Vec<MaintenanceWindow>,

    /// Stretches of time in which no node starts, whatever `maintenanceWindows` say.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub blackout_windows: Vec<BlackoutWindow>,

    /// Checks of the cluster's health made before each node starts; the next node waits while one fails. Present,
    /// every built-in check is on unless switched off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_checks: Option<HealthChecks>,

    /// How long a node's slot stays taken after it is done, e.g. `10m`; during the soak the node must stay Ready,
    /// schedulable and `Done` for the Machine Config Operator, or the soak starts again. Unset, the next node starts
    /// as soon as one is done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(s|m|h))+$"))]
    pub soak_time: Option<String>,

    /// What numo gates. `Upgrade` (default): cluster upgrades only, exactly as the Ansible operator; the target
    /// pools are paused only while an upgrade rolls. `AnyConfigChange`: every change of the target pools' rendered
    /// MachineConfig (an upgrade, or a new or changed MachineConfig such as kernel arguments or a registry
    /// config); numo keeps the target pools paused for as long as the run config exists and restores them on
    /// delete.
    #[serde(default)]
    pub trigger: Trigger,

    /// Under `AnyConfigChange`: how long a target node may stay behind its pool's rendered config before numo says
    /// so (a `ConfigChangeOverdue` condition, a Warning Event and the `numo_config_change_overdue` metric), e.g.
    /// `24h` (the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^([0-9]+(\.[0-9]+)?(s|m|h))+$"))]
    pub overdue_after: Option<String>,

    /// Failure-domain waves: which node label names a node's failure domain (a zone, a rack) and whether nodes go
    /// one domain at a time (`DomainAtATime`) or never two of one domain at once (`Spread`). Unset: nodes go in
    /// target order, then by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<super::topology::Topology>,

    /// Accept a second, ungated reboot per node of a target pool in image mode (a MachineOSConfig builds the pool's
    /// OS image on the cluster). A node released into the canary boots the canary's build, and two builds never
    /// share a digest, so the node reboots again into its own pool's build when it goes home at the restore. numo
    /// refuses a target pool in image mode unless this is true (the canary then needs a MachineOSConfig that builds
    /// the same image).
    #[serde(default)]
    pub accept_image_mode_second_reboot: bool,
}

/// What a run config gates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Trigger {
    /// Cluster upgrades: a target node below the ClusterVersion's desired version starts a rollout.
    #[default]
    Upgrade,
    /// Every change of a target pool's rendered MachineConfig: a target node whose current config's content differs
    /// from its pool's rendered config starts a rollout.
    AnyConfigChange,
}

impl Trigger {
    /// Every trigger.
    pub const ALL: [Trigger; 2] = [Trigger::Upgrade, Trigger::AnyConfigChange];

    /// The name as written in the spec (and in metric labels).
    pub fn as_str(self) -> &'static str {
        match self {
            Trigger::Upgrade => "Upgrade",
            Trigger::AnyConfigChange => "AnyConfigChange",
        }
    }
}

/// The spec of a run config that sets only what it must: every field as an object that leaves it out decodes it.
impl Default for MutexRunConfigSpec {
    fn default() -> Self {
        Self {
            skip_tls_verify: false,
            canary: CanaryPool::default(),
            mutex_rules: Vec::new(),
            mutex_targets: Vec::new(),
            concurrency: default_concurrency(),
            node_timeout: None,
            on_failure: FailurePolicy::default(),
            version_source: VersionSource::default(),
            paused: false,
            avoid_target_node: default_true(),
            maintenance_windows: Vec::new(),
            blackout_windows: Vec::new(),
            health_checks: None,
            soak_time: None,
            trigger: Trigger::default(),
            overdue_after: None,
            topology: None,
            accept_image_mode_second_reboot: false,
        }
    }
}

fn default_concurrency() -> u32 {
    1
}

fn default_true() -> bool {
    true
}

/// The canary MachineConfigPool.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct CanaryPool {
    /// Name of the MachineConfigPool.
    #[schemars(length(min = 1))]
    pub name: String,
}

/// What a failed node does to the rest of the rollout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum FailurePolicy {
    /// Stop releasing further nodes until the failed node is retried or skipped.
    #[default]
    Hold,
    /// Go on with the other nodes; the pools stay paused at the end until the failed node is retried or skipped.
    Continue,
}

/// Where a node's release version is read from.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum VersionSource {
    /// The node label when present, else the rendered MachineConfig's annotation.
    #[default]
    Auto,
    /// Only the `machineconfiguration.openshift.io/release-image-version` node label (set by NFD or a MachineConfig).
    Label,
    /// Only the `machineconfiguration.openshift.io/release-image-version` annotation of the node's current rendered
    /// MachineConfig (needs no NFD).
    RenderedConfig,
}

/// What numo observed and did for a `MutexRunConfig`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MutexRunConfigStatus {
    /// The generation of the spec this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Where the rollout is: Idle, Invalid, Waiting, Pausing, Upgrading, Failed, Restoring or Completed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<RunPhase>,
    /// A sentence saying what the rollout is doing or waiting for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The version the gated nodes are upgraded to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_version: Option<String>,
    /// Under `trigger: AnyConfigChange`: the rendered MachineConfigs the rollout moves the target nodes to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_config: Option<TargetConfig>,
    /// Nodes done (upgraded or skipped) out of nodes gated, e.g. `3/10`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,
    /// How many nodes the rollout gates.
    #[serde(default)]
    pub total_nodes: u32,
    /// One entry per node that has started and not finished, or failed, with its Jobs and times (an atomic list:
    /// numo writes it, and its managed fields then name the list, not each entry's fields).
    #[serde(default)]
    pub nodes: Vec<NodeProgress>,
    /// Names of the nodes that finished (upgraded and cleaned up, or already at the target version), in the order
    /// they finished.
    #[serde(default)]
    pub completed_nodes: NodeNames,
    /// Names of the nodes an admin skipped with the skip annotation, in the order they were skipped.
    #[serde(default)]
    pub skipped_nodes: NodeNames,
    /// How many nodes have not started yet.
    #[serde(default)]
    pub pending_nodes: u32,
    /// When the current rollout started and, once it ended, finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When the current rollout finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// When every node had finished and the restore walk began (the pools given back to the MCO).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore_started_at: Option<Time>,
    /// The next (or current) maintenance window in which a node may start; set when `maintenanceWindows` or
    /// `blackoutWindows` are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_window: Option<WindowTimes>,
    /// Since when something has held the next node (`blockedBy` not empty); unset while nothing does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held_since: Option<Time>,
    /// What holds the next node from starting now (a closed window, a failing health check, a soak); empty when
    /// nothing does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub blocked_by: Vec<Blocker>,
    /// When the rollout should end and on what that rests; refreshed when a node finishes or a hold starts or ends.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate: Option<crate::api::Estimate>,
    /// How long each step took for this rollout's nodes (the latest durations of each step).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_durations: Vec<crate::api::StepSamples>,
    /// The figures of the last rollouts that ended (at most five, newest last), so that the next one starts with
    /// real figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<crate::api::RolloutFigures>,
    /// Changes by someone other than numo to what numo holds (a claimed pool's `paused`, `nodeSelector` or
    /// `maxUnavailable`, numo's claim on a pool, a held node's rule labels), recent or unresolved; see the
    /// `Contested` condition.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub foreign_changes: Vec<ForeignChange>,
    /// The pools numo holds, as it claimed them: kept here, where only numo writes, besides the pools' own
    /// annotations, so that a pool replaced (its annotations dropped) or deleted and created again is still held,
    /// claimed again with how it was before the rollout, never with what the other writer left.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["name"]))]
    pub held_pools: Vec<HeldPool>,
    /// Under `spec.topology`: the failure domains in the order numo takes them, the one in progress and those done.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub topology: Option<super::topology::TopologyStatus>,
    /// Changes of the cluster's target release while this rollout ran (a z-stream fix asked for mid-rollout, the
    /// second hop of an EUS-to-EUS update): the nodes then in their gated turn went on to the new release inside
    /// it, the others go straight to it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub target_changes: Vec<TargetChange>,
    /// The reference's condition types (ConfigValidated, UpgradeChecked, UpgradeAvailable, UpgradeReady,
    /// TargetPoolsPaused, MutexRulesApplied, MCPUpdated, JobRun, NodeUpgrade) plus Conflict, ReadyForNextNode,
    /// ConfigChangeOverdue, Contested and ForeignWritesRefused.
    #[serde(default)]
    #[schemars(schema_with = "crate::api::conditions_schema")]
    pub conditions: Vec<Condition>,
}

/// A change of the cluster's target release while a rollout ran.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetChange {
    /// The release the rollout was going to.
    pub from: String,
    /// The release it goes to since.
    pub to: String,
    /// When numo saw the change.
    pub at: Time,
    /// The nodes in their gated turn at that moment: they went on to the new release inside it, their gate Jobs
    /// not run again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub in_flight: Vec<String>,
}

/// A change by someone other than numo to a field numo holds, and what numo did about it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ForeignChange {
    /// The object, as `MachineConfigPool/<name>`, `Node/<name>` or `Job/<namespace>/<name>`.
    pub object: String,
    /// The field: `spec.paused`, `spec.nodeSelector`, `spec.maxUnavailable`, `metadata.annotations` (numo's claim),
    /// `metadata.labels` (the rule labels), or `metadata.uid` (a Job with numo's labels that numo did not create).
    pub field: String,
    /// Who changed it: the field manager that owns the field now (the API server's audit log names the user), or
    /// why that is not known.
    pub changed_by: String,
    /// How many times the field was changed by others in a row, each within a minute of the previous one.
    pub changes: u32,
    /// When numo first saw this series of changes.
    pub first_seen: Time,
    /// When numo last saw the field changed by someone else.
    pub last_seen: Time,
    /// Whether the field still differs from what numo set (numo's write back has not been seen yet, or numo stopped
    /// writing it).
    pub unresolved: bool,
    /// What numo did: put it back, or stopped writing it until the changes stop.
    pub action: String,
}

/// A pool numo holds, as it claimed it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldPool {
    /// The pool's name.
    pub name: String,
    /// The uid of the pool numo claimed: another uid is the pool deleted and created again.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// How the pool was before numo changed it, as the JSON of its `original` annotation (`paused`, `nodeSelector`,
    /// `maxUnavailable`, and the canary's `machineConfigSelector`): what the restore puts back.
    pub original: String,
}

/// What a config-change rollout moves the target nodes to.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TargetConfig {
    /// Identifies this rollout: its Jobs carry it (label and annotation `target-version`) and its node records
    /// belong to it. A change that arrives during the rollout is rolled within it.
    pub rollout: String,
    /// Each target pool's rendered MachineConfig (`spec.configuration.name`), re-read as it changes.
    #[serde(default)]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["pool"]))]
    pub pools: Vec<PoolConfig>,
    /// The MachineConfigs added to or removed from the target pools' sources since the configs their nodes run,
    /// as far as numo can tell from the pools (`+name`, `-name`); a changed MachineConfig keeps its name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub machine_configs: Vec<String>,
    /// When a target node first fell behind its pool's rendered config without being done since.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub behind_since: Option<Time>,
}

/// A target pool's rendered config.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PoolConfig {
    /// The MachineConfigPool.
    pub pool: String,
    /// Its rendered MachineConfig, `rendered-<pool>-<hash>`.
    pub rendered_config: String,
}

/// Where a rollout is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum RunPhase {
    /// No upgrade is available for the target nodes.
    Idle,
    /// The configuration is invalid; see the ConfigValidated condition.
    Invalid,
    /// An upgrade is available; numo waits for the control plane to finish, for another run config, or for `paused`.
    Waiting,
    /// The target pools are being paused and steered.
    Pausing,
    /// Nodes are being gated and upgraded one by one.
    Upgrading,
    /// A node failed; the target pools stay paused until it is retried or skipped.
    Failed,
    /// Every node is done; the pools are being restored.
    Restoring,
    /// Every node reached the target version and the pools were restored.
    Completed,
}

/// One node's progress through the gate.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NodeProgress {
    /// The node's name.
    pub name: String,
    /// Where the node is: Pending, Gating, Released, Upgrading, CleaningUp, Soaking, Done, Failed, Skipped or
    /// Ungated.
    pub phase: NodePhase,
    /// The Jobs created for this node and their results.
    #[serde(default)]
    pub jobs: Vec<JobRecord>,
    /// When the node's first gate Job was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When the node's rule labels were removed, releasing it into the canary pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub released_at: Option<Time>,
    /// When the Machine Config Operator started on the node (its desired config changed), after its release.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrading_at: Option<Time>,
    /// When the Machine Config Operator had drained the node for this upgrade (its MachineConfigNode's `Drained`
    /// condition turned True): the upgrade's drain ends here and its reboot begins. Set only where
    /// MachineConfigNodes are served (OpenShift 4.20 and later) and numo saw the drain end while the node upgraded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drained_at: Option<Time>,
    /// When the node was Ready at the target, and its cleanup Jobs could start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgraded_at: Option<Time>,
    /// When the node finished (done or failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// When the node's current soak started; unset while the node is unhealthy (the soak starts again once it is
    /// healthy).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak_started_at: Option<Time>,
    /// What happened to the node, or what it waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// For an `Ungated` node: when an admin let the rollout go on past it (the retry annotation); its gate Jobs are
    /// not run after the fact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_at: Option<Time>,
}

/// A node's place in the gate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
pub enum NodePhase {
    /// Not started yet.
    #[default]
    Pending,
    /// Gate Jobs are running.
    Gating,
    /// Gate Jobs succeeded and the rule labels were removed; the canary pool takes the node.
    Released,
    /// The Machine Config Operator is upgrading the node.
    Upgrading,
    /// The node reached the target version and went home to its paused pool (out of the canary); cleanup Jobs are
    /// running.
    CleaningUp,
    /// Cleaned up; the node's slot stays taken for `soakTime` while it must stay healthy.
    Soaking,
    /// Upgraded and cleaned up, or already at the target version.
    Done,
    /// A Job failed, the machine-config daemon failed its update, or the node timed out; see the message.
    Failed,
    /// An admin skipped the node.
    Skipped,
    /// The Machine Config Operator started upgrading the node while numo held it (someone unpaused its pool or
    /// removed its rule labels): its gate Jobs did not run before it. Never counted as gated.
    Ungated,
}

impl NodePhase {
    /// Every phase, in the order a node goes through them.
    pub const ALL: [NodePhase; 10] = [
        NodePhase::Pending,
        NodePhase::Gating,
        NodePhase::Released,
        NodePhase::Upgrading,
        NodePhase::CleaningUp,
        NodePhase::Soaking,
        NodePhase::Done,
        NodePhase::Failed,
        NodePhase::Skipped,
        NodePhase::Ungated,
    ];

    /// Whether a node in this phase is in flight: between its first gate Job and its last cleanup Job, as
    /// `concurrency` counts it (a soaking node keeps a slot but is not in flight).
    pub fn in_flight(self) -> bool {
        matches!(self, NodePhase::Gating | NodePhase::Released | NodePhase::Upgrading | NodePhase::CleaningUp)
    }
}

/// One Job numo created for a node. The record outlives the Job: a Job deleted after it finished (its TTL, an
/// admin) keeps its result here, so the step is never run again.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobRecord {
    /// The Job's name.
    pub name: String,
    /// The Job's namespace; absent when it is its rule's (the namespace in `rule`), as it is unless the rule sets
    /// `jobNamespace`. Left out so that a hundred nodes in flight keep the run config small.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// The MutexRule it runs, as `namespace/name`.
    pub rule: String,
    /// `gate` (before the upgrade) or `cleanup` (after it).
    pub phase: String,
    /// Running, Succeeded or Failed.
    pub result: JobResult,
    /// The attempt (1, 2, ...): a retry of a failed step runs the next one.
    #[serde(default = "first_attempt")]
    pub attempt: u32,
    /// Why the Job failed (its Failed condition), or that it was deleted before it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The start of the uid of the Job numo created (its first 8 characters, random: the API server draws them),
    /// once numo saw it: only that Job counts for this step. A Job with numo's labels and another uid (replaced, or
    /// made by someone else) is never counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// numo asked for this Job (recorded before it is created, under a name nobody can know before) and has not seen
    /// it yet.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requested: bool,
}

fn first_attempt() -> u32 {
    1
}

/// How many characters of a Job's uid its record keeps.
pub const UID_KEPT: usize = 8;

impl JobRecord {
    /// Whether the Job with uid `uid` is the one this record's step created, as far as the record knows it.
    pub fn same_uid(&self, uid: &str) -> bool {
        self.uid.as_deref().is_none_or(|kept| uid.get(..kept.len()) == Some(kept))
    }

    /// What a record keeps as the namespace of a Job of rule `rule` (`namespace/name`) in `namespace`: nothing when
    /// it is the rule's own.
    pub fn kept_namespace<'a>(rule: &str, namespace: &'a str) -> &'a str {
        match rule.split_once('/') {
            Some((own, _)) if own == namespace => "",
            _ => namespace,
        }
    }

    /// What a record keeps of uid `uid`.
    pub fn kept_uid(uid: &str) -> String {
        uid.chars().take(UID_KEPT).collect()
    }

    /// The Job's namespace, `namespace` or else its rule's.
    pub fn job_namespace(&self) -> &str {
        match self.namespace.as_str() {
            "" => self.rule.split_once('/').map_or("", |(namespace, _)| namespace),
            namespace => namespace,
        }
    }
}

/// The outcome of a Job.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum JobResult {
    /// The Job has not finished.
    #[default]
    Running,
    /// The Job completed.
    Succeeded,
    /// The Job failed.
    Failed,
}

impl MutexRunConfigSpec {
    /// The per-node timeout, parsed from `nodeTimeout`.
    pub fn node_timeout(&self) -> Option<std::time::Duration> {
        self.node_timeout.as_deref().and_then(parse_duration)
    }

    /// The soak time, parsed from `soakTime`.
    pub fn soak_time(&self) -> Option<std::time::Duration> {
        self.soak_time.as_deref().and_then(parse_duration)
    }

    /// How long a target node may stay behind under `AnyConfigChange`, parsed from `overdueAfter` (default 24h).
    pub fn overdue_after(&self) -> std::time::Duration {
        self.overdue_after.as_deref().and_then(parse_duration).unwrap_or(std::time::Duration::from_secs(24 * 3600))
    }
}

impl MutexRunConfigStatus {
    /// What identifies the rollout this status describes: the config rollout under `AnyConfigChange`, else the
    /// target version.
    pub fn rollout_key(&self) -> Option<&str> {
        match &self.target_config {
            Some(config) => Some(config.rollout.as_str()),
            None => self.target_version.as_deref(),
        }
    }
}

/// Parses a duration such as `90s`, `45m`, `1h30m` or `1.5h`.
pub fn parse_duration(text: &str) -> Option<std::time::Duration> {
    let mut total = 0f64;
    let mut number = String::new();
    for c in text.chars() {
        match c {
            '0'..='9' | '.' => number.push(c),
            's' | 'm' | 'h' => {
                let value: f64 = number.parse().ok()?;
                number.clear();
                total += value
                    * match c {
                        's' => 1.0,
                        'm' => 60.0,
                        _ => 3600.0,
                    };
            }
            _ => return None,
        }
    }
    (number.is_empty() && total > 0.0).then(|| std::time::Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn durations_parse_like_the_schema_allows() {
        assert_eq!(parse_duration("90s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_duration("45m"), Some(Duration::from_secs(2700)));
        assert_eq!(parse_duration("1h30m"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("1.5h"), Some(Duration::from_secs(5400)));
        assert_eq!(parse_duration("10"), None);
        assert_eq!(parse_duration("0s"), None);
        assert_eq!(parse_duration("5d"), None);
    }
}
