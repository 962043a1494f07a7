//! What numo learns about how long a rollout's steps take, and what it expects from that: the step durations of the
//! current rollout, the figures of the last few rollouts, and the estimated end.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A step a node goes through, or the rollout's last one (moving the nodes back to their pools).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema)]
pub enum Step {
    /// The gate Jobs run (from the first gate Job's creation to the node's release).
    Gate,
    /// The node is released and waits for the Machine Config Operator to start on it.
    WaitForMco,
    /// The Machine Config Operator upgrades the node, until it is Ready at the target version.
    Upgrade,
    /// The cleanup Jobs run.
    Cleanup,
    /// The node soaks (`soakTime`), its slot taken while it must stay healthy.
    Soak,
    /// Part of `Upgrade`, where MachineConfigNodes tell it (OpenShift 4.20 and later): the Machine Config Operator
    /// cordons and drains the node, from its start on the node until the node's `Drained` condition.
    Drain,
    /// Part of `Upgrade`, after `Drain`: the new configuration and OS are written and the node reboots, until it is
    /// Ready at the target version.
    Reboot,
    /// At the end, the Machine Config Operator moves one node back from the canary to its own pool (a step of the
    /// restore walk; the pool's `maxUnavailable` nodes move at once).
    Restore,
}

impl Step {
    /// The steps of a node, in order.
    pub const NODE: [Step; 5] = [Step::Gate, Step::WaitForMco, Step::Upgrade, Step::Cleanup, Step::Soak];
    /// The parts `Upgrade` is measured in where MachineConfigNodes tell when the drain ended.
    pub const UPGRADE_PARTS: [Step; 2] = [Step::Drain, Step::Reboot];

    /// How long the step takes when numo has no figure of its own: the documented defaults (docs/status.md).
    pub fn default_seconds(self) -> u32 {
        match self {
            Step::Gate => 60,
            Step::WaitForMco => 30,
            Step::Upgrade => 900,
            Step::Cleanup => 60,
            Step::Soak => 0,
            Step::Drain => 120,
            Step::Reboot => 780,
            Step::Restore => 30,
        }
    }
}

/// The durations of one step measured in the current rollout.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepSamples {
    /// The step.
    pub step: Step,
    /// How many nodes went through it in this rollout.
    pub count: u32,
    /// The latest durations, in seconds, oldest first (at most [`StepSamples::KEPT`]).
    #[serde(default)]
    pub seconds: Vec<u32>,
}

impl StepSamples {
    /// How many of a step's latest durations are kept.
    pub const KEPT: usize = 32;
}

/// What a step took in one rollout: its median and 90th percentile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepFigure {
    /// The step.
    pub step: Step,
    /// How many nodes the figure is from.
    pub count: u32,
    /// The median duration, in seconds.
    pub median_seconds: u32,
    /// The 90th percentile of the durations, in seconds.
    pub p90_seconds: u32,
}

/// The figures of a rollout that ended, kept so that the next rollout starts with real ones.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RolloutFigures {
    /// The rollout: the target version, or the config rollout's identifier.
    pub rollout: String,
    /// When it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<Time>,
    /// When it finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<Time>,
    /// How many nodes it gated.
    pub nodes: u32,
    /// Each step's median and 90th percentile.
    #[serde(default)]
    pub steps: Vec<StepFigure>,
}

/// Where an estimate's step durations come from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum EstimateBasis {
    /// Nodes of this rollout finished the steps.
    ThisRollout,
    /// Figures of earlier rollouts (`status.history`), as no node of this rollout has finished yet.
    EarlierRollouts,
    /// The documented defaults, as numo has no figure yet; expect the estimate to move once a node finishes.
    Defaults,
}

/// How long the estimate takes one step to be.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct StepSeconds {
    /// The step.
    pub step: Step,
    /// Its length in seconds.
    pub seconds: u32,
}

/// When the rollout should end, and on what that rests.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    /// When the rollout should end: every node done and the pools restored.
    pub end: Time,
    /// When the last node should be done, before the restore walk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes_done: Option<Time>,
    /// How many nodes remain (not done and not skipped).
    pub remaining_nodes: u32,
    /// How many rounds the restore walk at the end takes: the rollout's nodes, the target pool's `maxUnavailable`
    /// at a time.
    #[serde(default)]
    pub restore_rounds: u32,
    /// Where the step durations come from.
    pub basis: EstimateBasis,
    /// The seconds the estimate takes for each step of a node still to go (and per round of the restore walk):
    /// what the console plugin's timeline projects with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub step_seconds: Vec<StepSeconds>,
    /// What the estimate assumes, as a sentence (e.g. that no check holds a node beyond what holds now).
    pub assumes: String,
    /// When numo worked it out: when a node finished, or a hold started or ended.
    pub computed_at: Time,
}
