// The run config's actions in the console's action menus (its list's kebab and its details page's Actions): each
// one opens the Rollout tab with its confirmation, so that the user sees the rollout before confirming. The
// console checks `accessReview` and disables an action the user may not do.
import * as React from 'react';
import { useTranslation } from 'react-i18next';
import type { Action, ExtensionHookResult } from '@openshift-console/dynamic-plugin-sdk';
import type { MutexRunConfig } from '../types';
import { MutexRunConfigModel, paths } from '../models';
import { actionHref } from './RolloutActions';
import { nothingToSkip, retryableNodes } from './patches';
import type { Translate } from '../i18n';

export const runConfigActions = (rc: MutexRunConfig | undefined, t: Translate): Action[] => {
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
          label: t('Resume rollout'),
          description: t('Let numo start the next node again'),
          cta: { href: actionHref(base, 'resume') },
          accessReview,
        }
      : {
          id: 'numo-pause',
          label: t('Pause rollout'),
          description: t('Start no further node; nodes in flight finish'),
          cta: { href: actionHref(base, 'pause') },
          accessReview,
        },
    ...(retryable.length
      ? retryable.map((n) => ({
          id: `numo-retry-${n.name}`,
          label: t('Retry node {{name}}', { name: n.name }),
          description: n.phase === 'Ungated' ? t('Let the rollout go on past it') : t('Run its failed step again'),
          cta: { href: actionHref(base, 'retry', n.name) },
          accessReview,
        }))
      : [
          {
            id: 'numo-retry',
            label: t('Retry a failed node'),
            cta: { href: actionHref(base, 'retry') },
            disabled: true,
            disabledTooltip: t('No node has failed.'),
            accessReview,
          },
        ]),
    {
      id: 'numo-skip',
      label: t('Skip a node'),
      description: t('Leave a node out of this rollout'),
      cta: { href: actionHref(base, 'skip') },
      ...(nothingToSkip(rc, t) ? { disabled: true, disabledTooltip: nothingToSkip(rc, t) } : {}),
      accessReview,
    },
  ];
  return actions;
};

/** The hook `console.action/resource-provider` calls with the run config. */
const useRunConfigActions = (rc: MutexRunConfig): ExtensionHookResult<Action[]> => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const actions = React.useMemo(() => runConfigActions(rc, t), [rc, t]);
  return [actions, true, undefined];
};

export default useRunConfigActions;
