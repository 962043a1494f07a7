// The watches and checks the plugin's components share.
import * as React from 'react';
import type { ConfigMap, MutexRunConfig, MutexTarget, Node } from './types';
import { ConfigMapModel, gvk, MutexRunConfigModel, MutexTargetModel, NodeModel } from './models';
import { domainOf } from './topology';
import { recordName } from './record';
import { k8sListResourceItems, useAccessReview, useK8sWatchResource } from './sdk';

/** Every MutexRunConfig the user may list, in every namespace. */
export const useRunConfigs = (): [MutexRunConfig[], boolean, unknown] => {
  const [data, loaded, error] = useK8sWatchResource<MutexRunConfig[]>({
    groupVersionKind: gvk(MutexRunConfigModel),
    isList: true,
    namespaced: true,
  });
  return [data ?? [], loaded, error];
};

/** One run config, kept current. */
export const useRunConfig = (namespace?: string, name?: string): [MutexRunConfig | undefined, boolean, unknown] => {
  const [data, loaded, error] = useK8sWatchResource<MutexRunConfig>(
    namespace && name ? { groupVersionKind: gvk(MutexRunConfigModel), namespace, name, isList: false } : null,
  );
  return [data && data.metadata ? data : undefined, loaded, error];
};

/** The nodes of the run config's targets, in numo's release order (target order, then name); empty while they
 * cannot be read. Read once, not watched (a page already holds several watches), and again whenever the rollout's
 * progress or phase changes. */
export const useTargetNodes = (rc?: MutexRunConfig): string[] => {
  const [targets, setTargets] = React.useState<MutexTarget[]>([]);
  const refs = JSON.stringify(rc?.spec?.mutexTargets ?? []);
  const when = `${rc?.status?.phase}/${rc?.status?.progress}/${refs}`;
  React.useEffect(() => {
    if (!rc) return undefined;
    let current = true;
    k8sListResourceItems<MutexTarget>({ model: MutexTargetModel })
      // An empty answer keeps the state as it is, so that nothing renders again for no change.
      .then((items) => current && setTargets((prev) => (items.length || prev.length ? items : prev)))
      .catch(() => current && setTargets((prev) => (prev.length ? [] : prev)));
    return () => {
      current = false;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [when]);
  return React.useMemo(() => {
    const own = rc?.metadata?.namespace;
    const names: string[] = [];
    (rc?.spec?.mutexTargets ?? []).forEach((ref) => {
      const target = targets.find(
        (t) => t.metadata?.name === ref.name && t.metadata?.namespace === (ref.namespace || own),
      );
      [...(target?.status?.nodes ?? [])].sort().forEach((n) => names.includes(n) || names.push(n));
    });
    return names;
  }, [rc, targets]);
};

/** The run config's rollout record, `numo-timeline-<name>` (absent, or not readable, as undefined). */
export const useRolloutRecord = (rc?: MutexRunConfig): [ConfigMap | undefined, boolean, unknown] => {
  const namespace = rc?.metadata?.namespace;
  const name = rc?.metadata?.name;
  const [data, loaded, error] = useK8sWatchResource<ConfigMap>(
    namespace && name
      ? { groupVersionKind: gvk(ConfigMapModel), namespace, name: recordName(name), isList: false }
      : null,
  );
  return [data && data.metadata ? data : undefined, loaded, error];
};

/** Whether the logged-in user may patch the run config: [allowed, loading]. */
export const useCanPatch = (rc?: MutexRunConfig): [boolean, boolean] => {
  const [allowed, loading] = useAccessReview({
    group: MutexRunConfigModel.apiGroup,
    resource: MutexRunConfigModel.plural,
    verb: 'patch',
    name: rc?.metadata?.name,
    namespace: rc?.metadata?.namespace,
  });
  return [!!allowed, !!loading];
};

/** Now, in milliseconds, moving every `everyMs`. */
export const useNow = (everyMs = 30000): number => {
  const [now, setNow] = React.useState(() => Date.now());
  React.useEffect(() => {
    const timer = setInterval(() => setNow(Date.now()), everyMs);
    return () => clearInterval(timer);
  }, [everyMs]);
  return now;
};

/** Under a rollout by failure domain (`status.topology`): each node's domain, the value of its label
 * `status.topology.key` ('' without it); undefined without topology or while the nodes cannot be read. */
export const useNodeDomains = (rc?: MutexRunConfig): Record<string, string> | undefined => {
  const key = rc?.status?.topology?.key;
  const [nodes, loaded, error] = useK8sWatchResource<Node[]>(
    key ? { groupVersionKind: gvk(NodeModel), isList: true } : null,
  );
  return React.useMemo(() => {
    if (!key || !loaded || error || !Array.isArray(nodes)) return undefined;
    return Object.fromEntries(
      nodes.map((n) => [n.metadata?.name ?? '', domainOf(n.metadata?.labels, key)] as [string, string]),
    );
  }, [key, nodes, loaded, error]);
};
