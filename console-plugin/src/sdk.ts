// The one module that takes runtime values from the console's SDK; every other module imports them from here (and
// only types from the SDK itself). See README.md, "SDK surface".
//
// useK8sWatchResource, useAccessReview and consoleFetchJSON are the SDK's own names. The SDK's JSON-patch call is k8sPatchResource
// in the SDK's sources; its 4.22 package exports it as `k8sPatch` (core-api: `k8sPatchResource as k8sPatch`). The
// plugin calls it k8sPatchResource and takes whichever of the two names the host provides.
import * as sdk from '@openshift-console/dynamic-plugin-sdk';
import type { K8sModel, K8sResourceCommon, Patch } from '@openshift-console/dynamic-plugin-sdk';

export type PatchOptions<R> = { model: K8sModel; resource: R; data: Patch[] };
export type PatchResource = <R extends K8sResourceCommon>(options: PatchOptions<R>) => Promise<R>;

type MaybePatch = { k8sPatchResource?: PatchResource; k8sPatch?: PatchResource };

export type ListOptions = { model: K8sModel; queryParams?: { ns?: string; labelSelector?: string } };
export type ListItems = <R extends K8sResourceCommon>(options: ListOptions) => Promise<R[]>;
type MaybeList = { k8sListResourceItems?: ListItems; k8sListItems?: ListItems };

export const useK8sWatchResource = sdk.useK8sWatchResource;
export const useAccessReview = sdk.useAccessReview;

/** Fetches JSON as the console does (its CSRF token, its error handling): the plugin's way to numo's backend
 * through the console's plugin proxy. */
export const consoleFetchJSON = (url: string): Promise<unknown> => {
  const fetchJSON = (sdk as unknown as { consoleFetchJSON?: (url: string, method?: string) => Promise<unknown> })
    .consoleFetchJSON;
  if (!fetchJSON) {
    return Promise.reject(new Error('The console provides no consoleFetchJSON to this plugin.'));
  }
  return fetchJSON(url, 'GET');
};

/** Sends a JSON patch (RFC 6902) as the logged-in user. */
export const k8sPatchResource: PatchResource = (options) => {
  const provided = sdk as unknown as MaybePatch;
  const patch = provided.k8sPatchResource ?? provided.k8sPatch;
  if (!patch) {
    return Promise.reject(new Error('The console provides no k8sPatchResource to this plugin.'));
  }
  return patch(options);
};

/** Lists objects once (no watch) as the logged-in user: the SDK's k8sListResourceItems, exported by its 4.22 package
 * as `k8sListItems`. */
export const k8sListResourceItems: ListItems = (options) => {
  const provided = sdk as unknown as MaybeList;
  const list = provided.k8sListResourceItems ?? provided.k8sListItems;
  if (!list) {
    return Promise.reject(new Error('The console provides no k8sListResourceItems to this plugin.'));
  }
  return list(options);
};
