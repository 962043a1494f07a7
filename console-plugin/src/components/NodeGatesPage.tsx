// "Node upgrade gates": every node with what numo does with it or why it holds it, next to the console's Nodes
// list (the console offers plugins no column on its Node list; see README.md).
import * as React from 'react';
import { useTranslation } from 'react-i18next';
import {
  Alert,
  Content,
  PageSection,
  Spinner,
  Title,
  ToggleGroup,
  ToggleGroupItem,
  Toolbar,
  ToolbarContent,
  ToolbarItem,
  Label,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import type { Node } from '../types';
import { gvk, NodeModel, paths } from '../models';
import { useRunConfigs } from '../hooks';
import { useK8sWatchResource } from '../sdk';
import { type HoldReason, holdStateWords, nodeHoldReason } from '../holdReason';
import { HOLD_STATE_COLOURS } from './labels';

type Shown = 'gated' | 'all';

export const NodeGatesPage: React.FC = () => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const [nodes, nodesLoaded, nodesError] = useK8sWatchResource<Node[]>({
    groupVersionKind: gvk(NodeModel),
    isList: true,
  });
  const [runConfigs, loaded, runConfigsError] = useRunConfigs();
  const [shown, setShown] = React.useState<Shown>('gated');
  const reasons: [Node, HoldReason][] = React.useMemo(
    () =>
      [...(nodes ?? [])]
        .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''))
        .map((n) => [n, nodeHoldReason(n, runConfigs, t)]),
    [nodes, runConfigs, t],
  );
  const rows = shown === 'all' ? reasons : reasons.filter(([, r]) => r.state !== 'not-gated');
  return (
    <PageSection data-test="node-gates-page">
      <Title headingLevel="h1">{t('Node upgrade gates')}</Title>
      <Content component="p">{t('What numo does with each node, or why it holds it.')}</Content>
      <Toolbar>
        <ToolbarContent>
          <ToolbarItem>
            <ToggleGroup aria-label={t('Which nodes')} data-test="node-gates-filter">
              <ToggleGroupItem
                text={t('Gated by numo')}
                buttonId="numo-gated"
                isSelected={shown === 'gated'}
                onChange={() => setShown('gated')}
              />
              <ToggleGroupItem
                text={t('All nodes')}
                buttonId="numo-all"
                isSelected={shown === 'all'}
                onChange={() => setShown('all')}
              />
            </ToggleGroup>
          </ToolbarItem>
        </ToolbarContent>
      </Toolbar>
      {!!nodesError && (
        <Alert isInline variant="warning" title={t('The nodes cannot be read')} data-test="node-gates-error">
          {String((nodesError as { message?: string }).message ?? nodesError)}
        </Alert>
      )}
      {(!nodesLoaded && !nodesError) || (!loaded && !runConfigsError) ? (
        <Spinner aria-label={t('Reading nodes and run configs')} />
      ) : (
        <Table aria-label={t('Nodes and their upgrade gates')} variant="compact">
          <Thead>
            <Tr>
              <Th>{t('Node')}</Th>
              <Th>{t('State')}</Th>
              <Th>{t('Why')}</Th>
              <Th>{t('Run config')}</Th>
            </Tr>
          </Thead>
          <Tbody>
            {rows.length === 0 && (
              <Tr>
                <Td colSpan={4}>{shown === 'gated' ? t('numo gates no node now.') : t('No node.')}</Td>
              </Tr>
            )}
            {rows.map(([node, reason]) => {
              const name = node.metadata?.name ?? '';
              const rc = reason.runConfig;
              return (
                <Tr key={name} data-test={`node-gate-row-${name}`} data-state={reason.state}>
                  <Td dataLabel={t('Node')}>
                    <a href={paths.node(name)}>{name}</a>
                  </Td>
                  <Td dataLabel={t('State')}>
                    <Label color={HOLD_STATE_COLOURS[reason.state]} isCompact>
                      {reason.phase ?? holdStateWords(t)[reason.state]}
                    </Label>
                  </Td>
                  <Td dataLabel={t('Why')} data-test="node-hold-text">
                    {reason.text}
                  </Td>
                  <Td dataLabel={t('Run config')}>
                    {rc?.metadata?.namespace && rc.metadata.name ? (
                      <a href={paths.rolloutTab(rc.metadata.namespace, rc.metadata.name)}>
                        {rc.metadata.namespace}/{rc.metadata.name}
                      </a>
                    ) : (
                      '—'
                    )}
                  </Td>
                </Tr>
              );
            })}
          </Tbody>
        </Table>
      )}
    </PageSection>
  );
};

export default NodeGatesPage;
