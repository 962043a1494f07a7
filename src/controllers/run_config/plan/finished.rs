//! The previous status's lists of finished nodes, looked up by name, and kept between a run config's plans while
//! the status lists the same (the same shared lists, [`NodeNames::shares`]): halfway through a large rollout a
//! thousand nodes are done, and an event about one node should not look each of them up again.

use std::sync::Arc;

use crate::api::{MutexRunConfigStatus, NodeNames, NodePhase};

/// The previous status's `completedNodes` and `skippedNodes`, looked up by name.
pub struct Finished {
    /// The lists, as the status has them.
    completed: NodeNames,
    skipped: NodeNames,
    /// Each listed node's phase: Done if `completedNodes` lists it, else Skipped.
    phases: foldhash::HashMap<String, NodePhase>,
    /// Whether `completedNodes` names no node twice.
    completed_once: bool,
}

impl Finished {
    /// The lists of `status`.
    pub fn of(status: &MutexRunConfigStatus) -> Self {
        let mut phases = foldhash::HashMap::default();
        for name in status.skipped_nodes.iter() {
            phases.insert(name.clone(), NodePhase::Skipped);
        }
        let mut completed_once = true;
        for name in status.completed_nodes.iter() {
            completed_once &= phases.insert(name.clone(), NodePhase::Done) != Some(NodePhase::Done);
        }
        Self {
            completed: status.completed_nodes.clone(),
            skipped: status.skipped_nodes.clone(),
            phases,
            completed_once,
        }
    }

    /// No list (a status of another rollout).
    pub fn none() -> Self {
        Self {
            completed: NodeNames::default(),
            skipped: NodeNames::default(),
            phases: Default::default(),
            completed_once: true,
        }
    }

    /// Whether these are the lists of `status` (shared, not merely equal).
    pub fn are_of(&self, status: &MutexRunConfigStatus) -> bool {
        self.completed.shares(&status.completed_nodes) && self.skipped.shares(&status.skipped_nodes)
    }

    /// The phase the lists give `name`: Done, Skipped, or None when neither lists it.
    pub fn phase(&self, name: &str) -> Option<NodePhase> {
        self.phases.get(name).copied()
    }

    /// `completedNodes`, and whether it names no node twice.
    pub fn completed(&self) -> (&NodeNames, bool) {
        (&self.completed, self.completed_once)
    }

    /// `skippedNodes`.
    pub fn skipped(&self) -> &NodeNames {
        &self.skipped
    }

    /// Each listed node that has a place (`place_of`), by its place, with its phase.
    pub fn places(&self, place_of: impl Fn(&str) -> Option<usize>) -> Vec<(usize, NodePhase)> {
        self.phases.iter().filter_map(|(name, phase)| Some((place_of(name)?, *phase))).collect()
    }
}

/// The listed nodes that are gated, by their place among the gated nodes, with their phase.
pub type Places = Arc<[(usize, NodePhase)]>;

/// What a run config's plans keep of its finished nodes: the lists last looked up, and where the index last placed
/// them.
#[derive(Default)]
pub struct KeptFinished {
    finished: Option<Arc<Finished>>,
    /// The places of `finished`'s nodes among the gated nodes, as the places of that stamp gave them.
    places: Option<(u64, Places)>,
}

impl KeptFinished {
    /// The lists of `status`: those kept when the status still lists the same, else looked up anew (and kept).
    pub fn of(&mut self, status: &MutexRunConfigStatus) -> Arc<Finished> {
        match &self.finished {
            Some(kept) if kept.are_of(status) => Arc::clone(kept),
            _ => {
                let finished = Arc::new(Finished::of(status));
                self.finished = Some(Arc::clone(&finished));
                self.places = None;
                finished
            }
        }
    }

    /// Where the gated nodes' places of `stamp` (`place_of`) put the nodes of `finished` (the lists
    /// [`KeptFinished::of`] last gave): kept while the places have that stamp.
    pub fn places(&mut self, finished: &Arc<Finished>, stamp: u64, place_of: impl Fn(&str) -> Option<usize>) -> Places {
        let same = self.finished.as_ref().is_some_and(|kept| Arc::ptr_eq(kept, finished));
        match &self.places {
            Some((kept, places)) if same && *kept == stamp => Arc::clone(places),
            _ => {
                let places: Places = finished.places(place_of).into();
                if same {
                    self.places = Some((stamp, Arc::clone(&places)));
                }
                places
            }
        }
    }
}
