// Type-level check (`npm run typecheck` type-checks the shell, e2e/shell/tsconfig.json), never bundled: the adapter's
// runtime names have the signatures of the SDK's own, so the plugin's code type-checked against the SDK runs against
// the adapter.
import type {
  consoleFetchJSON as SdkConsoleFetchJSON,
  K8sResourceCommon,
  UseK8sWatchResource,
  k8sPatch as SdkPatchResource,
  k8sListItems as SdkListItems,
  useAccessReview as SdkUseAccessReview,
} from '@openshift-console/dynamic-plugin-sdk';
import * as adapter from './sdk-adapter';

type Parameters0<F> = F extends (...args: infer A) => unknown ? A : never;

// The SDK's calls are accepted by the adapter...
export const watch: (...args: Parameters<UseK8sWatchResource>) => unknown = adapter.useK8sWatchResource;
export const patch: (...args: Parameters0<typeof SdkPatchResource>) => Promise<K8sResourceCommon> =
  adapter.k8sPatchResource;
export const review: (...args: Parameters0<typeof SdkUseAccessReview>) => [boolean, boolean] = adapter.useAccessReview;
export const list: (...args: Parameters0<typeof SdkListItems>) => Promise<K8sResourceCommon[]> =
  adapter.k8sListResourceItems;
export const fetchJSON: (url: string, method?: string) => Promise<unknown> = adapter.consoleFetchJSON;
// ...and the adapter's fetch is called as the SDK's would be.
export const sdkFetchJSON: (url: string, method?: string) => Promise<unknown> = (url, method) =>
  (null as unknown as typeof SdkConsoleFetchJSON)(url, method);
