//! A node's place in the rollout, computed once per reconcile from its labels, its version, its Jobs and the record
//! of its Jobs in the run config's status. A Job that is gone keeps the result its record holds: a Job deleted after
//! it finished (a TTL, an admin) is not a Job that never ran.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;

use super::finished::Finished;
use super::gated_index::Kept;
use super::resolve::Resolved;
use super::stage::FailureCause;
use super::target::Target;
use crate::api::{JobRecord, JobResult, MutexRunConfigStatus, NodeNames, NodePhase, NodeProgress};
use crate::controllers::run_config::snapshot::{JobView, NodeView, Snapshot};
use crate::jobs::JobPhase;

/// The next Job to create for a node: which rule (index in rule order) and which attempt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NextJob {
    /// Index of the rule in rule order.
    pub rule: usize,
    /// 1 for the first run; a retry runs the next attempt.
    pub attempt: u32,
}

/// What a retry of a failed node does.
#[derive(Clone, Debug, PartialEq)]
pub enum Retry {
    /// Run the failed Job's step again, as the next attempt.
    Job(JobPhase, NextJob),
    /// Restart the node's clock (it timed out).
    ResetTimer,
}

/// One gated node as this reconcile leaves it.
pub struct GatedNode<'a> {
    /// The node.
    pub node: &'a NodeView,
    /// Its state, after retries and new starts.
    pub state: NodeState,
    /// Its Jobs (cluster and status record merged).
    pub records: Records,
    /// Jobs with numo's labels for it that numo did not create: never counted.
    pub not_numos: Vec<NotNumos>,
    /// Whether every gate Job succeeded or the status recorded the node as released (see `node_state::released`).
    pub released: bool,
    /// Whether the retry annotation restarted its clock.
    pub timer_reset: bool,
    /// Its entry in the previous status, if it had one (looked up once, with its state).
    pub previous: Option<&'a NodeProgress>,
    /// The phase the previous status gave it.
    pub previous_phase: NodePhase,
}

/// Where a node is.
#[derive(Clone, Debug, PartialEq)]
pub enum NodeState {
    /// An admin skipped it.
    Skipped,
    /// Finished; `already` when it ran the target version before the rollout touched it.
    Done {
        /// It needed nothing.
        already: bool,
    },
    /// Not started.
    Pending,
    /// Gate Jobs are running; `next` is the one to create now.
    Gating {
        /// The Job to create.
        next: Option<NextJob>,
    },
    /// Every gate Job succeeded; its rule labels go now.
    Releasing,
    /// Released; the MCO upgrades it.
    Upgrading,
    /// At the target version; cleanup Jobs are running.
    CleaningUp {
        /// The Job to create.
        next: Option<NextJob>,
    },
    /// Cleaned up; its slot stays taken until `soakTime` has passed with the node healthy.
    Soaking {
        /// When the current soak started; None while the node is unhealthy.
        since: Option<Timestamp>,
        /// Why the node is unhealthy (the soak starts again once it is not).
        problem: Option<String>,
    },
    /// The MCO started upgrading the node while numo held it (its pool unpaused, its rule labels removed by
    /// someone else): its gate Jobs did not run first, and are not run after the fact. `accepted` once an admin let
    /// the rollout go on past it (the retry annotation).
    Ungated {
        /// The retry annotation accepted it.
        accepted: bool,
    },
    /// A Job failed, the machine-config daemon failed its update, or the node timed out.
    Failed {
        /// Why, as a sentence.
        message: String,
        /// What failed.
        cause: FailureCause,
        /// What a retry does.
        retry: Retry,
    },
}

impl NodeState {
    /// The phase shown in the status.
    pub fn phase(&self) -> NodePhase {
        match self {
            NodeState::Skipped => NodePhase::Skipped,
            NodeState::Done { .. } => NodePhase::Done,
            NodeState::Pending => NodePhase::Pending,
            NodeState::Gating { .. } => NodePhase::Gating,
            NodeState::Releasing => NodePhase::Released,
            NodeState::Upgrading => NodePhase::Upgrading,
            NodeState::CleaningUp { .. } => NodePhase::CleaningUp,
            NodeState::Soaking { .. } => NodePhase::Soaking,
            NodeState::Failed { .. } => NodePhase::Failed,
            NodeState::Ungated { .. } => NodePhase::Ungated,
        }
    }

