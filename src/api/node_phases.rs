//! One table of what each node phase means to the rest of numo: its name (as the API spells it), the Event of a node
//! entering it, and, for the phases of a node's turn, the timeline's step it is and the time in the node's entry at
//! which that step began. The status record, the estimate, the measured steps, the metrics and the rollout record all
//! read it, so a new phase is one row here.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::{NodePhase, NodeProgress, Step};

/// A phase of a node's turn, as the timeline shows it.
pub struct InTurn {
    /// The phase.
    pub phase: NodePhase,
    /// The step of the timeline a node in this phase is in.
    pub step: Step,
    /// The time in the node's entry at which that step began, if numo saw it.
    pub began: fn(&NodeProgress) -> Option<&Time>,
}

/// The phases of a node's turn, in order: gate, wait for the Machine Config Operator, upgrade, cleanup, soak.
pub const IN_TURN: [InTurn; 5] = [
    InTurn { phase: NodePhase::Gating, step: Step::Gate, began: started },
    InTurn { phase: NodePhase::Released, step: Step::WaitForMco, began: released },
    InTurn { phase: NodePhase::Upgrading, step: Step::Upgrade, began: upgrading },
    InTurn { phase: NodePhase::CleaningUp, step: Step::Cleanup, began: upgraded },
    InTurn { phase: NodePhase::Soaking, step: Step::Soak, began: soak_started },
];

fn started(entry: &NodeProgress) -> Option<&Time> {
    entry.started_at.as_ref()
}

fn released(entry: &NodeProgress) -> Option<&Time> {
    entry.released_at.as_ref()
}

fn upgrading(entry: &NodeProgress) -> Option<&Time> {
    entry.upgrading_at.as_ref()
}

fn upgraded(entry: &NodeProgress) -> Option<&Time> {
    entry.upgraded_at.as_ref()
}

fn soak_started(entry: &NodeProgress) -> Option<&Time> {
    entry.soak_started_at.as_ref()
}

impl NodePhase {
    /// The phase as the API spells it (`status.nodes[].phase`), and as metrics and the rollout record label it.
    pub fn name(self) -> &'static str {
        match self {
            NodePhase::Pending => "Pending",
            NodePhase::Gating => "Gating",
            NodePhase::Released => "Released",
            NodePhase::Upgrading => "Upgrading",
            NodePhase::CleaningUp => "CleaningUp",
            NodePhase::Soaking => "Soaking",
            NodePhase::Done => "Done",
            NodePhase::Failed => "Failed",
            NodePhase::Skipped => "Skipped",
            NodePhase::Ungated => "Ungated",
        }
    }

    /// The phase [`NodePhase::name`] spells so.
    pub fn parse(name: &str) -> Option<NodePhase> {
        NodePhase::ALL.into_iter().find(|phase| phase.name() == name)
    }

    /// The reason of the Event numo publishes when a node enters this phase.
    pub fn event_reason(self) -> &'static str {
        match self {
            NodePhase::Gating => "NodeGating",
            NodePhase::Released => "NodeReleased",
            NodePhase::Upgrading => "NodeUpgrading",
            NodePhase::CleaningUp => "NodeCleaningUp",
            NodePhase::Soaking => "NodeSoaking",
            NodePhase::Failed => "NodeFailed",
            NodePhase::Ungated => "NodeUngated",
            NodePhase::Pending | NodePhase::Done | NodePhase::Skipped => "NodeProgress",
        }
    }

    /// The row of [`IN_TURN`] of this phase; None outside a node's turn.
    pub fn in_turn(self) -> Option<&'static InTurn> {
        IN_TURN.iter().find(|row| row.phase == self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_phase_is_named_as_the_api_spells_it_and_read_back() {
        for phase in NodePhase::ALL {
            assert_eq!(serde_json::to_value(phase).ok(), Some(serde_json::Value::from(phase.name())));
            assert_eq!(NodePhase::parse(phase.name()), Some(phase));
        }
        assert_eq!(NodePhase::parse("Rebooting"), None);
    }

    #[test]
    fn the_turn_is_the_in_flight_phases_and_soaking_each_a_step_of_a_node_in_order() {
        let phases: Vec<NodePhase> = IN_TURN.iter().map(|row| row.phase).collect();
        let in_flight_or_soaking: Vec<NodePhase> =
            NodePhase::ALL.into_iter().filter(|p| p.in_flight() || *p == NodePhase::Soaking).collect();
        assert_eq!(phases, in_flight_or_soaking);
        let steps: Vec<Step> = IN_TURN.iter().map(|row| row.step).collect();
        assert_eq!(steps, Step::NODE);
    }
}
