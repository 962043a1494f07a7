//! The steps a node went through, with their start and end, read from its entry in the status.

use chrono::{DateTime, Utc};

use crate::api::node_phases::IN_TURN;
use crate::api::{NodePhase, NodeProgress, Step};
use crate::windows::utc;

/// The steps of `entry` that numo saw start, each with its start and end; a step still under way ends at `until`.
/// A step whose start numo did not see (two transitions within one reconcile) is left out.
pub fn measured(entry: &NodeProgress, until: DateTime<Utc>) -> Vec<(Step, DateTime<Utc>, DateTime<Utc>)> {
    let at = |t: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| t.as_ref().map(|t| utc(&t.0));
    let soaking = entry.phase == NodePhase::Soaking;
    let cleaned = if soaking { at(&entry.finished_at) } else { None };
    // Each step of the turn from when it began, as the phase table says.
    let marks: Vec<(Step, Option<DateTime<Utc>>)> = IN_TURN
        .iter()
        .map(|row| {
            let began = (row.began)(entry).map(|t| utc(&t.0));
            match row.step {
                // Without the MCO's start seen, the time from the release to the upgrade's end counts as the upgrade.
                Step::WaitForMco if entry.upgrading_at.is_none() && entry.upgraded_at.is_some() => {
                    (Step::Upgrade, began)
                }
                Step::Soak => (Step::Soak, if soaking { began.or(cleaned) } else { None }),
                step => (step, began),
            }
        })
        .collect();
    let mut steps = Vec::new();
    for (i, (step, start)) in marks.iter().enumerate() {
        let Some(start) = start else { continue };
        let end = marks[i + 1..].iter().find_map(|(_, t)| *t).or(if *step == Step::Cleanup { cleaned } else { None });
        let end = end.unwrap_or(until).max(*start);
        // A node that failed or was held ends its last step when it finished.
        let end = match (entry.phase, at(&entry.finished_at)) {
            (NodePhase::Failed | NodePhase::Ungated, Some(finished)) if end > finished => finished.max(*start),
            _ => end,
        };
        steps.push((*step, *start, end));
    }
    steps
}

/// The steps of `entry` as [`measured`] gives them, with its `Upgrade` split into its parts ([`Step::UPGRADE_PARTS`]:
/// the drain until `drainedAt`, then the reboot) where the drain's end is known: the steps as the timeline draws
/// them.
pub fn split(entry: &NodeProgress, until: DateTime<Utc>) -> Vec<(Step, DateTime<Utc>, DateTime<Utc>)> {
    let drained = entry.drained_at.as_ref().map(|t| utc(&t.0));
    measured(entry, until)
        .into_iter()
        .flat_map(|(step, start, end)| match (step, drained) {
            (Step::Upgrade, Some(drained)) => {
                let drained = drained.clamp(start, end);
                vec![(Step::Drain, start, drained), (Step::Reboot, drained, end)]
            }
            _ => vec![(step, start, end)],
        })
        .collect()
}

/// The durations of the steps of `entry`, in whole seconds, as a node that finished at `done_at` took them: every
/// step [`measured`], and the parts of its upgrade where they are known.
pub fn durations(entry: &NodeProgress, done_at: DateTime<Utc>) -> Vec<(Step, u32)> {
    let seconds =
        |start: DateTime<Utc>, end: DateTime<Utc>| u32::try_from((end - start).num_seconds()).unwrap_or_default();
    let parts = split(entry, done_at).into_iter().filter(|(step, _, _)| Step::UPGRADE_PARTS.contains(step));
    measured(entry, done_at).into_iter().chain(parts).map(|(step, start, end)| (step, seconds(start, end))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn time(text: &str) -> Option<Time> {
        Some(Time(text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))))
    }

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap_or_else(|e| panic!("{e}")).with_timezone(&Utc)
    }

    #[test]
    fn every_step_seen_is_measured_from_its_start_to_the_next() {
        let entry = NodeProgress {
            name: "worker-1".into(),
            phase: NodePhase::Soaking,
            started_at: time("2026-11-23T12:00:00Z"),
            released_at: time("2026-11-23T12:01:00Z"),
            upgrading_at: time("2026-11-23T12:01:30Z"),
            upgraded_at: time("2026-11-23T12:11:30Z"),
            finished_at: time("2026-11-23T12:12:30Z"),
            soak_started_at: time("2026-11-23T12:12:30Z"),
            ..Default::default()
        };
        let done = at("2026-11-23T12:17:30Z");
        assert_eq!(
            durations(&entry, done),
            vec![
                (Step::Gate, 60),
                (Step::WaitForMco, 30),
                (Step::Upgrade, 600),
                (Step::Cleanup, 60),
                (Step::Soak, 300)
            ]
        );
    }

    #[test]
    fn a_step_not_seen_is_left_out_and_the_one_under_way_ends_now() {
        let entry = NodeProgress {
            name: "worker-1".into(),
            phase: NodePhase::CleaningUp,
            started_at: time("2026-11-23T12:00:00Z"),
            released_at: time("2026-11-23T12:01:00Z"),
            upgraded_at: time("2026-11-23T12:11:00Z"),
            ..Default::default()
        };
        let steps = durations(&entry, at("2026-11-23T12:11:45Z"));
        assert_eq!(steps, vec![(Step::Gate, 60), (Step::Upgrade, 600), (Step::Cleanup, 45)]);
    }

    #[test]
    fn an_upgrade_whose_drain_end_is_known_is_measured_whole_and_in_its_parts() {
        let entry = NodeProgress {
            name: "worker-1".into(),
            phase: NodePhase::CleaningUp,
            started_at: time("2026-11-23T12:00:00Z"),
            released_at: time("2026-11-23T12:01:00Z"),
            upgrading_at: time("2026-11-23T12:01:30Z"),
            drained_at: time("2026-11-23T12:03:30Z"),
            upgraded_at: time("2026-11-23T12:11:30Z"),
            ..Default::default()
        };
        let done = at("2026-11-23T12:12:30Z");
        assert_eq!(
            durations(&entry, done),
            vec![
                (Step::Gate, 60),
                (Step::WaitForMco, 30),
                (Step::Upgrade, 600),
                (Step::Cleanup, 60),
                (Step::Drain, 120),
                (Step::Reboot, 480)
            ]
        );
        let drawn: Vec<Step> = split(&entry, done).into_iter().map(|(step, _, _)| step).collect();
        assert_eq!(drawn, vec![Step::Gate, Step::WaitForMco, Step::Drain, Step::Reboot, Step::Cleanup]);
        let rebooting = NodeProgress { phase: NodePhase::Upgrading, upgraded_at: None, ..entry.clone() };
        let now = at("2026-11-23T12:05:30Z");
        let last = split(&rebooting, now).pop().map(|(step, start, end)| (step, (end - start).num_seconds()));
        assert_eq!(last, Some((Step::Reboot, 120)), "the reboot under way ends now");
        let unknown = NodeProgress { drained_at: None, ..entry };
        assert!(!split(&unknown, done).iter().any(|(step, _, _)| Step::UPGRADE_PARTS.contains(step)));
    }

    #[test]
    fn a_failed_node_ends_when_it_failed() {
        let entry = NodeProgress {
            name: "worker-1".into(),
            phase: NodePhase::Failed,
            started_at: time("2026-11-23T12:00:00Z"),
            finished_at: time("2026-11-23T12:00:40Z"),
            ..Default::default()
        };
        assert_eq!(durations(&entry, at("2026-11-23T13:00:00Z")), vec![(Step::Gate, 40)]);
    }
}
