//! The run-config state machine, as a pure function: a [`Snapshot`] of the cluster in, the [`Plan`] (intents to
//! apply, the status to write, the Events to publish, when to look again) out. Every step of SPEC.md's procedure is
//! decided here; `apply` only carries the intents out, idempotently.
//!
//! The state a rollout needs lives in the cluster, so a restarted operator derives the same plan: which pools numo
//! drives and how they were before (pool annotations), which nodes are held (rule labels), which steps ran (Jobs with
//! deterministic names), plus the times recorded in the run config's status.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference, Time};

use super::snapshot::{JobView, NodeView, PoolOriginal, PoolView, RuleView, Snapshot, Unusable};
use super::version::is_behind;
use crate::api::{JobRecord, JobResult, MutexRunConfigStatus, NodePhase, NodeProgress, RunPhase};
use crate::conditions::{self, Desired};
use crate::jobs::{self, JobKey, JobPhase, JobTemplate};
use crate::selector;

/// Condition types, the reference's plus `Conflict`.
pub mod condition {
    /// Every rule, target and the canary are valid.
    pub const CONFIG_VALIDATED: &str = "ConfigValidated";
    /// The ClusterVersion was read.
    pub const UPGRADE_CHECKED: &str = "UpgradeChecked";
    /// Some target node is below the cluster's target version (or a rollout is under way).
    pub const UPGRADE_AVAILABLE: &str = "UpgradeAvailable";
    /// The control plane completed its upgrade to the target version.
    pub const UPGRADE_READY: &str = "UpgradeReady";
    /// Every target pool is paused by numo.
    pub const TARGET_POOLS_PAUSED: &str = "TargetPoolsPaused";
    /// Every held node carries the rule labels.
    pub const MUTEX_RULES_APPLIED: &str = "MutexRulesApplied";
    /// The target and canary pool selectors are steered.
    pub const MCP_UPDATED: &str = "MCPUpdated";
    /// No Job of the rollout failed.
    pub const JOB_RUN: &str = "JobRun";
    /// No node failed.
    pub const NODE_UPGRADE: &str = "NodeUpgrade";
    /// Another run config drives one of this run config's pools.
    pub const CONFLICT: &str = "Conflict";
}

/// A change to make in the cluster.
#[derive(Clone, Debug, PartialEq)]
pub enum Intent {
    /// Add numo's finalizer to the run config.
    AddFinalizer,
    /// Remove numo's finalizer (everything is restored).
    RemoveFinalizer,
    /// Claim a pool for this run config (recording `record` as its original when given) and set `paused` and
    /// `nodeSelector`. Conditional on the pool's resourceVersion.
    WritePool {
        /// The pool.
        pool: String,
        /// The resourceVersion the plan was made from.
        resource_version: String,
        /// The original to record (when the pool is not yet claimed by this run config).
        record: Option<PoolOriginal>,
        /// The claim value, `namespace/name`.
        claim: String,
        /// `spec.paused` to set.
        paused: bool,
        /// `spec.nodeSelector` to set.
        node_selector: Option<LabelSelector>,
    },
    /// Put a pool back exactly as recorded and drop numo's annotations. Conditional on the resourceVersion.
    RestorePool {
        /// The pool.
        pool: String,
        /// The resourceVersion the plan was made from.
        resource_version: String,
        /// What to put back; None when the record is missing or unreadable (only numo's annotations are dropped).
        original: Option<PoolOriginal>,
    },
    /// Add rule labels to a node (holding it in its target pool).
    LabelNode {
        /// The node.
        node: String,
        /// The label keys.
        labels: Vec<String>,
    },
    /// Remove rule labels from a node (releasing it to the canary pool, or at the end).
    UnlabelNode {
        /// The node.
        node: String,
        /// The label keys.
        labels: Vec<String>,
    },
    /// Create a Job (an existing Job of that name means it was created before).
    CreateJob(Box<Job>),
    /// Remove the retry annotation (it was acted on).
    ClearRetry,
}

/// A Kubernetes Event to publish about the run config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// Warning (true) or Normal.
    pub warning: bool,
    /// CamelCase reason.
    pub reason: &'static str,
    /// What numo did.
    pub action: &'static str,
    /// A sentence for people.
    pub note: String,
}

/// The outcome of planning.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Changes to make, in order; apply stops at the first failure.
    pub intents: Vec<Intent>,
    /// The status to write.
    pub status: MutexRunConfigStatus,
    /// Events to publish.
    pub notices: Vec<Notice>,
    /// When to reconcile again without a change (a node's timeout).
    pub requeue_after: Option<Duration>,
}

/// Plans one reconcile.
pub fn plan(snapshot: &Snapshot) -> Plan {
    let mut planner = Planner::new(snapshot);
    planner.run();
    planner.finish()
}

/// What a node is doing, derived from its labels, its version and the Jobs of the rollout.
#[derive(Clone, Debug, PartialEq)]
enum NodeState {
    Skipped,
    Done { already: bool },
    Pending,
    Gating { create: Option<(usize, u32)> },
    Release,
    Upgrading,
    CleaningUp { create: Option<(usize, u32)> },
    Failed { message: String, timed_out: bool, retry: Retry },
}

/// What a retry of a failed node does.
#[derive(Clone, Debug, PartialEq)]
enum Retry {
    Job { rule: usize, phase: JobPhase, attempt: u32 },
    ResetTimer,
}

impl NodeState {
    fn phase(&self) -> NodePhase {
        match self {
            NodeState::Skipped => NodePhase::Skipped,
            NodeState::Done { .. } => NodePhase::Done,
            NodeState::Pending => NodePhase::Pending,
            NodeState::Gating { .. } => NodePhase::Gating,
            NodeState::Release => NodePhase::Released,
            NodeState::Upgrading => NodePhase::Upgrading,
            NodeState::CleaningUp { .. } => NodePhase::CleaningUp,
            NodeState::Failed { .. } => NodePhase::Failed,
        }
    }

    fn in_flight(&self) -> bool {
        matches!(
            self,
            NodeState::Gating { .. } | NodeState::Release | NodeState::Upgrading | NodeState::CleaningUp { .. }
        )
    }
}