    /// Whether the node takes one of the `concurrency` slots: in flight, or soaking.
    pub fn takes_slot(&self) -> bool {
        self.in_flight() || matches!(self, NodeState::Soaking { .. })
    }

    /// Whether the node counts against the concurrency limit.
    pub fn in_flight(&self) -> bool {
        matches!(
            self,
            NodeState::Gating { .. } | NodeState::Releasing | NodeState::Upgrading | NodeState::CleaningUp { .. }
        )
    }

    /// Whether the node needs nothing more from this rollout.
    pub fn finished(&self) -> bool {
        matches!(self, NodeState::Skipped | NodeState::Done { .. } | NodeState::Ungated { accepted: true })
    }

    /// Whether the node stops the rollout under `onFailure: Hold`: it failed, or it was upgraded ungated and no
    /// admin accepted that yet.
    pub fn holds(&self) -> bool {
        matches!(self, NodeState::Failed { .. } | NodeState::Ungated { accepted: false })
    }
}

/// Whether a node's entry goes on in the rollout that takes over when the cluster's target changes: the node is
/// in its gated turn before its reboot (gating, released, upgrading, or failed after its release and before it was
/// Ready at the target), so it goes to the new target inside that turn, with its one reboot; its gate Jobs ran and
/// are not run again. A node past its reboot (cleaning up, soaking, or failed there) is home in its paused pool and
/// gets a gated turn of its own for the new target, as a node done at the old one does: a second reboot inside a
/// turn that already cleaned up would be ungated.
pub fn carried_on(entry: &NodeProgress) -> bool {
    let before_its_reboot = entry.upgraded_at.is_none();
    match entry.phase {
        NodePhase::Gating | NodePhase::Released | NodePhase::Upgrading => before_its_reboot,
        NodePhase::Failed => entry.released_at.is_some() && before_its_reboot,
        _ => false,
    }
}

/// `names` with those in `before` first, in `before`'s order (each once), then the others in their order. The names
/// are moved, not copied: halfway through a rollout of 2,000 nodes, both lists hold a thousand.
fn finishing_order(before: &[String], names: Vec<String>) -> Vec<String> {
    let at: foldhash::HashMap<&str, usize> = names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let mut placed = vec![false; names.len()];
    let mut order: Vec<usize> = Vec::with_capacity(names.len());
    for i in before.iter().filter_map(|n| at.get(n.as_str()).copied()) {
        if !std::mem::replace(&mut placed[i], true) {
            order.push(i);
        }
    }
    order.extend((0..names.len()).filter(|i| !placed[*i]));
    let mut names: Vec<Option<String>> = names.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| names[i].take()).collect()
}

/// A node's Jobs by (phase, rule index, attempt), from the cluster and the status record.
pub type Records = BTreeMap<(JobPhase, usize, u32), JobRecord>;

/// What the previous status says about the current rollout (empty when it described another rollout), and the
/// rollout's Jobs.
pub struct History<'a> {
    /// Each node the status gives an entry or a Job of the rollout names, in one table: every gated node's state
    /// looks its name up here once, and most nodes (not started yet, or finished) are absent. Hashed with a fast
    /// hash, not ordered: names share long prefixes.
    slots: foldhash::HashMap<&'a str, Slot<'a>>,
    /// The previous status's lists of finished nodes (kept between the run config's plans while they are the
    /// same: halfway through a large rollout they hold a thousand names).
    finished: Arc<Finished>,
    /// Whether numo held this rollout's nodes already: the previous status of the rollout had the target pools
    /// paused by numo or the rule labels applied.
    pub held: bool,
}

/// What the previous status says of one node, and its Jobs.
#[derive(Clone, Default)]
struct Slot<'a> {
    /// Its entry, if it had one.
    entry: Option<&'a NodeProgress>,
    /// Its phase: its entry's, else Done or Skipped from the lists of finished nodes, else Pending.
    phase: NodePhase,
    /// Its Jobs of the rollout (see [`History::with_jobs`]).
    jobs: Vec<&'a JobView>,
}

