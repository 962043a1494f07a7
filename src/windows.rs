//! Maintenance and blackout windows: when a node may start. A maintenance window opens at each start of its cron
//! `schedule`, read in its IANA time zone, and stays open for `duration` of elapsed time; a blackout is a fixed
//! stretch of time. A node may start at an instant when some maintenance window is open (or none is configured)
//! and no blackout holds.
//!
//! Cron parsing and time-zone rules come from `croner` and `chrono-tz`. Daylight-saving transitions follow croner
//! (the Open Cron Pattern Specification, as Vixie cron): a start in a gap (02:30 on the day clocks spring forward)
//! opens the window at the first minute after the gap, that same day; a start in a repeated hour (clocks fall back)
//! opens it once, the first time. `duration` is elapsed time, so a 4 h window over a transition ends 4 real hours
//! later, whatever the wall clock shows.

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use chrono_tz::Tz;
use croner::parser::{CronParser, Seconds, Year};
use croner::Cron;

use crate::api::{parse_duration, BlackoutWindow, MaintenanceWindow};

/// How many window starts one question may look at before it gives up (a window that starts every minute and never
/// closes would otherwise be followed forever).
const MAX_STEPS: usize = 512;

/// The parsed windows of one run config.
#[derive(Clone, Debug, Default)]
pub struct Schedule {
    windows: Vec<Window>,
    blackouts: Vec<Blackout>,
}

#[derive(Clone, Debug)]
struct Window {
    cron: Cron,
    zone: Tz,
    duration: chrono::Duration,
}

#[derive(Clone, Debug)]
struct Blackout {
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    reason: Option<String>,
}

/// Whether a node may start now, and when that changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Why no node may start now, every reason that holds (a blackout and a closed window can hold at once); empty
    /// when one may.
    pub closed: Vec<Closed>,
    /// The window in which a node may start next (or now): its start and, if anything closes it, its end.
    pub next: Option<(DateTime<Tz>, Option<DateTime<Tz>>)>,
    /// The next instant at which the verdict changes (a window opens or closes, a blackout starts or ends): also an
    /// edge that changes only why no node may start, such as a window opening inside a blackout.
    pub changes_at: Option<DateTime<Utc>>,
}

/// Why no node may start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Closed {
    /// No maintenance window is open.
    OutsideWindow,
    /// A blackout holds until `end`.
    Blackout {
        /// When it ends.
        end: DateTime<Utc>,
        /// Its reason.
        reason: Option<String>,
    },
}

impl Schedule {
    /// Parses the windows of a spec; every problem is a sentence naming the window.
    pub fn parse(windows: &[MaintenanceWindow], blackouts: &[BlackoutWindow]) -> Result<Self, Vec<String>> {
        let parser = CronParser::builder().seconds(Seconds::Disallowed).year(Year::Disallowed).build();
        let mut problems = Vec::new();
        let mut parsed = Vec::new();
        for (i, window) in windows.iter().enumerate() {
            let cron = parser.parse(&window.schedule).map_err(|e| {
                format!("maintenanceWindows[{i}].schedule {:?} is not a 5-field cron expression: {e}", window.schedule)
            });
            let zone_name = window.time_zone.as_deref().unwrap_or("UTC");
            let zone = zone_name.parse::<Tz>().map_err(|_| {
                format!("maintenanceWindows[{i}].timeZone {zone_name:?} is not an IANA time zone (e.g. Europe/Warsaw)")
            });
            let duration = parse_duration(&window.duration)
                .and_then(|d| chrono::Duration::from_std(d).ok())
                .ok_or_else(|| format!("maintenanceWindows[{i}].duration {:?} is not a duration", window.duration));
            let cron = cron.and_then(|cron| match fires(&cron, &window.schedule) {
                true => Ok(cron),
                false => Err(format!(
                    "maintenanceWindows[{i}].schedule {:?} never opens (no such date in the next {HORIZON_YEARS} years)",
                    window.schedule
                )),
            });
            match (cron, zone, duration) {
                (Ok(cron), Ok(zone), Ok(duration)) => parsed.push(Window { cron, zone, duration }),
                (cron, zone, duration) => {
                    problems.extend([cron.err(), zone.err(), duration.err()].into_iter().flatten())
                }
            }
        }
        let mut parsed_blackouts = Vec::new();
        for (i, blackout) in blackouts.iter().enumerate() {
            let (start, end) = (utc(&blackout.start.0), utc(&blackout.end.0));
            if end <= start {
                problems.push(format!("blackoutWindows[{i}] ends before it starts"));
                continue;
            }
            parsed_blackouts.push(Blackout { start, end, reason: blackout.reason.clone() });
        }
        parsed_blackouts.sort_by_key(|b| b.start);
        if problems.is_empty() {
            Ok(Self { windows: parsed, blackouts: parsed_blackouts })
        } else {
            Err(problems)
        }
    }

