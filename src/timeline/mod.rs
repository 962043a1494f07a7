//! The picture of a rollout: one row per node in the order they went (or will go), time across, and [`render`] to
//! draw it as a standalone SVG document (no scripts, no external resources, generic `sans-serif`, every text
//! escaped).
//!
//! [`drawing::draw`] lays the same picture out for a drawer that words it itself: the console plugin gets it as JSON
//! from numo's plugin server and only draws it (the same layout, scale, grouping, merged bands and colours).
//!
//! **Colours.** Each step has its own colour from the Okabe–Ito palette, readable with every common colour-vision
//! deficiency; [`colour`] gives it, so that every renderer (the console plugin too) uses the same:
//!
//! | step | colour |
//! | --- | --- |
//! | gate | `#0072B2` blue |
//! | waiting for the MCO | `#56B4E9` sky blue |
//! | upgrade | `#E69F00` orange |
//! | cleanup | `#009E73` bluish green |
//! | soak | `#CC79A7` reddish purple |
//! | restore | `#999999` grey |
//!
//! Holds are [`HOLD_COLOUR`] (vermillion), a strip above the rows with their check and a faint band across them;
//! maintenance windows ([`WINDOW_COLOUR`]) and blackouts ([`BLACKOUT_COLOUR`], translucent) are bands behind the
//! rows. Projected steps are their step's colour at 35 % with a dashed outline. A failed or ungated node has a
//! [`FAILED_COLOUR`] marker and its outcome after its steps. Now is a dashed black line, the estimated end a solid
//! one with its time. A marker (a new release asked for mid-rollout) is a dash-dot black line with its label above
//! the chart. Every row, step, hold, band and marker has a tooltip (`<title>`) with its times.
//!
//! **Failure domains.** Rows with a [`Row::group`] (a node's failure domain under `spec.topology`) are drawn in
//! their order with the domain before the node's name, a grey rule between two domains, and summary rows never
//! spanning two domains.
//!
//! **Bounded.** Up to [`MAX_ROWS`] nodes, one row each. Beyond, consecutive nodes share a summary row,
//! `ceil(nodes / MAX_ROWS)` to a row, labelled `first … last (N nodes)`: each step spans from the group's earliest
//! start to its latest end of that step, and its tooltip counts the group's outcomes. Holds, windows and blackouts
//! less than two pixels apart are drawn as one band (its tooltip counts them). So the picture's size depends on
//! [`MAX_ROWS`] and the chart's width, not on the number of nodes or holds: 2,000 nodes draw about as much as 300.
//!
//! **For tests that read the rendered picture.** [`LAYOUT`] says where things are: every drawn row has a marker of
//! [`Layout::marker_colour`] at [`Layout::marker_x`], rows [`Layout::row_pitch`] apart with a gap of background
//! between them, so counting runs of that colour down that column counts the rows.

mod axis;
mod bands;
pub mod drawing;
mod group;
mod layout;
mod svg;
mod text;

use chrono::{DateTime, Utc};

use crate::api::Step;
pub use layout::{Layout, LAYOUT};
pub use svg::render;

/// Beyond this many nodes, rows are grouped.
pub const MAX_ROWS: usize = 300;

/// A rollout to draw.
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    /// The heading, e.g. `upgrade-ops/gated-workers — 4.16.5`.
    pub title: String,
    /// The left edge.
    pub start: DateTime<Utc>,
    /// The right edge (with the projection).
    pub end: DateTime<Utc>,
    /// Now, drawn as a vertical line.
    pub now: DateTime<Utc>,
    /// One per node, in the order they went or will go.
    pub rows: Vec<Row>,
    /// Maintenance windows, while open.
    pub windows: Vec<Band>,
    /// Blackout windows.
    pub blackouts: Vec<Band>,
    /// Times the next node was held, with what held it.
    pub holds: Vec<Hold>,
    /// The restore walk at the end, done or projected.
    pub restore: Option<Band>,
    /// The estimated end of the rollout.
    pub estimated_end: Option<DateTime<Utc>>,
    /// Moments to mark across the rows, such as a new release asked for mid-rollout.
    pub markers: Vec<Marker>,
    /// Under `spec.topology`: the failure domains in wave order, each with how far its wave is; the rows' groups
    /// are their `shown` names.
    pub domains: Vec<Domain>,
}

