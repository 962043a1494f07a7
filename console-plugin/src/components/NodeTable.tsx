// The rollout's nodes: phase, start, each step's duration, the Jobs with links to their pods (and logs), the
// message, and retry/skip; filterable by phase.
import * as React from 'react';
import {
  Button,
  Content,
  ToggleGroup,
  ToggleGroupItem,
  Toolbar,
  ToolbarContent,
  ToolbarItem,
  Tooltip,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { jobNamespace } from '../types';
import type { NodePhase, Step } from '../types';
import { NODE_PHASES } from '../types';
import { NODE_STEPS, STEP_COLOURS, STEP_NAMES } from '../timeline/colours';
import { lasting, shownTime } from '../time';
import { paths } from '../models';
import { NodePhaseLabel } from './labels';
import type { NodeRow } from './nodeRows';
import type { ActionKind } from '../actions/patches';

export const ALL = 'All';

export type NodeTableProps = {
  rows: NodeRow[];
  /** Whether the user may patch the run config (retry and skip are disabled otherwise). */
  canPatch: boolean;
  /** Names the skip annotation already lists. */
  skipped: string[];
  onAction: (kind: ActionKind, node: string) => void;
  /** Without the filter and the retry/skip column (a single node's view). */
  hideActions?: boolean;
};

const stepCell = (row: NodeRow, step: Step) => {
  const time = row.steps[step];
  const shown = time ? `${lasting(time.millis)}${time.running ? ' (so far)' : ''}` : '—';
  // Where numo saw the drain (MachineConfigNodes, OpenShift 4.20 and later), the upgrade says when it ended.
  if (step !== 'Upgrade' || row.drained === undefined) return shown;
  return (
    <>
      {shown}
      <div className="pf-v6-u-font-size-sm pf-v6-u-color-200" data-test="node-drained">
        Drained {shownTime(row.drained)}
      </div>
    </>
  );
};

const Jobs: React.FC<{ row: NodeRow }> = ({ row }) => {
  if (!row.jobs.length) return <>—</>;
  return (
    <ul className="pf-v6-c-list pf-m-plain" style={{ margin: 0 }}>
      {row.jobs.map((job) => (
        <li key={`${jobNamespace(job)}/${job.name}`} data-test={`job-${job.name}`} data-result={job.result}>
          <a href={paths.job(jobNamespace(job), job.name)}>{job.name}</a> ({job.phase}, attempt {job.attempt ?? 1}:{' '}
          {job.result}){' '}
          <a
            href={paths.jobPods(jobNamespace(job), job.name)}
            data-test="job-pods"
            aria-label={`Pods and logs of Job ${job.name}`}
          >
            pods and logs
          </a>
          {job.message && <div className="pf-v6-u-color-200">{job.message}</div>}
        </li>
      ))}
    </ul>
  );
};

export const NodeTable: React.FC<NodeTableProps> = ({ rows, canPatch, skipped, onAction, hideActions }) => {
  const [filter, setFilter] = React.useState<NodePhase | typeof ALL>(ALL);
  const present = NODE_PHASES.filter((p) => rows.some((r) => r.phase === p));
  const shown = filter === ALL ? rows : rows.filter((r) => r.phase === filter);
  const noAccess = 'You may not patch this run config.';

  return (
    <>
      {!hideActions && (
        <Toolbar id="numo-node-toolbar">
          <ToolbarContent>
            <ToolbarItem>
              <ToggleGroup aria-label="Filter nodes by phase" data-test="phase-filter">
                {[ALL, ...present].map((phase) => (
                  <ToggleGroupItem
                    key={phase}
                    data-test={`filter-${phase}`}
                    text={
                      phase === ALL ? `All (${rows.length})` : `${phase} (${rows.filter((r) => r.phase === phase).length})`
                    }
                    buttonId={`numo-filter-${phase}`}
                    isSelected={filter === phase}
                    onChange={() => setFilter(phase as NodePhase | typeof ALL)}
                  />
                ))}
              </ToggleGroup>
            </ToolbarItem>
          </ToolbarContent>
        </Toolbar>
      )}
      <Table aria-label="Nodes of the rollout" variant="compact" data-test="node-table">
        <Thead>
          <Tr>
            <Th>Node</Th>
            <Th>Phase</Th>
            <Th>Started</Th>
            {NODE_STEPS.map((step) => (
              <Th key={step}>
                <span
                  aria-hidden
                  style={{
                    display: 'inline-block',
                    width: 10,
                    height: 10,
                    marginRight: 4,
                    background: STEP_COLOURS[step],
                  }}
                />
                {STEP_NAMES[step]}
              </Th>
            ))}
            <Th>Jobs</Th>
            <Th>Message</Th>
            {!hideActions && <Th screenReaderText="Actions" />}
          </Tr>
        </Thead>
        <Tbody>
          {shown.length === 0 && (
            <Tr>
              <Td colSpan={NODE_STEPS.length + 6}>
                <Content component="p">{rows.length ? 'No node in this phase.' : 'No node has started yet.'}</Content>
              </Td>
            </Tr>
          )}
          {shown.map((row) => {
            const retryable = row.phase === 'Failed' || (row.phase === 'Ungated' && !row.entry?.acceptedAt);
            const skippable = !['Done', 'Skipped'].includes(row.phase) && !skipped.includes(row.name);
            return (
              <Tr key={row.name} data-test={`node-row-${row.name}`} data-phase={row.phase}>
                <Td dataLabel="Node">
                  <a href={paths.node(row.name)}>{row.name}</a>
                </Td>
                <Td dataLabel="Phase">
                  <NodePhaseLabel phase={row.phase} />
                </Td>
                <Td dataLabel="Started">{row.started ? shownTime(row.started) : '—'}</Td>
                {NODE_STEPS.map((step) => (
                  <Td key={step} dataLabel={STEP_NAMES[step]} data-test={`step-${step}`}>
                    {stepCell(row, step)}
                  </Td>
                ))}
                <Td dataLabel="Jobs">
                  <Jobs row={row} />
                </Td>
                <Td dataLabel="Message" data-test="node-message">
                  {row.message ?? ''}
                </Td>
                {!hideActions && (
                  <Td dataLabel="Actions" isActionCell>
                    {retryable && (
                      <Tooltip content={canPatch ? `Retry node ${row.name}` : noAccess}>
                        <Button
                          variant="secondary"
                          size="sm"
                          isAriaDisabled={!canPatch}
                          onClick={() => onAction('retry', row.name)}
                          data-test="node-action-retry"
                          aria-label={`Retry node ${row.name}`}
                        >
                          Retry
                        </Button>
                      </Tooltip>
                    )}{' '}
                    {skippable && (
                      <Tooltip content={canPatch ? `Skip node ${row.name}` : noAccess}>
                        <Button
                          variant="link"
                          size="sm"
                          isAriaDisabled={!canPatch}
                          onClick={() => onAction('skip', row.name)}
                          data-test="node-action-skip"
                          aria-label={`Skip node ${row.name}`}
                        >
                          Skip
                        </Button>
                      </Tooltip>
                    )}
                  </Td>
                )}
              </Tr>
            );
          })}
        </Tbody>
      </Table>
    </>
  );
};
