//! `numo timeline`: the picture of a rollout, from what numo stored (the run config's status and its rollout
//! record) and, for the nodes still to go, the projection `numo plan` prints.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::PreviewNode;
use crate::api::{MutexRunConfig, NodePhase, Step, TopologyStatus};
use crate::rollout_record::{self, RecordedNode};
use crate::timeline::{Band, Domain, Hold, Marker, Row, RowOutcome, Segment, Timeline, WaveState};
use crate::windows::{utc, Schedule};

fn at(t: &Option<Time>) -> Option<DateTime<Utc>> {
    t.as_ref().map(|t| utc(&t.0))
}

/// The segments between consecutive step starts that were seen; the last one ends at `end`.
fn segments(marks: &[(Step, Option<DateTime<Utc>>)], end: DateTime<Utc>) -> Vec<Segment> {
    let seen: Vec<(Step, DateTime<Utc>)> = marks.iter().filter_map(|(s, t)| t.map(|t| (*s, t))).collect();
    seen.iter()
        .enumerate()
        .map(|(i, (step, start))| {
            let until = seen.get(i + 1).map_or(end, |next| next.1).max(*start);
            Segment { step: *step, start: *start, end: until, projected: false }
        })
        .collect()
}

/// A finished node's row, from the record.
fn recorded_row(node: &RecordedNode) -> Row {
    let [started, released, upgrading, upgraded, soak, finished, drained] = node.times;
    let wait = if upgrading.is_none() && upgraded.is_some() { Step::Upgrade } else { Step::WaitForMco };
    let cleanup_end = soak.or(finished);
    // Where the drain's end is known (MachineConfigNodes), the upgrade is drawn as its drain and its reboot.
    let upgrade = match (upgrading, drained) {
        (Some(_), Some(_)) => vec![(Step::Drain, upgrading), (Step::Reboot, drained)],
        _ => vec![(Step::Upgrade, upgrading)],
    };
    let mut marks: Vec<(Step, Option<DateTime<Utc>>)> = [(Step::Gate, started), (wait, released)]
        .into_iter()
        .chain(upgrade)
        .chain([(Step::Cleanup, upgraded)])
        .collect();
    let mut segments = segments(&marks, cleanup_end.unwrap_or(node.done));
    if let Some(soak) = soak {
        marks = vec![(Step::Soak, Some(soak))];
        segments.extend(self::segments(&marks, node.done));
    }
    let outcome = match node.phase {
        NodePhase::Skipped => RowOutcome::Skipped,
        NodePhase::Failed => RowOutcome::Failed,
        NodePhase::Ungated => RowOutcome::Ungated,
        _ => RowOutcome::Done,
    };
    Row { node: node.name.clone(), outcome, segments, group: None }
}

/// Each node's failure domain under `rc`'s `status.topology` (the value of its key label, `""` without it), from
/// the nodes in `stores`; empty without a topology.
pub fn node_domains(
    rc: &MutexRunConfig,
    stores: &crate::controllers::run_config::observe::Stores,
) -> BTreeMap<String, String> {
    let Some(key) = rc.status.as_ref().and_then(|s| s.topology.as_ref()).map(|t| t.key.clone()) else {
        return BTreeMap::new();
    };
    stores
        .nodes
        .state()
        .iter()
        .filter_map(|n| {
            let meta = kube::Resource::meta(n.as_ref());
            let domain = meta.labels.as_ref().and_then(|l| l.get(&key)).cloned().unwrap_or_default();
            Some((meta.name.clone()?, domain))
        })
        .collect()
}

/// Under `status.topology`: each row's failure domain, and the rows grouped by domain in the order of the waves
/// (within a domain, as they were).
fn group_by_domain(rows: &mut [Row], topology: &crate::api::TopologyStatus, domains: &BTreeMap<String, String>) {
    let index: BTreeMap<&str, usize> = topology.waves.iter().enumerate().map(|(i, w)| (w.domain.as_str(), i)).collect();
    let wave = |domain: &str| index.get(domain).copied().unwrap_or(topology.waves.len());
    for row in rows.iter_mut() {
        let domain = domains.get(&row.node).map_or("", String::as_str);
        row.group = Some(crate::controllers::run_config::plan::shown_domain(domain, &topology.key));
    }
    rows.sort_by_key(|row| wave(domains.get(&row.node).map_or("", String::as_str)));
}

