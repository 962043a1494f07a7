// The run config's actions in the console's action menus (its list's kebab and its details page's Actions): each
// one opens the Rollout tab with its confirmation, so that the user sees the rollout before confirming. The
// console checks `accessReview` and disables an action the user may not do.
import * as React from 'react';
import type { Action, ExtensionHookResult } from '@openshift-console/dynamic-plugin-sdk';
import type { MutexRunConfig } from '../types';
import { MutexRunConfigModel, paths } from '../models';
import { actionHref } from './RolloutActions';
import { nothingToSkip, retryableNodes } from './patches';

export const runConfigActions = (rc?: MutexRunConfig): Action[] => {
  const name = rc?.metadata?.name;
  const namespace = rc?.metadata?.namespace;
  if (!rc || !name || !namespace) return [];
  const base = paths.rolloutTab(namespace, name);
  const accessReview = {
    group: MutexRunConfigModel.apiGroup,
    resource: MutexRunConfigModel.plural,
    verb: 'patch' as const,
    name,
    namespace,
  };
  const paused = !!rc.spec?.paused;
  const retryable = retryableNodes(rc);
  const actions: Action[] = [
    paused
      ? {
          id: 'numo-resume',
          label: 'Resume rollout',
          description: 'Let numo start the next node again',
          cta: { href: actionHref(base, 'resume') },
          accessReview,
        }
      : {
          id: 'numo-pause',
          label: 'Pause rollout',
          description: 'Start no further node; nodes in flight finish',
          cta: { href: actionHref(base, 'pause') },
          accessReview,
        },
    ...(retryable.length
      ? retryable.map((n) => ({
          id: `numo-retry-${n.name}`,
          label: `Retry node ${n.name}`,
          description: n.phase === 'Ungated' ? 'Let the rollout go on past it' : 'Run its failed step again',
          cta: { href: actionHref(base, 'retry', n.name) },
          accessReview,
        }))
      : [
          {
            id: 'numo-retry',
            label: 'Retry a failed node',
            cta: { href: actionHref(base, 'retry') },
            disabled: true,
            disabledTooltip: 'No node has failed.',
            accessReview,
          },
        ]),
    {
      id: 'numo-skip',
      label: 'Skip a node',
      description: 'Leave a node out of this rollout',
      cta: { href: actionHref(base, 'skip') },
      ...(nothingToSkip(rc) ? { disabled: true, disabledTooltip: nothingToSkip(rc) } : {}),
      accessReview,
    },
  ];
  return actions;
};

/** The hook `console.action/resource-provider` calls with the run config. */
const useRunConfigActions = (rc: MutexRunConfig): ExtensionHookResult<Action[]> => {
  const actions = React.useMemo(() => runConfigActions(rc), [rc]);
  return [actions, true, undefined];
};

export default useRunConfigActions;
