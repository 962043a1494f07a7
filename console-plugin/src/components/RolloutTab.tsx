// The "Rollout" tab of a MutexRunConfig: where the rollout is, when it should end, what holds the next node, the
// timeline, the nodes, and pause/resume, retry and skip.
import * as React from 'react';
import { useTranslation } from 'react-i18next';
import {
  Alert,
  Card,
  CardBody,
  CardTitle,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  EmptyState,
  EmptyStateBody,
  Label,
  LabelGroup,
  List,
  ListItem,
  PageSection,
  Progress,
  ProgressMeasureLocation,
  ProgressVariant,
  Stack,
  StackItem,
} from '@patternfly/react-core';
import type { PageComponentProps } from '@openshift-console/dynamic-plugin-sdk';
import type { EstimateBasis, ForeignChange, MutexRunConfig } from '../types';
import type { Translate } from '../i18n';
import { useCanPatch, useNodeDomains, useNow, useRolloutRecord, useRunConfig, useTargetNodes } from '../hooks';
import { holdOfNextNode } from '../holdReason';
import { ms, shownTime } from '../time';
import { RolloutTimeline } from '../timeline/TimelineChart';
import { ActionModal } from '../actions/ActionModal';
import { actionFromSearch, clearActionFromLocation, RolloutActions } from '../actions/RolloutActions';
import type { ActionKind } from '../actions/patches';
import { skippedByAnnotation } from '../actions/patches';
import { RunPhaseLabel } from './labels';
import { NodeTable } from './NodeTable';
import { nodeRows } from './nodeRows';

/** `3/10` as done and total; else counted from the status. */
export const progressOf = (rc: MutexRunConfig): { done: number; total: number } => {
  const status = rc.status ?? {};
  const match = /^(\d+)\/(\d+)$/.exec(status.progress ?? '');
  if (match) return { done: parseInt(match[1], 10), total: parseInt(match[2], 10) };
  const done = (status.completedNodes?.length ?? 0) + (status.skippedNodes?.length ?? 0);
  return { done, total: Math.max(status.totalNodes ?? 0, done) };
};

/** What the estimate rests on, as the sentence "From …" says it. */
const basisWords = (t: Translate): Record<EstimateBasis, string> => ({
  ThisRollout: t("From this rollout's nodes."),
  EarlierRollouts: t('From earlier rollouts (no node of this one has finished yet).'),
  Defaults: t("From numo's defaults (no figure yet; expect it to move once a node finishes)."),
});

const Summary: React.FC<{ rc: MutexRunConfig }> = ({ rc }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const status = rc.status ?? {};
  const { done, total } = progressOf(rc);
  const estimate = status.estimate;
  const failed = status.phase === 'Failed';
  return (
    <DescriptionList isHorizontal columnModifier={{ default: '1Col', lg: '2Col' }} data-test="rollout-summary">
      <DescriptionListGroup>
        <DescriptionListTerm>{t('Phase')}</DescriptionListTerm>
        <DescriptionListDescription>
          <RunPhaseLabel phase={status.phase} />
          {rc.spec?.paused && (
            <Label color="yellow" isCompact style={{ marginLeft: 8 }} data-test="paused">
              {t('Paused')}
            </Label>
          )}
        </DescriptionListDescription>
      </DescriptionListGroup>
      <DescriptionListGroup>
        <DescriptionListTerm>{t('Progress')}</DescriptionListTerm>
        <DescriptionListDescription>
          <Progress
            data-test="progress"
            data-done={done}
            data-total={total}
            value={total ? (done / total) * 100 : 0}
            label={t('{{done}}/{{total}} nodes', { done, total })}
            valueText={t('{{done}} of {{total}} nodes done', { done, total })}
            measureLocation={ProgressMeasureLocation.outside}
            variant={
              failed ? ProgressVariant.danger : status.phase === 'Completed' ? ProgressVariant.success : undefined
            }
            aria-label={t('Nodes done')}
            size="sm"
          />
        </DescriptionListDescription>
      </DescriptionListGroup>
      <DescriptionListGroup>
        <DescriptionListTerm>{t('Target version')}</DescriptionListTerm>
        <DescriptionListDescription data-test="target-version">
          {status.targetConfig?.rollout ?? status.targetVersion ?? '—'}
        </DescriptionListDescription>
      </DescriptionListGroup>
      <DescriptionListGroup>
        <DescriptionListTerm>{status.phase === 'Completed' ? t('Finished') : t('Estimated end')}</DescriptionListTerm>
        <DescriptionListDescription data-test="eta">
          {status.phase === 'Completed' ? (
            shownTime(ms(status.finishedAt))
          ) : estimate ? (
            <>
              <strong>{shownTime(ms(estimate.end))}</strong>
              {' · '}
              {t('{{count}} nodes to go', { count: estimate.remainingNodes, defaultValue_one: '{{count}} node to go' })}
              <div data-test="eta-basis">{basisWords(t)[estimate.basis] ?? estimate.basis}</div>
              <div data-test="eta-assumes">{estimate.assumes}</div>
            </>
          ) : (
            t('No estimate yet')
          )}
        </DescriptionListDescription>
      </DescriptionListGroup>
      <DescriptionListGroup>
        <DescriptionListTerm>{t('Started')}</DescriptionListTerm>
        <DescriptionListDescription>{shownTime(ms(status.startedAt))}</DescriptionListDescription>
      </DescriptionListGroup>
      <DescriptionListGroup>
        <DescriptionListTerm>{t('Message')}</DescriptionListTerm>
        <DescriptionListDescription data-test="message">{status.message ?? '—'}</DescriptionListDescription>
      </DescriptionListGroup>
    </DescriptionList>
  );
};

