// The "Rollout" tab of a MutexRunConfig: where the rollout is, when it should end, what holds the next node, the
// timeline, the nodes, and pause/resume, retry and skip.
import * as React from 'react';
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
import type { MutexRunConfig } from '../types';
import { useCanPatch, useNow, useRolloutRecord, useRunConfig, useTargetNodes } from '../hooks';
import { holdOfNextNode } from '../holdReason';
import { ms, shownTime } from '../time';
import { layoutTimeline } from '../timeline/layout';
import { TimelineChart } from '../timeline/TimelineChart';
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

const BASIS: Record<string, string> = {
  ThisRollout: "this rollout's nodes",
  EarlierRollouts: 'earlier rollouts (no node of this one has finished yet)',
  Defaults: "numo's defaults (no figure yet; expect it to move once a node finishes)",
};

const Summary: React.FC<{ rc: MutexRunConfig }> = ({ rc }) => {
  const status = rc.status ?? {};
  const { done, total } = progressOf(rc);
  const estimate = status.estimate;
  const failed = status.phase === 'Failed';
  return (
    <DescriptionList isHorizontal columnModifier={{ default: '1Col', lg: '2Col' }} data-test="rollout-summary">
      <DescriptionListGroup>
        <DescriptionListTerm>Phase</DescriptionListTerm>
        <DescriptionListDescription>
          <RunPhaseLabel phase={status.phase} />
          {rc.spec?.paused && (
            <Label color="yellow" isCompact style={{ marginLeft: 8 }} data-test="paused">
              Paused
            </Label>
          )}
        </DescriptionListDescription>
      </DescriptionListGroup>
      <DescriptionListGroup>
        <DescriptionListTerm>Progress</DescriptionListTerm>
        <DescriptionListDescription>
          <Progress
            data-test="progress"
            data-done={done}
            data-total={total}
            value={total ? (done / total) * 100 : 0}
            label={`${done}/${total} nodes`}
            valueText={`${done} of ${total} nodes done`}
            measureLocation={ProgressMeasureLocation.outside}
            variant={failed ? ProgressVariant.danger : status.phase === 'Completed' ? ProgressVariant.success : undefined}
            aria-label="Nodes done"
            size="sm"
          />
        </DescriptionListDescription>
      </DescriptionListGroup>
      <DescriptionListGroup>
        <DescriptionListTerm>Target version</DescriptionListTerm>
        <DescriptionListDescription data-test="target-version">
          {status.targetConfig?.rollout ?? status.targetVersion ?? '—'}
        </DescriptionListDescription>
      </DescriptionListGroup>
      <DescriptionListGroup>
        <DescriptionListTerm>{status.phase === 'Completed' ? 'Finished' : 'Estimated end'}</DescriptionListTerm>
        <DescriptionListDescription data-test="eta">
          {status.phase === 'Completed' ? (
            shownTime(ms(status.finishedAt))
          ) : estimate ? (
            <>
              <strong>{shownTime(ms(estimate.end))}</strong>
              {` · ${estimate.remainingNodes} node${estimate.remainingNodes === 1 ? '' : 's'} to go`}
              <div data-test="eta-basis">From {BASIS[estimate.basis] ?? estimate.basis}.</div>
              <div data-test="eta-assumes">{estimate.assumes}</div>
            </>
          ) : (
            'No estimate yet'
          )}
        </DescriptionListDescription>
      </DescriptionListGroup>
      <DescriptionListGroup>
        <DescriptionListTerm>Started</DescriptionListTerm>
        <DescriptionListDescription>{shownTime(ms(status.startedAt))}</DescriptionListDescription>
      </DescriptionListGroup>
      <DescriptionListGroup>
        <DescriptionListTerm>Message</DescriptionListTerm>
        <DescriptionListDescription data-test="message">{status.message ?? '—'}</DescriptionListDescription>
      </DescriptionListGroup>
    </DescriptionList>
  );
};

