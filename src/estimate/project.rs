//! The projection of the rest of a rollout: the nodes still to go, in release order, each started in the first free
//! slot (`concurrency` of them) at which the maintenance windows and blackouts let a node start, through its steps
//! at the learned durations; then the restore walk.

use std::collections::BinaryHeap;

use chrono::{DateTime, Duration, Utc};

use super::figures::Durations;
use crate::api::Step;
use crate::windows::Schedule;

/// What the projection starts from.
#[derive(Clone, Debug)]
pub struct Projection<'a> {
    /// Now.
    pub now: DateTime<Utc>,
    /// The maintenance windows and blackouts.
    pub schedule: &'a Schedule,
    /// How many nodes may be in flight at once.
    pub concurrency: u32,
    /// How long each step takes.
    pub durations: &'a Durations,
    /// Nodes started and not done, with the step they are in.
    pub in_flight: Vec<InFlight>,
    /// Nodes not started, in release order.
    pub pending: Vec<String>,
    /// The restore walk at the end.
    pub restore: RestoreWalk,
}

/// A node in flight.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InFlight {
    /// The node.
    pub node: String,
    /// The step it is in.
    pub step: Step,
    /// When it entered that step.
    pub since: DateTime<Utc>,
    /// For a node in `Upgrade`: when it was drained, where its MachineConfigNode told it; its reboot is what is left.
    pub drained: Option<DateTime<Utc>>,
}

/// The restore walk: the Machine Config Operator moves the rollout's nodes back to their own pools, `at_once` at a
/// time (the target pool's `maxUnavailable`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RestoreWalk {
    /// The nodes that move back.
    pub nodes: u32,
    /// How many move at once.
    pub at_once: u32,
}

impl RestoreWalk {
    /// How many rounds of `at_once` nodes the walk takes.
    pub fn rounds(&self) -> u32 {
        self.nodes.div_ceil(self.at_once.max(1))
    }
}

/// One node's projected steps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    /// The node.
    pub node: String,
    /// Whether it had started already.
    pub started: bool,
    /// Its steps still to come (for a node in flight, from the step it is in), with their start and end.
    pub steps: Vec<(Step, DateTime<Utc>, DateTime<Utc>)>,
}

impl Planned {
    /// When its first projected step starts.
    pub fn start(&self) -> Option<DateTime<Utc>> {
        self.steps.first().map(|(_, start, _)| *start)
    }

    /// When it should be done.
    pub fn end(&self) -> Option<DateTime<Utc>> {
        self.steps.last().map(|(_, _, end)| *end)
    }
}

/// The projected rest of the rollout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Projected {
    /// Every node not done, in flight first, then in release order.
    pub nodes: Vec<Planned>,
    /// When the last node should be done (before the restore walk).
    pub nodes_done: DateTime<Utc>,
    /// When the restore walk should end: the rollout's end.
    pub end: DateTime<Utc>,
    /// How many rounds the restore walk takes.
    pub restore_rounds: u32,
    /// Nodes that cannot start because no maintenance window opens again (they are left out of `nodes`).
    pub never_start: Vec<String>,
}

/// Projects the rest of the rollout.
pub fn project(input: &Projection<'_>) -> Projected {
    let seconds = |step: Step| Duration::seconds(i64::from(input.durations.of(step)));
    let steps_from = |first: Step, start: DateTime<Utc>, elapsed: Duration| {
        let mut at = start;
        let mut steps = Vec::new();
        for step in Step::NODE.into_iter().skip_while(|s| *s != first) {
            let length = if step == first { (seconds(step) - elapsed).max(Duration::zero()) } else { seconds(step) };
            if length > Duration::zero() || step == first {
                steps.push((step, at, at + length));
            }
            at += length;
        }
        steps
    };
    // Slots as the (negated, for a min-heap) instant each is free.
    let mut free: BinaryHeap<std::cmp::Reverse<DateTime<Utc>>> = BinaryHeap::new();
    let mut nodes = Vec::new();
    for node in &input.in_flight {
        let mut elapsed = (input.now - node.since).max(Duration::zero());
        // A drained node has its reboot left, where numo measured reboots: the upgrade as far along as that says.
        if let (Step::Upgrade, Some(drained), Some(reboot)) =
            (node.step, node.drained, input.durations.part(Step::Reboot))
        {
            let rebooting = (input.now - drained).max(Duration::zero());
            elapsed = seconds(Step::Upgrade) - (Duration::seconds(i64::from(reboot)) - rebooting);
        }
        let steps = steps_from(node.step, input.now, elapsed);
        free.push(std::cmp::Reverse(steps.last().map_or(input.now, |s| s.2)));
        nodes.push(Planned { node: node.node.clone(), started: true, steps });
    }
    for _ in input.in_flight.len()..input.concurrency.max(1) as usize {
        free.push(std::cmp::Reverse(input.now));
    }
    let mut never_start = Vec::new();
    for node in &input.pending {
        let Some(std::cmp::Reverse(slot)) = free.pop() else { break };
        match first_open(input.schedule, slot) {
            Some(start) => {
                let steps = steps_from(Step::Gate, start, Duration::zero());
                free.push(std::cmp::Reverse(steps.last().map_or(start, |s| s.2)));
                nodes.push(Planned { node: node.clone(), started: false, steps });
            }
            None => {
                never_start.push(node.clone());
                free.push(std::cmp::Reverse(slot));
            }
        }
    }
    let nodes_done = nodes.iter().filter_map(Planned::end).max().unwrap_or(input.now).max(input.now);
    let end = nodes_done + seconds(Step::Restore) * input.restore.rounds() as i32;
    Projected { nodes, nodes_done, end, restore_rounds: input.restore.rounds(), never_start }
}

/// The first instant from `t` at which the schedule lets a node start; None if none comes.
pub fn first_open(schedule: &Schedule, mut t: DateTime<Utc>) -> Option<DateTime<Utc>> {
    for _ in 0..1024 {
        let verdict = schedule.at(t);
        if verdict.closed.is_empty() {
            return Some(t);
        }
        t = verdict.changes_at?;
    }
    None
}
