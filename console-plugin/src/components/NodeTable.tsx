// The rollout's nodes: phase, start, each step's duration, the Jobs with links to their pods (and logs), the
// message, and retry/skip; filterable by phase.
import * as React from 'react';
import { useTranslation } from 'react-i18next';
import {
  Button,
  Content,
  Label,
  type LabelProps,
  ToggleGroup,
  ToggleGroupItem,
  Toolbar,
  ToolbarContent,
  ToolbarItem,
  Tooltip,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { jobNamespace } from '../types';
import type { NodePhase, Step, TopologyStatus } from '../types';
import { groupByDomain, groupTestId, type WaveState, waveStateWords } from '../topology';
import { NODE_PHASES } from '../types';
import { NODE_STEPS, STEP_COLOURS, stepNames } from '../timeline/colours';
import { lasting, shownTime } from '../time';
import { paths } from '../models';
import { NodePhaseLabel } from './labels';
import type { NodeRow } from './nodeRows';
import type { ActionKind } from '../actions/patches';
import type { Translate } from '../i18n';

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
  /** Under a rollout by failure domain: the rows grouped by domain, in wave order, each under its wave's header. */
  domains?: { topology: TopologyStatus; domains: Record<string, string> };
};

const WAVE_COLOURS: Record<WaveState, LabelProps['color']> = {
  done: 'green',
  'in-progress': 'blue',
  pending: 'grey',
};

const stepCell = (row: NodeRow, step: Step, t: Translate) => {
  const time = row.steps[step];
  const shown = time
    ? time.running
      ? t('{{lasting}} (so far)', { lasting: lasting(time.millis) })
      : lasting(time.millis)
    : '—';
  // Where numo saw the drain (MachineConfigNodes, OpenShift 4.20 and later), the upgrade says when it ended.
  if (step !== 'Upgrade' || row.drained === undefined) return shown;
  return (
    <>
      {shown}
      <div className="pf-v6-u-font-size-sm pf-v6-u-color-200" data-test="node-drained">
        {t('Drained {{time}}', { time: shownTime(row.drained) })}
      </div>
    </>
  );
};

const Jobs: React.FC<{ row: NodeRow }> = ({ row }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  if (!row.jobs.length) return <>—</>;
  return (
    <ul className="pf-v6-c-list pf-m-plain" style={{ margin: 0 }}>
      {row.jobs.map((job) => (
        <li key={`${jobNamespace(job)}/${job.name}`} data-test={`job-${job.name}`} data-result={job.result}>
          <a href={paths.job(jobNamespace(job), job.name)}>{job.name}</a>{' '}
          {t('({{phase}}, attempt {{attempt}}: {{result}})', {
            phase: job.phase,
            attempt: job.attempt ?? 1,
            result: job.result,
          })}{' '}
          <a
            href={paths.jobPods(jobNamespace(job), job.name)}
            data-test="job-pods"
            aria-label={t('Pods and logs of Job {{name}}', { name: job.name })}
          >
            {t('pods and logs')}
          </a>
          {job.message && <div className="pf-v6-u-color-200">{job.message}</div>}
        </li>
      ))}
    </ul>
  );
};

