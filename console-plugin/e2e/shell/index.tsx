// The console shell: loads the plugin's production build from `/api/plugins/<plugin>/` (where the console's backend
// proxies the plugin's Service, here numo's HTTPS server) with the console 4.22's own loader, the PluginStore of
// '@openshift/dynamic-plugin-sdk' set up with the options the console's public/plugins.ts gives it, and renders the
// plugin's extensions for one run config and one node read from the URL:
//
//   /?ns=<namespace>&name=<run config>&node=<node>[&console-version=4.22.0][&plugin=numo-console-plugin]
//
// 1. `__webpack_init_sharing__('default')`: the share scope with the console-provided modules (webpack.config.js);
// 2. PluginStore.loadPlugin(<base>/plugin-manifest.json): the manifest is fetched and checked (schema, a DNS name,
//    registrationMethod callback), the plugin's dependencies resolved (`@console/pluginAPI` = the console's
//    version), plugin-entry.js injected as a script, which calls `window.__load_plugin_entry__(name, container)`;
//    the loader then calls `container.init(shareScope)` and turns every `{"$codeRef": "Module.export"}` into a
//    function that calls `container.get('Module')`;
// 3. the console.flag/model extensions set their flags where the API server serves their model, which puts the
//    plugin's other extensions in use;
// 4. i18next is set up as the console's public/i18n.js sets it up (react-i18next, the console's separators, the
//    plugin's namespace `plugin__<plugin>` loaded in English from the plugin's base URL: the console's backend
//    proxies `locales/resource.json?lng=…&ns=plugin__<plugin>` to the plugin's `locales/<lng>/<ns>.json`, here
//    fetched through the same proxy as the plugin's other files); a key the plugin asks for that the catalogue
//    lacks is recorded, as the console's missingKeyHandler reports it;
// 5. every code reference of the extensions in use is resolved (each exposed module's chunks load), and the
//    run config's tab (console.tab/horizontalNav) and the Node's details item (console.resource/details-item) are
//    rendered as the console renders them: `<Component obj={object} />`, their `%namespace~text%` properties
//    translated;
// 6. the run config's actions (console.action/resource-provider: the hook its code reference resolves to, called
//    with the object) are listed as the console's Actions menu lists them, each disabled as the console disables
//    it (its own `disabled`, or its `accessReview` denied); an action whose `cta` is a link goes where the link
//    says, as the console's router would: here the link's query lands on the shell's own address and the run
//    config's tab is mounted afresh (the Rollout tab reads the action to confirm from the address).
//
// What happened is kept in `window.numoShell` for the tests (e2e/load.mjs, e2e/run.mjs): the steps, the manifest,
// the calls the container received, the share scope, each code reference's resolution, errors, missing words.
import * as React from 'react';
import { createRoot } from 'react-dom/client';
import i18next from 'i18next';
import type { BackendModule } from 'i18next';
import { initReactI18next } from 'react-i18next';
import { PluginStore, isCodeRef } from '@openshift/dynamic-plugin-sdk';
import type { Extension } from '@openshift/dynamic-plugin-sdk';
import { Button, Flex, FlexItem, Tooltip } from '@patternfly/react-core';
import '@patternfly/react-core/dist/styles/base.css';
// The same module the share scope provides as '@openshift-console/dynamic-plugin-sdk'.
import { useAccessReview, useK8sWatchResource } from './sdk-adapter';
import type { AccessReviewResourceAttributes, K8sResourceCommon } from './sdk-adapter';

declare const __webpack_init_sharing__: (scope: string) => Promise<void>;
declare const __webpack_share_scopes__: Record<string, ShareScope>;
/** The shared modules webpack.config.js declared, and those of the SDK's list it could not provide. */
declare const NUMO_SHELL_SHARED: { provided: string[]; missing: string[] };
declare const require: {
  context(dir: string, deep: boolean, filter: RegExp): { keys(): string[]; (id: string): unknown };
};

type ShareScope = Record<
  string,
  Record<string, { get: () => unknown; from?: string; eager?: boolean; loaded?: number | boolean }>
