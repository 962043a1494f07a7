// The "Upgrade gate" item of a Node's details: why numo holds the node, in words, and a link to its rollout.
import * as React from 'react';
import { useTranslation } from 'react-i18next';
import { Label, Spinner } from '@patternfly/react-core';
import type { DetailsItemComponentProps } from '@openshift-console/dynamic-plugin-sdk';
import type { Node } from '../types';
import { useRunConfigs } from '../hooks';
import { type HoldReason, holdStateWords, nodeHoldReason } from '../holdReason';
import { paths } from '../models';
import { HOLD_STATE_COLOURS } from './labels';

/** The words after the label: without a first word the label already says ("held: …" under a "held" label). */
export const afterLabel = (label: string, text: string) =>
  text.toLowerCase().startsWith(`${label.toLowerCase()}:`) ? text.slice(label.length + 1).trim() : text;

/** The words of nodeHoldReason, its state as a label, and the run config's Rollout tab. */
export const HoldReasonText: React.FC<{ reason: HoldReason }> = ({ reason }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const rc = reason.runConfig;
  const label = reason.phase ?? holdStateWords(t)[reason.state];
  return (
    <span data-test="node-status" data-state={reason.state}>
      <Label color={HOLD_STATE_COLOURS[reason.state]} isCompact>
        {label}
      </Label>{' '}
      <span data-test="node-hold-text">{afterLabel(label, reason.text)}</span>
      {rc?.metadata?.namespace && rc.metadata.name && (
        <>
          {' '}
          (
          <a href={paths.rolloutTab(rc.metadata.namespace, rc.metadata.name)} data-test="node-run-config">
            {rc.metadata.namespace}/{rc.metadata.name}
          </a>
          )
        </>
      )}
    </span>
  );
};

export const HoldReasonView: React.FC<{ node: Node }> = ({ node }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const [runConfigs, loaded, error] = useRunConfigs();
  if (!loaded && !error) return <Spinner size="md" aria-label={t("Reading numo's run configs")} />;
  return (
    <>
      <HoldReasonText reason={nodeHoldReason(node, runConfigs, t)} />
      {!!error && !runConfigs.length && <span> {t("(numo's run configs cannot be read)")}</span>}
    </>
  );
};

const NodeGateStatus: React.FC<DetailsItemComponentProps<Node>> = ({ obj }) => <HoldReasonView node={obj} />;

export default NodeGateStatus;