/// What the previous status says of one node, and its Jobs of the rollout ([`History::of_node`]).
#[derive(Clone, Copy)]
pub struct NodeHistory<'s, 'a> {
    /// Its entry, if it had one.
    pub entry: Option<&'a NodeProgress>,
    /// Its phase: its entry's, else Done or Skipped from the lists of finished nodes, else Pending.
    pub phase: NodePhase,
    /// Its Jobs of the rollout.
    pub jobs: &'s [&'a JobView],
}

impl<'a> History<'a> {
    /// The previous status's facts about the rollout `key` (see [`MutexRunConfigStatus::rollout_key`]); when the
    /// status describes the rollout `carried` (the one this rollout took over when the cluster's target changed
    /// mid-way), only its nodes in flight, which go on in this one. The lists of finished nodes are those `kept`
    /// holds while the status lists the same.
    pub fn of_carrying(
        status: &'a MutexRunConfigStatus,
        key: &str,
        carried: Option<&str>,
        kept: Option<&Kept>,
    ) -> Self {
        let described = carried.filter(|c| status.rollout_key() == Some(c)).unwrap_or(key);
        let mut history = Self::read(status, described, kept);
        if status.rollout_key() != Some(key) {
            history.slots.retain(|_, slot| slot.entry.is_some_and(carried_on));
            history.finished = Arc::new(Finished::none());
        }
        history
    }

    /// The previous status's facts about the rollout `key` (see [`MutexRunConfigStatus::rollout_key`]).
    pub fn of(status: &'a MutexRunConfigStatus, key: &str) -> Self {
        Self::read(status, key, None)
    }

    fn read(status: &'a MutexRunConfigStatus, key: &str, kept: Option<&Kept>) -> Self {
        if status.rollout_key() != Some(key) {
            return Self { slots: Default::default(), finished: Arc::new(Finished::none()), held: false };
        }
        let held = [super::stage::condition::TARGET_POOLS_PAUSED, super::stage::condition::MUTEX_RULES_APPLIED]
            .iter()
            .any(|c| crate::conditions::is_true(&status.conditions, c));
        let finished = kept.map_or_else(|| Arc::new(Finished::of(status)), |kept| kept.finished(status));
        // An entry's phase wins over the lists.
        let slots = status
            .nodes
            .iter()
            .map(|entry| (entry.name.as_str(), Slot { entry: Some(entry), phase: entry.phase, jobs: Vec::new() }))
            .collect();
        Self { slots, finished, held }
    }

    /// This history with the Jobs of rollout `key` among `jobs`, and those its entries record (a node that went on
    /// from a rollout whose target changed keeps the Jobs of its gated turn).
    pub fn with_jobs(mut self, jobs: &'a [std::sync::Arc<JobView>], key: &str) -> Self {
        let finished = &self.finished;
        for job in jobs.iter().map(|job| &**job) {
            let slot = self.slots.get(job.node.as_str());
            let recorded = || slot.and_then(|s| s.entry).is_some_and(|e| e.jobs.iter().any(|r| r.name == job.name));
            if job.target_version == key || recorded() {
                let listed = || Slot { phase: finished.phase(&job.node).unwrap_or_default(), ..Slot::default() };
                self.slots.entry(job.node.as_str()).or_insert_with(listed).jobs.push(job);
            }
        }
        self
    }

    /// `completed` and `skipped` (in release order) in the order the nodes finished: those the previous status
    /// listed first, as it listed them, then the new ones. Finished nodes are only ever appended to the status's
    /// lists, so a status write sends the names that are new, not all of them.
    pub fn in_finishing_order(&self, completed: Vec<String>, skipped: Vec<String>) -> (NodeNames, NodeNames) {
        let completed = finishing_order(self.finished.completed().0, completed);
        (completed.into(), self.skipped_in_order(skipped))
    }