>;
type Container = { init: (scope: ShareScope, ...rest: unknown[]) => unknown; get: (module: string) => unknown };
type Manifest = {
  name: string;
  version: string;
  baseURL?: string;
  loadScripts?: string[];
  registrationMethod?: string;
  dependencies?: Record<string, string>;
  extensions: Extension[];
};
type Model = { group?: string; version: string; kind: string };

type ShellState = {
  state: 'loading' | 'rendered' | 'failed';
  consoleVersion: string;
  shared: { provided: string[]; missing: string[] };
  steps: { step: string; at: number; detail?: unknown }[];
  manifest?: Manifest;
  plugin?: { status: string; enabled?: boolean; errorMessage?: string; errorCause?: string };
  container: {
    callback?: { pluginName: string; init: string; get: string };
    initCalls: { sameScope: boolean; modules: string[] }[];
    gets: string[];
  };
  flags: Record<string, boolean>;
  extensionsInUse: string[];
  codeRefs: { extension: string; property: string; codeRef: string; resolved: string }[];
  shareScope?: Record<string, { version: string; from?: string; eager: boolean; loaded: boolean }[]>;
  /** The plugin's translations: its namespace, the file they came from, how many keys it has. */
  i18n?: { namespace: string; language: string; path: string; status?: number; keys: number; error?: string };
  /** Keys the plugin asked for that its catalogue lacks (`namespace~key`). */
  missingKeys: string[];
  errors: string[];
};

// The console's own style sheets: PatternFly's base and every component's and layout's CSS (the plugin's build
// leaves PatternFly's CSS out: the console provides it).
const componentStyles = require.context('@patternfly/react-styles/css/components', true, /\.css$/);
componentStyles.keys().forEach((key) => componentStyles(key));
const layoutStyles = require.context('@patternfly/react-styles/css/layouts', true, /\.css$/);
layoutStyles.keys().forEach((key) => layoutStyles(key));

const query = new URLSearchParams(window.location.search);
const PLUGIN = query.get('plugin') ?? 'numo-console-plugin';
/** The console's release, which `@console/pluginAPI` resolves to (window.SERVER_FLAGS.releaseVersion). */
const CONSOLE_VERSION = query.get('console-version') ?? '4.22.0';
const namespace = query.get('ns') ?? '';
const name = query.get('name') ?? '';
const nodeName = query.get('node') ?? '';
/** REMOTE_ENTRY_CALLBACK of the console SDK and DEFAULT_REMOTE_ENTRY_CALLBACK of '@openshift/dynamic-plugin-sdk'. */
const ENTRY_CALLBACK = '__load_plugin_entry__';
const RUN_CONFIG: Model = { group: 'openshift-optional.skrzypek.io', version: 'v1alpha1', kind: 'MutexRunConfig' };
const NODE: Model = { group: '', version: 'v1', kind: 'Node' };

const shell: ShellState = {
  state: 'loading',
  consoleVersion: CONSOLE_VERSION,
  shared: NUMO_SHELL_SHARED,
  steps: [],
  container: { initCalls: [], gets: [] },
  flags: {},
  extensionsInUse: [],
  codeRefs: [],
  missingKeys: [],
  errors: [],
};
(window as unknown as { numoShell: ShellState }).numoShell = shell;
const step = (name: string, detail?: unknown) =>
  shell.steps.push({ step: name, at: Math.round(performance.now()), ...(detail === undefined ? {} : { detail }) });
const message = (e: unknown): string => {
  if (e instanceof Error) {
    const cause = (e as Error & { cause?: unknown }).cause;
    return cause ? `${e.message} (cause: ${message(cause)})` : e.message;
  }
  if (Array.isArray(e)) {
    return e.map(message).join('; ');
  }
  if (e && typeof e === 'object' && 'type' in e) {
    const target = (e as Event).target as HTMLScriptElement | null;
    return `${(e as Event).type} event${target?.src ? ` of ${target.src}` : ''}`;
  }
  return String(e);
};

/** Whether the console would say a model exists: the API server's discovery of its group version lists the kind. */
async function modelExists({ group, version, kind }: Model): Promise<boolean> {
  const path = group ? `/apis/${group}/${version}` : `/api/${version}`;
  const response = await fetch(path, { headers: { Accept: 'application/json' } });
  if (!response.ok) {
    return false;
  }
  const list = (await response.json()) as { resources?: { kind: string; name: string }[] };
  return (list.resources ?? []).some((r) => r.kind === kind && !r.name.includes('/'));
}