const Hold: React.FC<{ rc: MutexRunConfig }> = ({ rc }) => {
  const status = rc.status ?? {};
  const hold = holdOfNextNode(rc);
  const since = ms(status.heldSince);
  const window = status.nextWindow;
  return (
    <Stack hasGutter>
      {rc.spec?.paused && (
        <StackItem>
          <Alert isInline variant="info" title="The rollout is paused" data-test="paused-alert">
            numo starts no further node until someone resumes it; nodes in flight finish.
          </Alert>
        </StackItem>
      )}
      {hold && (
        <StackItem>
          <Alert
            isInline
            variant="warning"
            title={`The next node is held${since !== undefined ? ` since ${shownTime(since)}` : ''}`}
            data-test="hold"
          >
            <p data-test="hold-reason">{hold}</p>
            {(status.blockedBy ?? []).length > 0 && (
              <LabelGroup categoryName="Held by" data-test="blocked-by" numLabels={11}>
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
          Next maintenance window: <strong>{shownTime(ms(window.start))}</strong>
          {window.end ? ` – ${shownTime(ms(window.end))}` : ' (no end)'}
        </StackItem>
      )}
      {(status.foreignChanges ?? []).length > 0 && (
        <StackItem>
          <Alert
            isInline
            variant={(status.foreignChanges ?? []).some((c) => c.unresolved) ? 'danger' : 'warning'}
            title="Someone else changed what numo holds"
            data-test="foreign-changes"
          >
            <List>
              {(status.foreignChanges ?? []).map((c) => (
                <ListItem key={`${c.object}/${c.field}`}>
                  {c.object} {c.field}: changed by {c.changedBy}
                  {c.changes > 1 ? ` ${c.changes} times in a row` : ''}, last {shownTime(ms(c.lastSeen))}
                  {c.unresolved ? ' (not put back yet)' : ''}. {c.action}
                </ListItem>
              ))}
            </List>
          </Alert>
        </StackItem>
      )}
    </Stack>
  );
};

type OpenAction = { kind: ActionKind; node?: string };

const RolloutTab: React.FC<PageComponentProps<MutexRunConfig>> = ({ obj }) => {
  const [live] = useRunConfig(obj?.metadata?.namespace, obj?.metadata?.name);
  const rc = live ?? obj;
  const [record] = useRolloutRecord(rc);
  const now = useNow();
  const [canPatch, checking] = useCanPatch(rc);
  const [action, setAction] = React.useState<OpenAction | undefined>(() =>
    typeof window === 'undefined' ? undefined : actionFromSearch(window.location.search),
  );

  const layout = React.useMemo(() => (rc ? layoutTimeline(rc, record, now) : undefined), [rc, record, now]);
  const targetNodes = useTargetNodes(rc);
  const rows = React.useMemo(
    () => (rc ? nodeRows(rc, record, now, targetNodes) : []),
    [rc, record, now, targetNodes],
  );

  if (!rc) {
    return (
      <PageSection>
        <EmptyState titleText="No run config" headingLevel="h2">
          <EmptyStateBody>This tab shows a MutexRunConfig's rollout.</EmptyStateBody>
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
            <Alert isInline variant="info" title="numo has not reported on this run config yet" />
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
            <CardTitle component="h2">Timeline</CardTitle>
            <CardBody style={{ overflowX: 'auto' }}>{layout && <TimelineChart layout={layout} />}</CardBody>
          </Card>
        </StackItem>
        <StackItem>
          <Card isPlain>
            <CardTitle component="h2">Nodes</CardTitle>
            <CardBody>
              <NodeTable rows={rows} canPatch={canPatch} skipped={skippedByAnnotation(rc)} onAction={open} />
            </CardBody>
          </Card>
        </StackItem>
      </Stack>
      {action && canPatch && <ActionModal kind={action.kind} node={action.node} runConfig={rc} onClose={close} />}
    </PageSection>
  );
};

export default RolloutTab;