    /// The finished lists of a plan in which the nodes `apart` (each listed as done before, see
    /// [`super::untouched::Apart::finished`]) and, of the nodes read one by one, `completed` and `skipped` (in
    /// release order) finished, in the order the nodes finished (see [`History::in_finishing_order`]). A list that
    /// names the same nodes as before is the previous one itself, shared, not a copy: an event halfway through a
    /// large rollout does not copy, compare or free a thousand names.
    pub fn finished_lists(
        &self,
        apart: &[&NodeView],
        completed: Vec<String>,
        skipped: Vec<String>,
    ) -> (NodeNames, NodeNames) {
        let (before, once) = self.finished.completed();
        let listed = |name: &String| self.finished.phase(name) == Some(NodePhase::Done);
        let completed = if once && apart.len() + completed.len() == before.len() && completed.iter().all(listed) {
            before.clone()
        } else {
            let names = apart.iter().map(|node| node.name.clone()).chain(completed).collect();
            finishing_order(before, names).into()
        };
        (completed, self.skipped_in_order(skipped))
    }

    /// `skipped` in the order the nodes were skipped; the previous list itself when it names the same.
    fn skipped_in_order(&self, skipped: Vec<String>) -> NodeNames {
        let before = self.finished.skipped();
        let skipped = finishing_order(before, skipped);
        match skipped == **before {
            true => before.clone(),
            false => skipped.into(),
        }
    }

    /// The phase the previous status gave the node.
    pub fn phase(&self, node: &str) -> NodePhase {
        self.of_node(node).phase
    }

    /// The nodes the previous status gives an entry or a Job of the rollout names (any other is Pending, or
    /// listed as finished: see [`History::finished`]).
    pub fn touched(&self) -> impl Iterator<Item = &'a str> + '_ {
        self.slots.keys().copied()
    }

    /// The previous status's lists of finished nodes.
    pub fn finished(&self) -> &Arc<Finished> {
        &self.finished
    }

    /// The node's entry, phase and Jobs, in one look.
    pub fn of_node<'s>(&'s self, node: &str) -> NodeHistory<'s, 'a> {
        match self.slots.get(node) {
            Some(slot) => NodeHistory { entry: slot.entry, phase: slot.phase, jobs: &slot.jobs },
            None => NodeHistory { entry: None, phase: self.finished.phase(node).unwrap_or_default(), jobs: &[] },
        }
    }
}

/// Everything a node's state is derived from besides the node itself.
pub struct Inputs<'a, 'r> {
    /// The valid configuration.
    pub resolved: &'r Resolved<'a>,
    /// What the nodes must reach, and the rollout's name.
    pub target: &'r Target,
    /// The previous status, for this rollout, and the rollout's Jobs.
    pub history: &'r History<'a>,
    /// Nodes the skip annotation names.
    pub skip: &'r BTreeSet<String>,
    /// `spec.nodeTimeout`, as written and parsed.
    pub timeout: Option<(&'r str, Duration)>,
    /// `spec.soakTime`, parsed.
    pub soak: Option<Duration>,
    /// Now.
    pub now: Timestamp,
}

impl<'a, 'r> Inputs<'a, 'r> {
    /// The inputs of the run config's rollout: its `history` and Jobs (see [`History::of`] and
    /// [`History::with_jobs`]), the skip annotation, `nodeTimeout`, `soakTime` and the snapshot's time.
    pub fn of(
        snapshot: &'r Snapshot,
        resolved: &'r Resolved<'a>,
        target: &'r Target,
        history: &'r History<'a>,
    ) -> Self {
        let spec = &snapshot.run_config.spec;
        Self {
            resolved,
            target,
            history,
            skip: &snapshot.run_config.skip,
            timeout: spec.node_timeout().map(|d| (spec.node_timeout.as_deref().unwrap_or_default(), d)),
            soak: spec.soak_time(),
            now: snapshot.now,
        }
    }
}

/// A Job that carries numo's labels for a node but is not the one numo created for that step: never counted, and
/// reported.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotNumos {
    /// The Job, `namespace/name`.
    pub job: String,
    /// Its maker, as its `managedFields` tell.
    pub creator: String,
    /// Whether it took the place of the Job numo created under that name (deleted and created again).
    pub replaced: bool,
}