/// Where a domain's wave is: over (in `done`, or finished), under way (started, or the current one once another
/// started), or to go.
fn wave_state(topology: &TopologyStatus, wave: &crate::api::Wave) -> WaveState {
    if topology.done.contains(&wave.domain) || wave.finished_at.is_some() {
        WaveState::Done
    } else if wave.started_at.is_some() || (topology.current.as_deref() == Some(wave.domain.as_str()) && wave.done > 0)
    {
        WaveState::InProgress
    } else {
        WaveState::Pending
    }
}

/// The failure domains of `topology` in wave order, with how far each wave is.
fn domains_of(topology: &TopologyStatus) -> Vec<Domain> {
    topology
        .waves
        .iter()
        .map(|wave| Domain {
            domain: wave.domain.clone(),
            key: topology.key.clone(),
            shown: crate::controllers::run_config::plan::shown_domain(&wave.domain, &topology.key),
            state: wave_state(topology, wave),
            done: wave.done,
            nodes: wave.nodes,
        })
        .collect()
}

/// The timeline of `rc`'s current (or last) rollout at `now`: the finished nodes from `record` (its rollout record's
/// data), the nodes in the status, and `projected` (the nodes not done, as the planner projects them; empty: none
/// drawn). `domains`: each node's failure domain (see [`node_domains`]), by which the rows are grouped under
/// `status.topology`; `None` when the nodes could not be read (the rows are not grouped).
pub fn timeline(
    rc: &MutexRunConfig,
    record: &BTreeMap<String, String>,
    projected: &[PreviewNode],
    domains: Option<&BTreeMap<String, String>>,
    now: DateTime<Utc>,
) -> Timeline {
    let status = rc.status.clone().unwrap_or_default();
    let rollout = status.rollout_key().map(str::to_string);
    let (recorded_rollout, recorded, recorded_holds) = rollout_record::read(record);
    let same = recorded_rollout.is_some() && recorded_rollout == rollout;
    let mut rows: Vec<Row> = if same { recorded.iter().map(recorded_row).collect() } else { Vec::new() };
    let by_node: BTreeMap<&str, &PreviewNode> = projected.iter().map(|n| (n.node.as_str(), n)).collect();
    let projected_segments = |node: &str, from: Option<DateTime<Utc>>| -> Vec<Segment> {
        by_node
            .get(node)
            .map(|n| {
                n.steps
                    .iter()
                    .filter(|s| from.is_none_or(|from| s.end > from))
                    .map(|s| Segment {
                        step: s.step,
                        start: from.map_or(s.start, |from| s.start.max(from)),
                        end: s.end,
                        projected: true,
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    for entry in &status.nodes {
        let mut segments: Vec<Segment> = crate::estimate::measured::split(entry, now)
            .into_iter()
            .map(|(step, start, end)| Segment { step, start, end, projected: false })
            .collect();
        let outcome = match entry.phase {
            NodePhase::Failed => RowOutcome::Failed,
            NodePhase::Ungated => RowOutcome::Ungated,
            _ => {
                // The step under way is drawn to now; the rest of the node as projected.
                let drawn_to = segments.last().map(|s| s.end);
                // The projection knows the upgrade whole: its rest continues the part under way (the reboot).
                let same = |projected: Step, drawn: Step| {
                    projected == drawn || (projected == Step::Upgrade && Step::UPGRADE_PARTS.contains(&drawn))
                };
                let rest: Vec<Segment> = projected_segments(&entry.name, drawn_to)
                    .into_iter()
                    .filter(|s| segments.last().is_none_or(|last| !same(s.step, last.step) || s.end > last.end))
                    .map(|s| match segments.last() {
                        Some(last) if same(s.step, last.step) => Segment { step: last.step, ..s },
                        _ => s,
                    })
                    .collect();
                if let (Some(last), Some(first)) = (segments.last_mut(), rest.first()) {
                    if first.step == last.step {
                        // The current step's projected rest continues it.
                        last.end = last.end.max(now);
                    }
                }
                segments.extend(rest);
                RowOutcome::InFlight
            }
        };
        rows.push(Row { node: entry.name.clone(), outcome, segments, group: None });
    }
    let drawn: std::collections::HashSet<String> = rows.iter().map(|r| r.node.clone()).collect();
    for node in projected.iter().filter(|n| !n.started && !drawn.contains(&n.node)) {
        rows.push(Row {
            node: node.node.clone(),
            outcome: RowOutcome::Projected,
            segments: projected_segments(&node.node, None),
            group: None,
        });
    }
    let domain_headers = match (&status.topology, domains) {
        (Some(topology), Some(domains)) => {
            group_by_domain(&mut rows, topology, domains);
            domains_of(topology)
        }
        _ => Vec::new(),
    };
    let estimated_end = status.estimate.as_ref().map(|e| utc(&e.end.0));
    let start = at(&status.started_at)
        .or_else(|| rows.iter().flat_map(|r| r.segments.first()).map(|s| s.start).min())
        .unwrap_or(now);
    let last_segment = rows.iter().flat_map(|r| r.segments.last()).map(|s| s.end).max();
    // A finished rollout is drawn to its end, with "now" there; one under way to now or its projection.
    let finished = at(&status.finished_at).filter(|_| status.phase == Some(crate::api::RunPhase::Completed));
    let now = finished.map_or(now, |end| end.max(last_segment.unwrap_or(end)));
    let end =
        [Some(now), at(&status.finished_at), estimated_end, last_segment].into_iter().flatten().max().unwrap_or(now);
    let mut holds: Vec<Hold> = if same {
        recorded_holds
            .into_iter()
            .map(|h| Hold { start: h.start, end: h.end, check: h.checks, message: h.message })
            .collect()
    } else {
        Vec::new()
    };
    if let Some(since) = at(&status.held_since) {
        let checks: Vec<&str> = status.blocked_by.iter().map(|b| b.check.as_str()).collect();
        let messages: Vec<&str> = status.blocked_by.iter().map(|b| b.message.as_str()).collect();
        holds.push(Hold { start: since, end: now, check: checks.join(","), message: messages.join("; ") });
    }
    let (windows, blackouts) = match Schedule::parse(&rc.spec.maintenance_windows, &rc.spec.blackout_windows) {
        Ok(schedule) => (
            schedule
                .open_periods(start, end)
                .into_iter()
                .map(|(s, e)| Band { start: s, end: e, label: "maintenance window".into() })
                .collect(),
            schedule
                .blackout_periods(start, end)
                .into_iter()
                .map(|(s, e, reason)| Band { start: s, end: e, label: reason.unwrap_or_else(|| "blackout".into()) })
                .collect(),
        ),
        Err(_) => (Vec::new(), Vec::new()),
    };
    let restore = match (at(&status.restore_started_at), at(&status.finished_at), status.estimate.as_ref()) {
        (Some(from), Some(to), _) => Some(Band { start: from, end: to, label: "restore walk".into() }),
        (Some(from), None, _) => Some(Band {
            start: from,
            end: estimated_end.unwrap_or(now).max(now),
            label: "restore walk (projected)".into(),
        }),
        (None, _, Some(estimate)) => estimate.nodes_done.as_ref().map(|done| Band {
            start: utc(&done.0),
            end: utc(&estimate.end.0),
            label: "restore walk (projected)".into(),
        }),
        _ => None,
    };
    let title = format!(
        "{}/{} — {}",
        kube::ResourceExt::namespace(rc).unwrap_or_default(),
        kube::ResourceExt::name_any(rc),
        rollout.unwrap_or_else(|| "no rollout".into())
    );
    let markers = status
        .target_changes
        .iter()
        .map(|change| Marker {
            at: utc(&change.at.0),
            label: format!("target {}", change.to),
            note: match change.in_flight.as_slice() {
                [] => format!("target changed from {} to {}", change.from, change.to),
                nodes => format!(
                    "target changed from {} to {}; {} went on to {} inside their gated turn",
                    change.from,
                    change.to,
                    nodes.join(", "),
                    change.to
                ),
            },
            from: change.from.clone(),
            to: change.to.clone(),
            in_flight: change.in_flight.clone(),
        })
        .collect();
    Timeline {
        title,
        start,
        end,
        now,
        rows,
        windows,
        blackouts,
        holds,
        restore,
        estimated_end,
        markers,
        domains: domain_headers,
    }
}

#[cfg(test)]
#[path = "timeline_tests.rs"]
mod tests;