struct Planner<'a> {
    s: &'a Snapshot,
    me: String,
    prev: &'a MutexRunConfigStatus,
    intents: Vec<Intent>,
    notices: Vec<Notice>,
    conditions: Vec<Desired>,
    phase: RunPhase,
    message: String,
    status: MutexRunConfigStatus,
    requeue_after: Option<Duration>,
    /// The rollout's Jobs by node (a plan looks a node's Jobs up many times; thousands of nodes have thousands).
    jobs_by_node: BTreeMap<&'a str, Vec<&'a JobView>>,
    /// The nodes the previous status counted as done or skipped.
    completed_before: BTreeSet<&'a str>,
    skipped_before: BTreeSet<&'a str>,
}

impl<'a> Planner<'a> {
    fn new(s: &'a Snapshot) -> Self {
        let prev = &s.run_config.status;
        Self {
            s,
            me: s.run_config.key(),
            prev,
            intents: Vec::new(),
            notices: Vec::new(),
            conditions: Vec::new(),
            phase: RunPhase::Idle,
            message: String::new(),
            status: MutexRunConfigStatus {
                target_version: prev.target_version.clone(),
                started_at: prev.started_at.clone(),
                finished_at: prev.finished_at.clone(),
                total_nodes: prev.total_nodes,
                completed_nodes: prev.completed_nodes.clone(),
                skipped_nodes: prev.skipped_nodes.clone(),
                pending_nodes: prev.pending_nodes,
                nodes: prev.nodes.clone(),
                ..Default::default()
            },
            requeue_after: None,
            jobs_by_node: s.jobs.iter().fold(BTreeMap::new(), |mut by_node, job| {
                by_node.entry(job.node.as_str()).or_insert_with(Vec::new).push(job);
                by_node
            }),
            completed_before: prev.completed_nodes.iter().map(String::as_str).collect(),
            skipped_before: prev.skipped_nodes.iter().map(String::as_str).collect(),
        }
    }