/// A node's Jobs, from the cluster and from the status record, keyed by (phase, rule, attempt). Only a Job the
/// status recorded counts: numo records each Job's name before it creates it (`requested`) and its uid once it saw
/// it, so a Job with numo's labels that numo did not ask for, or that replaced the one it created, is returned apart
/// and never counted. A Job numo asked for and has not seen yet stays `requested` (numo creates it again: an
/// existing one of that name is numo's own); one it saw and that is gone counts as deleted before it finished.
/// `told` is what the previous status says of the node, and its Jobs.
fn job_records(inputs: &Inputs<'_, '_>, told: NodeHistory<'_, '_>) -> (Records, Vec<NotNumos>) {
    let NodeHistory { entry, phase, jobs } = told;
    let rule_index = |key: &str| inputs.resolved.rules.iter().position(|r| r.key == key);
    let recorded: &[JobRecord] = entry.map(|e| e.jobs.as_slice()).unwrap_or_default();
    let mut records = BTreeMap::new();
    for record in recorded {
        let (Some(phase), Some(rule)) = (JobPhase::parse(&record.phase), rule_index(&record.rule)) else { continue };
        let mut record = record.clone();
        if record.result == JobResult::Running && !record.requested {
            // Seen running, now gone: deleted before numo saw it finish (a Job seen again below replaces this).
            record.result = JobResult::Failed;
            record.message = Some(format!(
                "the Job was deleted before numo saw it finish; retry to run the step again ({})",
                record.name
            ));
        }
        records.insert((phase, rule, record.attempt), record);
    }
    let mut not_numos = Vec::new();
    // A node done (or released, for its gate Jobs) has no records of those Jobs left to compare with: it passed
    // those steps, which no Job can undo or open, so the Jobs that remain until their TTL are read as before.
    let done = phase == NodePhase::Done;
    let released = entry.is_some_and(|e| e.released_at.is_some());
    for job in jobs {
        let Some(rule) = rule_index(&job.rule) else { continue };
        let passed = done || (released && job.phase == JobPhase::Gate);
        let namespace = JobRecord::kept_namespace(&job.rule, &job.namespace);
        let ours = recorded.iter().find(|r| r.name == job.name && r.namespace == namespace);
        let replaced = ours.is_some_and(|r| !r.same_uid(&job.uid));
        if !passed && (ours.is_none() || replaced) {
            let creator = if job.creator.is_empty() { "an unknown writer".to_string() } else { job.creator.clone() };
            not_numos.push(NotNumos { job: format!("{}/{}", job.namespace, job.name), creator, replaced });
            continue;
        }
        let (result, message) = match (job.result, job.deleting) {
            (JobResult::Running, true) => {
                (JobResult::Failed, Some("the Job was deleted before it finished; retry to run the step again".into()))
            }
            (result, _) => (result, job.message.clone()),
        };
        let record = JobRecord {
            name: job.name.clone(),
            namespace: namespace.to_string(),
            rule: job.rule.clone(),
            phase: job.phase.as_str().to_string(),
            result,
            attempt: job.attempt,
            message,
            uid: Some(JobRecord::kept_uid(&job.uid)),
            requested: false,
        };
        records.insert((job.phase, rule, job.attempt), record);
    }
    (records, not_numos)
}

/// The Job numo asked for and has not seen yet, for the step `rule`/`attempt` of `phase`, if any: it is created (again).
pub fn requested(records: &Records, phase: JobPhase, rule: usize, attempt: u32) -> Option<&JobRecord> {
    records.get(&(phase, rule, attempt)).filter(|r| r.requested && r.result == JobResult::Running)
}

/// A gated node as its Jobs, the previous status and the cluster leave it, before retries and new starts: its
/// records ([`job_records`]), whether it was released ([`released`]) and its state (the one [`without_timeout`]
/// derives, failed once it is in flight longer than `nodeTimeout`), with one look at the previous status for all.
pub fn gated<'a>(inputs: &Inputs<'a, '_>, node: &'a NodeView) -> GatedNode<'a> {
    let told = inputs.history.of_node(&node.name);
    let (records, not_numos) = job_records(inputs, told);
    let released = released(inputs, &records, told.entry);
    let state = with_timeout(inputs, node, told.entry, state_of(inputs, node, &records, released, told));
    GatedNode {
        node,
        state,
        records,
        not_numos,
        released,
        timer_reset: false,
        previous: told.entry,
        previous_phase: told.phase,
    }
}

