//! The picture of a rollout laid out for a drawer that words it itself: the console plugin gets this as JSON from
//! numo (`GET /api/timeline/<namespace>/<name>`, [`crate::console_plugin::timeline`]) and only draws it. Everything
//! with a place has its pixels (the same layout and scale as [`super::render`]); everything a person reads is sent
//! as what it is (steps, outcomes, check names, times as RFC 3339) for the plugin to word in the console's language.
//! The colours come along, so that the plugin keeps no table of its own.

use chrono::{DateTime, Duration, Utc};
use schemars::JsonSchema;
use serde::Serialize;

use super::axis::ticks;
use super::bands::merged;
use super::group::drawn_rows;
pub use super::group::{OutcomeCount, TimelineGroup};
use super::layout::{Scale, LABEL_CHARS, LAYOUT};
use super::{colour, Band, Hold, RowOutcome, Timeline, WaveState};
use crate::api::Step;

/// How many of a merged hold's checks are named; the rest are counted.
const HOLD_CHECKS_NAMED: usize = 3;
/// About how wide a character of a hold's label is, in pixels (9 px sans-serif), to keep labels apart.
const HOLD_LABEL_CHAR_PX: f64 = 5.5;
/// Projected steps: their step's colour at this opacity, with a dashed outline.
const PROJECTED_OPACITY: f64 = 0.35;
/// Blackouts: their colour at this opacity.
const BLACKOUT_OPACITY: f64 = 0.3;

/// A rollout's timeline, laid out.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineDrawing {
    /// The run config, `namespace/name`.
    pub run_config: String,
    /// The rollout drawn (its target), if there is one.
    pub rollout: Option<String>,
    /// The picture's width in pixels.
    pub width: u32,
    /// The picture's height in pixels.
    pub height: u32,
    /// The x of the chart's left edge (the rows' names to its left).
    pub chart_left: u32,
    /// The x of the chart's right edge.
    pub chart_right: u32,
    /// The y of the first row.
    pub top: u32,
    /// A row's height.
    pub row_height: u32,
    /// The y below the last row: the time axis's line, and the now and estimated-end labels below it.
    pub chart_bottom: u32,
    /// How many characters of a row's name fit left of the chart.
    pub label_chars: u32,
    /// The time at the chart's left edge.
    pub start: DateTime<Utc>,
    /// The time at the chart's right edge.
    pub end: DateTime<Utc>,
    /// Now (a finished rollout: its end).
    pub now: DateTime<Utc>,
    /// The x of now.
    pub now_x: f64,
    /// When the rollout should end.
    pub estimated_end: Option<DateTime<Utc>>,
    /// The x of the estimated end.
    pub estimated_end_x: Option<f64>,
    /// The rows of nodes (or of groups of nodes beyond 300), top to bottom.
    pub rows: Vec<TimelineRow>,
    /// Under `spec.topology`: a header above each failure domain's rows, in wave order.
    pub domains: Vec<TimelineDomain>,
    /// The restore walk's row, below the others.
    pub restore: Option<TimelineRestore>,
    /// Times the next node was held, those too close to draw apart merged.
    pub holds: Vec<TimelineHold>,
    /// Maintenance windows, behind the rows.
    pub windows: Vec<TimelineBackground>,
    /// Blackout windows, behind the rows.
    pub blackouts: Vec<TimelineBackground>,
    /// New releases asked for mid-rollout: a line across the rows.
    pub markers: Vec<TimelineMarker>,
    /// The time axis (UTC).
    pub ticks: Vec<TimelineTick>,
    /// Whether some row shows an upgrade in its parts (drain, reboot), so that the legend keys them.
    pub upgrade_parts: bool,
    /// The colours of everything drawn.
    pub colours: TimelineColours,
    /// Where the projection of the nodes still to go comes from.
    pub projection: ProjectionSource,
    /// What numo could not read as the user, and so left out.
    pub unread: Vec<Unread>,
}

/// Where the projection of the nodes still to go comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub enum ProjectionSource {
    /// numo's planner, as of its last reconcile of the run config.
    Planner,
    /// None is drawn: numo holds none (it restarted since, or no rollout is under way); the estimated end still is.
    None,
}

/// What numo could not read as the user, and so left out of the picture.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub enum Unread {
    /// The rollout record ConfigMap: the finished nodes and the holds that ended are missing.
    RolloutRecord,
    /// The nodes: the rows are not grouped by failure domain.
    Nodes,
}

