//! What numo keeps of a rollout beyond its status, for the timeline: each node's step times once it finished and
//! each hold once it ended, in a ConfigMap next to the run config (`numo-timeline-<run config>`, owned by it, so
//! it goes with it). One key per node (`node.<name>`) and per hold (`hold.s<slot>`, at most [`HOLD_SLOTS`]), so
//! that numo adds to it with a merge patch of the new keys only, never reading it; a new rollout starts a fresh
//! one. At 2,000 nodes it holds about 120 KB of nodes, and never more than about 350 KB of holds.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::{NodePhase, NodeProgress};
use crate::windows::utc;

/// The key that names the rollout the record belongs to.
pub const ROLLOUT_KEY: &str = "rollout";
/// The prefix of a node's key.
pub const NODE_PREFIX: &str = "node.";
/// The prefix of a hold's key.
pub const HOLD_PREFIX: &str = "hold.";

/// The phases a record keeps a node in: how its turn ended.
const FINISHED: [NodePhase; 4] = [NodePhase::Done, NodePhase::Skipped, NodePhase::Failed, NodePhase::Ungated];

/// The ConfigMap's name for run config `name` (shortened with a hash beyond the 253 characters a name may have).
pub fn config_map_name(name: &str) -> String {
    let full = format!("numo-timeline-{name}");
    if full.len() <= 253 {
        return full;
    }
    let head = full[..240].trim_end_matches(['-', '.']);
    format!("{head}-{}", crate::labels::hash_hex(name, 10))
}

/// One node as the record keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedNode {
    /// The node.
    pub name: String,
    /// How it ended.
    pub phase: NodePhase,
    /// Its step times, as its status entry had them: started, released, upgrading, upgraded, soak started,
    /// finished (cleaned up), drained (absent from records written before numo read MachineConfigNodes).
    pub times: [Option<DateTime<Utc>>; 7],
    /// When it was done.
    pub done: DateTime<Utc>,
}

/// One hold that ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedHold {
    /// When it started.
    pub start: DateTime<Utc>,
    /// When it ended.
    pub end: DateTime<Utc>,
    /// The checks that held the next node.
    pub checks: String,
    /// What they said.
    pub message: String,
}

fn seconds(t: Option<DateTime<Utc>>) -> String {
    t.map_or_else(|| "-".into(), |t| t.timestamp().to_string())
}

fn parse_seconds(text: &str) -> Option<DateTime<Utc>> {
    text.parse::<i64>().ok().and_then(|s| DateTime::from_timestamp(s, 0))
}

/// A finished node's key and value, from its last status entry and when it was done.
pub fn node_entry(entry: &NodeProgress, phase: NodePhase, done: DateTime<Utc>) -> (String, String) {
    let at = |t: &Option<Time>| t.as_ref().map(|t| utc(&t.0));
    let times = [
        at(&entry.started_at),
        at(&entry.released_at),
        at(&entry.upgrading_at),
        at(&entry.upgraded_at),
        at(&entry.soak_started_at),
        at(&entry.finished_at),
        at(&entry.drained_at),
    ];
    let mut value = format!("{} {}", phase.name(), done.timestamp());
    for t in times {
        value.push(' ');
        value.push_str(&seconds(t));
    }
    (format!("{NODE_PREFIX}{}", entry.name), value)
}

/// How many holds a record keeps at most: a hold's key is one of this many slots, from the minute it started, so a
/// hold replaces the one that started 1,009 minutes (or a multiple) before it, if that one is still there. A check
/// that flaps all day long therefore cannot grow the record past about 350 KB of holds; a prime, so that holds a
/// day (1,440 minutes) or an hour apart do not share a slot.
pub const HOLD_SLOTS: i64 = 1009;

/// The longest a hold's message (and its list of checks) is kept, in characters.
const HOLD_TEXT: usize = 240;

