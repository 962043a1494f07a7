// The confirmation of an action on a run config: says exactly what numo will do and what the patch changes, then
// sends the patch as the logged-in user.
import * as React from 'react';
import { useTranslation } from 'react-i18next';
import {
  Alert,
  Button,
  Form,
  FormGroup,
  FormHelperText,
  HelperText,
  HelperTextItem,
  Modal,
  ModalBody,
  ModalFooter,
  ModalHeader,
  Radio,
  TextInput,
} from '@patternfly/react-core';
import type { MutexRunConfig } from '../types';
import { MutexRunConfigModel } from '../models';
import { k8sPatchResource } from '../sdk';
import {
  type ActionKind,
  actionPatch,
  actionText,
  retryableNodes,
  skippableNodes,
  skippedByAnnotation,
} from './patches';

const OTHER = '__other__';
const NODE_NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

export type ActionModalProps = {
  kind: ActionKind;
  runConfig: MutexRunConfig;
  /** The node a retry or skip is for; without it, the modal offers the nodes it applies to. */
  node?: string;
  onClose: () => void;
};

const errorMessage = (e: unknown): string => {
  if (e && typeof e === 'object' && 'message' in e && typeof (e as { message: unknown }).message === 'string') {
    return (e as { message: string }).message;
  }
  return String(e);
};

export const ActionModal: React.FC<ActionModalProps> = ({ kind, runConfig, node, onClose }) => {
  const { t } = useTranslation('plugin__numo-console-plugin');
  const needsNode = kind === 'retry' || kind === 'skip';
  const candidates = React.useMemo(
    () =>
      kind === 'retry'
        ? retryableNodes(runConfig).map((n) => n.name)
        : kind === 'skip'
          ? skippableNodes(runConfig)
          : [],
    [kind, runConfig],
  );
  const [choice, setChoice] = React.useState<string>(node ?? candidates[0] ?? (kind === 'skip' ? OTHER : ''));
  const [typed, setTyped] = React.useState('');
  const [busy, setBusy] = React.useState(false);
  const [error, setError] = React.useState<string>();

  const chosen = needsNode ? (choice === OTHER ? typed.trim() : choice) : undefined;
  const alreadySkipped = kind === 'skip' && !!chosen && skippedByAnnotation(runConfig).includes(chosen);
  const valid = !needsNode || (!!chosen && NODE_NAME.test(chosen) && !alreadySkipped);
  const text = actionText(kind, runConfig, t, chosen || undefined);

  const confirm = async () => {
    if (!valid || busy) return;
    setBusy(true);
    setError(undefined);
    try {
      await k8sPatchResource({
        model: MutexRunConfigModel,
        resource: runConfig,
        data: actionPatch(kind, runConfig, chosen),
      });
      onClose();
    } catch (e) {
      setError(errorMessage(e));
      setBusy(false);
    }
  };

  const titleId = `numo-action-title-${kind}`;
  const bodyId = `numo-action-body-${kind}`;
  return (
    <Modal variant="small" isOpen onClose={onClose} aria-labelledby={titleId} aria-describedby={bodyId}>
      <ModalHeader title={text.title} labelId={titleId} />
      <ModalBody id={bodyId}>
        <div data-test="action-modal" data-action={kind}>
          {needsNode && !node && (
            <Form
              onSubmit={(e) => {
                e.preventDefault();
                void confirm();
              }}
            >
              <FormGroup role="radiogroup" label={t('Node')} fieldId="numo-action-node" isRequired isStack>
                {candidates.length === 0 && kind === 'retry' && <p>{t('No node has failed.')}</p>}
                {candidates.map((c) => (
                  <Radio
                    key={c}
                    id={`numo-action-node-${c}`}
                    name="numo-action-node"
                    label={c}
                    value={c}
                    isChecked={choice === c}
                    onChange={() => setChoice(c)}
                    data-test={`node-choice-${c}`}
                  />
                ))}
                {kind === 'skip' && (
                  <Radio
                    id="numo-action-node-other"
                    name="numo-action-node"
                    label={t('Another node…')}
                    value={OTHER}
                    isChecked={choice === OTHER}
                    onChange={() => setChoice(OTHER)}
                    data-test="node-choice-other"
                  />
                )}
              </FormGroup>
              {kind === 'skip' && choice === OTHER && (
                <FormGroup label={t('Node name')} fieldId="numo-action-node-name" isRequired>
                  <TextInput
                    id="numo-action-node-name"
                    data-test="node-input"
                    value={typed}
                    onChange={(_e, value) => setTyped(value)}
                    aria-label={t('Node name')}
                    validated={typed && !NODE_NAME.test(typed.trim()) ? 'error' : 'default'}
                  />
                  <FormHelperText>
                    <HelperText>
                      <HelperTextItem>{t('The name of a node of this rollout, e.g. worker-3.')}</HelperTextItem>
                    </HelperText>
                  </FormHelperText>
                </FormGroup>
              )}
            </Form>
          )}
          {(!needsNode || chosen) && (
            <>
              <p data-test="action-description">{text.effect}</p>
              <p data-test="action-change">
                <small>{text.change}</small>
              </p>
            </>
          )}
          {alreadySkipped && (
            <Alert
              isInline
              isPlain
              variant="info"
              title={t('The skip annotation already names {{name}}.', { name: chosen })}
            />
          )}
          {error && (
            <Alert isInline variant="danger" title={t('The run config was not changed')} data-test="action-error">
              {error}
            </Alert>
          )}
        </div>
      </ModalBody>
      <ModalFooter>
        <Button
          variant={kind === 'skip' ? 'danger' : 'primary'}
          onClick={() => void confirm()}
          isDisabled={!valid || busy}
          isLoading={busy}
          data-test="confirm"
        >
          {text.confirm}
        </Button>
        <Button variant="link" onClick={onClose} data-test="cancel">
          {t('Cancel')}
        </Button>
      </ModalFooter>
    </Modal>
  );
};
