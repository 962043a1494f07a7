// The harness page: the plugin's exposed modules (package.json consolePlugin.exposedModules, as the console loads
// them) rendered as the console would, for one run config and one node read from the URL:
//
//   /?ns=<namespace>&name=<run config>&node=<node>
//
// - the run config's Rollout tab (console.tab/horizontalNav), given the object as the console's details page does;
// - the run config's actions (console.action/resource-provider) as buttons, as the console's Actions menu lists
//   them: an action whose cta is a console link "navigates" to the Rollout tab with the link's query, remounting it
//   as the console's router would;
// - the node's "Upgrade gate" details item (console.resource/details-item), given the Node.
//
// '@openshift-console/dynamic-plugin-sdk' is ./sdk-adapter.ts here: everything is read from and written to the real
// API server through the e2e server's proxy. i18next is set up as the console sets it up, with the plugin's English
// catalogue (locales/en) bundled.
import * as React from 'react';
import { createRoot } from 'react-dom/client';
import i18next from 'i18next';
import { initReactI18next } from 'react-i18next';
import english from '../locales/en/plugin__numo-console-plugin.json';
import { englishOnly } from '../src/i18n';
import {
  Button,
  Card,
  CardBody,
  CardTitle,
  DescriptionList,
  DescriptionListDescription,
  DescriptionListGroup,
  DescriptionListTerm,
  Flex,
  FlexItem,
  PageSection,
  Title,
  Tooltip,
} from '@patternfly/react-core';
import '@patternfly/react-core/dist/styles/base.css';
// The same module the plugin's SDK imports resolve to.
import { useAccessReview, useK8sWatchResource } from './sdk-adapter';
import type { AccessReviewResourceAttributes, K8sResourceCommon } from './sdk-adapter';
import RolloutTab from '@exposed/RolloutTab';
import useRunConfigActions from '@exposed/runConfigActions';
import NodeGateStatus from '@exposed/NodeGateStatus';

type Action = {
  id: string;
  label: React.ReactNode;
  description?: string;
  cta: (() => void) | { href: string; external?: boolean };
  disabled?: boolean;
  disabledTooltip?: React.ReactNode;
  accessReview?: AccessReviewResourceAttributes;
};

const GROUP = 'openshift-optional.skrzypek.io';
const VERSION = 'v1alpha1';

void i18next.use(initReactI18next).init(englishOnly(english));

const query = new URLSearchParams(window.location.search);
const namespace = query.get('ns') ?? '';
const name = query.get('name') ?? '';
const nodeName = query.get('node') ?? '';

/** The console's router, as far as the actions need it: a link's query lands on the harness's own address. */
const navigate = (href: string) => {
  const target = new URL(href, window.location.origin);
  const params = new URLSearchParams(window.location.search);
  target.searchParams.forEach((value, key) => params.set(key, value));
  window.history.pushState(window.history.state, '', `${window.location.pathname}?${params}`);
  window.dispatchEvent(new CustomEvent('harness-navigate', { detail: href }));
};

/** One entry of the Actions menu: disabled as the console disables it (its own flag, or the access review). */
const MenuAction: React.FC<{ action: Action }> = ({ action }) => {
  const [allowed, loading] = useAccessReview(action.accessReview ?? {}, undefined, true);
  const denied = !!action.accessReview && !loading && !allowed;
  const disabled = !!action.disabled || denied || (!!action.accessReview && loading);
  const button = (
    <Button
      variant="secondary"
      size="sm"
      isAriaDisabled={disabled}
      data-test={`menu-action-${action.id}`}
      onClick={() => (typeof action.cta === 'function' ? action.cta() : navigate(action.cta.href))}
    >
      {action.label}
    </Button>
  );
  const tip = action.disabled ? action.disabledTooltip : denied ? 'You may not do this.' : action.description;
  return tip ? <Tooltip content={tip}>{button}</Tooltip> : button;
};

const ActionsMenu: React.FC<{ rc: K8sResourceCommon }> = ({ rc }) => {
  const [actions, loaded, error] = (useRunConfigActions as (o: K8sResourceCommon) => [Action[], boolean, unknown])(rc);
  if (error) {
    return <span data-test="menu-error">{String(error)}</span>;
  }
  if (!loaded) {
    return null;
  }
  return (
    <Flex data-test="actions-menu">
      {actions.map((action) => (
        <FlexItem key={action.id}>
          <MenuAction action={action} />
        </FlexItem>
      ))}
    </Flex>
  );
};

const Harness: React.FC = () => {
  const [rc, rcLoaded, rcError] = useK8sWatchResource<K8sResourceCommon>(
    namespace && name
      ? { groupVersionKind: { group: GROUP, version: VERSION, kind: 'MutexRunConfig' }, namespace, name }
      : null,
  );
  const [node, nodeLoaded, nodeError] = useK8sWatchResource<K8sResourceCommon>(
    nodeName ? { groupVersionKind: { group: '', version: 'v1', kind: 'Node' }, name: nodeName } : null,
  );
  // A "navigation" to the Rollout tab mounts it afresh, as the console's router does.
  const [visit, setVisit] = React.useState(0);
  const [navigated, setNavigated] = React.useState<string>();
  React.useEffect(() => {
    const onNavigate = (e: Event) => {
      setNavigated((e as CustomEvent<string>).detail);
      setVisit((v) => v + 1);
    };
    window.addEventListener('harness-navigate', onNavigate);
    return () => window.removeEventListener('harness-navigate', onNavigate);
  }, []);

  return (
    // Not PatternFly's Page: its own scroll container would cut full-page screenshots to the window.
    <div data-test="harness" style={{ padding: 16 }}>
      <PageSection>
        <Title headingLevel="h1" data-test="harness-title">
          numo console plugin harness: MutexRunConfig {namespace}/{name}
        </Title>
        {rcError ? <p data-test="harness-error">{String(rcError)}</p> : null}
      </PageSection>
      <PageSection>
        <Card>
          <CardTitle>{"Actions (the console's Actions menu)"}</CardTitle>
          <CardBody>
            {rcLoaded && rc?.metadata ? <ActionsMenu rc={rc} /> : null}
            {navigated && (
              <small data-test="menu-navigated" data-href={navigated}>
                went to {navigated}
              </small>
            )}
          </CardBody>
        </Card>
      </PageSection>
      <div data-test="harness-rollout-tab">{rcLoaded && rc?.metadata ? <RolloutTab key={visit} obj={rc} /> : null}</div>
      {nodeName && (
        <PageSection data-test="harness-node">
          <Card>
            <CardTitle>Node {nodeName}</CardTitle>
            <CardBody>
              <DescriptionList isHorizontal>
                <DescriptionListGroup>
                  <DescriptionListTerm>Upgrade gate</DescriptionListTerm>
                  <DescriptionListDescription>
                    {nodeLoaded && node?.metadata ? <NodeGateStatus obj={node} /> : null}
                    {nodeError ? <span data-test="harness-node-error">{String(nodeError)}</span> : null}
                  </DescriptionListDescription>
                </DescriptionListGroup>
              </DescriptionList>
            </CardBody>
          </Card>
        </PageSection>
      )}
    </div>
  );
};

createRoot(document.getElementById('root') as HTMLElement).render(<Harness />);
