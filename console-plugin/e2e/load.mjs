#!/usr/bin/env node
// The plugin's PRODUCTION build loaded as the OpenShift console loads it: the console shell (e2e/shell, the console
// 4.22's plugin loader and share scope) in Debian's headless Chromium, the plugin's files proxied same-origin from
// numo's own HTTPS server (verified against the test's CA, as the console's backend verifies the service CA), the
// API server through the e2e proxy. Prints one JSON line per check on stdout, keeps screenshots in --out, and exits
// non-zero at the first failed expectation (with a screenshot of that moment and a message on stderr).
//
//   node e2e/load.mjs --kubeconfig KUBECONFIG --namespace NS --run-config NAME --node NODE \
//     --plugin-url https://127.0.0.1:PORT --plugin-ca CA.pem --expect-phase PHASE --out DIR \
//     [--older-console 4.21.0] [--shell DIR] [--timeout-seconds 180]
//
// --plugin-url     numo's console plugin server (it serves console-plugin/dist)
// --plugin-ca      the PEM of the CA that signed its certificate
// --user-token     the logged-in user's token, which the shell's plugin proxy forwards to numo's backend (the timeline)
// --expect-phase   the run config's status.phase, which the Rollout tab must show
// --expect-domains under a rollout by failure domain: the domains (comma-separated, in wave order, `none` for the
//                  nodes without the label) the Rollout tab must group its nodes in; '' (the default) expects none
// --older-console  a console release below the plugin's `@console/pluginAPI` dependency: a second page must refuse
//                  the plugin before loading its scripts ('' leaves it out)
// --shell          the built shell (default: e2e/shell/dist); `npm run build:shell` in console-plugin/
// Chromium:        $NUMO_CHROMIUM, else chromium or chromium-browser on the PATH; never downloaded.
//
// Exit status: 0 every check passed, 1 a check failed, 2 the script could not run (arguments, kubeconfig, shell,
// Chromium).

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

import { pageArguments, parsePageOptions } from './arguments.mjs';
import { expectedPlugin, main } from './session.mjs';

const USAGE =
  'usage: node e2e/load.mjs --kubeconfig F --namespace NS --run-config NAME --node NODE --plugin-url URL ' +
  '--plugin-ca CA.pem --expect-phase PHASE --out DIR [--expect-domains D1,D2] [--older-console VERSION] ' +
  '[--shell DIR] [--timeout-seconds N]\n';

function options() {
  const values = parsePageOptions(
    {
      node: { type: 'string' },
      'expect-phase': { type: 'string' },
      'expect-domains': { type: 'string', default: '' },
      'console-version': { type: 'string', default: '4.22.0' },
      'older-console': { type: 'string', default: '4.21.0' },
      'timeout-seconds': { type: 'string', default: '180' },
    },
    USAGE,
    ['node', 'expect-phase'],
  );
  return {
    ...pageArguments(values),
    node: values.node,
    expectPhase: values['expect-phase'],
    expectDomains: values['expect-domains'] ? values['expect-domains'].split(',') : [],
    consoleVersion: values['console-version'],
    olderConsole: values['older-console'],
  };
}

/** What is wrong with a manifest the console loaded, against the plugin's sources ([] when nothing). */
export function manifestProblems(manifest, expected) {
  const problems = [];
  if (!manifest) {
    return ['no manifest'];
  }
  if (manifest.name !== expected.name) {
    problems.push(`name ${manifest.name}, not ${expected.name}`);
  }
  if (manifest.version !== expected.version) {
    problems.push(`version ${manifest.version}, not ${expected.version}`);
  }
  if (manifest.registrationMethod !== 'callback') {
    problems.push(`registrationMethod ${manifest.registrationMethod}, not callback`);
  }
  if (manifest.baseURL !== `/api/plugins/${expected.name}/`) {
    problems.push(`baseURL ${manifest.baseURL}, not /api/plugins/${expected.name}/`);
  }
  if (!Array.isArray(manifest.loadScripts) || manifest.loadScripts.length === 0) {
    problems.push('no loadScripts');
  }
  if (!isDeepStrictEqual(manifest.extensions, expected.extensions)) {
    const types = (list) => (list ?? []).map((e) => e.type).join(', ');
    const [got, want] = [types(manifest.extensions), types(expected.extensions)];
    problems.push(`extensions differ from console-extensions.json: [${got}] against [${want}]`);
  }
  return problems;
}

/** The code references of a list of extensions, `Module.export` as written, sorted and unique. */
export function codeRefsOf(extensions) {
  const refs = new Set();
  const visit = (value) => {
    if (value && typeof value === 'object') {
      if (typeof value.$codeRef === 'string' && Object.keys(value).length === 1) {
        refs.add(value.$codeRef);
      } else {
        Object.values(value).forEach(visit);
      }
    }
  };
  extensions.forEach((e) => visit(e.properties));
  return [...refs].sort();
}

