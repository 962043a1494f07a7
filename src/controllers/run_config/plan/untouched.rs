//! The gated nodes nothing has touched yet, and those that finished, set apart so that a plan reads them as a
//! count and a list, not one by one. Most of a large rollout's nodes wait their turn: no status entry, no Job, the
//! rule labels on and no release mark, not skipped, behind the target. Each such node is Pending and asks for
//! nothing (no label, no Job, no Event), so gating needs only the first few of them, those that may start now; the
//! rest are counted, and named only where the estimate lists the nodes still to go. Most of the others are done:
//! listed so in the previous status, they stay done and are only listed again.
//!
//! Gating then plans over a narrowed configuration ([`Narrowed::resolved`]): the nodes it reads one by one, in
//! release order. It keeps the first `spec.concurrency` untouched nodes in it, so the nodes that may start (at most
//! as many as the free slots, the first pending ones in release order) are among them. Only for an upgrade without
//! `spec.topology` (a config change or failure domains read every node) and with no stale rule label to remove.
//!
//! The sort reads each gated node's facts from the index the run config's plans keep (`gated_index`), and looks up
//! only the nodes the previous status, a Job or the skip annotation tells of; every other node is Pending, with no
//! entry and no Job. Without that index (a plan that reads every node one by one, the tests' oracle) nothing is set
//! apart.

use std::collections::BTreeSet;

use super::gated_index::{GatedIndex, Kept};
use super::node_state::{GatedNode, History, NodeState};
use super::resolve::Resolved;
use super::target::Target;
use crate::api::NodePhase;
use crate::controllers::run_config::snapshot::{NodeView, Snapshot};

/// A configuration narrowed to the nodes gating reads one by one, and the nodes set apart.
pub struct Narrowed<'a> {
    /// The configuration with only the nodes read one by one in `gated` (and `homes`), in release order.
    pub resolved: Resolved<'a>,
    /// For each node of `resolved.gated`, its place in release order among every gated node.
    places: Vec<usize>,
    /// The untouched nodes set apart, with their places in release order.
    waiting: Vec<(usize, &'a NodeView)>,
    /// The finished nodes set apart (see [`Apart::finished`]).
    finished: Vec<&'a NodeView>,
}

/// The nodes set apart, as the status counts and lists them.
#[derive(Clone, Copy, Default)]
pub struct Apart<'s, 'a> {
    /// How many untouched nodes were set apart: each is Pending.
    pub waiting: usize,
    /// The finished nodes set apart: each is Done and was listed so in the previous status (no entry, no Job of the
    /// rollout, the rule labels on and no release mark, not skipped), and needs nothing from this plan.
    pub finished: &'s [&'a NodeView],
}

impl<'a> Narrowed<'a> {
    /// The nodes set apart, as the status counts and lists them.
    pub fn apart(&self) -> Apart<'_, 'a> {
        Apart { waiting: self.waiting.len(), finished: &self.finished }
    }

    /// The names of the Pending nodes among `gated` (the nodes of [`Narrowed::resolved`] as gating left them) and
    /// of those set apart, in release order.
    pub fn pending(&self, gated: &[GatedNode<'_>]) -> Vec<String> {
        let read = gated.iter().zip(&self.places).filter(|(g, _)| matches!(g.state, NodeState::Pending));
        let mut read = read.map(|(g, place)| (*place, g.node)).peekable();
        let mut apart = self.waiting.iter().copied().peekable();
        let mut names = Vec::with_capacity(self.waiting.len() + gated.len());
        loop {
            let next = match (read.peek(), apart.peek()) {
                (Some((a, _)), Some((b, _))) if a < b => read.next(),
                (Some(_), Some(_)) | (None, Some(_)) => apart.next(),
                (Some(_), None) => read.next(),
                (None, None) => break,
            };
            names.extend(next.map(|(_, node)| node.name.clone()));
        }
        names
    }
}

/// What one node is to gating: read one by one, untouched (Pending, asking for nothing), or finished (see
/// [`Apart::finished`]).
#[derive(PartialEq)]
enum Kind {
    /// Read one by one.
    Read,
    /// Pending, asking for nothing.
    Untouched,
    /// Done, listed so before.
    Finished,
}

/// What the history and the skip annotation tell of a gated node, for the sort.
#[derive(Clone, Copy)]
enum Told {
    /// Nothing: Pending, no entry, no Job, not skipped.
    Nothing,
    /// Done, with no entry and no Job, and not skipped.
    Done,
    /// Anything else: it is read one by one.
    Else,
}

/// What `history` and `skip` tell of each of the `gated` nodes of `index`, by place; the places of the finished
/// nodes as `kept` holds them.
fn told(index: &GatedIndex, kept: &Kept, history: &History<'_>, skip: &BTreeSet<String>, gated: usize) -> Vec<Told> {
    let mut told = vec![Told::Nothing; gated];
    for &(place, phase) in kept.finished_places(history.finished(), index).iter() {
        told[place] = match phase {
            NodePhase::Done => Told::Done,
            _ => Told::Else,
        };
    }
    // Any node with an entry or a Job is read one by one, and so is every skipped node.
    for place in history.touched().chain(skip.iter().map(String::as_str)).filter_map(|name| index.place(name)) {
        told[place] = Told::Else;
    }
    told
}

/// Sets apart the finished nodes of `resolved` and its untouched nodes after the first `spec.concurrency` of them;
/// None when none is (a small rollout, a stale rule label, or no rule), or when `resolved` carries no index whose facts
/// are for `target` (a config change, failure domains, a plan that reads every node).
pub fn set_apart<'a>(
    snapshot: &Snapshot,
    resolved: &Resolved<'a>,
    target: &Target,
    history: &History<'_>,
) -> Option<Narrowed<'a>> {
    let keep = snapshot.run_config.spec.concurrency as usize;
    let narrow = resolved.stale_labels.is_empty() && !resolved.rules.is_empty() && resolved.gated.len() > keep;
    if !narrow || resolved.homes.len() != resolved.gated.len() {
        return None;
    }
    let (index, kept) = (resolved.index?, resolved.kept?);
    let facts = index.facts_for(target).filter(|facts| facts.len() == resolved.gated.len())?;
    let told = told(index, kept, history, &snapshot.run_config.skip, resolved.gated.len());
    let kind_at = |place: usize| {
        let facts = facts[place];
        match told[place] {
            Told::Nothing | Told::Done if !facts.plain => Kind::Read,
            Told::Done => Kind::Finished,
            Told::Nothing if facts.behind && !facts.started_ungated => Kind::Untouched,
            _ => Kind::Read,
        }
    };
    let mut kept = 0;
    let mut places = Vec::new();
    let (mut waiting, mut finished) = (Vec::new(), Vec::new());
    for (place, node) in resolved.gated.iter().enumerate() {
        match kind_at(place) {
            Kind::Finished => finished.push(*node),
            Kind::Untouched if kept == keep => waiting.push((place, *node)),
            read => {
                kept += usize::from(read == Kind::Untouched);
                places.push(place);
            }
        }
    }
    if waiting.is_empty() && finished.is_empty() {
        return None;
    }
    Some(Narrowed { resolved: resolved.only(&places), places, waiting, finished })
}