    /// Whether any window is configured.
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty() && self.blackouts.is_empty()
    }

    /// Whether a node may start at `now`, the next window, and when that changes.
    pub fn at(&self, now: DateTime<Utc>) -> Verdict {
        if self.is_empty() {
            return Verdict { closed: Vec::new(), next: None, changes_at: None };
        }
        let blackout = self.blackout_at(now);
        let open_window = self.open_window_at(now);
        let mut closed = Vec::new();
        if let Some(b) = blackout {
            closed.push(Closed::Blackout { end: self.blackout_end(b.end), reason: b.reason.clone() });
        }
        if !self.windows.is_empty() && open_window.is_none() {
            closed.push(Closed::OutsideWindow);
        }
        let next = match (closed.is_empty(), open_window) {
            // Open: the window that is open now, from its own start (a stable value, not `now`).
            (true, Some((start, _, zone))) => Some((start, zone)),
            // Open with no maintenance windows: no window to show.
            (true, None) => None,
            (false, _) => self.next_allowed(now),
        }
        .map(|(start, zone)| {
            let end = self.allowed_until(start.max(now)).map(|end| end.with_timezone(&zone));
            (start.with_timezone(&zone), end)
        });
        Verdict { closed, next, changes_at: self.next_edge(now) }
    }

    /// The stretches between `from` and `to` in which a maintenance window is open (blackouts aside); none when the
    /// schedule has no windows.
    pub fn open_periods(&self, from: DateTime<Utc>, to: DateTime<Utc>) -> Vec<(DateTime<Utc>, DateTime<Utc>)> {
        let mut periods: Vec<(DateTime<Utc>, DateTime<Utc>)> = Vec::new();
        if self.windows.is_empty() {
            return periods;
        }
        let mut t = from;
        for _ in 0..MAX_STEPS {
            if t >= to {
                break;
            }
            let next = self.next_edge(t).unwrap_or(to).min(to).max(t + chrono::Duration::seconds(1));
            if self.open_window_at(t).is_some() {
                match periods.last_mut() {
                    Some(last) if last.1 >= t => last.1 = next,
                    _ => periods.push((t, next)),
                }
            }
            t = next;
        }
        periods
    }

    /// The blackouts that overlap `from`–`to`, clipped to it, with their reasons.
    pub fn blackout_periods(
        &self,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Vec<(DateTime<Utc>, DateTime<Utc>, Option<String>)> {
        self.blackouts
            .iter()
            .filter(|b| b.start < to && b.end > from)
            .map(|b| (b.start.max(from), b.end.min(to), b.reason.clone()))
            .collect()
    }

    /// The first instant after `now` at which a window opens or closes or a blackout starts or ends.
    fn next_edge(&self, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let blackout = match self.blackout_at(now) {
            Some(b) => Some(self.blackout_end(b.end)),
            None => self.blackouts.iter().map(|b| b.start).filter(|s| *s > now).min(),
        };
        let window = match self.open_window_at(now) {
            Some((_, mut end, _)) => {
                for _ in 0..MAX_STEPS {
                    match self.open_window_at(end) {
                        Some((_, later, _)) if later > end => end = later,
                        _ => break,
                    }
                }
                Some(end)
            }
            None => self.next_start_after(now).map(|(start, _)| start),
        };
        [blackout, window].into_iter().flatten().min()
    }

    fn blackout_at(&self, t: DateTime<Utc>) -> Option<&Blackout> {
        self.blackouts.iter().find(|b| b.start <= t && t < b.end)
    }

    /// The end of the blackout stretch that ends at `end` (blackouts that overlap or touch run on).
    fn blackout_end(&self, mut end: DateTime<Utc>) -> DateTime<Utc> {
        while let Some(b) = self.blackout_at(end) {
            end = b.end;
        }
        end
    }

    /// The latest start of a window that is open at `t`, with its end and time zone.
    fn open_window_at(&self, t: DateTime<Utc>) -> Option<(DateTime<Utc>, DateTime<Utc>, Tz)> {
        self.windows
            .iter()
            .filter_map(|w| {
                let local = t.with_timezone(&w.zone);
                let start = w.cron.find_previous_occurrence(&local, true).ok()?.with_timezone(&Utc);
                let end = start + w.duration;
                (end > t).then_some((start, end, w.zone))
            })
            .max_by_key(|(_, end, _)| *end)
    }

    /// The first window start strictly after `t`, with its time zone.
    fn next_start_after(&self, t: DateTime<Utc>) -> Option<(DateTime<Utc>, Tz)> {
        self.windows
            .iter()
            .filter_map(|w| {
                let local = t.with_timezone(&w.zone);
                Some((w.cron.find_next_occurrence(&local, false).ok()?.with_timezone(&Utc), w.zone))
            })
            .min_by_key(|(start, _)| *start)
    }

    /// The first instant at or after `t` at which a node may start, with the time zone to show it in.
    fn next_allowed(&self, mut t: DateTime<Utc>) -> Option<(DateTime<Utc>, Tz)> {
        for _ in 0..MAX_STEPS {
            let (candidate, zone) = if self.windows.is_empty() {
                (t, Tz::UTC)
            } else if let Some((start, _, zone)) = self.open_window_at(t) {
                (t.max(start), zone)
            } else {
                self.next_start_after(t)?
            };
            match self.blackout_at(candidate) {
                Some(b) => t = self.blackout_end(b.end),
                None => return Some((candidate, zone)),
            }
        }
        None
    }

    /// When the stretch in which a node may start, which holds at `t`, ends: a window closing with no other open,
    /// or a blackout starting. None when nothing ends it.
    fn allowed_until(&self, t: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let next_blackout = self.blackouts.iter().map(|b| b.start).filter(|s| *s > t).min();
        if self.windows.is_empty() {
            return next_blackout;
        }
        let mut end = self.open_window_at(t)?.1;
        for _ in 0..MAX_STEPS {
            match self.open_window_at(end) {
                Some((_, later, _)) if later > end => end = later,
                _ => break,
            }
        }
        Some(next_blackout.map_or(end, |b| b.min(end)))
    }
}

