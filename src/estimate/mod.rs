//! When a rollout should end: numo's step durations ([`figures`]) projected over the nodes still to go, packed into
//! the maintenance windows and around blackouts with the run config's concurrency and soak ([`project`]), and the
//! restore walk at the end. The planner keeps the estimate in the status; `numo plan` prints the same projection.

pub mod figures;
pub mod measured;
pub mod project;

use chrono::{DateTime, Utc};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::api::{Blocker, Estimate, EstimateBasis, Step};
pub use figures::Durations;
pub use project::{project, InFlight, Planned, Projected, Projection, RestoreWalk, Waves};

/// How far past its estimated end a rollout runs before its message says `Slow`: a quarter of the estimated
/// length, and at least [`SLOW_AFTER_AT_LEAST`].
pub const SLOW_MARGIN: f64 = 0.25;
/// The least margin before a rollout is `Slow`.
pub const SLOW_AFTER_AT_LEAST: chrono::Duration = chrono::Duration::minutes(10);

/// The status's estimate from a projection.
pub fn estimate(
    projected: &Projected,
    durations: &Durations,
    remaining_nodes: u32,
    holding: &[Blocker],
    failed: usize,
    now: DateTime<Utc>,
) -> Estimate {
    Estimate {
        end: Time(crate::windows::to_api(&projected.end)),
        nodes_done: Some(Time(crate::windows::to_api(&projected.nodes_done))),
        remaining_nodes,
        restore_rounds: projected.restore_rounds,
        basis: durations.basis,
        step_seconds: Step::NODE
            .into_iter()
            .chain([Step::Restore])
            .map(|step| crate::api::StepSeconds { step, seconds: durations.of(step) })
            .chain(
                Step::UPGRADE_PARTS
                    .into_iter()
                    .filter_map(|step| Some(crate::api::StepSeconds { step, seconds: durations.part(step)? })),
            )
            .collect(),
        assumes: assumes(projected, durations, holding, failed),
        computed_at: Time(crate::windows::to_api(&now)),
    }
}

/// What an estimate assumes, as a sentence.
pub fn assumes(projected: &Projected, durations: &Durations, holding: &[Blocker], failed: usize) -> String {
    let mut parts = Vec::new();
    let step = |s: Step| match (s, durations.part(Step::Drain), durations.part(Step::Reboot)) {
        (Step::Upgrade, Some(drain), Some(reboot)) => {
            format!("{} {}s (drain {drain}s, reboot {reboot}s)", name(s), durations.of(s))
        }
        _ => format!("{} {}s", name(s), durations.of(s)),
    };
    let each: Vec<String> = Step::NODE.into_iter().map(step).collect();
    parts.push(format!(
        "each node takes {} ({}), the restore walk {}s per round",
        each.join(", "),
        match durations.basis {
            EstimateBasis::ThisRollout => "medians of this rollout's nodes",
            EstimateBasis::EarlierRollouts => "medians of earlier rollouts",
            EstimateBasis::Defaults => "numo's defaults: no node has finished yet",
        },
        durations.of(Step::Restore)
    ));
    if !durations.defaulted.is_empty() && durations.basis != EstimateBasis::Defaults {
        let names: Vec<&str> = durations.defaulted.iter().map(|s| name(*s)).collect();
        parts.push(format!("defaults for {}", names.join(", ")));
    }
    let held: Vec<&str> = holding
        .iter()
        .map(|b| b.check.as_str())
        .filter(|c| *c != crate::api::check::MAINTENANCE_WINDOW && *c != crate::api::check::BLACKOUT_WINDOW)
        .collect();
    if held.is_empty() {
        parts.push("holds beyond the maintenance windows and blackouts are not included".to_string());
    } else {
        parts.push(format!("not included: the hold by {} now, and any later hold", held.join(", ")));
    }
    if failed > 0 {
        parts.push(format!("not included: the {failed} failed node(s) waiting for a retry or a skip"));
    }
    if !projected.never_start.is_empty() {
        parts.push(format!(
            "{} node(s) cannot start because no maintenance window opens again",
            projected.never_start.len()
        ));
    }
    let mut sentence = parts.join("; ");
    sentence.push('.');
    let first = sentence.remove(0).to_ascii_uppercase();
    sentence.insert(0, first);
    sentence
}

/// A step's name as messages and tables show it.
pub fn name(step: Step) -> &'static str {
    match step {
        Step::Gate => "gate",
        Step::WaitForMco => "waiting for the MCO",
        Step::Upgrade => "upgrade",
        Step::Cleanup => "cleanup",
        Step::Soak => "soak",
        Step::Drain => "drain",
        Step::Reboot => "reboot",
        Step::Restore => "restore",
    }
}

/// When a rollout that started at `started` and should end at `end` counts as slow.
pub fn slow_after(started: DateTime<Utc>, end: DateTime<Utc>) -> DateTime<Utc> {
    let length = (end - started).max(chrono::Duration::zero());
    let margin = chrono::Duration::milliseconds((length.num_milliseconds() as f64 * SLOW_MARGIN) as i64);
    end + margin.max(SLOW_AFTER_AT_LEAST)
}

#[cfg(test)]
mod tests;
