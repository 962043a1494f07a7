// Wires the mocked SDK (each test file mocks '@openshift-console/dynamic-plugin-sdk' with jest.fn()s for
// useK8sWatchResource, useAccessReview and k8sPatch)
// to fixtures: watches answer by kind, the access review by `allowed`.
import * as sdk from '@openshift-console/dynamic-plugin-sdk';
import type { WatchK8sResource } from '@openshift-console/dynamic-plugin-sdk';
import type { ConfigMap, MutexRunConfig, MutexTarget, Node } from '../types';

export type World = {
  runConfigs?: MutexRunConfig[];
  record?: ConfigMap;
  nodes?: Node[];
  targets?: MutexTarget[];
  allowed?: boolean;
  accessLoading?: boolean;
};

export const mocked = sdk as unknown as {
  useK8sWatchResource: jest.Mock;
  useAccessReview: jest.Mock;
  k8sPatch: jest.Mock;
  k8sListItems?: jest.Mock;
};

export const setWorld = (world: World) => {
  mocked.useK8sWatchResource.mockImplementation((resource: WatchK8sResource | null) => {
    if (!resource) return [undefined, true, undefined];
    const kind = resource.groupVersionKind?.kind ?? resource.kind;
    if (kind === 'MutexRunConfig') {
      const all = world.runConfigs ?? [];
      if (resource.isList) return [all, true, undefined];
      const one = all.find(
        (rc) => rc.metadata?.name === resource.name && rc.metadata?.namespace === resource.namespace,
      );
      return [one ?? {}, true, one ? undefined : { code: 404 }];
    }
    if (kind === 'ConfigMap') {
      const r = world.record;
      return r && r.metadata?.name === resource.name ? [r, true, undefined] : [{}, true, { code: 404 }];
    }
    if (kind === 'Node') return [world.nodes ?? [], true, undefined];
    return [undefined, true, undefined];
  });
  mocked.useAccessReview.mockReturnValue([world.allowed ?? true, world.accessLoading ?? false]);
  mocked.k8sPatch.mockImplementation(({ resource }) => Promise.resolve(resource));
  mocked.k8sListItems?.mockImplementation(({ model }) =>
    Promise.resolve(model.kind === 'MutexTarget' ? (world.targets ?? []) : []),
  );
};
