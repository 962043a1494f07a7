/*
 * The console shell's '@openshift-console/dynamic-plugin-sdk' (its share scope provides it to the plugin, as the
 * console provides its own; webpack.config.js): the runtime names the plugin uses, implemented against the real API
 * server through the shell server's proxy (same origin, `/api` and `/apis`).
 *
 * - useK8sWatchResource: a list, then a watch stream (`?watch=1&resourceVersion=...`, JSON lines over chunked
 *   HTTP) that is resumed from the last resourceVersion when the server ends it, and started again with a fresh
 *   list when the resourceVersion is too old (410) or the connection breaks. A named object is watched as the
 *   console does: the list endpoint with `fieldSelector=metadata.name=<name>`.
 * - k8sPatchResource: PATCH with `application/json-patch+json` (an array of operations, as the SDK sends), or
 *   `application/merge-patch+json` for a plain object.
 * - useAccessReview: a SelfSubjectAccessReview, once per attributes (the console memoizes it too).
 * - consoleFetchJSON: a fetch of JSON from the shell's own origin (the plugin reaches numo's backend through the
 *   shell server's plugin proxy, `/api/proxy/plugin/...`, as through the console's); an answer not ok throws an
 *   HttpError with the status and the JSON's `message`, as the console's does.
 *
 * Resource names (plural, namespaced) come from API discovery, as the console's models would give them.
 */
import * as React from 'react';

/* ------------------------------------------------------------------------------------------------ types */

export type K8sGroupVersionKind = { group?: string; version: string; kind: string };

export type Selector = {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
};

export type WatchK8sResource = {
  kind?: string;
  groupVersionKind?: K8sGroupVersionKind;
  name?: string;
  namespace?: string;
  isList?: boolean;
  selector?: Selector;
  namespaced?: boolean;
  limit?: number;
  fieldSelector?: string;
  optional?: boolean;
  partialMetadata?: boolean;
};

export type K8sResourceCommon = {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
};

export type K8sModel = {
  apiGroup?: string;
  apiVersion: string;
  kind: string;
  plural: string;
  namespaced?: boolean;
  [key: string]: unknown;
};

export type Patch = { op: string; path: string; value?: unknown; from?: string };

export type AccessReviewResourceAttributes = {
  group?: string;
  resource?: string;
  subresource?: string;
  verb?: string;
  name?: string;
  namespace?: string;
};