/// A failure domain of a rollout by domain, and how far its wave is.
#[derive(Clone, Debug, PartialEq)]
pub struct Domain {
    /// The domain: the value of the topology's key label (`""` for the nodes without it).
    pub domain: String,
    /// The node label that names a node's domain.
    pub key: String,
    /// The domain as shown, the [`Row::group`] of its nodes' rows.
    pub shown: String,
    /// Where its wave is.
    pub state: WaveState,
    /// How many of its nodes are done.
    pub done: u32,
    /// How many of the rollout's nodes it has.
    pub nodes: u32,
}

/// Where a failure domain's wave is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum WaveState {
    /// Every node of it has finished.
    Done,
    /// Under way (or, between domains, the one that starts next and has begun).
    InProgress,
    /// Still to go.
    Pending,
}

/// A moment marked across the rows: a dash-dot line with its label above the chart and its note as tooltip.
#[derive(Clone, Debug, PartialEq)]
pub struct Marker {
    /// When.
    pub at: DateTime<Utc>,
    /// A few words above the line, e.g. `target 4.18.0`.
    pub label: String,
    /// The whole story, for the tooltip.
    pub note: String,
    /// The release the target changed from.
    pub from: String,
    /// The release the target changed to.
    pub to: String,
    /// The nodes that went on to `to` inside their gated turn.
    pub in_flight: Vec<String>,
}

/// One node.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// The node.
    pub node: String,
    /// How it ended, or that it is under way or still to go.
    pub outcome: RowOutcome,
    /// Its steps.
    pub segments: Vec<Segment>,
    /// Under `spec.topology`: the failure domain it is in, as shown; consecutive rows of one domain are drawn as a
    /// group (a rule above the group, the domain before each node's name).
    pub group: Option<String>,
}

/// How a node's row ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, schemars::JsonSchema)]
pub enum RowOutcome {
    /// Upgraded and cleaned up.
    Done,
    /// Under way.
    InFlight,
    /// A Job failed or the node timed out.
    Failed,
    /// An admin skipped it.
    Skipped,
    /// The MCO took it before its gate Jobs ran.
    Ungated,
    /// Still to go: every step projected.
    Projected,
}

impl RowOutcome {
    fn word(self) -> &'static str {
        match self {
            RowOutcome::Done => "done",
            RowOutcome::InFlight => "under way",
            RowOutcome::Failed => "failed",
            RowOutcome::Skipped => "skipped",
            RowOutcome::Ungated => "ungated",
            RowOutcome::Projected => "to go",
        }
    }
}

/// One step of a node.
#[derive(Clone, Debug, PartialEq)]
pub struct Segment {
    /// The step.
    pub step: Step,
    /// When it started (or would).
    pub start: DateTime<Utc>,
    /// When it ended (or would).
    pub end: DateTime<Utc>,
    /// Whether it is a projection.
    pub projected: bool,
}

/// A stretch of time with a label.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    /// Its start.
    pub start: DateTime<Utc>,
    /// Its end.
    pub end: DateTime<Utc>,
    /// What it is.
    pub label: String,
}

/// A time the next node was held.
#[derive(Clone, Debug, PartialEq)]
pub struct Hold {
    /// Its start.
    pub start: DateTime<Utc>,
    /// Its end.
    pub end: DateTime<Utc>,
    /// The checks that held it.
    pub check: String,
    /// What they said.
    pub message: String,
}

/// The colour of a step (Okabe–Ito).
pub fn colour(step: Step) -> &'static str {
    match step {
        Step::Gate => "#0072B2",
        Step::WaitForMco => "#56B4E9",
        Step::Upgrade => "#E69F00",
        Step::Cleanup => "#009E73",
        Step::Soak => "#CC79A7",
        Step::Drain => "#F0E442",
        Step::Reboot => "#A86400",
        Step::Restore => "#999999",
    }
}

/// The colour of holds.
pub const HOLD_COLOUR: &str = "#D55E00";
/// The colour of maintenance windows (behind the rows).
pub const WINDOW_COLOUR: &str = "#E8F4E8";
/// The colour of blackouts (behind the rows, at 30 % opacity).
pub const BLACKOUT_COLOUR: &str = "#3A3A3A";
/// The colour of the marker after a failed or ungated node's steps, and of its outcome.
pub const FAILED_COLOUR: &str = "#B00000";
/// The colour of the now line (dashed) and the estimated end (solid): black, which no step has.
pub const LINE_COLOUR: &str = "#000000";

#[cfg(test)]
mod drawing_tests;
#[cfg(test)]
mod tests;