const sameModel = (a: Model | undefined, b: Model) =>
  !!a && (a.group ?? '') === (b.group ?? '') && a.version === b.version && a.kind === b.kind;

/** The share scope as data: each module's versions, who provided each, and whether a consumer took it. */
function describeScope(scope: ShareScope) {
  return Object.fromEntries(
    Object.entries(scope)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([module, versions]) => [
        module,
        Object.entries(versions).map(([version, v]) => ({
          version,
          from: v.from,
          eager: !!v.eager,
          loaded: !!v.loaded,
        })),
      ]),
  );
}

/* ---------------------------------------------------------------------------------------------- i18n */

/** The path of a plugin namespace's catalogue under the plugin's base URL (what the console's backend proxies). */
const localePath = (language: string, namespace: string) =>
  `/api/plugins/${PLUGIN}/locales/${encodeURIComponent(language)}/${encodeURIComponent(namespace)}.json`;

/** i18next's backend for the plugin's namespaces: the catalogue from the plugin's base URL. */
const pluginLocales: BackendModule = {
  type: 'backend',
  init: () => undefined,
  read: (language, namespace, callback) => {
    const path = localePath(language, namespace);
    const record = { namespace, language, path, keys: 0 };
    shell.i18n = record;
    fetch(path, { headers: { Accept: 'application/json' } })
      .then(async (response) => {
        shell.i18n = { ...record, status: response.status };
        if (!response.ok) {
          throw new Error(`${path}: ${response.status}`);
        }
        const catalogue = (await response.json()) as Record<string, string>;
        shell.i18n = { ...record, status: response.status, keys: Object.keys(catalogue).length };
        callback(null, catalogue);
      })
      .catch((e) => {
        shell.i18n = { ...(shell.i18n ?? record), error: message(e) };
        shell.errors.push(`translations of ${namespace}: ${message(e)}`);
        callback(e as Error, false);
      });
  },
};

/** i18next as the console initialises it (public/i18n.js): English, the plugin's namespace loaded up front. */
async function initI18n(plugin: string) {
  const namespace = `plugin__${plugin}`;
  await i18next
    .use(pluginLocales)
    .use(initReactI18next)
    .init({
      lng: 'en',
      fallbackLng: 'en',
      load: 'languageOnly',
      ns: [namespace],
      defaultNS: namespace,
      nsSeparator: '~',
      keySeparator: false,
      contextSeparator: '~',
      interpolation: { escapeValue: false },
      react: { useSuspense: true },
      showSupportNotice: false,
      saveMissing: true,
      missingKeyHandler: (_languages, ns, key) => {
        shell.missingKeys.push(`${ns}~${key}`);
      },
    });
  step('i18n', shell.i18n);
}

/** An extension's property as the console shows it: `%namespace~text%` translated (translateExtensionDeep). */
const translated = (value: unknown): string =>
  typeof value === 'string' && value.length > 2 && value.startsWith('%') && value.endsWith('%')
    ? i18next.t(value.slice(1, -1))
    : String(value);

/* ----------------------------------------------------------------------------------------------- loading */

type Loaded = {
  manifest: Manifest;
  components: Map<string, unknown>;
  tab?: Extension;
  item?: Extension;
  actions?: Extension;
};

