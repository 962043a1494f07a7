// The "Upgrade gate" tab of a Node: why numo holds it, and its entry in the run config's status (its steps and Jobs)
// while it is in flight.
import * as React from 'react';
import { useTranslation } from 'react-i18next';
import {
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  PageSection,
  Spinner,
  Title,
} from '@patternfly/react-core';
import type { PageComponentProps } from '@openshift-console/dynamic-plugin-sdk';
import type { Node } from '../types';
import { useNow, useRunConfigs } from '../hooks';
import { nodeHoldReason } from '../holdReason';
import { paths } from '../models';
import { NodeTable } from './NodeTable';
import { nodeRows } from './nodeRows';
import { HoldReasonText } from './NodeGateStatus';

const NodeGateTab: React.FC<PageComponentProps<Node>> = ({ obj }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const [runConfigs, loaded, error] = useRunConfigs();
  const now = useNow();
  if (!obj) return null;
  if (!loaded && !error) {
    return (
      <PageSection>
        <Spinner aria-label={t("Reading numo's run configs")} />
      </PageSection>
    );
  }
  const reason = nodeHoldReason(obj, runConfigs, t);
  const noStatus = t('no status');
  const rc = reason.runConfig;
  const name = obj.metadata?.name ?? '';
  const rows = rc ? nodeRows(rc, undefined, now, t).filter((r) => r.name === name) : [];
  return (
    <PageSection data-test="node-gate-tab">
      <Title headingLevel="h2">{t('Upgrade gate')}</Title>
      <DescriptionList isHorizontal>
        <DescriptionListGroup>
          <DescriptionListTerm>{t('numo')}</DescriptionListTerm>
          <DescriptionListDescription>
            <HoldReasonText reason={reason} />
          </DescriptionListDescription>
        </DescriptionListGroup>
        {rc?.metadata?.namespace && rc.metadata.name && (
          <DescriptionListGroup>
            <DescriptionListTerm>{t('Run config')}</DescriptionListTerm>
            <DescriptionListDescription>
              <a href={paths.rolloutTab(rc.metadata.namespace, rc.metadata.name)}>
                {rc.metadata.namespace}/{rc.metadata.name}
              </a>{' '}
              {rc.status?.progress
                ? t('({{phase}}, {{progress}} done)', {
                    phase: rc.status.phase ?? noStatus,
                    progress: rc.status.progress,
                  })
                : t('({{phase}})', { phase: rc.status?.phase ?? noStatus })}
            </DescriptionListDescription>
          </DescriptionListGroup>
        )}
      </DescriptionList>
      {rows.length > 0 && rc && (
        // Retry and skip live on the run config's Rollout tab, where the rollout is in view.
        <NodeTable rows={rows} canPatch={false} skipped={[]} onAction={() => undefined} hideActions />
      )}
    </PageSection>
  );
};

export default NodeGateTab;