    /// The rollout's Jobs for `node` and `version`.
    fn jobs_of<'s>(&'s self, node: &str, version: &'s str) -> impl Iterator<Item = &'a JobView> + 's {
        self.jobs_by_node
            .get(node)
            .map(|jobs| jobs.as_slice())
            .unwrap_or_default()
            .iter()
            .copied()
            .filter(move |j| j.target_version == version)
    }

    fn now(&self) -> Time {
        Time(self.s.now)
    }

    fn rule_labels(&self) -> Vec<String> {
        self.s.rules.iter().map(RuleView::label).collect()
    }

    fn claimed(&self) -> Vec<&'a PoolView> {
        self.s.pools.values().filter(|p| p.claimed_by.as_deref() == Some(self.me.as_str())).collect()
    }

    /// Nodes anywhere in the cluster that carry one of this run config's rule labels.
    fn labelled_nodes(&self) -> Vec<(&'a NodeView, Vec<String>)> {
        let keys = self.rule_labels();
        self.s
            .nodes
            .values()
            .filter_map(|n| {
                let present: Vec<String> = keys.iter().filter(|k| n.labels.contains_key(*k)).cloned().collect();
                (!present.is_empty()).then_some((n, present))
            })
            .collect()
    }

    fn run(&mut self) {
        if self.s.run_config.deleting {
            self.finalize();
            return;
        }
        if !self.s.run_config.has_finalizer {
            self.intents.push(Intent::AddFinalizer);
        }
        let (problems, unjudged) = self.validate();
        if problems.is_empty() && !unjudged.is_empty() {
            // Created or changed together with the run config: its controller judges it in a moment.
            let message = format!("{}: not validated yet; nothing is changed until they are.", unjudged.join(", "));
            self.conditions.push(Desired::false_(condition::CONFIG_VALIDATED, "AwaitingValidation", message.clone()));
            self.phase = RunPhase::Waiting;
            self.message = message;
            return;
        }
        if !problems.is_empty() {
            let message = problems.join("; ");
            self.conditions.push(Desired::false_(condition::CONFIG_VALIDATED, "InvalidConfig", message.clone()));
            self.phase = RunPhase::Invalid;
            self.message = if self.claimed().is_empty() {
                format!("Invalid configuration, nothing was changed: {message}")
            } else {
                format!("Invalid configuration; the rollout is held with the target pools paused: {message}")
            };
            if self.prev.phase != Some(RunPhase::Invalid) {
                self.notice(true, "InvalidConfig", "Validate", self.message.clone());
            }
            return;
        }
        self.conditions.push(Desired::true_(
            condition::CONFIG_VALIDATED,
            "Valid",
            "Every MutexRule and MutexTarget exists and is valid, and the canary pool is usable.",
        ));
        self.rollout();
    }

    /// Step 1: every rule and target exists and is valid; the canary exists, is unpaused and is not a target.
    /// Returns the problems, and the rules and targets not judged yet by their own controllers.
    fn validate(&self) -> (Vec<String>, Vec<String>) {
        let mut problems = Vec::new();
        let mut unjudged = Vec::new();
        for rule in &self.s.rules {
            match &rule.found {
                None => problems.push(format!("MutexRule {} not found", rule.key())),
                Some(found) => match &found.valid {
                    Ok(()) => {}
                    Err(Unusable::NotValidatedYet) => unjudged.push(format!("MutexRule {}", rule.key())),
                    Err(Unusable::Invalid(why)) => problems.push(format!("MutexRule {} is invalid: {why}", rule.key())),
                },
            }
        }
        for target in &self.s.targets {
            let key = format!("{}/{}", target.namespace, target.name);
            match &target.found {
                None => problems.push(format!("MutexTarget {key} not found")),
                Some(Err(Unusable::NotValidatedYet)) => unjudged.push(format!("MutexTarget {key}")),
                Some(Err(Unusable::Invalid(why))) => problems.push(format!("MutexTarget {key} is invalid: {why}")),
                Some(Ok(pools)) => {
                    for pool in pools {
                        if !self.s.pools.contains_key(pool) {
                            problems.push(format!("MachineConfigPool {pool} of MutexTarget {key} not found"));
                        } else if pool == "master" {
                            problems.push(format!(
                                "MutexTarget {key} names the master pool; control-plane nodes cannot be gated \
                                 (pausing them would stop the control-plane upgrade)"
                            ));
                        }
                    }
                }
            }
        }
        let canary = &self.s.run_config.spec.canary.name;
        match self.s.pools.get(canary) {
            None => problems.push(format!("canary MachineConfigPool {canary} not found")),
            Some(pool) => {
                if pool.paused {
                    problems.push(format!(
                        "canary MachineConfigPool {canary} is paused; the canary must be unpaused so it can \
                         upgrade released nodes"
                    ));
                }
                if canary == "master" {
                    problems.push("the canary cannot be the master pool".to_string());
                }
            }
        }
        if self.target_pools().iter().any(|p| p == canary) {
            problems.push(format!(
                "canary MachineConfigPool {canary} is also a target pool; choose a canary that no MutexTarget names"
            ));
        }
        (problems, unjudged)
    }

    /// The target pools, in target order, without repeats.
    fn target_pools(&self) -> Vec<String> {
        let mut seen = BTreeSet::new();
        self.s
            .targets
            .iter()
            .filter_map(|t| t.found.as_ref()?.as_ref().ok())
            .flatten()
            .filter(|p| seen.insert((*p).clone()))
            .cloned()
            .collect()
    }

    /// Every pool the rollout writes: the targets and the canary, sorted (claims are taken in this order, so two
    /// run configs never deadlock).
    fn involved_pools(&self) -> Vec<String> {
        let mut pools: BTreeSet<String> = self.target_pools().into_iter().collect();
        pools.insert(self.s.run_config.spec.canary.name.clone());
        pools.into_iter().collect()
    }

    /// The gated nodes in release order (target order, then name).
    fn gated_nodes(&self) -> Vec<&'a NodeView> {
        let targets = self.target_pools();
        let selectors: Vec<crate::membership::PoolSelector<'_>> = self
            .s
            .pools
            .values()
            .map(|p| crate::membership::PoolSelector { name: &p.name, node_selector: p.effective_selector() })
            .collect();
        let mut nodes: Vec<(usize, &NodeView)> = self
            .s
            .nodes
            .values()
            .filter_map(|n| {
                let pool = crate::membership::pool_of(&n.labels, &selectors).ok()??;
                targets.iter().position(|t| t == pool).map(|i| (i, n))
            })
            .collect();
        nodes.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
        nodes.into_iter().map(|(_, n)| n).collect()
    }

    /// A live claim on one of this run config's pools by another run config.
    fn conflict(&self) -> Option<(String, String)> {
        self.involved_pools().into_iter().find_map(|name| {
            let owner = self.s.pools.get(&name)?.claimed_by.as_ref()?;
            (owner != &self.me && self.s.run_configs.contains(owner)).then(|| (name, owner.clone()))
        })
    }

    /// Steps 2–7.
    fn rollout(&mut self) {
        let Some(version) = self.s.cluster.as_ref().and_then(|c| c.target_version.clone()) else {
            self.conditions.push(Desired::false_(
                condition::UPGRADE_CHECKED,
                "ClusterVersionNotFound",
                "The ClusterVersion 'version' does not exist or names no version.",
            ));
            self.phase = if self.claimed().is_empty() { RunPhase::Idle } else { RunPhase::Waiting };
            self.message = "Waiting for the ClusterVersion 'version' to name a version.".into();
            return;
        };
        self.conditions.push(Desired::true_(
            condition::UPGRADE_CHECKED,
            "ClusterVersionRead",
            format!("The cluster's target version is {version}."),
        ));
        if self.prev.target_version.as_deref() != Some(version.as_str()) {
            self.status = MutexRunConfigStatus { target_version: Some(version.clone()), ..Default::default() };
        }
        let nodes = self.gated_nodes();
        // A skipped node may never reach the version (that is often why it was skipped): it starts no rollout.
        let behind: Vec<&NodeView> = nodes
            .iter()
            .copied()
            .filter(|n| is_behind(n.version.as_deref(), &version) && !self.s.run_config.skip.contains(&n.name))
            .collect();
        let control_plane_done = self.s.cluster.as_ref().is_some_and(|c| c.control_plane_completed);
        let claimed = self.claimed();
        let active = !claimed.is_empty();

        self.conditions.push(if control_plane_done {
            Desired::true_(
                condition::UPGRADE_READY,
                "ControlPlaneUpgraded",
                format!("The control plane runs {version}."),
            )
        } else {
            Desired::false_(
                condition::UPGRADE_READY,
                "ControlPlaneUpgrading",
                format!("The control plane has not completed its upgrade to {version}."),
            )
        });

        if !active {
            if behind.is_empty() {
                self.idle_or_completed(&version, &nodes);
                return;
            }
            if !self.available_and_free("NodesBehind", behind.len(), nodes.len(), &version) {
                return;
            }
            self.claim_pools();
            self.status.started_at = Some(self.now());
            self.status.finished_at = None;
            self.phase = RunPhase::Pausing;
            self.message = format!("Upgrade to {version} available: pausing the target pools.");
            self.notice(
                false,
                "PausingPools",
                "Pause",
                format!("Upgrade to {version} available; pausing {}.", self.target_pools().join(", ")),
            );
            self.count_nodes(&nodes);
            return;
        }

        if !self.available_and_free("RolloutInProgress", behind.len(), nodes.len(), &version) {
            return;
        }
        if self.claim_pools() {
            self.phase = RunPhase::Pausing;
            self.message = "Pausing the target pools.".into();
            return;
        }
        let targets = self.target_pools();
        let all_paused = targets.iter().all(|t| self.s.pools.get(t).is_some_and(|p| p.paused));
        self.conditions.push(if all_paused {
            Desired::true_(condition::TARGET_POOLS_PAUSED, "Paused", format!("Paused: {}.", targets.join(", ")))
        } else {
            Desired::false_(condition::TARGET_POOLS_PAUSED, "Pausing", "Pausing the target pools.")
        });
        if !all_paused {
            self.phase = RunPhase::Pausing;
            self.message = "Pausing the target pools.".into();
            return;
        }
        self.gate(&version, &nodes, control_plane_done);
    }

    /// Reports the upgrade as available (`reason`, with how many of the target nodes are behind), then whether
    /// another run config drives one of the pools; returns false (having set the Waiting phase) if one does.
    fn available_and_free(&mut self, reason: &str, behind: usize, total: usize, version: &str) -> bool {
        self.conditions.push(Desired::true_(
            condition::UPGRADE_AVAILABLE,
            reason,
            format!("{behind} of {total} target nodes run a version below {version}."),
        ));
        if let Some((pool, owner)) = self.conflict() {
            self.wait_for_conflict(&pool, &owner);
            return false;
        }
        self.conditions.push(Desired::false_(
            condition::CONFLICT,
            "NoConflict",
            "No other run config drives these pools.",
        ));
        true
    }

    fn wait_for_conflict(&mut self, pool: &str, owner: &str) {
        let message = format!(
            "MachineConfigPool {pool} is driven by MutexRunConfig {owner}; waiting until its rollout is finished."
        );
        self.conditions.push(Desired::true_(condition::CONFLICT, "PoolInUse", message.clone()));
        if self.prev.phase != Some(RunPhase::Waiting)
            || !conditions::is_true(&self.prev.conditions, condition::CONFLICT)
        {
            self.notice(true, "WaitingForOtherRunConfig", "Wait", message.clone());
        }
        self.phase = RunPhase::Waiting;
        self.message = message;
    }

    /// No rollout: Idle, or Completed if the last rollout reached this version. Leftover rule labels (a restore cut
    /// short) are removed.
    fn idle_or_completed(&mut self, version: &str, nodes: &[&NodeView]) {
        for (node, labels) in self.labelled_nodes() {
            self.intents.push(Intent::UnlabelNode { node: node.name.clone(), labels });
        }
        let completed = self.status.target_version.as_deref() == Some(version)
            && matches!(self.prev.phase, Some(RunPhase::Restoring | RunPhase::Completed | RunPhase::Upgrading));
        self.conditions.push(Desired::false_(
            condition::UPGRADE_AVAILABLE,
            if completed { "UpgradeCompleted" } else { "NoUpgrade" },
            format!("Every target node runs {version}."),
        ));
        if completed {
            self.phase = RunPhase::Completed;
            self.message = format!("Every target node runs {version}; the pools were restored.");
            if self.status.finished_at.is_none() {
                self.status.finished_at = Some(self.now());
            }
            self.conditions.push(Desired::false_(
                condition::TARGET_POOLS_PAUSED,
                "PoolsRestored",
                "The target pools were restored.",
            ));
            self.conditions.push(Desired::false_(
                condition::MCP_UPDATED,
                "PoolsRestored",
                "Every pool selector was restored.",
            ));
            if self.prev.phase != Some(RunPhase::Completed) {
                self.notice(false, "RolloutCompleted", "Complete", self.message.clone());
            }
        } else {
            self.phase = RunPhase::Idle;
            self.message = format!("No upgrade: every target node runs {version}.");
            self.status.nodes.clear();
            self.status.completed_nodes = nodes.iter().map(|n| n.name.clone()).collect();
            self.status.skipped_nodes.clear();
        }
        self.status.nodes.clear();
        self.status.pending_nodes = 0;
        self.status.total_nodes = nodes.len() as u32;
        if completed {
            let done = self.status.completed_nodes.len() + self.status.skipped_nodes.len();
            self.status.progress = Some(format!("{done}/{}", self.status.total_nodes));
        }
    }

    /// Claims every pool of the rollout not yet claimed (recording its original), pausing the targets.
    /// Returns whether a claim was needed.
    fn claim_pools(&mut self) -> bool {
        let targets = self.target_pools();
        let mut claimed_any = false;
        for name in self.involved_pools() {
            let Some(pool) = self.s.pools.get(&name) else { continue };
            if pool.claimed_by.as_deref() == Some(self.me.as_str()) {
                continue;
            }
            // A stale claim (its run config is gone) keeps the original it recorded.
            let record = match (&pool.claimed_by, &pool.original) {
                (Some(_), Some(original)) => original.clone(),
                _ => PoolOriginal { paused: pool.paused, node_selector: pool.node_selector.clone() },
            };
            let paused = targets.contains(&name) || pool.paused;
            self.intents.push(Intent::WritePool {
                pool: name.clone(),
                resource_version: pool.resource_version.clone(),
                record: Some(record),
                claim: self.me.clone(),
                paused,
                node_selector: pool.node_selector.clone(),
            });
            claimed_any = true;
        }
        claimed_any
    }

    /// Steps 4–7 once the target pools are claimed and paused.
    fn gate(&mut self, version: &str, nodes: &[&'a NodeView], control_plane_done: bool) {
        let keys = self.rule_labels();
        let states: Vec<(&NodeView, NodeState)> = nodes.iter().map(|n| (*n, self.node_state(n, version))).collect();
        let mut states: BTreeMap<&str, (&NodeView, NodeState)> =
            states.into_iter().map(|(n, st)| (n.name.as_str(), (n, st))).collect();
        let order: Vec<&str> = nodes.iter().map(|n| n.name.as_str()).collect();

        // Step 4: hold every node that has not been released with the rule labels. A skipped node is held too (or
        // held again, if it failed after its release): it stays in its paused pool, out of the canary, where a broken
        // node would use up the canary's maxUnavailable; its pool upgrades it, ungated, once restored.
        let mut labelling = false;
        if control_plane_done {
            let held = order.iter().map(|name| &states[name]).filter_map(|(node, state)| {
                (matches!(state, NodeState::Skipped) || !self.released(node, version)).then_some(*node)
            });
            let held: Vec<&NodeView> = held.chain(self.outsiders_the_canary_would_take(nodes)).collect();
            for node in held {
                let missing: Vec<String> = keys.iter().filter(|k| !node.labels.contains_key(*k)).cloned().collect();
                if !missing.is_empty() {
                    self.intents.push(Intent::LabelNode { node: node.name.clone(), labels: missing });
                    labelling = true;
                }
            }
        }
        let labels_applied = control_plane_done && !labelling;
        self.conditions.push(if labels_applied {
            Desired::true_(condition::MUTEX_RULES_APPLIED, "NodesLabelled", "Every held node carries the rule labels.")
        } else if control_plane_done {
            Desired::false_(condition::MUTEX_RULES_APPLIED, "Labelling", "Adding the rule labels to the target nodes.")
        } else {
            Desired::false_(
                condition::MUTEX_RULES_APPLIED,
                "WaitingForControlPlane",
                "Nodes are labelled once the control plane completed its upgrade.",
            )
        });

        // Step 5: steer the pools once every held node is labelled.
        let steered = labels_applied && self.steer_pools(&keys);
        self.conditions.push(if steered {
            Desired::true_(
                condition::MCP_UPDATED,
                "PoolsSteered",
                "Target pools select only held nodes; the canary selects released ones.",
            )
        } else {
            Desired::false_(condition::MCP_UPDATED, "NotSteered", "The pool selectors are not steered yet.")
        });

        // Step 6: per node, within the concurrency limit.
        if let Some(node) = self.s.run_config.retry.clone() {
            let failed = states.get(node.as_str()).and_then(|(n, st)| match st {
                NodeState::Failed { retry, .. } => Some((*n, retry.clone())),
                _ => None,
            });
            match failed {
                Some((n, retry)) => {
                    let state = match retry {
                        Retry::Job { rule, phase: JobPhase::Gate, attempt } => {
                            NodeState::Gating { create: Some((rule, attempt)) }
                        }
                        Retry::Job { rule, attempt, .. } => NodeState::CleaningUp { create: Some((rule, attempt)) },
                        Retry::ResetTimer => {
                            self.reset_timer(&n.name);
                            self.node_state_without_timeout(n, version)
                        }
                    };
                    states.insert(n.name.as_str(), (n, state));
                    self.notice(
                        false,
                        "NodeRetried",
                        "Retry",
                        format!("Retrying node {node} as the retry annotation asks."),
                    );
                }
                None => self.notice(
                    true,
                    "NothingToRetry",
                    "Retry",
                    format!("The retry annotation names {node}, which has not failed; ignored."),
                ),
            }
            self.intents.push(Intent::ClearRetry);
        }

        let spec = &self.s.run_config.spec;
        let hold = spec.on_failure == crate::api::FailurePolicy::Hold;
        let any_failed = states.values().any(|(_, st)| matches!(st, NodeState::Failed { .. }));
        let mut in_flight = states.values().filter(|(_, st)| st.in_flight()).count();
        let may_start = steered && control_plane_done && !spec.paused && !(hold && any_failed);
        if may_start {
            for name in &order {
                if in_flight >= spec.concurrency as usize {
                    break;
                }
                let entry = states.get_mut(name).map(|(_, st)| st);
                if let Some(state @ NodeState::Pending) = entry {
                    *state = NodeState::Gating { create: Some((0, 1)) };
                    self.status.nodes.retain(|e| e.name != *name);
                    in_flight += 1;
                }
            }
        }

        // Carry the states out.
        for name in &order {
            let (node, state) = states[name].clone();
            if steered {
                self.act(node, &state, version);
            }
        }
        self.record(&order, &states, version);

        let all_finished = states.values().all(|(_, st)| matches!(st, NodeState::Skipped | NodeState::Done { .. }));
        if steered && all_finished {
            self.restore();
            return;
        }
        self.summarize(&states, version, control_plane_done, labels_applied, steered, hold);
    }

    /// Nodes outside the targets that the steered canary (its `matchLabels`, rule labels absent) would select. They
    /// are held with the rule labels too, so the canary only ever takes released target nodes: never a node of a pool
    /// the admin paused, nor one of another custom pool (which the MCO would degrade as matched by two custom pools).
    /// The labels change no other pool's membership; they go with everyone else's at the restore.
    fn outsiders_the_canary_would_take(&self, gated: &[&NodeView]) -> Vec<&'a NodeView> {
        let Some(canary) = self.s.pools.get(&self.s.run_config.spec.canary.name) else { return Vec::new() };
        let steered = selector::with_expressions_replaced(canary.effective_selector(), &[]);
        let gated: BTreeSet<&str> = gated.iter().map(|g| g.name.as_str()).collect();
        self.s
            .nodes
            .values()
            .filter(|n| !gated.contains(n.name.as_str()) && selector::matches(Some(&steered), &n.labels))
            .collect()
    }

    /// Whether a node's gate Jobs all succeeded for `version` (or the status recorded it released, in case its Jobs
    /// were deleted since).
    fn released(&self, node: &NodeView, version: &str) -> bool {
        let by_status = self.prev.target_version.as_deref() == Some(version)
            && (self.prev.nodes.iter().any(|e| {
                e.name == node.name
                    && matches!(e.phase, NodePhase::Released | NodePhase::Upgrading | NodePhase::CleaningUp)
            }) || self
                .prev
                .nodes
                .iter()
                .any(|e| e.name == node.name && e.phase == NodePhase::Failed && e.released_at.is_some()));
        by_status
            || self.s.rules.iter().all(|r| {
                self.latest_job(&node.name, r, JobPhase::Gate, version)
                    .is_some_and(|j| j.result == JobResult::Succeeded)
            })
    }

    fn latest_job(&self, node: &str, rule: &RuleView, phase: JobPhase, version: &str) -> Option<&'a JobView> {
        let key = rule.key();
        self.jobs_of(node, version).filter(|j| j.rule == key && j.phase == phase).max_by_key(|j| j.attempt)
    }

    fn previous_entry(&self, node: &str, version: &str) -> Option<&'a NodeProgress> {
        (self.prev.target_version.as_deref() == Some(version))
            .then(|| self.prev.nodes.iter().find(|e| e.name == node))
            .flatten()
    }

    /// Derives a node's state (before retries and new starts).
    fn node_state(&self, node: &NodeView, version: &str) -> NodeState {
        let state = self.node_state_without_timeout(node, version);
        self.with_timeout(node, state, self.previous_entry(&node.name, version))
    }

    /// A node's state from its labels, version and Jobs, not counting its timeout.
    fn node_state_without_timeout(&self, node: &NodeView, version: &str) -> NodeState {
        if self.s.run_config.skip.contains(&node.name) {
            return NodeState::Skipped;
        }
        let same_rollout = self.prev.target_version.as_deref() == Some(version);
        if same_rollout && self.completed_before.contains(node.name.as_str()) {
            return NodeState::Done { already: false };
        }
        let keys = self.rule_labels();
        let labelled = keys.iter().any(|k| node.labels.contains_key(k));
        let at_version = !is_behind(node.version.as_deref(), version);
        let entry = self.previous_entry(&node.name, version);
        let started = entry.is_some_and(|e| e.phase != NodePhase::Pending)
            || self.s.rules.iter().any(|r| self.latest_job(&node.name, r, JobPhase::Gate, version).is_some());
        let released = self.released(node, version);

        if !started {
            if at_version {
                NodeState::Done { already: true }
            } else {
                NodeState::Pending
            }
        } else if !released {
            self.walk(node, version, JobPhase::Gate)
        } else if labelled {
            NodeState::Release
        } else if !(at_version && node.ready) {
            NodeState::Upgrading
        } else {
            self.walk(node, version, JobPhase::Cleanup)
        }
    }

    /// The next step of a node's gate or cleanup Jobs, in rule order.
    fn walk(&self, node: &NodeView, version: &str, phase: JobPhase) -> NodeState {
        for (i, rule) in self.s.rules.iter().enumerate() {
            if phase == JobPhase::Cleanup && rule.found.as_ref().is_none_or(|f| f.cleanup.is_none()) {
                continue;
            }
            let running = |create| match phase {
                JobPhase::Gate => NodeState::Gating { create },
                JobPhase::Cleanup => NodeState::CleaningUp { create },
            };
            match self.latest_job(&node.name, rule, phase, version) {
                None => return running(Some((i, 1))),
                Some(job) => match job.result {
                    JobResult::Succeeded => continue,
                    JobResult::Running => return running(None),
                    JobResult::Failed => {
                        return NodeState::Failed {
                            message: format!(
                                "{} Job {}/{} of MutexRule {} failed: {}",
                                phase.as_str(),
                                job.namespace,
                                job.name,
                                rule.key(),
                                job.message.as_deref().unwrap_or("no reason given")
                            ),
                            timed_out: false,
                            retry: Retry::Job { rule: i, phase, attempt: job.attempt + 1 },
                        }
                    }
                },
            }
        }
        match phase {
            JobPhase::Gate => NodeState::Release,
            JobPhase::Cleanup => NodeState::Done { already: false },
        }
    }

    /// A node in flight longer than `nodeTimeout` fails; otherwise the reconcile is due when it would.
    fn with_timeout(&self, node: &NodeView, state: NodeState, entry: Option<&NodeProgress>) -> NodeState {
        let Some(timeout) = self.s.run_config.spec.node_timeout() else { return state };
        if !state.in_flight() {
            return state;
        }
        let Some(started) = entry.and_then(|e| e.started_at.as_ref()) else { return state };
        let elapsed = self.s.now.duration_since(started.0);
        let elapsed = Duration::try_from(elapsed).unwrap_or_default();
        if elapsed >= timeout {
            let what = match state {
                NodeState::Gating { .. } => "finish its gate Jobs",
                NodeState::Release | NodeState::Upgrading => "reach the target version",
                _ => "finish its cleanup Jobs",
            };
            NodeState::Failed {
                message: format!(
                    "node {} did not {what} within {} (nodeTimeout)",
                    node.name,
                    self.s.run_config.spec.node_timeout.as_deref().unwrap_or_default()
                ),
                timed_out: true,
                retry: Retry::ResetTimer,
            }
        } else {
            state
        }
    }

    fn reset_timer(&mut self, node: &str) {
        let now = self.now();
        for entry in self.status.nodes.iter_mut().filter(|e| e.name == node) {
            entry.started_at = Some(now.clone());
            entry.finished_at = None;
        }
    }

    /// Step 5: target pools select only held nodes (`Exists`), the canary selects only released ones
    /// (`DoesNotExist`, replacing its own expressions). Returns whether every pool is steered already.
    fn steer_pools(&mut self, keys: &[String]) -> bool {
        let mut steered = true;
        let canary = self.s.run_config.spec.canary.name.clone();
        for name in self.involved_pools() {
            let Some(pool) = self.s.pools.get(&name) else { continue };
            let original = pool.original.clone().unwrap_or_default();
            let desired = if name == canary {
                let exprs: Vec<_> = keys.iter().map(|k| selector::requirement(k, "DoesNotExist")).collect();
                selector::with_expressions_replaced(original.node_selector.as_ref(), &exprs)
            } else {
                let exprs: Vec<_> = keys.iter().map(|k| selector::requirement(k, "Exists")).collect();
                selector::with_requirements(original.node_selector.as_ref(), &exprs)
            };
            let paused = name != canary || pool.paused;
            if pool.node_selector.as_ref() != Some(&desired) || pool.paused != paused {
                self.intents.push(Intent::WritePool {
                    pool: name.clone(),
                    resource_version: pool.resource_version.clone(),
                    record: None,
                    claim: self.me.clone(),
                    paused,
                    node_selector: Some(desired),
                });
                steered = false;
            }
        }
        steered
    }

    /// The intents that move one node on.
    fn act(&mut self, node: &NodeView, state: &NodeState, version: &str) {
        match state {
            NodeState::Gating { create: Some((rule, attempt)) } => {
                self.create_job(node, *rule, JobPhase::Gate, *attempt, version)
            }
            NodeState::CleaningUp { create: Some((rule, attempt)) } => {
                self.create_job(node, *rule, JobPhase::Cleanup, *attempt, version)
            }
            NodeState::Release => {
                let labels: Vec<String> =
                    self.rule_labels().into_iter().filter(|k| node.labels.contains_key(k)).collect();
                self.intents.push(Intent::UnlabelNode { node: node.name.clone(), labels });
            }
            _ => {}
        }
    }

    fn create_job(&mut self, node: &NodeView, rule: usize, phase: JobPhase, attempt: u32, version: &str) {
        let Some(view) = self.s.rules.get(rule) else { return };
        let Some(found) = &view.found else { return };
        let spec = match phase {
            JobPhase::Gate => &found.job_spec,
            JobPhase::Cleanup => match &found.cleanup {
                Some(spec) => spec,
                None => return,
            },
        };
        let rc = &self.s.run_config;
        let key = JobKey {
            run_config_namespace: &rc.namespace,
            run_config: &rc.name,
            node: &node.name,
            target_version: version,
            rule_namespace: &view.namespace,
            rule: &view.name,
            phase,
            attempt,
        };
        let owner = (found.job_namespace == rc.namespace).then(|| OwnerReference {
            api_version: format!("{}/{}", crate::api::GROUP, crate::api::VERSION),
            kind: "MutexRunConfig".into(),
            name: rc.name.clone(),
            uid: rc.uid.clone(),
            controller: Some(true),
            block_owner_deletion: None,
        });
        let template = JobTemplate {
            prefix: &found.job_name,
            namespace: &found.job_namespace,
            spec,
            owner,
            avoid_node: rc.spec.avoid_target_node,
        };
        match jobs::render(&key, &template) {
            Ok(job) => self.intents.push(Intent::CreateJob(Box::new(job))),
            Err(e) => self.notice(
                true,
                "JobRenderFailed",
                "CreateJob",
                format!("The {} spec of MutexRule {} is not a valid JobSpec: {e}", phase.as_str(), view.key()),
            ),
        }
    }

    /// Writes the per-node status: full entries for nodes in flight or failed, name lists and counts for the rest;
    /// Events for every node transition.
    fn record(&mut self, order: &[&str], states: &BTreeMap<&str, (&NodeView, NodeState)>, version: &str) {
        let now = self.now();
        let timeout = self.s.run_config.spec.node_timeout();
        let mut entries = Vec::new();
        let mut completed = Vec::new();
        let mut skipped = Vec::new();
        let mut pending = 0;
        let mut requeue: Option<Duration> = None;
        for name in order {
            let (node, state) = &states[name];
            let phase = state.phase();
            let previous = self.status.nodes.iter().find(|e| e.name == *name).cloned();
            let previous_phase = previous.as_ref().map(|e| e.phase).or_else(|| {
                if self.completed_before.contains(name) {
                    Some(NodePhase::Done)
                } else if self.skipped_before.contains(name) {
                    Some(NodePhase::Skipped)
                } else {
                    Some(NodePhase::Pending)
                }
            });
            match state {
                NodeState::Done { already } => {
                    completed.push(name.to_string());
                    if !already && previous_phase != Some(NodePhase::Done) {
                        self.notice(
                            false,
                            "NodeUpgraded",
                            "Complete",
                            format!("Node {name} runs {version}; its gate and cleanup Jobs succeeded."),
                        );
                    }
                    continue;
                }
                NodeState::Skipped => {
                    skipped.push(name.to_string());
                    if previous_phase != Some(NodePhase::Skipped) {
                        self.notice(
                            true,
                            "NodeSkipped",
                            "Skip",
                            format!("Node {name} is skipped as the skip annotation asks; it is not gated."),
                        );
                    }
                    continue;
                }
                NodeState::Pending => {
                    pending += 1;
                    continue;
                }
                _ => {}
            }
            let started_at = previous.as_ref().and_then(|e| e.started_at.clone()).unwrap_or_else(|| now.clone());
            let released_at = previous.as_ref().and_then(|e| e.released_at.clone()).or_else(|| {
                matches!(state, NodeState::Release | NodeState::Upgrading | NodeState::CleaningUp { .. })
                    .then(|| now.clone())
            });
            let finished_at = match state {
                NodeState::Failed { .. } => {
                    previous.as_ref().and_then(|e| e.finished_at.clone()).or_else(|| Some(now.clone()))
                }
                _ => None,
            };
            let message = match state {
                NodeState::Gating { .. } => "Running gate Jobs.".to_string(),
                NodeState::Release => "Gate Jobs succeeded; releasing the node to the canary pool.".to_string(),
                NodeState::Upgrading => format!("Waiting for the node to run {version} and be Ready."),
                NodeState::CleaningUp { .. } => "Running cleanup Jobs.".to_string(),
                NodeState::Failed { message, .. } => message.clone(),
                _ => String::new(),
            };
            if previous_phase != Some(phase) {
                let (warning, reason) = match phase {
                    NodePhase::Gating => (false, "NodeGating"),
                    NodePhase::Released => (false, "NodeReleased"),
                    NodePhase::Upgrading => (false, "NodeUpgrading"),
                    NodePhase::CleaningUp => (false, "NodeCleaningUp"),
                    NodePhase::Failed => (true, "NodeFailed"),
                    _ => (false, "NodeProgress"),
                };
                let note = if phase == NodePhase::Failed {
                    format!(
                        "{message}. The target pools stay paused. Fix the cause, then annotate the run config with \
                         {}={name} to retry, or {}={name} to skip the node, or delete the run config to restore the pools.",
                        crate::labels::RETRY_ANNOTATION,
                        crate::labels::SKIP_ANNOTATION
                    )
                } else {
                    format!("Node {name}: {message}")
                };
                self.notice(warning, reason, "Gate", note);
            }
            if let (Some(timeout), true) = (timeout, state.in_flight()) {
                let elapsed = Duration::try_from(self.s.now.duration_since(started_at.0)).unwrap_or_default();
                let left = timeout.saturating_sub(elapsed) + Duration::from_millis(50);
                requeue = Some(requeue.map_or(left, |r| r.min(left)));
            }
            entries.push(NodeProgress {
                name: name.to_string(),
                phase,
                jobs: self.job_records(node, version),
                started_at: Some(started_at),
                released_at,
                finished_at,
                message: Some(message),
            });
        }
        self.status.nodes = entries;
        self.status.completed_nodes = completed;
        self.status.skipped_nodes = skipped;
        self.status.pending_nodes = pending;
        self.status.total_nodes = order.len() as u32;
        let done = self.status.completed_nodes.len() + self.status.skipped_nodes.len();
        self.status.progress = Some(format!("{done}/{}", order.len()));
        self.requeue_after = requeue;
    }

    fn job_records(&self, node: &NodeView, version: &str) -> Vec<JobRecord> {
        let rule_order = |rule: &str| self.s.rules.iter().position(|r| r.key() == rule).unwrap_or(usize::MAX);
        let mut jobs: Vec<&JobView> = self.jobs_of(&node.name, version).collect();
        jobs.sort_by_key(|j| (j.phase, rule_order(&j.rule), j.attempt));
        jobs.into_iter()
            .map(|j| JobRecord {
                name: j.name.clone(),
                namespace: j.namespace.clone(),
                rule: j.rule.clone(),
                phase: j.phase.as_str().to_string(),
                result: j.result,
            })
            .collect()
    }

    /// Phase, message and the node/job conditions while nodes are being gated.
    fn summarize(
        &mut self,
        states: &BTreeMap<&str, (&NodeView, NodeState)>,
        version: &str,
        control_plane_done: bool,
        labels_applied: bool,
        steered: bool,
        hold: bool,
    ) {
        let failed: Vec<(&str, &NodeState)> = states
            .iter()
            .filter(|(_, (_, st))| matches!(st, NodeState::Failed { .. }))
            .map(|(n, (_, st))| (*n, st))
            .collect();
        let in_flight = states.values().filter(|(_, st)| st.in_flight()).count();
        let pending = states.values().filter(|(_, st)| matches!(st, NodeState::Pending)).count();
        let job_failure = failed.iter().find_map(|(_, st)| match st {
            NodeState::Failed { message, timed_out: false, .. } => Some(message.clone()),
            _ => None,
        });
        self.conditions.push(match &job_failure {
            Some(message) => Desired::false_(condition::JOB_RUN, "JobFailed", message.clone()),
            None => Desired::true_(condition::JOB_RUN, "NoJobFailed", "No Job of this rollout failed."),
        });
        let progress = self.status.progress.clone().unwrap_or_default();
        if let Some((name, NodeState::Failed { message, timed_out, .. })) = failed.first() {
            let reason = if *timed_out { "NodeTimedOut" } else { "NodeFailed" };
            self.conditions.push(Desired::false_(condition::NODE_UPGRADE, reason, message.clone()));
            if hold || (in_flight == 0 && pending == 0) {
                self.phase = RunPhase::Failed;
                self.message = format!(
                    "Node {name} failed: {message}. Target pools stay paused. Annotate {}={name} to retry or {}={name} to skip.",
                    crate::labels::RETRY_ANNOTATION,
                    crate::labels::SKIP_ANNOTATION
                );
                return;
            }
        } else {
            self.conditions.push(Desired::true_(
                condition::NODE_UPGRADE,
                "NodesProgressing",
                format!("{progress} nodes upgraded to {version}."),
            ));
        }
        if !control_plane_done && in_flight == 0 {
            self.phase = RunPhase::Waiting;
            self.message =
                format!("Target pools paused; waiting for the control plane to complete its upgrade to {version}.");
        } else if !labels_applied || !steered {
            self.phase = RunPhase::Pausing;
            self.message = "Labelling the target nodes and steering the pools.".into();
        } else if self.s.run_config.spec.paused && in_flight == 0 {
            self.phase = RunPhase::Waiting;
            self.message = "Paused (spec.paused); no node starts until it is unset.".into();
        } else {
            self.phase = RunPhase::Upgrading;
            self.message = format!("Upgrading to {version}: {progress} nodes done, {in_flight} in flight.");
        }
    }

    /// Step 7: every node finished; put every pool back exactly as recorded, then drop the rule labels.
    fn restore(&mut self) {
        for pool in self.claimed() {
            self.intents.push(Intent::RestorePool {
                pool: pool.name.clone(),
                resource_version: pool.resource_version.clone(),
                original: pool.original.clone(),
            });
        }
        for (node, labels) in self.labelled_nodes() {
            self.intents.push(Intent::UnlabelNode { node: node.name.clone(), labels });
        }
        self.phase = RunPhase::Restoring;
        self.message = "Every node finished; restoring the pools.".into();
        self.conditions.push(Desired::true_(condition::JOB_RUN, "NoJobFailed", "No Job of this rollout failed."));
        self.conditions.push(Desired::true_(
            condition::NODE_UPGRADE,
            "NodesUpgraded",
            format!("{} nodes upgraded.", self.status.progress.clone().unwrap_or_default()),
        ));
        if self.prev.phase != Some(RunPhase::Restoring) {
            self.notice(
                false,
                "RestoringPools",
                "Restore",
                "Every node finished; restoring the pools exactly as they were.".into(),
            );
        }
    }

    /// Deletion: restore every claimed pool and remove every rule label, then let the object go.
    fn finalize(&mut self) {
        let claimed = self.claimed();
        for pool in &claimed {
            self.intents.push(Intent::RestorePool {
                pool: pool.name.clone(),
                resource_version: pool.resource_version.clone(),
                original: pool.original.clone(),
            });
        }
        let labelled = self.labelled_nodes();
        for (node, labels) in &labelled {
            self.intents.push(Intent::UnlabelNode { node: node.name.clone(), labels: labels.clone() });
        }
        if claimed.is_empty() && labelled.is_empty() {
            if self.s.run_config.has_finalizer {
                self.intents.push(Intent::RemoveFinalizer);
            }
        } else if self.prev.phase != Some(RunPhase::Restoring) {
            self.notice(
                false,
                "RestoringPools",
                "Restore",
                "The run config is being deleted; restoring the pools and removing the rule labels.".into(),
            );
        }
        self.phase = RunPhase::Restoring;
        self.message = "Deleting: restoring the pools and removing the rule labels.".into();
    }

    fn count_nodes(&mut self, nodes: &[&NodeView]) {
        self.status.total_nodes = nodes.len() as u32;
        self.status.pending_nodes = nodes.len() as u32;
        self.status.completed_nodes.clear();
        self.status.skipped_nodes.clear();
        self.status.nodes.clear();
        self.status.progress = Some(format!("0/{}", nodes.len()));
    }

    fn notice(&mut self, warning: bool, reason: &'static str, action: &'static str, note: String) {
        self.notices.push(Notice { warning, reason, action, note });
    }

    fn finish(mut self) -> Plan {
        if self.prev.phase != Some(self.phase) && !matches!(self.phase, RunPhase::Invalid) {
            let note = format!("{:?}: {}", self.phase, self.message);
            self.notices.push(Notice { warning: false, reason: "PhaseChanged", action: "Reconcile", note });
        }
        let generation = self.s.run_config.generation;
        self.status.observed_generation = generation;
        self.status.phase = Some(self.phase);
        self.status.message = Some(self.message.clone());
        self.status.conditions = conditions::merge(&self.prev.conditions, &self.conditions, generation, &self.now());
        Plan { intents: self.intents, status: self.status, notices: self.notices, requeue_after: self.requeue_after }
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