/// The latest attempt of a rule's Job in `phase`.
fn latest(records: &Records, phase: JobPhase, rule: usize) -> Option<&JobRecord> {
    records.range((phase, rule, 0)..=(phase, rule, u32::MAX)).next_back().map(|(_, r)| r)
}

/// Whether every gate Job succeeded, or the status recorded the node as released (its entry there is `entry`).
fn released(inputs: &Inputs<'_, '_>, records: &Records, entry: Option<&NodeProgress>) -> bool {
    let by_status = entry.is_some_and(|e| {
        matches!(e.phase, NodePhase::Released | NodePhase::Upgrading | NodePhase::CleaningUp | NodePhase::Soaking)
            || (e.phase == NodePhase::Failed && e.released_at.is_some())
    });
    by_status
        || (0..inputs.resolved.rules.len())
            .all(|rule| latest(records, JobPhase::Gate, rule).is_some_and(|r| r.result == JobResult::Succeeded))
}

/// A node's state from its labels, version and Jobs, not counting its timeout.
pub fn without_timeout(inputs: &Inputs<'_, '_>, node: &NodeView, records: &Records, released: bool) -> NodeState {
    state_of(inputs, node, records, released, inputs.history.of_node(&node.name))
}

/// [`without_timeout`] of a node of which the previous status says `told`.
fn state_of(
    inputs: &Inputs<'_, '_>,
    node: &NodeView,
    records: &Records,
    released: bool,
    told: NodeHistory<'_, '_>,
) -> NodeState {
    let NodeHistory { entry, phase, .. } = told;
    if inputs.skip.contains(&node.name) {
        return NodeState::Skipped;
    }
    if phase == NodePhase::Done {
        return NodeState::Done { already: false };
    }
    if phase == NodePhase::Ungated {
        let accepted = entry.is_some_and(|e| e.accepted_at.is_some());
        return NodeState::Ungated { accepted };
    }
    if !released && inputs.target.started_ungated(node) {
        // Taken while numo held it, the rollout holds (onFailure); taken before numo held anything (the run config
        // was not valid or not in place yet), it is shown as ungated and the rollout goes on.
        return NodeState::Ungated { accepted: !inputs.history.held };
    }
    let at_target = !inputs.target.behind(node);
    let started = entry.is_some_and(|e| e.phase != NodePhase::Pending)
        || records.keys().any(|(phase, _, _)| *phase == JobPhase::Gate);
    if !started {
        return if at_target { NodeState::Done { already: true } } else { NodeState::Pending };
    }
    // Read only of a node that started (most nodes have not: their labels are not read here at all).
    let labelled = inputs.resolved.rules.iter().any(|r| node.labels.has_rule_label(&r.label));
    let marked = node.labels.release_mark() == Some(inputs.resolved.release_mark.as_str());
    // A node that reached its target leaves the canary before its cleanup starts (see `gate`), so no render of the
    // canary reaches it after its turn's one reboot: a config change holds it again with the rule labels, an upgrade
    // sends it home to its paused pool (numo takes its mark off). Its labels then do not mean it waits for its
    // release.
    let home = inputs.target.reached(node) && (inputs.target.is_config_change() || !marked);
    if !released {
        walk(inputs, records, JobPhase::Gate)
    } else if (labelled || !marked) && !home {
        NodeState::Releasing
    } else if phase == NodePhase::Soaking && at_target {
        // Cleaned up already: a node that goes NotReady now restarts its soak, it is not upgraded again.
        soak(inputs, node, entry)
    } else if let Some(failure) = update_failed(node) {
        failure
    } else if !(inputs.target.reached(node) && node.ready) {
        NodeState::Upgrading
    } else {
        match walk(inputs, records, JobPhase::Cleanup) {
            NodeState::Done { already: false } => soak(inputs, node, entry),
            state => state,
        }
    }
}

