//! Holds, maintenance windows and blackouts as drawn: those less than [`MIN_GAP_PX`] pixels apart are drawn as one
//! band, so that however many there were, the picture has at most one band per [`MIN_GAP_PX`] pixels of the chart.
//! Those wholly outside the chart are not drawn.

use chrono::{DateTime, Duration, Utc};

use super::layout::LAYOUT;

/// Bands closer than this many pixels are drawn as one.
pub(super) const MIN_GAP_PX: u32 = 2;

/// Consecutive bands of one kind drawn as one.
#[derive(Debug)]
pub(super) struct Merged<'a, T> {
    /// The earliest start.
    pub start: DateTime<Utc>,
    /// The latest end.
    pub end: DateTime<Utc>,
    /// What it is made of, by start.
    pub items: Vec<&'a T>,
}

/// `items` between `start` and `end` by start, those less than [`MIN_GAP_PX`] apart merged; `times` gives an item's
/// start and end.
pub(super) fn merged<T>(
    items: &[T],
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    times: impl Fn(&T) -> (DateTime<Utc>, DateTime<Utc>),
) -> Vec<Merged<'_, T>> {
    let gap = merge_gap(start, end);
    let mut shown: Vec<&T> = items
        .iter()
        .filter(|item| {
            let (s, e) = times(item);
            e >= start && s < end
        })
        .collect();
    shown.sort_by_key(|item| times(item).0);
    let mut out: Vec<Merged<'_, T>> = Vec::new();
    for item in shown {
        let (s, e) = times(item);
        match out.last_mut() {
            Some(last) if s < last.end + gap => {
                last.end = last.end.max(e);
                last.items.push(item);
            }
            _ => out.push(Merged { start: s, end: e.max(s), items: vec![item] }),
        }
    }
    out
}

/// The longest of `items`.
pub(super) fn longest<'a, T>(items: &[&'a T], times: impl Fn(&T) -> (DateTime<Utc>, DateTime<Utc>)) -> Option<&'a T> {
    items.iter().copied().max_by_key(|item| {
        let (s, e) = times(item);
        e - s
    })
}

/// The time below which bands merge: [`MIN_GAP_PX`] pixels of a chart from `start` to `end`.
pub(super) fn merge_gap(start: DateTime<Utc>, end: DateTime<Utc>) -> Duration {
    (end - start) * MIN_GAP_PX as i32 / (LAYOUT.chart_right - LAYOUT.chart_left) as i32
}