/// A row: one node, or a group of consecutive nodes.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineRow {
    /// A key unique among the rows.
    pub key: String,
    /// Its top.
    pub y: u32,
    /// The node, for a node's row.
    pub node: Option<String>,
    /// The nodes, for a group's row.
    pub group: Option<TimelineGroup>,
    /// Under `spec.topology`: the failure domain of its nodes (`""` for the nodes without the label).
    pub domain: Option<String>,
    /// How it ended; for a group, the outcome that most needs attention.
    pub outcome: RowOutcome,
    /// For a group, how many of its nodes ended each way, most pressing first.
    pub outcomes: Vec<OutcomeCount>,
    /// Its steps.
    pub segments: Vec<TimelineSegment>,
    /// The x where its steps end: a failed or skipped row's outcome is drawn after it.
    pub after: f64,
}

/// One step of a row.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineSegment {
    /// The step.
    pub step: Step,
    /// When it started (or would).
    pub start: DateTime<Utc>,
    /// When it ended (or would).
    pub end: DateTime<Utc>,
    /// Whether it is a projection.
    pub projected: bool,
    /// Its left edge.
    pub x: f64,
    /// Its width, at least a pixel.
    pub width: f64,
}

/// The header above a failure domain's rows.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineDomain {
    /// The domain (`""` for the nodes without the label).
    pub domain: String,
    /// The node label that names a node's domain.
    pub key: String,
    /// Where its wave is.
    pub state: WaveState,
    /// How many of its nodes are done.
    pub done: u32,
    /// How many of the rollout's nodes it has.
    pub nodes: u32,
    /// The header's top.
    pub y: u32,
}

/// The restore walk's row.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineRestore {
    /// Its top.
    pub y: u32,
    /// When it started (or would).
    pub start: DateTime<Utc>,
    /// When it ended (or should).
    pub end: DateTime<Utc>,
    /// Whether it has not ended yet.
    pub projected: bool,
    /// What happened (before now) and what is projected (after now).
    pub segments: Vec<TimelineSegment>,
}

/// One hold drawn, or several too close to draw apart.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineHold {
    /// The earliest start.
    pub start: DateTime<Utc>,
    /// The latest end.
    pub end: DateTime<Utc>,
    /// Its left edge.
    pub x: f64,
    /// Its width.
    pub width: f64,
    /// How many holds it is.
    pub count: u32,
    /// The checks that held, in order, at most three.
    pub checks: Vec<String>,
    /// How many more checks held.
    pub more_checks: u32,
    /// Whether its label (the checks) is drawn: only where the one before it left room.
    pub labelled: bool,
    /// The longest of its holds (the one hold, if it is one).
    pub longest: HeldBy,
}

/// One hold: what held the next node, and when.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeldBy {
    /// The checks that held it.
    pub checks: Vec<String>,
    /// What they said (numo's status message).
    pub message: String,
    /// Its start.
    pub start: DateTime<Utc>,
    /// Its end.
    pub end: DateTime<Utc>,
}

/// A maintenance window or blackout drawn, or several too close to draw apart.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineBackground {
    /// The earliest start.
    pub start: DateTime<Utc>,
    /// The latest end.
    pub end: DateTime<Utc>,
    /// Its left edge.
    pub x: f64,
    /// Its width.
    pub width: f64,
    /// How many windows it is.
    pub count: u32,
    /// The blackouts' reasons, distinct, as the spec gives them (none for maintenance windows).
    pub reasons: Vec<String>,
}

/// A new release asked for mid-rollout.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineMarker {
    /// When.
    pub at: DateTime<Utc>,
    /// Its x.
    pub x: f64,
    /// The release the target changed from.
    pub from: String,
    /// The release the target changed to.
    pub to: String,
    /// The nodes that went on to `to` inside their gated turn.
    pub in_flight: Vec<String>,
}

/// A tick of the time axis.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
pub struct TimelineTick {
    /// When.
    pub at: DateTime<Utc>,
    /// Its x.
    pub x: f64,
    /// The time as the axis shows it, in UTC (`HH:MM`, `HH:MM:SS`, `MM-DD` or `MM-DD HH:MM`).
    pub label: String,
}