/// A released node whose machine-config daemon says its update failed (`Degraded`, or `Unreconcilable`: a change
/// it cannot apply), with the daemon's reason: the node fails at once, whatever `nodeTimeout` says. The daemon keeps
/// trying (machine-config-operator `pkg/daemon/daemon.go` `updateErrorState` and its retry of the update), so a node
/// whose daemon recovers goes on by itself; a retry annotation does not change what the daemon says.
fn update_failed(node: &NodeView) -> Option<NodeState> {
    let state = node.mcd_state.as_deref().filter(|s| matches!(*s, "Degraded" | "Unreconcilable"))?;
    let reason = node.mcd_reason.as_deref().filter(|r| !r.is_empty()).unwrap_or("no reason given");
    Some(NodeState::Failed {
        message: format!("the update of node {} failed: its machine-config daemon is {state}: {reason}", node.name),
        cause: FailureCause::Update,
        retry: Retry::ResetTimer,
    })
}

/// A cleaned-up node's soak: Done once `soakTime` passed since it was last seen healthy, else Soaking. `entry` is
/// the node's entry in the previous status.
fn soak(inputs: &Inputs<'_, '_>, node: &NodeView, entry: Option<&NodeProgress>) -> NodeState {
    let Some(soak) = inputs.soak else { return NodeState::Done { already: false } };
    if let Some(problem) = soak_problem(node) {
        return NodeState::Soaking { since: None, problem: Some(problem) };
    }
    let recorded = entry.filter(|e| e.phase == NodePhase::Soaking);
    let since = recorded.and_then(|e| e.soak_started_at.as_ref()).map_or(inputs.now, |t| t.0);
    let soaked = Duration::try_from(inputs.now.duration_since(since)).unwrap_or_default();
    if soaked >= soak {
        NodeState::Done { already: false }
    } else {
        NodeState::Soaking { since: Some(since), problem: None }
    }
}

/// Why a soaking node is not healthy: not Ready, cordoned, or its machine-config daemon not `Done`.
pub fn soak_problem(node: &NodeView) -> Option<String> {
    let mut problems = Vec::new();
    if !node.ready {
        problems.push("is not Ready".to_string());
    }
    if node.cordoned {
        problems.push("is cordoned".to_string());
    }
    match node.mcd_state.as_deref() {
        Some("Done") | None => {}
        Some(state) => problems.push(format!("has machine-config state {state}")),
    }
    (!problems.is_empty()).then(|| format!("node {} {}", node.name, problems.join(" and ")))
}

/// The next step of a node's gate or cleanup Jobs, in rule order.
fn walk(inputs: &Inputs<'_, '_>, records: &Records, phase: JobPhase) -> NodeState {
    let running = |next| match phase {
        JobPhase::Gate => NodeState::Gating { next },
        JobPhase::Cleanup => NodeState::CleaningUp { next },
    };
    for (rule, resolved) in inputs.resolved.rules.iter().enumerate() {
        if phase == JobPhase::Cleanup && resolved.found.cleanup.is_none() {
            continue;
        }
        match latest(records, phase, rule) {
            None => return running(Some(NextJob { rule, attempt: 1 })),
            Some(job) => match job.result {
                JobResult::Succeeded => continue,
                // Asked for and not seen yet: created (again; one that exists already is numo's own).
                JobResult::Running if job.requested => {
                    return running(Some(NextJob { rule, attempt: job.attempt }));
                }
                JobResult::Running => return running(None),
                JobResult::Failed => {
                    return NodeState::Failed {
                        message: format!(
                            "{} Job {}/{} of MutexRule {} failed: {}",
                            phase.as_str(),
                            job.job_namespace(),
                            job.name,
                            resolved.key,
                            job.message.as_deref().unwrap_or("no reason given")
                        ),
                        cause: FailureCause::Job,
                        retry: Retry::Job(phase, NextJob { rule, attempt: job.attempt + 1 }),
                    }
                }
            },
        }
    }
    match phase {
        JobPhase::Gate => NodeState::Releasing,
        JobPhase::Cleanup => NodeState::Done { already: false },
    }
}

/// How long a node has been in flight, from the start its previous status `entry` recorded.
fn elapsed(inputs: &Inputs<'_, '_>, entry: Option<&NodeProgress>) -> Option<Duration> {
    let started = entry?.started_at.as_ref()?;
    Some(Duration::try_from(inputs.now.duration_since(started.0)).unwrap_or_default())
}