/// How far ahead a schedule must open at least once.
const HORIZON_YEARS: i32 = 8;

/// Whether `cron` opens within [`HORIZON_YEARS`] of a fixed instant. A schedule that never fires (`0 0 30 2 *`)
/// makes croner search up to the year 5000, a third of a second each time; the answer is remembered per schedule,
/// so a run config with such a schedule costs that once, not on every reconcile.
fn fires(cron: &Cron, text: &str) -> bool {
    static SEEN: std::sync::Mutex<Option<std::collections::HashMap<String, bool>>> = std::sync::Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let seen = seen.get_or_insert_with(Default::default);
    if let Some(fires) = seen.get(text) {
        return *fires;
    }
    let from = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().unwrap_or_default();
    #[cfg(test)]
    SEARCHED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(text.to_string());
    let next = cron.find_next_occurrence(&from, true);
    let fires = next.is_ok_and(|next| next.years_since(from).is_some_and(|y| y < HORIZON_YEARS as u32));
    if seen.len() >= 1024 {
        seen.clear();
    }
    seen.insert(text.to_string(), fires);
    fires
}

/// The schedules [`fires`] searched, in order (tests count them).
#[cfg(test)]
pub static SEARCHED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// An instant as RFC 3339 in its own time zone, to the second.
pub fn shown<Tz: TimeZone>(t: &DateTime<Tz>) -> String
where
    Tz::Offset: std::fmt::Display,
{
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// A jiff timestamp (the Kubernetes API types') as chrono's.
pub fn utc(t: &k8s_openapi::jiff::Timestamp) -> DateTime<Utc> {
    Utc.timestamp_opt(t.as_second(), t.subsec_nanosecond().max(0) as u32).single().unwrap_or_default()
}

/// A chrono instant as the Kubernetes API types' timestamp.
pub fn to_api(t: &DateTime<impl TimeZone>) -> k8s_openapi::jiff::Timestamp {
    k8s_openapi::jiff::Timestamp::new(t.timestamp(), t.timestamp_subsec_nanos() as i32).unwrap_or_default()
}

#[cfg(test)]
#[path = "windows_tests.rs"]
mod tests;
