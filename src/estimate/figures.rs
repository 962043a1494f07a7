//! Step durations: the samples a rollout keeps, what they give (median, 90th percentile), and which figures an
//! estimate uses (this rollout's, earlier rollouts', or the documented defaults).

use std::collections::BTreeMap;

use crate::api::{EstimateBasis, RolloutFigures, Step, StepFigure, StepSamples};

/// Adds `seconds` to the samples of `step`, keeping the latest [`StepSamples::KEPT`].
pub fn add(samples: &mut Vec<StepSamples>, step: Step, seconds: u32) {
    let index = match samples.iter().position(|s| s.step == step) {
        Some(index) => index,
        None => {
            samples.push(StepSamples { step, count: 0, seconds: Vec::new() });
            samples.sort_by_key(|s| s.step);
            samples.iter().position(|s| s.step == step).unwrap_or_default()
        }
    };
    let entry = &mut samples[index];
    entry.count += 1;
    entry.seconds.push(seconds);
    let excess = entry.seconds.len().saturating_sub(StepSamples::KEPT);
    entry.seconds.drain(..excess);
}

/// The median and 90th percentile of `samples` (nearest rank), None when there are none.
pub fn figure(samples: &StepSamples) -> Option<StepFigure> {
    let mut sorted = samples.seconds.clone();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_unstable();
    let rank = |p: f64| sorted[((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1];
    Some(StepFigure { step: samples.step, count: samples.count, median_seconds: rank(0.5), p90_seconds: rank(0.9) })
}

/// The figures of every step that has samples.
pub fn figures(samples: &[StepSamples]) -> Vec<StepFigure> {
    samples.iter().filter_map(figure).collect()
}

/// The duration an estimate uses for each step, and where they come from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Durations {
    /// Seconds per step.
    pub seconds: BTreeMap<Step, u32>,
    /// Where the node steps' figures come from (the basis of the estimate).
    pub basis: EstimateBasis,
    /// Steps that use the documented default although some figures exist.
    pub defaulted: Vec<Step>,
}

impl Durations {
    /// How long `step` takes.
    pub fn of(&self, step: Step) -> u32 {
        self.seconds.get(&step).copied().unwrap_or_else(|| step.default_seconds())
    }

    /// How long a part of the upgrade ([`Step::UPGRADE_PARTS`]) takes, where it was measured (in this rollout or
    /// an earlier one); None elsewhere.
    pub fn part(&self, step: Step) -> Option<u32> {
        Step::UPGRADE_PARTS.contains(&step).then(|| self.seconds.get(&step).copied())?
    }
}

/// The durations to estimate with: each step's median in this rollout where a node went through it, else the
/// newest earlier rollout's median, else the default. The soak is `soak` when set (it is what the spec asks); the
/// cleanup takes no time when no rule has a cleanup Job (`cleanup_jobs` false).
pub fn durations(
    current: &[StepSamples],
    history: &[RolloutFigures],
    soak: Option<u32>,
    cleanup_jobs: bool,
) -> Durations {
    let this: BTreeMap<Step, u32> = figures(current).into_iter().map(|f| (f.step, f.median_seconds)).collect();
    let earlier = |step: Step| {
        history.iter().rev().find_map(|r| r.steps.iter().find(|f| f.step == step).map(|f| f.median_seconds))
    };
    let mut seconds = BTreeMap::new();
    let (mut from_this, mut from_earlier, mut defaulted) = (0, 0, Vec::new());
    for step in Step::NODE.into_iter().chain([Step::Restore]) {
        let value = if step == Step::Soak && soak.is_some() {
            soak
        } else if step == Step::Cleanup && !cleanup_jobs {
            Some(0)
        } else if let Some(value) = this.get(&step) {
            from_this += 1;
            Some(*value)
        } else if let Some(value) = earlier(step) {
            from_earlier += 1;
            Some(value)
        } else {
            None
        };
        // Until the restore walk is measured, a round takes as long as the MCO took to start on a released node,
        // twice over (to start and to finish): moving a node between pools whose configs have the same content
        // involves no drain and no reboot.
        let value = match (step, value) {
            (Step::Restore, None) => {
                seconds.get(&Step::WaitForMco).filter(|_| !defaulted.contains(&Step::WaitForMco)).map(|s| 2 * s)
            }
            (_, value) => value,
        };
        match value {
            Some(value) => {
                seconds.insert(step, value);
            }
            None if step == Step::Soak => {
                seconds.insert(step, 0);
            }
            None => {
                defaulted.push(step);
                seconds.insert(step, step.default_seconds());
            }
        }
    }
    // The upgrade's parts are told only where they were measured: they explain the upgrade, never add to it.
    for part in Step::UPGRADE_PARTS {
        if let Some(value) = this.get(&part).copied().or_else(|| earlier(part)) {
            seconds.insert(part, value);
        }
    }
    let basis = if from_this > 0 {
        EstimateBasis::ThisRollout
    } else if from_earlier > 0 {
        EstimateBasis::EarlierRollouts
    } else {
        EstimateBasis::Defaults
    };
    Durations { seconds, basis, defaulted }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn samples(step: Step, seconds: &[u32]) -> StepSamples {
        StepSamples { step, count: seconds.len() as u32, seconds: seconds.to_vec() }
    }

    #[test]
    fn the_latest_samples_are_kept_and_every_one_counted() {
        let mut kept = Vec::new();
        for s in 0..100 {
            add(&mut kept, Step::Upgrade, s);
        }
        add(&mut kept, Step::Gate, 7);
        assert_eq!(kept.iter().map(|s| s.step).collect::<Vec<_>>(), vec![Step::Gate, Step::Upgrade]);
        let upgrade = &kept[1];
        assert_eq!((upgrade.count, upgrade.seconds.len()), (100, StepSamples::KEPT));
        assert_eq!(upgrade.seconds.first(), Some(&(100 - StepSamples::KEPT as u32)));
        assert_eq!(upgrade.seconds.last(), Some(&99));
    }

    #[test]
    fn median_and_90th_percentile_by_nearest_rank() {
        let figure = figure(&samples(Step::Upgrade, &[10, 1, 9, 2, 8, 3, 7, 4, 6, 5])).unwrap_or_else(|| panic!());
        assert_eq!((figure.median_seconds, figure.p90_seconds), (5, 9));
        let one = super::figure(&samples(Step::Gate, &[42])).unwrap_or_else(|| panic!());
        assert_eq!((one.median_seconds, one.p90_seconds), (42, 42));
        assert_eq!(super::figure(&samples(Step::Gate, &[])), None);
    }

    #[test]
    fn this_rollout_beats_earlier_ones_which_beat_the_defaults() {
        let earlier = RolloutFigures {
            rollout: "4.16.1".into(),
            nodes: 3,
            steps: vec![
                StepFigure { step: Step::Upgrade, count: 3, median_seconds: 600, p90_seconds: 700 },
                StepFigure { step: Step::Gate, count: 3, median_seconds: 50, p90_seconds: 60 },
            ],
            ..Default::default()
        };
        let none = durations(&[], &[], None, true);
        assert_eq!(none.basis, EstimateBasis::Defaults);
        assert_eq!(none.of(Step::Upgrade), Step::Upgrade.default_seconds());
        assert_eq!(none.of(Step::Soak), 0, "no soakTime, no soak");
        let from_earlier = durations(&[], std::slice::from_ref(&earlier), Some(120), true);
        assert_eq!(from_earlier.basis, EstimateBasis::EarlierRollouts);
        assert_eq!((from_earlier.of(Step::Upgrade), from_earlier.of(Step::Soak)), (600, 120));
        assert!(from_earlier.defaulted.contains(&Step::Cleanup));
        let this = durations(&[samples(Step::Upgrade, &[300, 320, 310])], &[earlier], None, true);
        assert_eq!(this.basis, EstimateBasis::ThisRollout);
        assert_eq!((this.of(Step::Upgrade), this.of(Step::Gate)), (310, 50));
        assert_eq!(this.of(Step::Restore), Step::Restore.default_seconds(), "nothing measured of the MCO");
        let mco = durations(&[samples(Step::WaitForMco, &[4, 6, 5])], &[], None, true);
        assert_eq!(mco.of(Step::Restore), 10, "a round of the restore walk as the MCO's start, twice over");
        assert!(!mco.defaulted.contains(&Step::Restore));
        assert_eq!(this.part(Step::Drain), None, "no part measured, none told");
        let parts = durations(&[samples(Step::Drain, &[100, 140, 120])], &[], None, true);
        assert_eq!((parts.part(Step::Drain), parts.part(Step::Reboot)), (Some(120), None));
        assert_eq!(parts.basis, EstimateBasis::Defaults, "a part alone does not make the estimate this rollout's");
        assert_eq!(parts.part(Step::Gate), None, "not a part");
    }

    #[test]
    fn without_a_cleanup_job_the_cleanup_takes_no_time_and_is_not_a_default() {
        let without = durations(&[samples(Step::Gate, &[7])], &[], None, false);
        assert_eq!(without.of(Step::Cleanup), 0);
        assert!(!without.defaulted.contains(&Step::Cleanup), "{:?}", without.defaulted);
        let with = durations(&[samples(Step::Gate, &[7])], &[], None, true);
        assert_eq!(with.of(Step::Cleanup), Step::Cleanup.default_seconds());
        assert!(with.defaulted.contains(&Step::Cleanup));
    }
}