export const NodeTable: React.FC<NodeTableProps> = ({ rows, canPatch, skipped, onAction, hideActions, domains }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const names = stepNames(t);
  const [filter, setFilter] = React.useState<NodePhase | typeof ALL>(ALL);
  const present = NODE_PHASES.filter((p) => rows.some((r) => r.phase === p));
  const shown = filter === ALL ? rows : rows.filter((r) => r.phase === filter);
  const noAccess = t('You may not patch this run config.');
  const columns = NODE_STEPS.length + (hideActions ? 5 : 6);
  const groups = domains ? groupByDomain(shown, (r) => r.name, domains.topology, domains.domains, t) : undefined;
  const waveWords = waveStateWords(t);

  const nodeRow = (row: NodeRow) => {
    const retryable = row.phase === 'Failed' || (row.phase === 'Ungated' && !row.entry?.acceptedAt);
    const skippable = !['Done', 'Skipped'].includes(row.phase) && !skipped.includes(row.name);
    return (
      <Tr key={row.name} data-test={`node-row-${row.name}`} data-phase={row.phase}>
        <Td dataLabel={t('Node')}>
          <a href={paths.node(row.name)}>{row.name}</a>
        </Td>
        <Td dataLabel={t('Phase')}>
          <NodePhaseLabel phase={row.phase} />
        </Td>
        <Td dataLabel={t('Started')}>{row.started ? shownTime(row.started) : '—'}</Td>
        {NODE_STEPS.map((step) => (
          <Td key={step} dataLabel={names[step]} data-test={`step-${step}`}>
            {stepCell(row, step, t)}
          </Td>
        ))}
        <Td dataLabel={t('Jobs')}>
          <Jobs row={row} />
        </Td>
        <Td dataLabel={t('Message')} data-test="node-message">
          {row.message ?? ''}
        </Td>
        {!hideActions && (
          <Td dataLabel={t('Actions')} isActionCell>
            {retryable && (
              <Tooltip content={canPatch ? t('Retry node {{name}}', { name: row.name }) : noAccess}>
                <Button
                  variant="secondary"
                  size="sm"
                  isAriaDisabled={!canPatch}
                  onClick={() => onAction('retry', row.name)}
                  data-test="node-action-retry"
                  aria-label={t('Retry node {{name}}', { name: row.name })}
                >
                  {t('Retry')}
                </Button>
              </Tooltip>
            )}{' '}
            {skippable && (
              <Tooltip content={canPatch ? t('Skip node {{name}}', { name: row.name }) : noAccess}>
                <Button
                  variant="link"
                  size="sm"
                  isAriaDisabled={!canPatch}
                  onClick={() => onAction('skip', row.name)}
                  data-test="node-action-skip"
                  aria-label={t('Skip node {{name}}', { name: row.name })}
                >
                  {t('Skip')}
                </Button>
              </Tooltip>
            )}
          </Td>
        )}
      </Tr>
    );
  };

  return (
    <>
      {!hideActions && (
        <Toolbar id="numo-node-toolbar">
          <ToolbarContent>
            <ToolbarItem>
              <ToggleGroup aria-label={t('Filter nodes by phase')} data-test="phase-filter">
                {[ALL, ...present].map((phase) => (
                  <ToggleGroupItem
                    key={phase}
                    data-test={`filter-${phase}`}
                    text={
                      phase === ALL
                        ? t('All ({{n}})', { n: rows.length })
                        : t('{{phase}} ({{n}})', { phase, n: rows.filter((r) => r.phase === phase).length })
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
      <Table aria-label={t('Nodes of the rollout')} variant="compact" data-test="node-table">
        <Thead>
          <Tr>
            <Th>{t('Node')}</Th>
            <Th>{t('Phase')}</Th>
            <Th>{t('Started')}</Th>
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
                {names[step]}
              </Th>
            ))}
            <Th>{t('Jobs')}</Th>
            <Th>{t('Message')}</Th>
            {!hideActions && <Th screenReaderText={t('Actions')} />}
          </Tr>
        </Thead>
        <Tbody>
          {shown.length === 0 && (
            <Tr>
              <Td colSpan={columns}>
                <Content component="p">
                  {rows.length ? t('No node in this phase.') : t('No node has started yet.')}
                </Content>
              </Td>
            </Tr>
          )}
          {!groups && shown.map(nodeRow)}
        </Tbody>
        {groups
          ?.filter((group) => filter === ALL || group.rows.length > 0)
          .map((group) => (
            <Tbody
              key={`domain-${group.domain}`}
              data-test={`domain-group-${groupTestId(group.domain)}`}
              data-state={group.state}
            >
              <Tr data-test="domain-group-header">
                <Td colSpan={columns}>
                  <strong data-test="domain-name">{group.label}</strong>{' '}
                  <span data-test="domain-progress">
                    {t('{{done}} of {{count}} nodes done', {
                      done: group.done,
                      count: group.nodes,
                      defaultValue_one: '{{done}} of {{count}} node done',
                    })}
                  </span>{' '}
                  <Label color={WAVE_COLOURS[group.state]} isCompact data-test="domain-state">
                    {waveWords[group.state]}
                  </Label>
                </Td>
              </Tr>
              {group.rows.map(nodeRow)}
            </Tbody>
          ))}
      </Table>
    </>
  );
};
