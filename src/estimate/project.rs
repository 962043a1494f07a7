//! The projection of the rest of a rollout: the nodes still to go, in release order, each started in the first free
//! slot (`concurrency` of them) at which the maintenance windows and blackouts let a node start, through its steps
//! at the learned durations; then the restore walk.

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
    /// Under `spec.topology` with a mode: the failure domains.
    pub waves: Option<&'a Waves>,
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

/// Projects the rest of the rollout: each pending node, in release order, starts at the first instant a slot is
/// free, a window is open and its failure domain lets it (see [`Waves`]).
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
    let mut flights = Flights::new(input);
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
        let planned =
            Planned { node: node.node.clone(), started: true, steps: steps_from(node.step, input.now, elapsed) };
        flights.take_off(&planned, input.now);
        nodes.push(planned);
    }
    let mut pending: Vec<&String> = input.pending.iter().collect();
    let mut never_start = Vec::new();
    let mut t = input.now;
    while !pending.is_empty() {
        flights.land(t);
        let Some(open) = first_open(input.schedule, t) else {
            never_start.extend(pending.drain(..).cloned());
            break;
        };
        if open > t {
            t = open;
            continue;
        }
        match flights.next(&pending, t) {
            Ok(i) => {
                let node = pending.remove(i);
                let planned =
                    Planned { node: node.clone(), started: false, steps: steps_from(Step::Gate, t, Duration::zero()) };
                flights.take_off(&planned, t);
                nodes.push(planned);
            }
            Err(Some(later)) => t = later,
            // Nothing in flight and nothing to wait for, yet no node may start: cannot happen; never loop.
            Err(None) => {
                never_start.extend(pending.drain(..).cloned());
                break;
            }
        }
    }
    let nodes_done = nodes.iter().filter_map(Planned::end).max().unwrap_or(input.now).max(input.now);
    let end = nodes_done + seconds(Step::Restore) * input.restore.rounds() as i32;
    Projected { nodes, nodes_done, end, restore_rounds: input.restore.rounds(), never_start }
}

/// The failure domains as the projection needs them (`spec.topology` with a mode).
#[derive(Clone, Debug, PartialEq)]
pub struct Waves {
    /// How the rollout moves through the domains.
    pub mode: crate::api::TopologyMode,
    /// Under `DomainAtATime`: at most this many nodes of a domain in flight at once.
    pub per_domain: usize,
    /// How long the next domain waits after the last one finished.
    pub soak: Duration,
    /// Each node's domain (`""` without the label).
    pub domain_of: std::collections::BTreeMap<String, String>,
    /// The domain that finished last, and when, before now (its soak may still be running).
    pub last_finished: Option<(String, DateTime<Utc>)>,
}

impl Waves {
    fn domain<'w>(&'w self, node: &str) -> &'w str {
        self.domain_of.get(node).map_or("", String::as_str)
    }
}

/// A node in flight in the projection.
struct Flight {
    node: String,
    /// When its slot frees (its last step ends).
    end: DateTime<Utc>,
    /// When it is up again (its cleanup ends; its soak does not keep it down).
    up: DateTime<Utc>,
}

/// The nodes in flight at each instant of the projection, and what they let start.
struct Flights<'a> {
    concurrency: usize,
    waves: Option<&'a Waves>,
    flying: Vec<Flight>,
    /// Each domain's latest end so far.
    finished: std::collections::BTreeMap<String, DateTime<Utc>>,
}

impl<'a> Flights<'a> {
    fn new(input: &'a Projection<'_>) -> Self {
        let mut finished = std::collections::BTreeMap::new();
        if let Some((domain, at)) = input.waves.and_then(|w| w.last_finished.clone()) {
            finished.insert(domain, at);
        }
        Flights { concurrency: input.concurrency.max(1) as usize, waves: input.waves, flying: Vec::new(), finished }
    }

    fn domain(&self, node: &str) -> &str {
        self.waves.map_or("", |w| w.domain(node))
    }

    fn take_off(&mut self, planned: &Planned, at: DateTime<Utc>) {
        let end = planned.end().unwrap_or(at);
        let up = planned.steps.iter().rev().find(|s| s.0 != Step::Soak).map_or(end, |s| s.2);
        self.flying.push(Flight { node: planned.node.clone(), end, up });
    }

    /// Lands every node whose slot frees by `t`.
    fn land(&mut self, t: DateTime<Utc>) {
        let (landed, flying): (Vec<Flight>, Vec<Flight>) = self.flying.drain(..).partition(|f| f.end <= t);
        self.flying = flying;
        for flight in landed {
            let domain = self.domain(&flight.node).to_string();
            let at = self.finished.entry(domain).or_insert(flight.end);
            *at = (*at).max(flight.end);
        }
    }

    /// The index in `pending` of the node that starts at `t`; else the next instant something changes, if any.
    fn next(&self, pending: &[&String], t: DateTime<Utc>) -> Result<usize, Option<DateTime<Utc>>> {
        let later = self.flying.iter().flat_map(|f| [f.end, f.up]).filter(|at| *at > t).min();
        if self.flying.len() >= self.concurrency {
            return Err(later);
        }
        let Some(waves) = self.waves else { return Ok(0) };
        match waves.mode {
            crate::api::TopologyMode::Spread => {
                let down: Vec<&str> = self.flying.iter().filter(|f| f.up > t).map(|f| self.domain(&f.node)).collect();
                pending.iter().position(|n| !down.contains(&waves.domain(n))).ok_or(later)
            }
            crate::api::TopologyMode::DomainAtATime => {
                let mut active: Vec<&str> = self.flying.iter().map(|f| self.domain(&f.node)).collect();
                active.sort_unstable();
                active.dedup();
                match active.as_slice() {
                    [] => {
                        let first = waves.domain(pending[0]);
                        if self.finished.contains_key(first) {
                            // The domain started already: only its first node waits for the last domain's soak.
                            return Ok(0);
                        }
                        let last = self.finished.iter().filter(|(d, _)| d.as_str() != first).map(|(_, at)| *at).max();
                        match last.map(|at| at + waves.soak).filter(|until| *until > t) {
                            Some(until) => Err(Some(until)),
                            None => Ok(0),
                        }
                    }
                    [current] if active_count(&self.flying, self, current) < waves.per_domain => {
                        pending.iter().position(|n| waves.domain(n) == *current).ok_or(later)
                    }
                    _ => Err(later),
                }
            }
        }
    }
}

/// How many nodes of `domain` are in flight.
fn active_count(flying: &[Flight], flights: &Flights<'_>, domain: &str) -> usize {
    flying.iter().filter(|f| flights.domain(&f.node) == domain).count()
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