/** The checks, in order, on the session's shell (./session.mjs). */
async function scenario(session) {
  const { opts, server, pluginPrefix, report, open, shot, fail, waitFor, shellDone, shellState } = session;
  const expected = expectedPlugin();
  const pluginFile = (name) => server.plugin.filter((r) => r.path.split('?')[0] === `${pluginPrefix}${name}`);
  const query = (consoleVersion) => ({
    ns: opts.namespace,
    name: opts.runConfig,
    node: opts.node,
    'console-version': consoleVersion,
  });
  // 1. The console shell loads the plugin.
  const first = await open(query(opts.consoleVersion));
  const final = await shellDone('shell-loaded', opts.timeout / 2);
  const shell = await shellState();
  writeFileSync(join(opts.out, 'shell.json'), `${JSON.stringify(shell, null, 2)}\n`);
  if (final !== 'rendered') {
    await fail('shell-loaded', `the console did not load the plugin: ${shell.plugin?.errorMessage ?? ''}`, {
      plugin: shell.plugin,
      errors: shell.errors,
      steps: shell.steps.map((s) => s.step),
    });
  }
  report('shell-loaded', true, { url: first.url, steps: shell.steps.map((s) => s.step) });

  // 2. The manifest, from numo's server.
  const [manifestRecord] = pluginFile('plugin-manifest.json');
  const browserManifest = first.seen.responses.find((r) => r.path === `${pluginPrefix}plugin-manifest.json`);
  if (
    !manifestRecord ||
    manifestRecord.status !== 200 ||
    !manifestRecord.authorized ||
    !/^application\/json(;|$)/.test(manifestRecord.contentType ?? '') ||
    !/^application\/json(;|$)/.test(browserManifest?.contentType ?? '')
  ) {
    await fail('manifest-served', 'the manifest did not come from numo as verified application/json', {
      numo: manifestRecord,
      browser: browserManifest,
    });
  }
  report('manifest-served', true, {
    from: manifestRecord.upstream,
    status: manifestRecord.status,
    contentType: manifestRecord.contentType,
    browserContentType: browserManifest.contentType,
    tls: { authorized: manifestRecord.authorized, issuer: manifestRecord.issuer, protocol: manifestRecord.protocol },
  });
  const problems = manifestProblems(shell.manifest, expected);
  if (problems.length > 0) {
    await fail('manifest-valid', problems.join('; '), { manifest: shell.manifest });
  }
  report('manifest-valid', true, {
    name: shell.manifest.name,
    version: shell.manifest.version,
    extensions: shell.manifest.extensions.length,
    loadScripts: shell.manifest.loadScripts,
    dependencies: shell.manifest.dependencies,
  });

  // 3. The entry script, from numo's server, run as a script.
  const entries = shell.manifest.loadScripts;
  const javascript = /^application\/javascript(;|$)/;
  const entryRecords = entries.map((script) => pluginFile(script)[0]);
  const browserEntries = entries.map((script) =>
    first.seen.responses.find((r) => r.path === `${pluginPrefix}${script}`),
  );
  if (
    entryRecords.some((r) => !r || r.status !== 200 || !r.authorized || !javascript.test(r.contentType ?? '')) ||
    browserEntries.some((r) => !r || r.type !== 'script' || !javascript.test(r.contentType ?? ''))
  ) {
    await fail('entry-served', 'the entry script did not come from numo as verified application/javascript', {
      numo: entryRecords,
      browser: browserEntries,
    });
  }
  report('entry-served', true, {
    scripts: entries,
    // The loader's script URL has a cache buster (`?cacheBuster=<uuid>`), which numo's server must ignore.
    requested: entryRecords[0].path.slice(pluginPrefix.length),
    contentType: entryRecords[0].contentType,
    nosniff: entryRecords[0].nosniff,
    cacheControl: entryRecords[0].cacheControl,
    browser: browserEntries.map((r) => ({ type: r.type, contentType: r.contentType })),
  });

  // 4. The container: the entry callback, init with the console's share scope, the plugin loaded and enabled,
  //    the console's React and SDK taken from the scope.
  const { container, shareScope, plugin: status } = shell;
  const scopeEntry = (module) => (shareScope?.[module] ?? [])[0];
  const react = scopeEntry('react');
  const sdk = scopeEntry('@openshift-console/dynamic-plugin-sdk');
  const initProblems = [
    container.callback?.pluginName === expected.name ? '' : `entry callback: ${JSON.stringify(container.callback)}`,
    container.callback?.init === 'function' && container.callback?.get === 'function' ? '' : 'no init/get',
    container.initCalls.length === 1 && container.initCalls[0].sameScope
      ? ''
      : `init: ${JSON.stringify(container.initCalls)}`,
    status?.status === 'loaded' && status.enabled ? '' : `plugin: ${JSON.stringify(status)}`,
    react?.loaded && react.from === 'numo-console-shell' ? '' : `react in the share scope: ${JSON.stringify(react)}`,
    sdk?.loaded && sdk.from === 'numo-console-shell' ? '' : `the SDK in the share scope: ${JSON.stringify(sdk)}`,
  ].filter(Boolean);
  if (initProblems.length > 0) {
    await fail('container-initialised', initProblems.join('; '), { container, plugin: status });
  }
  report('container-initialised', true, {
    callback: container.callback.pluginName,
    initCalls: container.initCalls.length,
    shared: container.initCalls[0].modules,
    react: react.version,
    sdk: sdk.version,
    notProvided: shell.shared.missing,
    pluginProvided: Object.entries(shareScope)
      .filter(([, versions]) => versions.some((v) => v.from === expected.name))
      .map(([module]) => module).length,
  });

  // 5. Every code reference resolves: each exposed module's chunks load and its export is there.
  const refs = codeRefsOf(expected.extensions);
  const resolved = Object.fromEntries(shell.codeRefs.map((r) => [r.codeRef, r.resolved]));
  const unresolved = refs.filter((ref) => resolved[ref] !== 'function');
  const gets = [...new Set(container.gets)].sort();
  if (unresolved.length > 0 || !isDeepStrictEqual(gets, expected.exposedModules)) {
    await fail('code-refs-resolved', `not resolved to functions: ${unresolved.join(', ') || 'none'}`, {
      resolved,
      gets,
      exposed: expected.exposedModules,
    });
  }
  report('code-refs-resolved', true, { resolved, gets });

  // 6. Every plugin file the page loaded came from numo's server, verified, with its type.
  const browserPlugin = first.seen.responses.filter((r) => r.path.startsWith(pluginPrefix));
  const wrong = browserPlugin.filter((r) => {
    const file = r.path.slice(pluginPrefix.length);
    const record = pluginFile(file)[0];
    const type = file.endsWith('.json') ? /^application\/json(;|$)/ : /^application\/javascript(;|$)/;
    return r.status !== 200 || !type.test(r.contentType ?? '') || !record?.authorized || record.status !== 200;
  });
  const failedRequests = first.seen.failed.filter((f) => f.includes(pluginPrefix));
  if (wrong.length > 0 || failedRequests.length > 0) {
    await fail('files-from-numo', 'plugin files that did not come from numo as they should', {
      wrong,
      failed: failedRequests,
    });
  }
  const chunks = browserPlugin.filter((r) => r.type === 'script').length;
  report('files-from-numo', true, {
    files: browserPlugin.length,
    scripts: chunks,
    bytes: server.plugin.reduce((n, r) => n + (r.bytes ?? 0), 0),
  });

  // 7. The plugin's translations: its English catalogue from numo's server (dist/locales/), as JSON, loaded into the
  //    console's i18next under the plugin's namespace.
  const localeFile = `locales/en/plugin__${expected.name}.json`;
  const [localeRecord] = pluginFile(localeFile);
  const browserLocale = first.seen.responses.find((r) => r.path === `${pluginPrefix}${localeFile}`);
  if (
    !localeRecord ||
    localeRecord.status !== 200 ||
    !localeRecord.authorized ||
    !/^application\/json(;|$)/.test(localeRecord.contentType ?? '') ||
    !/^application\/json(;|$)/.test(browserLocale?.contentType ?? '') ||
    shell.i18n?.namespace !== `plugin__${expected.name}` ||
    !(shell.i18n?.keys > 0)
  ) {
    await fail('locales-served', `the plugin's English catalogue did not come from numo as JSON`, {
      numo: localeRecord,
      browser: browserLocale,
      i18n: shell.i18n,
    });
  }
  report('locales-served', true, {
    file: localeFile,
    contentType: localeRecord.contentType,
    cacheControl: localeRecord.cacheControl,
    namespace: shell.i18n.namespace,
    keys: shell.i18n.keys,
  });

  // 8. The Rollout tab shows the run config's phase.
  const phase = await waitFor(
    'rollout-tab',
    `the Rollout tab showing phase ${opts.expectPhase}`,
    () => {
      const el = document.querySelector('[data-test="shell-rollout-tab"] [data-test="phase"]');
      return el ? { text: el.textContent.trim(), phase: el.getAttribute('data-phase') } : null;
    },
    (v) => v?.text === opts.expectPhase,
    60_000,
  );
  const progress = await session.page.evaluate(
    () => document.querySelector('[data-test="progress"]')?.textContent?.trim() ?? null,
  );
  const tabShot = await shot('rollout-tab');
  report('rollout-tab', true, { phase: phase.text, dataPhase: phase.phase, progress, screenshot: tabShot });

  // 9. Under a rollout by failure domain, the node table grouped by domain in wave order (its rows and each
  //    group's state and header) and the timeline's domain headers; without one, no group.
  const domains = await waitFor(
    'domain-groups',
    `the Rollout tab's node groups ${opts.expectDomains.join(', ') || '(none)'}`,
    () => {
      const tab = document.querySelector('[data-test="shell-rollout-tab"]');
      const groups = [...(tab?.querySelectorAll('tbody[data-test^="domain-group-"]') ?? [])].map((g) => ({
        domain: g.getAttribute('data-test').slice('domain-group-'.length),
        state: g.getAttribute('data-state'),
        header: g.querySelector('[data-test="domain-group-header"]')?.textContent.trim(),
        nodes: [...g.querySelectorAll('[data-test^="node-row-"]')].map((r) =>
          r.getAttribute('data-test').slice('node-row-'.length),
        ),
      }));
      const timeline = [...(tab?.querySelectorAll('[data-test^="timeline-domain-"]') ?? [])].map((d) => ({
        domain: d.getAttribute('data-test').slice('timeline-domain-'.length),
        state: d.getAttribute('data-state'),
        text: d.textContent.trim(),
      }));
      return { groups, timeline };
    },
    (v) =>
      isDeepStrictEqual(
        v?.groups?.map((g) => g.domain),
        opts.expectDomains,
      ) &&
      isDeepStrictEqual(
        v?.timeline?.map((d) => d.domain),
        opts.expectDomains,
      ),
    30_000,
  );
  const timelineFetches = server.proxied.filter((r) => r.path.includes('/api/timeline/'));
  report('domain-groups', true, {
    ...domains,
    timelineFetches: timelineFetches.map((r) => ({ path: r.path, status: r.status, authorized: r.authorized })),
  });

  // 10. The Node's details item.
  const status8 = await waitFor(
    'node-status',
    `the Upgrade gate item of ${opts.node}`,
    () => {
      const el = document.querySelector('[data-test="shell-node"] [data-test="node-status"]');
      return el ? { state: el.getAttribute('data-state'), text: el.textContent.trim() } : null;
    },
    (v) => !!v?.state,
    60_000,
  );
  report('node-status', true, { node: opts.node, state: status8.state, text: status8.text });

  // 11. Nothing went wrong on the way, and every word the plugin showed is in its catalogue.
  const after = await shellState();
  const sharedWarnings = first.seen.warnings.filter((w) => /shared (singleton )?module|Unsatisfied version/i.test(w));
  if (
    first.seen.pageErrors.length > 0 ||
    first.seen.errors.length > 0 ||
    after.errors.length > 0 ||
    after.missingKeys.length > 0 ||
    sharedWarnings.length > 0
  ) {
    await fail('no-page-errors', 'the page reported errors', {
      pageErrors: first.seen.pageErrors,
      consoleErrors: first.seen.errors,
      shellErrors: after.errors,
      missingKeys: after.missingKeys,
      sharedWarnings,
    });
  }
  report('no-page-errors', true, { warnings: first.seen.warnings.length, missingKeys: 0 });

  // 12. An older console refuses the plugin before running any of it (its @console/pluginAPI dependency).
  if (opts.olderConsole) {
    const since = server.plugin.length;
    // The first page closed first: its watches (the run config, its record, the nodes) hold Chromium's six
    // connections to the page's origin, which would leave the second page's navigation waiting.
    await first.page.close();
    await open(query(opts.olderConsole));
    await shellDone('older-console-refused', 60_000);
    const refused = await shellState();
    const fetched = server.plugin.slice(since).map((r) => r.path.slice(pluginPrefix.length).split('?')[0]);
    const cause = `${refused.plugin?.errorMessage ?? ''} ${refused.plugin?.errorCause ?? ''}`;
    if (
      refused.state !== 'failed' ||
      refused.plugin?.status !== 'failed' ||
      !cause.includes('@console/pluginAPI') ||
      fetched.some((f) => f !== 'plugin-manifest.json')
    ) {
      await fail('older-console-refused', `console ${opts.olderConsole}: ${refused.state}, ${cause}`, {
        plugin: refused.plugin,
        fetched,
      });
    }
    const olderShot = await shot('older-console');
    report('older-console-refused', true, {
      console: opts.olderConsole,
      reason: refused.plugin.errorCause ?? refused.plugin.errorMessage,
      fetched,
      screenshot: olderShot,
    });
  }
}

main(import.meta.url, 'load.mjs', options, 'load.log', scenario);