/// `text` cut to `limit` characters, with an ellipsis when it was longer.
fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// A hold's key and value: `hold.s<slot>` and `<start> <end> <checks> <message>` (Unix seconds).
pub fn hold_entry(start: DateTime<Utc>, end: DateTime<Utc>, checks: &str, message: &str) -> (String, String) {
    let slot = start.timestamp().div_euclid(60).rem_euclid(HOLD_SLOTS);
    let checks = cut(&checks.replace(' ', ""), HOLD_TEXT);
    let value = format!("{} {} {checks} {}", start.timestamp(), end.timestamp(), cut(message, HOLD_TEXT));
    (format!("{HOLD_PREFIX}s{slot}"), value)
}

/// What a record's data holds: its rollout, its nodes in the order they were done, and its holds.
pub fn read(data: &BTreeMap<String, String>) -> (Option<String>, Vec<RecordedNode>, Vec<RecordedHold>) {
    let mut nodes: Vec<RecordedNode> = data
        .iter()
        .filter_map(|(key, value)| {
            let name = key.strip_prefix(NODE_PREFIX)?;
            let mut fields = value.split(' ');
            let phase = NodePhase::parse(fields.next()?).filter(|p| FINISHED.contains(p))?;
            let done = parse_seconds(fields.next()?)?;
            let mut times = [None; 7];
            for slot in &mut times {
                *slot = fields.next().and_then(parse_seconds);
            }
            Some(RecordedNode { name: name.to_string(), phase, times, done })
        })
        .collect();
    nodes.sort_by(|a, b| (a.done, &a.name).cmp(&(b.done, &b.name)));
    let mut holds: Vec<RecordedHold> = data
        .iter()
        .filter_map(|(key, value)| {
            let suffix = key.strip_prefix(HOLD_PREFIX)?;
            // `hold.s<slot>` holds its start in the value; a record written before holds had slots has it in the key.
            let (start, rest) = match suffix.strip_prefix('s') {
                Some(_) => {
                    let (start, rest) = value.split_once(' ')?;
                    (parse_seconds(start)?, rest)
                }
                None => (parse_seconds(suffix)?, value.as_str()),
            };
            let mut fields = rest.splitn(3, ' ');
            let end = parse_seconds(fields.next()?)?;
            let checks = fields.next().unwrap_or_default().to_string();
            let message = fields.next().unwrap_or_default().to_string();
            Some(RecordedHold { start, end, checks, message })
        })
        .collect();
    holds.sort_by_key(|h| h.start);
    (data.get(ROLLOUT_KEY).cloned(), nodes, holds)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn time(text: &str) -> Option<Time> {
        Some(Time(text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))))
    }

    #[test]
    fn nodes_and_holds_read_back_as_written() {
        let entry = NodeProgress {
            name: "worker-1".into(),
            phase: NodePhase::CleaningUp,
            started_at: time("2026-11-23T12:00:00Z"),
            released_at: time("2026-11-23T12:01:00Z"),
            upgraded_at: time("2026-11-23T12:11:00Z"),
            ..Default::default()
        };
        let done = utc(&time("2026-11-23T12:12:00Z").unwrap_or_else(|| panic!()).0);
        let (key, value) = node_entry(&entry, NodePhase::Done, done);
        assert_eq!(key, "node.worker-1");
        let (start, end) = (utc(&time("2026-11-23T11:00:00Z").unwrap_or_else(|| panic!()).0), done);
        let hold = hold_entry(start, end, "ClusterOperators", "ClusterOperator storage is Degraded");
        let data = BTreeMap::from([(key, value), hold, (ROLLOUT_KEY.to_string(), "4.16.5".to_string())]);
        let (rollout, nodes, holds) = read(&data);
        assert_eq!(rollout.as_deref(), Some("4.16.5"));
        assert_eq!(nodes.len(), 1);
        assert_eq!((nodes[0].phase, nodes[0].done), (NodePhase::Done, done));
        assert_eq!(nodes[0].times[1], Some(utc(&time("2026-11-23T12:01:00Z").unwrap_or_else(|| panic!()).0)));
        assert_eq!(nodes[0].times[2], None);
        assert_eq!(holds[0].message, "ClusterOperator storage is Degraded");
        assert_eq!(holds[0].checks, "ClusterOperators");
    }

    #[test]
    fn the_drain_end_reads_back_and_records_written_before_it_still_read() {
        let drained = time("2026-11-23T12:03:00Z");
        let entry = NodeProgress {
            name: "worker-2".into(),
            upgrading_at: time("2026-11-23T12:02:00Z"),
            drained_at: drained.clone(),
            ..Default::default()
        };
        let done = utc(&time("2026-11-23T12:12:00Z").unwrap_or_else(|| panic!()).0);
        let old = ("node.worker-1".to_string(), format!("Done {0} {0} {0} {0} {0} - {0}", done.timestamp()));
        let data = BTreeMap::from([node_entry(&entry, NodePhase::Done, done), old]);
        let (_, nodes, _) = read(&data);
        let by_name = |name: &str| nodes.iter().find(|n| n.name == name).unwrap_or_else(|| panic!("{name}"));
        assert_eq!(by_name("worker-2").times[6], drained.map(|t| utc(&t.0)));
        assert_eq!(by_name("worker-1").times[6], None, "an older record has no drain");
        assert_eq!(by_name("worker-1").times[5], Some(done));
    }

    #[test]
    fn a_check_that_flaps_for_days_keeps_the_record_bounded_and_daily_holds_all_stay() {
        let day0 = utc(&time("2026-11-23T00:00:00Z").unwrap_or_else(|| panic!()).0);
        let mut data = BTreeMap::new();
        // A hold every 30 s for three days, each with a long message, written as numo's merge patches would.
        let long = "ClusterOperator ingress is Degraded: ".repeat(20);
        for i in 0..(3 * 24 * 120) {
            let start = day0 + chrono::Duration::seconds(30 * i);
            data.extend([hold_entry(start, start + chrono::Duration::seconds(20), "ClusterOperators,Alerts", &long)]);
        }
        let bytes: usize = data.iter().map(|(k, v)| k.len() + v.len()).sum();
        assert!(data.len() <= HOLD_SLOTS as usize, "{} holds", data.len());
        assert!(bytes < 400_000, "{bytes} bytes of holds");
        let holds = read(&data).2;
        let last = holds.last().unwrap_or_else(|| panic!("no hold"));
        assert_eq!(last.start, day0 + chrono::Duration::seconds(30 * (3 * 24 * 120 - 1)), "the latest is kept");
        assert!(last.message.ends_with('…') && last.message.chars().count() == 241, "{}", last.message);
        // One hold a day at the same time (a maintenance window that opens each morning): every one is kept.
        let mut daily = BTreeMap::new();
        for day in 0..60 {
            let start = day0 + chrono::Duration::days(day) + chrono::Duration::hours(6);
            daily.extend([hold_entry(start, start + chrono::Duration::hours(2), "Windows", "outside the window")]);
        }
        assert_eq!(read(&daily).2.len(), 60);
    }

    #[test]
    fn a_record_written_before_holds_had_slots_reads_as_before() {
        let data =
            BTreeMap::from([("hold.1764057600".to_string(), "1764058500 Windows outside the window".to_string())]);
        let holds = read(&data).2;
        assert_eq!(holds.len(), 1);
        assert_eq!((holds[0].start.timestamp(), holds[0].end.timestamp()), (1764057600, 1764058500));
        assert_eq!(holds[0].message, "outside the window");
    }

    #[test]
    fn a_long_name_is_shortened_to_a_valid_one() {
        assert_eq!(config_map_name("example"), "numo-timeline-example");
        let long = config_map_name(&"a".repeat(253));
        assert!(long.len() <= 253 && long.starts_with("numo-timeline-aaa"), "{long}");
    }

    #[test]
    fn anything_else_in_the_data_is_ignored() {
        let data = BTreeMap::from([("node.x".to_string(), "Bogus 1".to_string()), ("other".into(), "1".into())]);
        assert_eq!(read(&data), (None, vec![], vec![]));
    }
}