async function loadPlugin(): Promise<Loaded | undefined> {
  // 1. The share scope, as the console's initConsolePlugins does before loading any plugin.
  await __webpack_init_sharing__('default');
  const sharedScope = __webpack_share_scopes__.default;
  step('share-scope', Object.keys(sharedScope).sort());

  // 2. The console's PluginStore (public/plugins.ts of console 4.22).
  const store = new PluginStore({
    loaderOptions: {
      canLoadPlugin: (manifest) => manifest.name === PLUGIN,
      entryCallbackSettings: { name: ENTRY_CALLBACK, registerCallback: true },
      customDependencyResolutions: { '@console/pluginAPI': CONSOLE_VERSION },
      isDependencyResolvable: (dependency, optional) => !optional || dependency === PLUGIN,
      sharedScope,
      transformPluginManifest: (manifest) => {
        if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/.test(manifest.name)) {
          throw new Error(`metadata.name ${manifest.name} is not a valid DNS subdomain name`);
        }
        if (manifest.registrationMethod !== 'callback') {
          throw new Error(`registrationMethod ${manifest.registrationMethod} is not "callback"`);
        }
        return manifest;
      },
      getPluginEntryModule: ({ name: plugin }) => {
        throw new Error(`Plugin "${plugin}" tried to load with registrationMethod "custom"`);
      },
    },
  });
  // The loader registered window.__load_plugin_entry__; watch what the entry script hands it, and what the loader
  // then asks of the container, passing every call through unchanged.
  const callbacks = window as unknown as Record<string, (plugin: string, container: Container) => void>;
  const registered = callbacks[ENTRY_CALLBACK];
  if (typeof registered !== 'function') {
    throw new Error(`the plugin loader registered no window.${ENTRY_CALLBACK}`);
  }
  callbacks[ENTRY_CALLBACK] = (pluginName, container) => {
    shell.container.callback = { pluginName, init: typeof container?.init, get: typeof container?.get };
    step('entry-callback', pluginName);
    const observed: Container = {
      init: (scope, ...rest) => {
        shell.container.initCalls.push({ sameScope: scope === sharedScope, modules: Object.keys(scope).sort() });
        step('container-init');
        return container.init(scope, ...rest);
      },
      get: (module) => {
        shell.container.gets.push(module);
        return container.get(module);
      },
    };
    registered(pluginName, container && typeof container.init === 'function' ? observed : container);
  };

  const manifestURL = new URL('plugin-manifest.json', new URL(`/api/plugins/${PLUGIN}/`, window.location.origin));
  step('load-plugin', manifestURL.pathname);
  try {
    await store.loadPlugin(manifestURL.toString());
  } catch (e) {
    shell.errors.push(`loadPlugin: ${message(e)}`);
  }
  const info = store.getPluginInfo().find((p) => p.manifest.name === PLUGIN);
  shell.manifest = info?.manifest as Manifest | undefined;
  shell.shareScope = describeScope(sharedScope);
  if (!info || info.status !== 'loaded') {
    const failed = info?.status === 'failed' ? info : undefined;
    shell.plugin = {
      status: info?.status ?? 'missing',
      errorMessage: failed?.errorMessage,
      errorCause: failed?.errorCause === undefined ? undefined : message(failed.errorCause),
    };
    step('plugin-failed', shell.plugin);
    return undefined;
  }
  shell.plugin = { status: info.status, enabled: info.enabled };
  const manifest = info.manifest as Manifest;
  step('plugin-loaded', { name: manifest.name, version: manifest.version });

  // 3. The console's flags from console.flag/model: set where the model exists.
  const flags: Record<string, boolean> = {};
  for (const e of store.getExtensions().filter((x) => x.type === 'console.flag/model')) {
    const { flag, model } = e.properties as { flag: string; model: Model };
    flags[flag] = await modelExists(model);
  }
  shell.flags = flags;
  store.setFeatureFlags(flags);
  const inUse = store.getExtensions();
  shell.extensionsInUse = inUse.map((e) => e.type);
  step('flags', flags);

  // 4. The plugin's translations, as the console's i18next loads them.
  await initI18n(manifest.name);

  // 5. Every code reference of the extensions in use, as the console's useResolvedExtensions resolves them.
  const components = new Map<string, unknown>();
  const resolutions: Promise<void>[] = [];
  const visit = (extension: Extension, value: unknown, path: string) => {
    if (isCodeRef(value)) {
      const codeRef = /\[(.+)\]$/.exec((value as () => unknown).name)?.[1] ?? path;
      resolutions.push(
        (value as () => Promise<unknown>)().then(
          (resolved) => {
            components.set(codeRef, resolved);
            shell.codeRefs.push({ extension: extension.type, property: path, codeRef, resolved: typeof resolved });
          },
          (e) => {
            const resolved = `error: ${message(e)}`;
            shell.codeRefs.push({ extension: extension.type, property: path, codeRef, resolved });
            shell.errors.push(`code reference ${codeRef} of ${extension.type}: ${message(e)}`);
          },
        ),
      );
    } else if (value && typeof value === 'object') {
      Object.entries(value).forEach(([key, v]) => visit(extension, v, path ? `${path}.${key}` : key));
    }
  };
  inUse.forEach((e) => visit(e, e.properties, ''));
  await Promise.all(resolutions);
  shell.codeRefs.sort((a, b) => a.codeRef.localeCompare(b.codeRef));
  step('code-refs', shell.codeRefs.length);

  const tab = inUse.find(
    (e) => e.type === 'console.tab/horizontalNav' && sameModel(e.properties.model as Model, RUN_CONFIG),
  );
  const item = inUse.find(
    (e) => e.type === 'console.resource/details-item' && sameModel(e.properties.model as Model, NODE),
  );
  const actions = inUse.find(
    (e) => e.type === 'console.action/resource-provider' && sameModel(e.properties.model as Model, RUN_CONFIG),
  );
  shell.shareScope = describeScope(sharedScope);
  return { manifest, components, tab, item, actions };
}