/// The colours of the picture: the Okabe–Ito palette of `numo timeline`, readable with every common colour-vision
/// deficiency.
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineColours {
    /// Each step's colour.
    pub steps: Vec<StepColour>,
    /// Holds.
    pub hold: String,
    /// Maintenance windows.
    pub window: String,
    /// Blackouts, at `blackoutOpacity`.
    pub blackout: String,
    /// The opacity of blackouts.
    pub blackout_opacity: f64,
    /// The marker and outcome of a failed or ungated row.
    pub failed: String,
    /// The now line, the estimated end and the markers.
    pub line: String,
    /// The opacity of projected steps.
    pub projected_opacity: f64,
}

/// One step's colour.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct StepColour {
    /// The step.
    pub step: Step,
    /// Its colour, `#RRGGBB`.
    pub colour: String,
}

impl TimelineColours {
    /// The colours every picture uses.
    pub fn all() -> Self {
        Self {
            steps: Step::NODE
                .into_iter()
                .chain(Step::UPGRADE_PARTS)
                .chain([Step::Restore])
                .map(|step| StepColour { step, colour: colour(step).to_string() })
                .collect(),
            hold: super::HOLD_COLOUR.into(),
            window: super::WINDOW_COLOUR.into(),
            blackout: super::BLACKOUT_COLOUR.into(),
            blackout_opacity: BLACKOUT_OPACITY,
            failed: super::FAILED_COLOUR.into(),
            line: super::LINE_COLOUR.into(),
            projected_opacity: PROJECTED_OPACITY,
        }
    }
}

/// `timeline` laid out, for `run_config` (`namespace/name`) and its rollout; the projection and what could not be
/// read are said by the caller.
pub fn draw(timeline: &Timeline, run_config: &str, rollout: Option<&str>) -> TimelineDrawing {
    let rows = drawn_rows(&timeline.rows);
    let end = timeline.end.max(timeline.start + Duration::minutes(1));
    let scale = Scale { start: timeline.start, seconds: (end - timeline.start).num_milliseconds() as f64 / 1000.0 };
    let segment = |step: Step, start: DateTime<Utc>, end: DateTime<Utc>, projected: bool| TimelineSegment {
        step,
        start,
        end,
        projected,
        x: scale.x(start),
        width: scale.width(start, end),
    };
    let after = |segments: &[TimelineSegment]| {
        segments.iter().map(|s| s.x + s.width).fold(f64::from(LAYOUT.chart_left), f64::max)
    };
    let y = |slot: usize| LAYOUT.top + slot as u32 * LAYOUT.row_pitch;

    // Under a topology, each domain's header, then its rows, in wave order; rows of no known domain after them.
    let mut slot = 0;
    let mut laid_rows = Vec::new();
    let mut headers = Vec::new();
    let key = |row: &super::group::DrawnRow, i: usize| match &row.group {
        Some(_) => format!("group-{i}"),
        None => format!("node-{}", row.name),
    };
    let lay = |i: usize, row: &super::group::DrawnRow, slot: usize, laid_rows: &mut Vec<TimelineRow>| {
        let segments: Vec<TimelineSegment> =
            row.segments.iter().map(|s| segment(s.step, s.start, s.end, s.projected)).collect();
        laid_rows.push(TimelineRow {
            key: key(row, i),
            y: y(slot),
            node: row.group.is_none().then(|| row.name.clone()),
            group: row.group.clone(),
            domain: row
                .domain
                .as_ref()
                .and_then(|shown| timeline.domains.iter().find(|d| &d.shown == shown).map(|d| d.domain.clone())),
            outcome: row.outcome,
            outcomes: row.outcomes.clone(),
            after: after(&segments),
            segments,
        });
    };
    let mut placed = vec![false; rows.len()];
    for domain in &timeline.domains {
        headers.push(TimelineDomain {
            domain: domain.domain.clone(),
            key: domain.key.clone(),
            state: domain.state,
            done: domain.done,
            nodes: domain.nodes,
            y: y(slot),
        });
        slot += 1;
        for (i, row) in rows.iter().enumerate() {
            if !placed[i] && row.domain.as_deref() == Some(domain.shown.as_str()) {
                placed[i] = true;
                lay(i, row, slot, &mut laid_rows);
                slot += 1;
            }
        }
    }
    for (i, row) in rows.iter().enumerate().filter(|(i, _)| !placed[*i]) {
        lay(i, row, slot, &mut laid_rows);
        slot += 1;
    }

    let restore = timeline.restore.as_ref().map(|band| {
        let now = timeline.now;
        let mut segments = Vec::new();
        if band.start < now {
            segments.push(segment(Step::Restore, band.start, band.end.min(now), false));
        }
        if band.end > now {
            segments.push(segment(Step::Restore, band.start.max(now), band.end, true));
        }
        let laid =
            TimelineRestore { y: y(slot), start: band.start, end: band.end, projected: band.end > now, segments };
        slot += 1;
        laid
    });
    let chart_bottom = y(slot.max(1));

    let upgrade_parts = rows.iter().flat_map(|r| &r.segments).any(|s| Step::UPGRADE_PARTS.contains(&s.step));
    TimelineDrawing {
        run_config: run_config.to_string(),
        rollout: rollout.map(str::to_string),
        width: LAYOUT.width,
        height: chart_bottom + 40,
        chart_left: LAYOUT.chart_left,
        chart_right: LAYOUT.chart_right,
        top: LAYOUT.top,
        row_height: LAYOUT.row_height,
        chart_bottom,
        label_chars: LABEL_CHARS as u32,
        start: timeline.start,
        end,
        now: timeline.now,
        now_x: scale.x(timeline.now),
        estimated_end: timeline.estimated_end,
        estimated_end_x: timeline.estimated_end.map(|t| scale.x(t)),
        rows: laid_rows,
        domains: headers,
        restore,
        holds: holds(&timeline.holds, &scale, end),
        windows: backgrounds(&timeline.windows, &scale, end, "maintenance window"),
        blackouts: backgrounds(&timeline.blackouts, &scale, end, "blackout"),
        markers: timeline
            .markers
            .iter()
            .filter(|m| m.at <= end)
            .map(|m| TimelineMarker {
                at: m.at,
                x: scale.x(m.at),
                from: m.from.clone(),
                to: m.to.clone(),
                in_flight: m.in_flight.clone(),
            })
            .collect(),
        ticks: ticks(timeline.start, end)
            .into_iter()
            .map(|(at, label)| TimelineTick { at, x: scale.x(at), label })
            .collect(),
        upgrade_parts,
        colours: TimelineColours::all(),
        projection: ProjectionSource::None,
        unread: Vec::new(),
    }
}

