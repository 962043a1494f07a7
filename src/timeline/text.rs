//! Text as the picture shows it: escaped, shortened, times and durations.

use std::collections::HashSet;

use chrono::{DateTime, Duration, Utc};

/// `text` for an SVG text or attribute: markup characters escaped, control characters as spaces.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c if c.is_control() => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A time as shown in tooltips.
pub fn shown(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// A duration as shown in tooltips: `45s`, `12m05s`, `3h20m`.
pub fn lasting(d: Duration) -> String {
    let s = d.num_seconds().max(0);
    match s {
        s if s < 120 => format!("{s}s"),
        s if s < 7200 => format!("{}m{:02}s", s / 60, s % 60),
        s => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// `text` cut to `max` characters, the last one an ellipsis.
pub fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    let mut short: String = text.chars().take(max - 1).collect();
    short.push('…');
    short
}

/// The distinct `names` in their order, joined with commas: at most `max` of them, then how many more.
pub fn distinct<'a>(names: impl IntoIterator<Item = &'a str>, max: usize) -> String {
    let mut seen = HashSet::new();
    let mut shown: Vec<&str> = Vec::new();
    for name in names {
        if seen.insert(name) && shown.len() < max {
            shown.push(name);
        }
    }
    let mut out = shown.join(", ");
    if seen.len() > shown.len() {
        out.push_str(&format!(" and {} more", seen.len() - shown.len()));
    }
    out
}