/// A node in flight longer than `nodeTimeout` fails; `entry` is its entry in the previous status.
fn with_timeout(inputs: &Inputs<'_, '_>, node: &NodeView, entry: Option<&NodeProgress>, state: NodeState) -> NodeState {
    let (Some((text, timeout)), true) = (inputs.timeout, state.in_flight()) else { return state };
    if elapsed(inputs, entry).is_none_or(|e| e < timeout) {
        return state;
    }
    let what = match state {
        NodeState::Gating { .. } => "finish its gate Jobs",
        NodeState::Releasing | NodeState::Upgrading => "reach the target version",
        _ => "finish its cleanup Jobs",
    };
    NodeState::Failed {
        message: format!("node {} did not {what} within {text} (nodeTimeout)", node.name),
        cause: FailureCause::Timeout,
        retry: Retry::ResetTimer,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| n.to_string()).collect()
    }

    #[test]
    fn finished_nodes_are_listed_in_the_order_they_finished() {
        let status = MutexRunConfigStatus {
            target_version: Some("4.16.5".into()),
            completed_nodes: names(&["worker-7", "worker-2"]).into(),
            ..Default::default()
        };
        let history = History::of(&status, "4.16.5");
        // worker-3 finished now, worker-2 and worker-7 earlier: the list grows at its end only.
        let (completed, skipped) = history.in_finishing_order(names(&["worker-2", "worker-3", "worker-7"]), vec![]);
        assert_eq!(completed, names(&["worker-7", "worker-2", "worker-3"]));
        assert!(skipped.is_empty());
        // A node no longer finished (its version went back) leaves the list; another rollout starts afresh.
        let (completed, _) = history.in_finishing_order(names(&["worker-3", "worker-7"]), vec![]);
        assert_eq!(completed, names(&["worker-7", "worker-3"]));
        let (completed, _) =
            History::of(&status, "4.17.0").in_finishing_order(names(&["worker-2", "worker-7"]), vec![]);
        assert_eq!(completed, names(&["worker-2", "worker-7"]));
        // A name the status lists twice (written by someone else) is listed once.
        let twice = names(&["worker-7", "worker-2", "worker-7"]);
        assert_eq!(finishing_order(&twice, names(&["worker-2", "worker-7"])), names(&["worker-7", "worker-2"]));
    }

    #[test]
    fn lists_that_name_the_same_nodes_are_the_previous_ones_shared() {
        let node = |name: &str| NodeView { name: name.into(), ..Default::default() };
        let (seven, two, three) = (node("worker-7"), node("worker-2"), node("worker-3"));
        let status = MutexRunConfigStatus {
            target_version: Some("4.16.5".into()),
            completed_nodes: names(&["worker-7", "worker-2"]).into(),
            skipped_nodes: names(&["worker-5"]).into(),
            ..Default::default()
        };
        let history = History::of(&status, "4.16.5");
        // worker-7 set apart, worker-2 read one by one: both still done, as listed.
        let (completed, skipped) = history.finished_lists(&[&seven], names(&["worker-2"]), names(&["worker-5"]));
        assert!(completed.shares(&status.completed_nodes) && skipped.shares(&status.skipped_nodes));
        // worker-3 finished now: a list of its own, in the order the nodes finished.
        let (completed, _) = history.finished_lists(&[&two, &seven], names(&["worker-3"]), vec![]);
        assert_eq!(completed, ["worker-7", "worker-2", "worker-3"]);
        assert!(!completed.shares(&status.completed_nodes));
        // As many nodes done as listed, but not the same ones: worker-2 went back, worker-3 is new.
        let (completed, skipped) = history.finished_lists(&[&seven], names(&["worker-3"]), vec![]);
        assert_eq!((completed, skipped), (names(&["worker-7", "worker-3"]).into(), NodeNames::default()));
        // A list that names a node twice is never passed on as it is.
        let twice = MutexRunConfigStatus {
            completed_nodes: names(&["worker-7", "worker-2", "worker-7"]).into(),
            ..status.clone()
        };
        let (completed, _) = History::of(&twice, "4.16.5").finished_lists(&[&seven, &two, &three], vec![], vec![]);
        assert_eq!(completed, ["worker-7", "worker-2", "worker-3"]);
    }
}