/// The checks of a hold (`a,b`).
fn checks_of(hold: &Hold) -> Vec<String> {
    hold.check.split(',').map(str::trim).filter(|c| !c.is_empty()).map(str::to_string).collect()
}

/// The holds, merged where too close to draw apart; each labelled where the one before it left room.
fn holds(holds: &[Hold], scale: &Scale, end: DateTime<Utc>) -> Vec<TimelineHold> {
    let times = |h: &Hold| (h.start, h.end);
    let mut free_from = 0.0;
    merged(holds, scale.start, end, times)
        .into_iter()
        .map(|band| {
            let (x, width) = (scale.x(band.start), scale.width(band.start, band.end));
            let mut all: Vec<String> = Vec::new();
            for check in band.items.iter().flat_map(|h| checks_of(h)) {
                if !all.contains(&check) {
                    all.push(check);
                }
            }
            let checks: Vec<String> = all.iter().take(HOLD_CHECKS_NAMED).cloned().collect();
            let label_chars: usize = checks.iter().map(|c| c.chars().count() + 2).sum();
            let labelled = x >= free_from;
            if labelled {
                free_from = x + 2.0 + HOLD_LABEL_CHAR_PX * label_chars as f64 + 4.0;
            }
            let longest = super::bands::longest(&band.items, times).unwrap_or(band.items[0]);
            TimelineHold {
                start: band.start,
                end: band.end,
                x,
                width,
                count: band.items.len() as u32,
                more_checks: (all.len() - checks.len()) as u32,
                checks,
                labelled,
                longest: HeldBy {
                    checks: checks_of(longest),
                    message: longest.message.clone(),
                    start: longest.start,
                    end: longest.end,
                },
            }
        })
        .collect()
}

/// Windows or blackouts, merged where too close to draw apart; `kind` is the label of one without a reason.
fn backgrounds(bands: &[Band], scale: &Scale, end: DateTime<Utc>, kind: &str) -> Vec<TimelineBackground> {
    merged(bands, scale.start, end, |b| (b.start, b.end))
        .into_iter()
        .map(|band| {
            let mut reasons: Vec<String> = Vec::new();
            for label in band.items.iter().map(|b| &b.label).filter(|l| l.as_str() != kind) {
                if !reasons.contains(label) {
                    reasons.push(label.clone());
                }
            }
            TimelineBackground {
                start: band.start,
                end: band.end,
                x: scale.x(band.start),
                width: scale.width(band.start, band.end),
                count: band.items.len() as u32,
                reasons,
            }
        })
        .collect()
}
