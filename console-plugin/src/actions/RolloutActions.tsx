// Pause/Resume, Retry and Skip as toolbar buttons; each opens its confirmation. Without patch rights on the run
// config they are disabled (aria-disabled, so that their tooltip still says why).
import * as React from 'react';
import { useTranslation } from 'react-i18next';
import { Button, Toolbar, ToolbarContent, ToolbarGroup, ToolbarItem, Tooltip } from '@patternfly/react-core';
import type { MutexRunConfig } from '../types';
import { type ActionKind, nothingToSkip, retryableNodes } from './patches';

export type RolloutActionsProps = {
  runConfig: MutexRunConfig;
  canPatch: boolean;
  checking: boolean;
  onAction: (kind: ActionKind, node?: string) => void;
};

export const RolloutActions: React.FC<RolloutActionsProps> = ({ runConfig, canPatch, checking, onAction }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const paused = !!runConfig.spec?.paused;
  const retryable = retryableNodes(runConfig);
  const noSkip = nothingToSkip(runConfig, t);
  const noAccess = checking
    ? t('Checking whether you may patch this run config…')
    : t('You may not patch this run config.');
  const button = (
    kind: ActionKind,
    label: string,
    tip: string,
    enabled: boolean,
    variant: 'primary' | 'secondary' | 'danger' = 'secondary',
  ) => (
    <ToolbarItem>
      <Tooltip content={!canPatch ? noAccess : tip}>
        <Button
          variant={variant}
          isAriaDisabled={!canPatch || !enabled}
          onClick={() => onAction(kind, kind === 'retry' && retryable.length === 1 ? retryable[0].name : undefined)}
          data-test={`action-${kind}`}
          aria-label={label}
        >
          {label}
        </Button>
      </Tooltip>
    </ToolbarItem>
  );
  const pauseOrResume = paused
    ? button('resume', t('Resume'), t('Let numo start the next node again (spec.paused: false).'), true, 'primary')
    : button('pause', t('Pause'), t('Start no further node; nodes in flight finish (spec.paused: true).'), true);
  const retry = button(
    'retry',
    t('Retry a failed node'),
    retryable.length
      ? t('Run the failed step of {{nodes}} again.', { nodes: retryable.map((n) => n.name).join(', ') })
      : t('No node has failed.'),
    retryable.length > 0,
  );
  const skip = button(
    'skip',
    t('Skip a node'),
    noSkip ?? t('Leave a node out of this rollout: numo counts it as finished and goes on.'),
    !noSkip,
  );
  return (
    <Toolbar id="numo-rollout-actions" data-test="rollout-actions">
      <ToolbarContent>
        <ToolbarGroup>
          {pauseOrResume}
          {retry}
          {skip}
        </ToolbarGroup>
      </ToolbarContent>
    </Toolbar>
  );
};

/** The action the console's action menu asked for: the Rollout tab's URL carries `numo-action` and `numo-node`. */
export const ACTION_PARAM = 'numo-action';
export const NODE_PARAM = 'numo-node';

export const actionFromSearch = (search: string): { kind: ActionKind; node?: string } | undefined => {
  const params = new URLSearchParams(search);
  const kind = params.get(ACTION_PARAM);
  if (kind !== 'pause' && kind !== 'resume' && kind !== 'retry' && kind !== 'skip') return undefined;
  return { kind, node: params.get(NODE_PARAM) ?? undefined };
};

/** The Rollout tab's address that opens an action's confirmation. */
export const actionHref = (base: string, kind: ActionKind, node?: string) =>
  `${base}?${ACTION_PARAM}=${kind}${node ? `&${NODE_PARAM}=${encodeURIComponent(node)}` : ''}`;

/** Removes the action from the address once its confirmation closed, so that a reload does not open it again. */
export const clearActionFromLocation = () => {
  if (typeof window === 'undefined' || !window.location.search.includes(ACTION_PARAM)) return;
  const params = new URLSearchParams(window.location.search);
  params.delete(ACTION_PARAM);
  params.delete(NODE_PARAM);
  const rest = params.toString();
  window.history.replaceState(
    window.history.state,
    '',
    `${window.location.pathname}${rest ? `?${rest}` : ''}${window.location.hash}`,
  );
};
