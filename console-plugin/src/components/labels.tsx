// Phases as coloured PatternFly labels. A phase is shown as numo's API names it (as the console shows a resource's
// status), not translated.
import * as React from 'react';
import { useTranslation } from 'react-i18next';
import { Label, type LabelProps } from '@patternfly/react-core';
import type { NodePhase, RunPhase } from '../types';
import type { HoldState } from '../holdReason';

type Colour = LabelProps['color'];

export const NODE_PHASE_COLOURS: Record<NodePhase, Colour> = {
  Pending: 'grey',
  Gating: 'blue',
  Released: 'teal',
  Upgrading: 'orange',
  CleaningUp: 'green',
  Soaking: 'purple',
  Done: 'green',
  Failed: 'red',
  Skipped: 'grey',
  Ungated: 'red',
};

export const RUN_PHASE_COLOURS: Record<RunPhase, Colour> = {
  Idle: 'grey',
  Invalid: 'red',
  Waiting: 'yellow',
  Pausing: 'blue',
  Upgrading: 'blue',
  Failed: 'red',
  Restoring: 'teal',
  Completed: 'green',
};

export const HOLD_STATE_COLOURS: Record<HoldState, Colour> = {
  gating: 'blue',
  released: 'teal',
  upgrading: 'orange',
  'cleaning-up': 'green',
  soaking: 'purple',
  done: 'green',
  skipped: 'grey',
  failed: 'red',
  ungated: 'red',
  waiting: 'grey',
  held: 'yellow',
  'not-gated': 'grey',
};

export const NodePhaseLabel: React.FC<{ phase: NodePhase }> = ({ phase }) => (
  <Label color={NODE_PHASE_COLOURS[phase] ?? 'grey'} isCompact data-test="node-phase">
    {phase}
  </Label>
);

export const RunPhaseLabel: React.FC<{ phase?: RunPhase | null }> = ({ phase }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  return (
    <Label color={phase ? (RUN_PHASE_COLOURS[phase] ?? 'grey') : 'grey'} data-test="phase" data-phase={phase ?? ''}>
      {phase ?? t('Unknown')}
    </Label>
  );
};
