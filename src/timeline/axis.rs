//! The time axis: the tick spacing a span gets, and the ticks with their labels (UTC).

use chrono::{DateTime, Duration, Utc};

/// At most this many ticks across the chart.
const MAX_TICKS: i64 = 12;

/// The tick spacing: the smallest of 10 s, 30 s, 1 min, 5 min, 15 min, 1 h, 6 h and whole days that gives at most
/// 12 ticks.
pub fn tick_spacing(span: Duration) -> Duration {
    [
        Duration::seconds(10),
        Duration::seconds(30),
        Duration::minutes(1),
        Duration::minutes(5),
        Duration::minutes(15),
        Duration::hours(1),
        Duration::hours(6),
    ]
    .into_iter()
    .find(|step| span.num_seconds() / step.num_seconds() <= MAX_TICKS)
    .unwrap_or_else(|| Duration::days((span.num_days() / MAX_TICKS + 1).max(1)))
}

/// The ticks after `start` and before `end`, each at a whole multiple of the spacing since the epoch (so hours fall
/// on the hour and days on midnight UTC), with its label: seconds when ticks are less than a minute apart, the date
/// when the span is longer than a day.
pub fn ticks(start: DateTime<Utc>, end: DateTime<Utc>) -> Vec<(DateTime<Utc>, String)> {
    let spacing = tick_spacing(end - start);
    let step = spacing.num_seconds();
    let format = if step < 60 {
        "%H:%M:%S"
    } else if step >= 86_400 {
        "%m-%d"
    } else if end - start > Duration::days(1) {
        "%m-%d %H:%M"
    } else {
        "%H:%M"
    };
    let Some(mut tick) = DateTime::from_timestamp((start.timestamp().div_euclid(step) + 1) * step, 0) else {
        return Vec::new();
    };
    let mut ticks = Vec::new();
    while tick < end {
        ticks.push((tick, tick.format(format).to_string()));
        tick += spacing;
    }
    ticks
}
