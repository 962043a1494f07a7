// The timeline's colours: exactly those of `numo timeline` (src/timeline/mod.rs), the Okabe–Ito palette, readable
// with every common colour-vision deficiency.
import type { Step, UpgradePart, WholeStep } from '../types';
import type { Translate } from '../i18n';
import { NODE_STEPS as API_NODE_STEPS, STEP_DEFAULT_SECONDS, UPGRADE_PARTS as API_UPGRADE_PARTS } from '../api-names';

export const STEP_COLOURS: Record<Step, string> = {
  Gate: '#0072B2',
  WaitForMco: '#56B4E9',
  Upgrade: '#E69F00',
  Cleanup: '#009E73',
  Soak: '#CC79A7',
  Restore: '#999999',
  // The parts of a measured upgrade, where numo saw the node's drain end: Okabe–Ito yellow (the one colour of the
  // palette nothing else had) and a dark shade of the upgrade's orange.
  Drain: '#F0E442',
  Reboot: '#A86400',
};

/** The name of each step, as numo's Events, `numo plan` and the legend say it (src/estimate/mod.rs, name). */
export const stepNames = (t: Translate): Record<Step, string> => ({
  Gate: t('gate'),
  WaitForMco: t('waiting for the MCO'),
  Upgrade: t('upgrade'),
  Cleanup: t('cleanup'),
  Soak: t('soak'),
  Restore: t('restore'),
  Drain: t('drain'),
  Reboot: t('reboot'),
});

/** The parts of `Upgrade`, in order: drawn for a node whose drain numo saw end (`drainedAt`); projections know the
 * upgrade whole. */
export const UPGRADE_PARTS: readonly UpgradePart[] = API_UPGRADE_PARTS;

/** A node's steps, in order. */
export const NODE_STEPS: readonly WholeStep[] = API_NODE_STEPS;

/** The steps projections know: a node's, and the restore walk's. */
export const WHOLE_STEPS: readonly WholeStep[] = [...NODE_STEPS, 'Restore'];

/** How long a step takes when numo has no figure of its own (src/api/estimate.rs, default_seconds); whole steps
 * only, as the projection knows the upgrade whole. */
export const DEFAULT_SECONDS = Object.fromEntries(
  WHOLE_STEPS.map((step) => [step, STEP_DEFAULT_SECONDS[step]]),
) as Record<WholeStep, number>;

/** Holds (vermillion). */
export const HOLD_COLOUR = '#D55E00';
/** Maintenance windows, behind the rows. */
export const WINDOW_COLOUR = '#E8F4E8';
/** Blackouts, behind the rows at 30 % opacity. */
export const BLACKOUT_COLOUR = '#3A3A3A';
/** The marker after a failed or ungated node's steps. */
export const FAILED_COLOUR = '#B00000';
/** The now line (dashed) and the estimated end (solid). */
export const LINE_COLOUR = '#000000';
/** Projected steps: their step's colour at this opacity, with a dashed outline. */
export const PROJECTED_OPACITY = 0.35;