/** The error the SDK's fetches reject with: the HTTP status and the API server's Status object. */
export class HttpError extends Error {
  constructor(
    message: string,
    public readonly code: number,
    public readonly response?: Response,
    public readonly json?: unknown,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/* ----------------------------------------------------------------------------------------------- fetch */

async function failure(response: Response): Promise<HttpError> {
  const text = await response.text().catch(() => '');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const message =
    (json && typeof json === 'object' && typeof (json as { message?: unknown }).message === 'string'
      ? (json as { message: string }).message
      : text) || `${response.status} ${response.statusText}`;
  return new HttpError(message, response.status, response, json);
}

async function fetchJSON<T>(url: string, init: RequestInit = {}): Promise<T> {
  const response = await fetch(url, {
    ...init,
    headers: { Accept: 'application/json', ...(init.headers as Record<string, string> | undefined) },
  });
  if (!response.ok) {
    throw await failure(response);
  }
  return (await response.json()) as T;
}

/* ------------------------------------------------------------------------------------------- discovery */

type ApiResource = { name: string; kind: string; namespaced: boolean; verbs?: string[] };
const discovery = new Map<string, Promise<ApiResource[]>>();

function groupVersionPath(group: string | undefined, version: string): string {
  return group && group !== 'core' ? `/apis/${group}/${version}` : `/api/${version}`;
}

/** The resource (plural, namespaced) of a kind in a group version, from the API server's discovery. */
async function discover(group: string | undefined, version: string, kind: string): Promise<ApiResource> {
  const path = groupVersionPath(group, version);
  let resources = discovery.get(path);
  if (!resources) {
    resources = fetchJSON<{ resources: ApiResource[] }>(path).then((list) => list.resources);
    discovery.set(path, resources);
    resources.catch(() => discovery.delete(path));
  }
  const found = (await resources).find((r) => r.kind === kind && !r.name.includes('/'));
  if (!found) {
    throw new HttpError(`the API server serves no kind ${kind} in ${path}`, 404);
  }
  return found;
}

/** A kind reference as the console writes it: `group~version~Kind`, or a core kind (`Node`). */
function parseReference(resource: WatchK8sResource): K8sGroupVersionKind {
  if (resource.groupVersionKind) {
    return resource.groupVersionKind;
  }
  const kind = resource.kind ?? '';
  const parts = kind.split('~');
  if (parts.length === 3) {
    return { group: parts[0], version: parts[1], kind: parts[2] };
  }
  return { group: '', version: 'v1', kind };
}

function apiVersionOf(gvk: K8sGroupVersionKind): string {
  return gvk.group && gvk.group !== 'core' ? `${gvk.group}/${gvk.version}` : gvk.version;
}

function requirement(e: { key: string; operator: string; values?: string[] }): string {
  const values = e.values ?? [];
  switch (e.operator) {
    case 'Exists':
      return e.key;
    case 'DoesNotExist':
      return `!${e.key}`;
    case 'In':
      return `${e.key} in (${values.join(',')})`;
    case 'NotIn':
      return `${e.key} notin (${values.join(',')})`;
    case 'Equals':
      return `${e.key}=${values[0]}`;
    case 'NotEquals':
      return `${e.key}!=${values[0]}`;
    default:
      return '';
  }
}

export function selectorToString(selector: Selector | undefined): string {
  if (!selector) {
    return '';
  }
  const labels = Object.entries(selector.matchLabels ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}=${v}`);
  return [...labels, ...(selector.matchExpressions ?? []).map(requirement)].filter(Boolean).join(',');
}

/* --------------------------------------------------------------------------------------- list and watch */

type Snapshot = { data: unknown; loaded: boolean; loadError: unknown };
type WatchEvent = { type: string; object: K8sResourceCommon & { code?: number; message?: string } };

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });

class Gone extends Error {}

/**
 * Lists, then watches from the list's resourceVersion for as long as `signal` is not aborted, and calls `emit` with
 * every new state of the objects.
 */
async function listAndWatch(resource: WatchK8sResource, emit: (s: Snapshot) => void, signal: AbortSignal) {
  const gvk = parseReference(resource);
  const apiVersion = apiVersionOf(gvk);
  let api: ApiResource;
  try {
    api = await discover(gvk.group, gvk.version, gvk.kind);
  } catch (e) {
    emit({ data: resource.isList ? [] : {}, loaded: false, loadError: e });
    return;
  }
  let base = groupVersionPath(gvk.group, gvk.version);
  if (api.namespaced && resource.namespace) {
    base += `/namespaces/${encodeURIComponent(resource.namespace)}`;
  }
  base += `/${api.name}`;
  const query = new URLSearchParams();
  const labels = selectorToString(resource.selector);
  if (labels) {
    query.set('labelSelector', labels);
  }
  const fields = [resource.fieldSelector, resource.name ? `metadata.name=${resource.name}` : undefined]
    .filter(Boolean)
    .join(',');
  if (fields) {
    query.set('fieldSelector', fields);
  }

  const objects = new Map<string, K8sResourceCommon>();
  const key = (o: K8sResourceCommon) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
  const publish = () => {
    const items = [...objects.values()];
    if (resource.isList) {
      emit({ data: items, loaded: true, loadError: undefined });
    } else if (items.length > 0) {
      emit({ data: items[0], loaded: true, loadError: undefined });
    } else {
      const missing = `${gvk.kind} ${resource.namespace ? `${resource.namespace}/` : ''}${resource.name} not found`;
      emit({ data: {}, loaded: false, loadError: new HttpError(missing, 404) });
    }
  };

  while (!signal.aborted) {
    let resourceVersion: string;
    try {
      const list = await fetchJSON<{ items: K8sResourceCommon[]; metadata: { resourceVersion: string } }>(
        `${base}?${query}`,
        { signal },
      );
      objects.clear();
      for (const item of list.items) {
        objects.set(key(item), { apiVersion, kind: gvk.kind, ...item });
      }
      resourceVersion = list.metadata.resourceVersion;
      publish();
    } catch (e) {
      if (signal.aborted) {
        return;
      }
      emit({ data: resource.isList ? [] : {}, loaded: false, loadError: e });
      await sleep(2000, signal);
      continue;
    }
    // Watch from the list, resuming after each end of the stream, until the resourceVersion is gone.
    try {
      for (;;) {
        const watch = new URLSearchParams(query);
        watch.set('watch', '1');
        watch.set('resourceVersion', resourceVersion);
        watch.set('allowWatchBookmarks', 'true');
        const response = await fetch(`${base}?${watch}`, { signal, headers: { Accept: 'application/json' } });
        if (response.status === 410) {
          throw new Gone();
        }
        if (!response.ok || !response.body) {
          throw await failure(response);
        }
        const reader = response.body.getReader();
        const decoder = new TextDecoder();
        let buffered = '';
        for (;;) {
          const { done, value } = await reader.read();
          if (done) {
            break;
          }
          buffered += decoder.decode(value, { stream: true });
          let newline: number;
          let changed = false;
          while ((newline = buffered.indexOf('\n')) >= 0) {
            const line = buffered.slice(0, newline).trim();
            buffered = buffered.slice(newline + 1);
            if (!line) {
              continue;
            }
            const event = JSON.parse(line) as WatchEvent;
            if (event.type === 'ERROR') {
              if (event.object.code === 410) {
                throw new Gone();
              }
              throw new HttpError(event.object.message ?? 'watch error', event.object.code ?? 500);
            }
            resourceVersion = event.object.metadata?.resourceVersion ?? resourceVersion;
            if (event.type === 'ADDED' || event.type === 'MODIFIED') {
              objects.set(key(event.object), { apiVersion, kind: gvk.kind, ...event.object });
              changed = true;
            } else if (event.type === 'DELETED') {
              objects.delete(key(event.object));
              changed = true;
            }
          }
          if (changed) {
            publish();
          }
        }
      }
    } catch (e) {
      if (signal.aborted) {
        return;
      }
      if (!(e instanceof Gone)) {
        console.warn(`watch of ${base} broke, listing again:`, e);
        await sleep(1000, signal);
      }
    }
  }
}

export function useK8sWatchResource<R>(initResource: WatchK8sResource | null): [R, boolean, unknown] {
  const key = initResource ? JSON.stringify(initResource) : '';
  const [snapshot, setSnapshot] = React.useState<Snapshot & { key: string }>(() => ({
    key,
    data: initResource?.isList ? [] : {},
    loaded: false,
    loadError: undefined,
  }));
  React.useEffect(() => {
    if (!key) {
      return undefined;
    }
    const resource = JSON.parse(key) as WatchK8sResource;
    const controller = new AbortController();
    setSnapshot({ key, data: resource.isList ? [] : {}, loaded: false, loadError: undefined });
    void listAndWatch(resource, (s) => !controller.signal.aborted && setSnapshot({ key, ...s }), controller.signal);
    return () => controller.abort();
  }, [key]);
  if (!initResource) {
    return [undefined as R, true, undefined];
  }
  if (snapshot.key !== key) {
    return [(initResource.isList ? [] : {}) as R, false, undefined];
  }
  return [snapshot.data as R, snapshot.loaded, snapshot.loadError];
}

/* --------------------------------------------------------------------------------------------- writes */

function resourceURL(
  model: K8sModel,
  options: { ns?: string; name?: string; path?: string; queryParams?: Record<string, string> },
): string {
  let url = groupVersionPath(model.apiGroup, model.apiVersion);
  if (model.namespaced && options.ns) {
    url += `/namespaces/${encodeURIComponent(options.ns)}`;
  }
  url += `/${model.plural}`;
  if (options.name) {
    url += `/${encodeURIComponent(options.name)}`;
  }
  if (options.path) {
    url += `/${options.path}`;
  }
  const query = new URLSearchParams(options.queryParams ?? {}).toString();
  return query ? `${url}?${query}` : url;
}

export function k8sPatchResource<R extends K8sResourceCommon>(options: {
  model: K8sModel;
  resource: R;
  data: Patch[] | Record<string, unknown>;
  path?: string;
  queryParams?: Record<string, string>;
}): Promise<R> {
  const { model, resource, data, path, queryParams } = options;
  const operations = Array.isArray(data) ? data.filter(Boolean) : undefined;
  if (operations && operations.length === 0) {
    return Promise.resolve(resource);
  }
  const url = resourceURL(model, {
    ns: resource.metadata?.namespace,
    name: resource.metadata?.name,
    path,
    queryParams,
  });
  return fetchJSON<R>(url, {
    method: 'PATCH',
    headers: {
      'Content-Type': operations ? 'application/json-patch+json' : 'application/merge-patch+json',
    },
    body: JSON.stringify(operations ?? data),
  });
}

/** Lists objects once (k8sListResourceItems): `queryParams.ns` for one namespace, else every namespace. */
export function k8sListResourceItems<R extends K8sResourceCommon>(options: {
  model: K8sModel;
  queryParams?: Record<string, string>;
}): Promise<R[]> {
  const { ns, ...rest } = options.queryParams ?? {};
  const url = resourceURL(options.model, { ns, queryParams: rest });
  return fetchJSON<{ items?: R[] }>(url).then((list) => list.items ?? []);
}

/** Fetches JSON (consoleFetchJSON): `method` GET unless given. */
export function consoleFetchJSON(url: string, method = 'GET', options: RequestInit = {}): Promise<unknown> {
  return fetchJSON<unknown>(url, { ...options, method });
}

/** The name the SDK 4.22 package exports k8sListResourceItems under (core-api: `k8sListResourceItems as k8sListItems`). */
export const k8sListItems = k8sListResourceItems;

/* --------------------------------------------------------------------------------------- access review */

const reviews = new Map<string, Promise<boolean>>();

function checkAccess(attributes: Required<AccessReviewResourceAttributes>): Promise<boolean> {
  const key = JSON.stringify(attributes);
  let review = reviews.get(key);
  if (!review) {
    review = fetchJSON<{ status?: { allowed?: boolean } }>('/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'authorization.k8s.io/v1',
        kind: 'SelfSubjectAccessReview',
        spec: { resourceAttributes: attributes },
      }),
    }).then((r) => Boolean(r.status?.allowed));
    reviews.set(key, review);
    review.catch(() => reviews.delete(key));
  }
  return review;
}

export function useAccessReview(
  resourceAttributes: AccessReviewResourceAttributes,
  _impersonate?: unknown,
  noCheckForEmptyGroupAndResource?: boolean,
): [boolean, boolean] {
  const {
    group = '',
    resource = '',
    subresource = '',
    verb = '',
    name = '',
    namespace = '',
  } = resourceAttributes ?? {};
  const [state, setState] = React.useState<{ key: string; allowed: boolean; loading: boolean }>({
    key: '',
    allowed: false,
    loading: true,
  });
  const key = JSON.stringify([group, resource, subresource, verb, name, namespace]);
  const skip = Boolean(noCheckForEmptyGroupAndResource) && !group && !resource;
  React.useEffect(() => {
    if (skip) {
      setState({ key, allowed: false, loading: false });
      return undefined;
    }
    let current = true;
    checkAccess({ group, resource, subresource, verb, name, namespace }).then(
      (allowed) => current && setState({ key, allowed, loading: false }),
      // The console treats a failed review as not allowed.
      () => current && setState({ key, allowed: false, loading: false }),
    );
    return () => {
      current = false;
    };
  }, [key, skip, group, resource, subresource, verb, name, namespace]);
  if (state.key !== key) {
    return [false, true];
  }
  return [state.allowed, state.loading];
}

/** The name the SDK 4.22 package exports k8sPatchResource under (core-api: `k8sPatchResource as k8sPatch`). */
export const k8sPatch = k8sPatchResource;
