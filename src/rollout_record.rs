//! What numo keeps of a rollout beyond its status, for the timeline: each node's step times once it finished and
//! each hold once it ended, in a ConfigMap next to the run config (`numo-timeline-<run config>`, owned by it, so
//! it goes with it). One key per node (`node.<name>`) and per hold (`hold.<start>`), so that numo adds to it with a
//! merge patch of the new keys only, never reading it; a new rollout starts a fresh one. At 2,000 nodes it holds
//! about 120 KB.

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
    /// finished (cleaned up).
    pub times: [Option<DateTime<Utc>>; 6],
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
    ];
    let mut value = format!("{phase:?} {}", done.timestamp());
    for t in times {
        value.push(' ');
        value.push_str(&seconds(t));
    }
    (format!("{NODE_PREFIX}{}", entry.name), value)
}

/// A hold's key and value.
pub fn hold_entry(start: DateTime<Utc>, end: DateTime<Utc>, checks: &str, message: &str) -> (String, String) {
    (format!("{HOLD_PREFIX}{}", start.timestamp()), format!("{} {checks} {message}", end.timestamp()))
}

/// What a record's data holds: its rollout, its nodes in the order they were done, and its holds.
pub fn read(data: &BTreeMap<String, String>) -> (Option<String>, Vec<RecordedNode>, Vec<RecordedHold>) {
    let mut nodes: Vec<RecordedNode> = data
        .iter()
        .filter_map(|(key, value)| {
            let name = key.strip_prefix(NODE_PREFIX)?;
            let mut fields = value.split(' ');
            let phase = match fields.next()? {
                "Done" => NodePhase::Done,
                "Skipped" => NodePhase::Skipped,
                "Failed" => NodePhase::Failed,
                "Ungated" => NodePhase::Ungated,
                _ => return None,
            };
            let done = parse_seconds(fields.next()?)?;
            let mut times = [None; 6];
            for slot in &mut times {
                *slot = fields.next().and_then(parse_seconds);
            }
            Some(RecordedNode { name: name.to_string(), phase, times, done })
        })
        .collect();
    nodes.sort_by(|a, b| (a.done, &a.name).cmp(&(b.done, &b.name)));
    let holds = data
        .iter()
        .filter_map(|(key, value)| {
            let start = parse_seconds(key.strip_prefix(HOLD_PREFIX)?)?;
            let mut fields = value.splitn(3, ' ');
            let end = parse_seconds(fields.next()?)?;
            let checks = fields.next().unwrap_or_default().to_string();
            let message = fields.next().unwrap_or_default().to_string();
            Some(RecordedHold { start, end, checks, message })
        })
        .collect();
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
