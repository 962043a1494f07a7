// The models the plugin reads and patches. The console knows these kinds itself; the plugin spells them out so that
// it needs no model lookup from the SDK.
import type { K8sModel } from '@openshift-console/dynamic-plugin-sdk';
import { GROUP, VERSION, RULE_LABEL_PREFIX as RULE_LABEL } from './api-names';

export { GROUP, VERSION, RETRY_ANNOTATION, SKIP_ANNOTATION } from './api-names';

export const MutexRunConfigModel: K8sModel = {
  apiGroup: GROUP,
  apiVersion: VERSION,
  kind: 'MutexRunConfig',
  label: 'MutexRunConfig',
  labelPlural: 'MutexRunConfigs',
  plural: 'mutexrunconfigs',
  abbr: 'MRC',
  namespaced: true,
  crd: true,
  shortNames: ['mrc'],
};

export const MutexTargetModel: K8sModel = {
  apiGroup: GROUP,
  apiVersion: VERSION,
  kind: 'MutexTarget',
  label: 'MutexTarget',
  labelPlural: 'MutexTargets',
  plural: 'mutextargets',
  abbr: 'MT',
  namespaced: true,
  crd: true,
};

export const ConfigMapModel: K8sModel = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  label: 'ConfigMap',
  labelPlural: 'ConfigMaps',
  plural: 'configmaps',
  abbr: 'CM',
  namespaced: true,
};

export const NodeModel: K8sModel = {
  apiVersion: 'v1',
  kind: 'Node',
  label: 'Node',
  labelPlural: 'Nodes',
  plural: 'nodes',
  abbr: 'N',
  namespaced: false,
};

/** The group-version-kind of each model, as useK8sWatchResource takes it. */
export const gvk = (model: K8sModel): { group?: string; version: string; kind: string } =>
  model.apiGroup
    ? { group: model.apiGroup, version: model.apiVersion, kind: model.kind }
    : { version: model.apiVersion, kind: model.kind };

/** The console's reference of the run config kind, used in its URLs and as the action context. */
export const MUTEX_RUN_CONFIG_REF = `${GROUP}~${VERSION}~MutexRunConfig`;

/** Prefix of the node labels numo sets on every node it holds, one per rule (`<prefix><rule>.<namespace>`). */
export const RULE_LABEL_PREFIX = `${RULE_LABEL}/`;

/** Console paths (plain links: the plugin uses no console link component). */
export const paths = {
  runConfig: (ns: string, name: string) =>
    `/k8s/ns/${encodeURIComponent(ns)}/${MUTEX_RUN_CONFIG_REF}/${encodeURIComponent(name)}`,
  rolloutTab: (ns: string, name: string) => `${paths.runConfig(ns, name)}/rollout`,
  node: (name: string) => `/k8s/cluster/nodes/${encodeURIComponent(name)}`,
  job: (ns: string, name: string) => `/k8s/ns/${encodeURIComponent(ns)}/jobs/${encodeURIComponent(name)}`,
  jobPods: (ns: string, name: string) => `/k8s/ns/${encodeURIComponent(ns)}/jobs/${encodeURIComponent(name)}/pods`,
};