/* --------------------------------------------------------------------------------------------- rendering */

/** A plugin component's render error, kept (the console shows its own error boundary). */
class Guard extends React.Component<{ name: string; children: React.ReactNode }, { error?: Error }> {
  state: { error?: Error } = {};

  static getDerivedStateFromError(error: Error) {
    return { error };
  }

  componentDidCatch(error: Error) {
    shell.errors.push(`${this.props.name} threw while rendering: ${error.message}`);
  }

  render() {
    return this.state.error ? (
      <p data-test="shell-component-error">
        {this.props.name}: {this.state.error.message}
      </p>
    ) : (
      this.props.children
    );
  }
}

type ObjComponent = React.ComponentType<{ obj: K8sResourceCommon }>;
/** An action as console.action/resource-provider's hook gives it (the SDK's `Action`). */
type Action = {
  id: string;
  label: React.ReactNode;
  description?: string;
  cta: (() => void) | { href: string; external?: boolean };
  disabled?: boolean;
  disabledTooltip?: React.ReactNode;
  accessReview?: AccessReviewResourceAttributes;
};
type ActionsHook = (obj: K8sResourceCommon) => [Action[], boolean, unknown];

/** The function a code reference of `extension`'s `property` resolved to (a component, a hook). */
const resolvedOf = <T,>(loaded: Loaded, extension: Extension | undefined, property: string) => {
  const value = extension?.properties[property];
  const ref = isCodeRef(value) ? /\[(.+)\]$/.exec((value as () => unknown).name)?.[1] : undefined;
  const resolved = ref ? loaded.components.get(ref) : undefined;
  return typeof resolved === 'function' ? (resolved as T) : undefined;
};

