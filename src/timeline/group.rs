//! The rows as drawn. Up to [`MAX_ROWS`] nodes, one row per node; beyond, consecutive nodes are drawn as one summary
//! row each, `ceil(nodes / MAX_ROWS)` nodes to a row, so that the picture's size depends on [`MAX_ROWS`], not on the
//! number of nodes.

use schemars::JsonSchema;
use serde::Serialize;

use super::layout::LABEL_CHARS;
use super::text::shorten;
use super::{Row, RowOutcome, Segment, MAX_ROWS};
use crate::api::Step;

/// The nodes of a group's row.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TimelineGroup {
    /// The first node.
    pub first: String,
    /// The last node.
    pub last: String,
    /// How many nodes.
    pub nodes: u32,
}

/// How many nodes of a group ended one way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct OutcomeCount {
    /// The outcome.
    pub outcome: RowOutcome,
    /// How many nodes.
    pub count: u32,
}

/// A row as drawn: one node, or a summary of consecutive nodes.
#[derive(Clone, Debug, PartialEq)]
pub(super) struct DrawnRow {
    /// The name left of the row, short enough to fit.
    pub label: String,
    /// Who the row is, in full: the node, or the group's first and last node and how many it has.
    pub name: String,
    /// The row's tooltip: its name and how it ended (a group's outcomes counted).
    pub title: String,
    /// How it ended; for a group, the outcome that most needs attention.
    pub outcome: RowOutcome,
    /// The steps; for a group, each step from its earliest start to its latest end in the group.
    pub segments: Vec<Segment>,
    /// The failure domain of its nodes, if the rows are grouped by domain.
    pub domain: Option<String>,
    /// For a group's row: its first and last node and how many.
    pub group: Option<TimelineGroup>,
    /// For a group's row: how many of its nodes ended each way, in the order of [`ATTENTION`].
    pub outcomes: Vec<OutcomeCount>,
}

/// The outcomes in the order a group's row takes them: the first one any node of the group has.
const ATTENTION: [RowOutcome; 6] = [
    RowOutcome::Failed,
    RowOutcome::Ungated,
    RowOutcome::InFlight,
    RowOutcome::Skipped,
    RowOutcome::Projected,
    RowOutcome::Done,
];

/// The rows as drawn: every node, or beyond [`MAX_ROWS`] one summary row per group of consecutive nodes.
pub(super) fn drawn_rows(rows: &[Row]) -> Vec<DrawnRow> {
    if rows.len() <= MAX_ROWS {
        return rows.iter().map(single).collect();
    }
    let size = rows.len().div_ceil(MAX_ROWS);
    // A summary row never spans two failure domains.
    let mut drawn = Vec::new();
    let mut from = 0;
    for to in 1..=rows.len() {
        if to == rows.len() || rows[to].group != rows[from].group {
            drawn.extend(rows[from..to].chunks(size).map(summary));
            from = to;
        }
    }
    drawn
}

/// A row's label, `domain · name` shortened to fit: the domain gives way first, so the node's name stays whole.
fn label_in_domain(domain: Option<&str>, name: &str) -> String {
    let Some(domain) = domain else { return shorten(name, LABEL_CHARS) };
    let room = LABEL_CHARS.saturating_sub(name.chars().count() + 3).max(4);
    shorten(&format!("{} · {name}", shorten(domain, room)), LABEL_CHARS)
}

/// `domain · name`, or the name alone outside a domain.
fn in_domain(domain: Option<&str>, name: &str) -> String {
    domain.map_or_else(|| name.to_string(), |d| format!("{d} · {name}"))
}

fn single(row: &Row) -> DrawnRow {
    DrawnRow {
        label: label_in_domain(row.group.as_deref(), &row.node),
        name: row.node.clone(),
        title: format!("{}: {}", in_domain(row.group.as_deref(), &row.node), row.outcome.word()),
        outcome: row.outcome,
        segments: row.segments.clone(),
        domain: row.group.clone(),
        group: None,
        outcomes: Vec::new(),
    }
}

fn summary(group: &[Row]) -> DrawnRow {
    let (first, last) = (&group[0].node, &group[group.len() - 1].node);
    let name = format!("{first} … {last} ({} nodes)", group.len());
    let outcomes: Vec<OutcomeCount> = ATTENTION
        .into_iter()
        .map(|outcome| OutcomeCount { outcome, count: group.iter().filter(|r| r.outcome == outcome).count() as u32 })
        .filter(|c| c.count > 0)
        .collect();
    let counted: Vec<String> = outcomes.iter().map(|c| format!("{} {}", c.count, c.outcome.word())).collect();
    let outcome = ATTENTION.into_iter().find(|o| group.iter().any(|r| r.outcome == *o)).unwrap_or(RowOutcome::Done);
    let mut segments: Vec<Segment> = Vec::new();
    for step in Step::NODE.into_iter().chain([Step::Restore]) {
        // A group's upgrade spans its nodes' upgrades, drawn whole or in their parts (drain, reboot).
        let counts = |s: &Segment| s.step == step || (step == Step::Upgrade && Step::UPGRADE_PARTS.contains(&s.step));
        let of_step: Vec<&Segment> = group.iter().flat_map(|r| &r.segments).filter(|s| counts(s)).collect();
        let (Some(start), Some(end)) = (of_step.iter().map(|s| s.start).min(), of_step.iter().map(|s| s.end).max())
        else {
            continue;
        };
        segments.push(Segment { step, start, end, projected: of_step.iter().all(|s| s.projected) });
    }
    let domain = group[0].group.clone();
    DrawnRow {
        label: match &domain {
            Some(d) => shorten(&format!("{d} · {}", summary_label(first, last, group.len())), LABEL_CHARS),
            None => summary_label(first, last, group.len()),
        },
        title: format!("{}: {}", in_domain(domain.as_deref(), &name), counted.join(", ")),
        name,
        outcome,
        segments,
        domain,
        group: Some(TimelineGroup { first: first.clone(), last: last.clone(), nodes: group.len() as u32 }),
        outcomes,
    }
}

/// `first … last (N nodes)`, the names shortened (never the count) when it would not fit.
fn summary_label(first: &str, last: &str, count: usize) -> String {
    let tail = format!(" ({count} nodes)");
    let full = format!("{first} … {last}{tail}");
    if full.chars().count() <= LABEL_CHARS {
        return full;
    }
    let each = (LABEL_CHARS.saturating_sub(tail.chars().count() + 3) / 2).max(2);
    format!("{} … {}{tail}", shorten(first, each), shorten(last, each))
}
