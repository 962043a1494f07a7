// The steps' colours and names outside the timeline (the node table's swatches): the colours are numo's own,
// generated into api-names.ts from src/timeline/mod.rs; the timeline itself draws in the colours numo sends with it.
import type { Step, UpgradePart, WholeStep } from '../types';
import type { Translate } from '../i18n';
import { NODE_STEPS as API_NODE_STEPS, STEP_COLOURS, UPGRADE_PARTS as API_UPGRADE_PARTS } from '../api-names';

export { STEP_COLOURS };

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

/** The parts of `Upgrade`, in order: drawn for a node whose drain numo saw end (`drainedAt`). */
export const UPGRADE_PARTS: readonly UpgradePart[] = API_UPGRADE_PARTS;

/** A node's steps, in order. */
export const NODE_STEPS: readonly WholeStep[] = API_NODE_STEPS;
