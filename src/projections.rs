//! The projection of each run config's nodes still to go, as the planner worked it out in its last reconcile that
//! worked the estimate out again, held in memory for the console plugin's timeline
//! ([`crate::console_plugin::timeline`]). Only a picture rests on it: after a restart numo holds none, and the
//! planner's first reconcile of each run config gives one even where the estimate stands; until then the timeline
//! draws no projection.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use crate::estimate::Projected;

/// The projections, by run config; cheap to clone (shared).
#[derive(Clone, Debug, Default)]
pub struct Projections {
    held: Arc<RwLock<HashMap<(String, String), Held>>>,
}

#[derive(Clone, Debug)]
struct Held {
    /// The rollout it projects (`status.rollout_key()`).
    rollout: Option<String>,
    projected: Projected,
}

impl Projections {
    /// Keeps `projected` for the run config `namespace/name` and its rollout `rollout`, in place of the one before.
    pub fn keep(&self, namespace: &str, name: &str, rollout: Option<&str>, projected: Projected) {
        let held = Held { rollout: rollout.map(str::to_string), projected };
        self.held.write().unwrap_or_else(PoisonError::into_inner).insert(key(namespace, name), held);
    }

    /// The projection held for `namespace/name`, if it projects the rollout `rollout`.
    pub fn get(&self, namespace: &str, name: &str, rollout: Option<&str>) -> Option<Projected> {
        let held = self.held.read().unwrap_or_else(PoisonError::into_inner);
        held.get(&key(namespace, name)).filter(|h| h.rollout.as_deref() == rollout).map(|h| h.projected.clone())
    }

    /// Whether a projection of the rollout `rollout` is held for `namespace/name`.
    pub fn holds(&self, namespace: &str, name: &str, rollout: Option<&str>) -> bool {
        let held = self.held.read().unwrap_or_else(PoisonError::into_inner);
        held.get(&key(namespace, name)).is_some_and(|h| h.rollout.as_deref() == rollout)
    }

    /// Forgets the projection of `namespace/name` (the run config is gone).
    pub fn forget(&self, namespace: &str, name: &str) {
        self.held.write().unwrap_or_else(PoisonError::into_inner).remove(&key(namespace, name));
    }
}

fn key(namespace: &str, name: &str) -> (String, String) {
    (namespace.to_string(), name.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn projected(node: &str) -> Projected {
        let at = chrono::DateTime::UNIX_EPOCH;
        Projected {
            nodes: vec![crate::estimate::Planned { node: node.into(), started: false, steps: Vec::new() }],
            nodes_done: at,
            end: at,
            restore_rounds: 1,
            never_start: Vec::new(),
        }
    }

    #[test]
    fn a_projection_is_given_for_its_own_rollout_until_forgotten() {
        let projections = Projections::default();
        assert_eq!(projections.get("ops", "rc", Some("4.17.1")), None);
        projections.keep("ops", "rc", Some("4.17.1"), projected("worker-0"));
        assert_eq!(projections.get("ops", "rc", Some("4.17.1")), Some(projected("worker-0")));
        assert!(projections.holds("ops", "rc", Some("4.17.1")) && !projections.holds("ops", "rc", None));
        assert_eq!(projections.get("ops", "rc", Some("4.18.0")), None, "another rollout's");
        assert_eq!(projections.get("other", "rc", Some("4.17.1")), None);
        projections.keep("ops", "rc", Some("4.17.1"), projected("worker-1"));
        assert_eq!(projections.get("ops", "rc", Some("4.17.1")), Some(projected("worker-1")), "the newest");
        projections.forget("ops", "rc");
        assert_eq!(projections.get("ops", "rc", Some("4.17.1")), None);
    }
}