const Hold: React.FC<{ rc: MutexRunConfig }> = ({ rc }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const status = rc.status ?? {};
  const hold = holdOfNextNode(rc, t);
  const since = ms(status.heldSince);
  const window = status.nextWindow;
  return (
    <Stack hasGutter>
      {rc.spec?.paused && (
        <StackItem>
          <Alert isInline variant="info" title={t('The rollout is paused')} data-test="paused-alert">
            {t('numo starts no further node until someone resumes it; nodes in flight finish.')}
          </Alert>
        </StackItem>
      )}
      {hold && (
        <StackItem>
          <Alert
            isInline
            variant="warning"
            title={
              since !== undefined
                ? t('The next node is held since {{time}}', { time: shownTime(since) })
                : t('The next node is held')
            }
            data-test="hold"
          >
            <p data-test="hold-reason">{hold}</p>
            {(status.blockedBy ?? []).length > 0 && (
              <LabelGroup categoryName={t('Held by')} data-test="blocked-by" numLabels={11}>
                {(status.blockedBy ?? []).map((b) => (
                  <Label key={b.check} color="orange" isCompact data-test={`blocked-by-${b.check}`}>
                    {b.check}
                  </Label>
                ))}
              </LabelGroup>
            )}
            {since !== undefined && <span data-test="held-since" data-since={status.heldSince} hidden />}
          </Alert>
        </StackItem>
      )}
      {window && (
        <StackItem data-test="next-window">
          {t('Next maintenance window:')} <strong>{shownTime(ms(window.start))}</strong>
          {window.end ? ` – ${shownTime(ms(window.end))}` : ` ${t('(no end)')}`}
        </StackItem>
      )}
      {(status.foreignChanges ?? []).length > 0 && (
        <StackItem>
          <Alert
            isInline
            variant={(status.foreignChanges ?? []).some((c) => c.unresolved) ? 'danger' : 'warning'}
            title={t('Someone else changed what numo holds')}
            data-test="foreign-changes"
          >
            <List>
              {(status.foreignChanges ?? []).map((c) => (
                <ListItem key={`${c.object}/${c.field}`}>{foreignChangeText(c, t)}</ListItem>
              ))}
            </List>
          </Alert>
        </StackItem>
      )}
    </Stack>
  );
};

/** One change by other hands, in a sentence: who changed what, how often and when, and what numo does about it. */
const foreignChangeText = (c: ForeignChange, t: Translate): string => {
  const values = {
    object: c.object,
    field: c.field,
    by: c.changedBy,
    times: c.changes,
    last: shownTime(ms(c.lastSeen)),
  };
  const changed =
    c.changes > 1
      ? t('{{object}} {{field}}: changed by {{by}} {{times}} times in a row, last {{last}}', values)
      : t('{{object}} {{field}}: changed by {{by}}, last {{last}}', values);
  return `${c.unresolved ? t('{{changed}} (not put back yet).', { changed }) : t('{{changed}}.', { changed })} ${c.action}`;
};

type OpenAction = { kind: ActionKind; node?: string };

const RolloutTab: React.FC<PageComponentProps<MutexRunConfig>> = ({ obj }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const [live] = useRunConfig(obj?.metadata?.namespace, obj?.metadata?.name);
  const rc = live ?? obj;
  const [record] = useRolloutRecord(rc);
  const now = useNow();
  const [canPatch, checking] = useCanPatch(rc);
  const [action, setAction] = React.useState<OpenAction | undefined>(() =>
    typeof window === 'undefined' ? undefined : actionFromSearch(window.location.search),
  );

  const domains = useNodeDomains(rc);
  const targetNodes = useTargetNodes(rc);
  const rows = React.useMemo(
    () => (rc ? nodeRows(rc, record, now, t, targetNodes) : []),
    [rc, record, now, t, targetNodes],
  );

  if (!rc) {
    return (
      <PageSection>
        <EmptyState titleText={t('No run config')} headingLevel="h2">
          <EmptyStateBody>{t("This tab shows a MutexRunConfig's rollout.")}</EmptyStateBody>
        </EmptyState>
      </PageSection>
    );
  }
  const open = (kind: ActionKind, node?: string) => {
    if (canPatch) setAction({ kind, node });
  };
  const close = () => {
    setAction(undefined);
    clearActionFromLocation();
  };
  return (
    <PageSection data-test="rollout-tab">
      <Stack hasGutter>
        <StackItem>
          <Summary rc={rc} />
        </StackItem>
        {!rc.status && (
          <StackItem>
            <Alert isInline variant="info" title={t('numo has not reported on this run config yet')} />
          </StackItem>
        )}
        <StackItem>
          <Hold rc={rc} />
        </StackItem>
        <StackItem>
          <RolloutActions runConfig={rc} canPatch={canPatch} checking={checking} onAction={open} />
        </StackItem>
        <StackItem>
          <Card isPlain>
            <CardTitle component="h2">{t('Timeline')}</CardTitle>
            <CardBody style={{ overflowX: 'auto' }}>
              <RolloutTimeline rc={rc} />
            </CardBody>
          </Card>
        </StackItem>
        <StackItem>
          <Card isPlain>
            <CardTitle component="h2">{t('Nodes')}</CardTitle>
            <CardBody>
              <NodeTable
                rows={rows}
                canPatch={canPatch}
                skipped={skippedByAnnotation(rc)}
                onAction={open}
                domains={rc.status?.topology && domains ? { topology: rc.status.topology, domains } : undefined}
              />
            </CardBody>
          </Card>
        </StackItem>
      </Stack>
      {action && canPatch && <ActionModal kind={action.kind} node={action.node} runConfig={rc} onClose={close} />}
    </PageSection>
  );
};

export default RolloutTab;
