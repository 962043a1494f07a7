#!/usr/bin/env node
// The console shell for people: serves the shell (e2e/shell/dist) on 127.0.0.1 with the plugin's files from numo's
// HTTPS server and the API server of a kubeconfig (./server.mjs, as the end-to-end test does), and keeps serving
// until it is stopped (Ctrl-C, SIGTERM). `make demo` (hack/demo.sh) starts it in the background.
//
//   node e2e/shell/serve.mjs --kubeconfig KUBECONFIG --plugin-url https://127.0.0.1:PORT --plugin-ca CA.pem \
//     [--user-token TOKEN] [--namespace NS --run-config NAME] [--node NODE] [--port 9080] [--shell DIR]
//     [--wait-seconds 60]
//
// --plugin-url    numo's console plugin server (`numo run --console-plugin-cert-dir DIR --console-plugin-assets
//                 console-plugin/dist --console-plugin-address 127.0.0.1:PORT`)
// --plugin-ca     the PEM of the CA that signed its certificate
// --user-token    the logged-in user's bearer token, which the shell's plugin proxy forwards to numo's backend
//                 (`/api/proxy/plugin/<plugin>/numo/...`, as the console does for `authorization: UserToken`); the
//                 kubeconfig's token when not given, none if it has none (numo's timeline then answers 401)
// --namespace, --run-config, --node: what the page opens on (the run config's Rollout tab, the Node's Upgrade gate
//                 item), as the shell's query (?ns=&name=&node=)
// --port          the port on 127.0.0.1 (default 9080; 0: a free one)
// --wait-seconds  how long numo's server may take to answer the plugin's manifest before the URL is printed
//
// Prints `Console shell: <URL>` on stdout once the plugin's manifest came through, verified, from numo's server;
// every error on stderr. Exit status: 1 numo's server did not answer in time or the port is taken, 2 the script
// could not run (arguments, kubeconfig, shell not built).

import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Usage, parseOptions, shellArguments } from '../arguments.mjs';
import { loadKubeconfig } from '../kubeconfig.mjs';
import { startShellServer } from './server.mjs';

const USAGE =
  'usage: node e2e/shell/serve.mjs --kubeconfig F --plugin-url URL --plugin-ca CA.pem [--user-token TOKEN] ' +
  '[--namespace NS --run-config NAME] [--node NODE] [--port 9080] [--shell DIR] [--wait-seconds 60]\n';

function options() {
  const values = parseOptions(
    {
      plugin: { type: 'string', default: 'numo-console-plugin' },
      namespace: { type: 'string', default: '' },
      'run-config': { type: 'string', default: '' },
      node: { type: 'string', default: '' },
      port: { type: 'string', default: '9080' },
      'wait-seconds': { type: 'string', default: '60' },
    },
    USAGE,
    [],
  );
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Usage(`--port ${values.port} is not a port`);
  }
  const { kubeconfig, context, ...shell } = shellArguments(values);
  let connection;
  try {
    connection = loadKubeconfig(kubeconfig, context);
  } catch (e) {
    throw new Usage(`--kubeconfig: ${e.message}`);
  }
  return {
    ...shell,
    connection,
    plugin: values.plugin,
    namespace: values.namespace,
    runConfig: values['run-config'],
    node: values.node,
    port,
    wait: Number(values['wait-seconds']) * 1000,
  };
}

/** The page's address with the query the shell reads: the run config (namespace, name) and the node. */
export function pageURL(base, { namespace, runConfig, node }) {
  const query = new URLSearchParams();
  if (namespace && runConfig) {
    query.set('ns', namespace);
    query.set('name', runConfig);
  }
  if (node) {
    query.set('node', node);
  }
  const search = query.toString();
  return `${base}/${search ? `?${search}` : ''}`;
}

const log = (line) => process.stderr.write(`[console shell ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

/** Waits until the plugin's manifest comes through the shell's server from numo's (its certificate verified). */
async function pluginAnswers(base, server, plugin, wait) {
  const deadline = Date.now() + wait;
  let last = '';
  for (;;) {
    try {
      const response = await fetch(`${base}/api/plugins/${plugin}/plugin-manifest.json`);
      await response.arrayBuffer();
      const record = server.plugin.at(-1);
      if (response.ok && record?.authorized) {
        return;
      }
      last = record?.error ?? `HTTP ${response.status}`;
    } catch (e) {
      last = e.message;
    }
    if (Date.now() > deadline) {
      throw new Error(`numo's plugin server did not answer the manifest in ${wait / 1000}s: ${last}`);
    }
    await new Promise((done) => setTimeout(done, 500));
  }
}

async function main() {
  let opts;
  try {
    opts = options();
  } catch (e) {
    process.stderr.write(`serve.mjs: ${e.message}\n${e instanceof Usage ? USAGE : ''}`);
    return 2;
  }
  let server;
  try {
    server = await startShellServer({
      connection: opts.connection,
      root: opts.shell,
      plugin: opts.plugin,
      pluginURL: opts.pluginURL,
      pluginCA: opts.pluginCA,
      userToken: opts.userToken ?? opts.connection.token,
      port: opts.port,
      log,
    });
  } catch (e) {
    const taken = e.code === 'EADDRINUSE' ? ' (another program listens there: choose another --port)' : '';
    process.stderr.write(`serve.mjs: cannot serve on 127.0.0.1:${opts.port}: ${e.message}${taken}\n`);
    return 1;
  }
  const stop = async (signal) => {
    log(`${signal}: stopping`);
    await server.close();
    process.exit(0);
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
  try {
    await pluginAnswers(server.url, server, opts.plugin, opts.wait);
  } catch (e) {
    process.stderr.write(`serve.mjs: ${e.message}\n`);
    await server.close();
    return 1;
  }
  log(`plugin ${opts.plugin} from ${opts.pluginURL} (certificate verified), API server ${opts.connection.server}`);
  process.stdout.write(`Console shell: ${pageURL(server.url, opts)}\n`);
  // Serves until a signal stops it.
  return new Promise(() => {});
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().then(
    (code) => process.exit(code),
    (e) => {
      process.stderr.write(`serve.mjs: ${e.stack ?? e.message}\n`);
      process.exit(2);
    },
  );
}
