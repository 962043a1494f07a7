//! The Kubernetes Events a plan publishes about the run config.

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

impl Notice {
    /// A Normal Event.
    pub fn normal(reason: &'static str, action: &'static str, note: String) -> Self {
        Self { warning: false, reason, action, note }
    }

    /// A Warning Event.
    pub fn warning(reason: &'static str, action: &'static str, note: String) -> Self {
        Self { warning: true, reason, action, note }
    }
}

/// The Events to publish for `notices`: notices of the same kind (warning, reason and action) in one plan, such as
/// `NodeGating` for each of a hundred nodes started at once, become one Event whose note lists theirs, in order,
/// separated by `; `, as many as fit in an Event's note (`crate::events::MAX_NOTE` bytes); the rest start another.
/// Kinds keep the order of their first notice.
pub fn aggregated(notices: &[Notice]) -> Vec<Notice> {
    const SEPARATOR: &str = "; ";
    let mut out: Vec<Notice> = Vec::new();
    let mut open: Vec<usize> = Vec::new(); // per kind, the Event still taking notes
    for notice in notices {
        let kind = |n: &Notice| (n.warning, n.reason, n.action);
        let fits = |event: &Notice| event.note.len() + SEPARATOR.len() + notice.note.len() <= crate::events::MAX_NOTE;
        match open.iter().position(|i| kind(&out[*i]) == kind(notice)) {
            Some(at) if fits(&out[open[at]]) => {
                let event = &mut out[open[at]];
                event.note.push_str(SEPARATOR);
                event.note.push_str(&notice.note);
            }
            Some(at) => {
                out.push(notice.clone());
                open[at] = out.len() - 1;
            }
            None => {
                out.push(notice.clone());
                open.push(out.len() - 1);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_of_one_kind_in_a_plan_become_one_event_as_long_as_its_note_allows() {
        let started = |node: usize| Notice::normal("NodeGating", "Gate", format!("Gating node worker-{node}."));
        let mut notices: Vec<Notice> = (0..3).map(started).collect();
        notices.insert(1, Notice::warning("RolloutHeld", "Hold", "held".into()));
        let events = aggregated(&notices);
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].note, "Gating node worker-0.; Gating node worker-1.; Gating node worker-2.");
        assert_eq!((events[1].reason, events[1].warning), ("RolloutHeld", true));

        let many: Vec<Notice> = (0..100).map(started).collect();
        let events = aggregated(&many);
        assert!(events.len() > 1 && events.len() < 10, "{}", events.len());
        assert!(events.iter().all(|e| e.note.len() <= crate::events::MAX_NOTE));
        let listed: usize = events.iter().map(|e| e.note.matches("Gating node").count()).sum();
        assert_eq!(listed, 100, "every node is named");
        assert!(
            events[0].note.starts_with("Gating node worker-0.") && events.last().unwrap().note.ends_with("worker-99.")
        );
    }
}
