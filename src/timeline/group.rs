//! Beyond [`MAX_ROWS`] nodes, consecutive nodes are drawn as one summary row each.

use super::{Row, RowOutcome, Segment, MAX_ROWS};
use crate::api::Step;

/// The rows as drawn: every node, or beyond [`MAX_ROWS`] one summary row per group of consecutive nodes.
pub(super) fn drawn_rows(rows: &[Row]) -> Vec<Row> {
    if rows.len() <= MAX_ROWS {
        return rows.to_vec();
    }
    let size = rows.len().div_ceil(MAX_ROWS);
    rows.chunks(size).map(summary).collect()
}

fn summary(group: &[Row]) -> Row {
    let (first, last) = (&group[0].node, &group[group.len() - 1].node);
    let node = format!("{first} … {last} ({} nodes)", group.len());
    let worst =
        [RowOutcome::Failed, RowOutcome::Ungated, RowOutcome::InFlight, RowOutcome::Skipped, RowOutcome::Projected]
            .into_iter()
            .find(|o| group.iter().any(|r| r.outcome == *o))
            .unwrap_or(RowOutcome::Done);
    let mut segments: Vec<Segment> = Vec::new();
    for step in Step::NODE {
        let of_step: Vec<&Segment> = group.iter().flat_map(|r| &r.segments).filter(|s| s.step == step).collect();
        let (Some(start), Some(end)) = (of_step.iter().map(|s| s.start).min(), of_step.iter().map(|s| s.end).max())
        else {
            continue;
        };
        segments.push(Segment { step, start, end, projected: of_step.iter().all(|s| s.projected) });
    }
    Row { node, outcome: worst, segments }
}