/** The console's router, as far as the actions need it: a link's query lands on the shell's own address. */
const navigate = (href: string) => {
  const target = new URL(href, window.location.origin);
  const params = new URLSearchParams(window.location.search);
  target.searchParams.forEach((value, key) => params.set(key, value));
  window.history.pushState(window.history.state, '', `${window.location.pathname}?${params}`);
  window.dispatchEvent(new CustomEvent('shell-navigate', { detail: href }));
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

/** The run config's Actions menu, from the plugin's hook. */
const ActionsMenu: React.FC<{ useActions: ActionsHook; obj: K8sResourceCommon }> = ({ useActions, obj }) => {
  const [actions, loaded, error] = useActions(obj);
  if (error) {
    return <span data-test="menu-error">{String(error)}</span>;
  }
  return loaded ? (
    <Flex data-test="actions-menu" alignItems={{ default: 'alignItemsCenter' }}>
      <FlexItem>
        <strong>Actions</strong>
      </FlexItem>
      {actions.map((action) => (
        <FlexItem key={action.id}>
          <MenuAction action={action} />
        </FlexItem>
      ))}
    </Flex>
  ) : null;
};

const Shell: React.FC<{ loaded: Loaded }> = ({ loaded }) => {
  const [rc, rcLoaded, rcError] = useK8sWatchResource<K8sResourceCommon>(
    namespace && name ? { groupVersionKind: RUN_CONFIG, namespace, name } : null,
  );
  const [node, nodeLoaded, nodeError] = useK8sWatchResource<K8sResourceCommon>(
    nodeName ? { groupVersionKind: NODE, name: nodeName } : null,
  );
  const Tab = resolvedOf<ObjComponent>(loaded, loaded.tab, 'component');
  const Item = resolvedOf<ObjComponent>(loaded, loaded.item, 'component');
  const useActions = resolvedOf<ActionsHook>(loaded, loaded.actions, 'provider');
  const page = loaded.tab?.properties.page as { name?: string } | undefined;
  // A "navigation" to the run config's tab mounts it afresh, as the console's router does.
  const [visit, setVisit] = React.useState(0);
  const [navigated, setNavigated] = React.useState<string>();
  React.useEffect(() => {
    const onNavigate = (e: Event) => {
      setNavigated((e as CustomEvent<string>).detail);
      setVisit((v) => v + 1);
    };
    window.addEventListener('shell-navigate', onNavigate);
    return () => window.removeEventListener('shell-navigate', onNavigate);
  }, []);
  return (
    <div data-test="shell" style={{ padding: 16 }}>
      <h1 data-test="shell-title" className="pf-v6-c-title pf-m-xl">
        Console {CONSOLE_VERSION} shell: {loaded.manifest.name} {loaded.manifest.version}
      </h1>
      <p data-test="shell-plugin">
        loaded from {loaded.manifest.baseURL}, {shell.codeRefs.length} code references resolved
      </p>
      <section data-test="shell-rollout-tab" style={{ marginTop: 16 }}>
        <h2 className="pf-v6-c-title pf-m-lg">
          MutexRunConfig {namespace}/{name}: {page?.name ? translated(page.name) : 'no tab'}
        </h2>
        {!Tab ? (
          <p data-test="shell-missing">no console.tab/horizontalNav component for MutexRunConfig</p>
        ) : rcError ? (
          <p data-test="shell-error">{String(rcError)}</p>
        ) : rcLoaded && rc?.metadata ? (
          <>
            <div data-test="shell-actions" style={{ margin: '8px 0' }}>
              {!useActions ? (
                <p data-test="shell-missing">no console.action/resource-provider hook for MutexRunConfig</p>
              ) : (
                <Guard name="runConfigActions">
                  <ActionsMenu useActions={useActions} obj={rc} />
                </Guard>
              )}
              {navigated && (
                <small data-test="menu-navigated" data-href={navigated}>
                  went to {navigated}
                </small>
              )}
            </div>
            <Guard name="RolloutTab">
              <React.Suspense fallback={null}>
                <Tab key={visit} obj={rc} />
              </React.Suspense>
            </Guard>
          </>
        ) : null}
      </section>
      {nodeName && (
        <section data-test="shell-node" style={{ marginTop: 16 }}>
          <h2 className="pf-v6-c-title pf-m-lg">
            Node {nodeName}: {translated(loaded.item?.properties.title ?? 'no details item')}
          </h2>
          {!Item ? (
            <p data-test="shell-missing">no console.resource/details-item component for Node</p>
          ) : nodeError ? (
            <p data-test="shell-error">{String(nodeError)}</p>
          ) : nodeLoaded && node?.metadata ? (
            <Guard name="NodeGateStatus">
              <React.Suspense fallback={null}>
                <Item obj={node} />
              </React.Suspense>
            </Guard>
          ) : null}
        </section>
      )}
    </div>
  );
};

const Failed: React.FC = () => (
  <div data-test="shell-failed" style={{ padding: 16 }}>
    <h1 className="pf-v6-c-title pf-m-xl">
      Console {CONSOLE_VERSION} shell: {PLUGIN} {shell.plugin?.status ?? 'not loaded'}
    </h1>
    <p data-test="shell-failure">{[shell.plugin?.errorMessage, shell.plugin?.errorCause].filter(Boolean).join(': ')}</p>
    <ul>
      {shell.errors.map((e) => (
        <li key={e}>{e}</li>
      ))}
    </ul>
  </div>
);

const root = createRoot(document.getElementById('root') as HTMLElement);
loadPlugin().then(
  (loaded) => {
    if (loaded) {
      root.render(<Shell loaded={loaded} />);
      shell.state = 'rendered';
    } else {
      root.render(<Failed />);
      shell.state = 'failed';
    }
    step(shell.state);
  },
  (e) => {
    shell.errors.push(message(e));
    shell.state = 'failed';
    step('failed', message(e));
    root.render(<Failed />);
  },
);
