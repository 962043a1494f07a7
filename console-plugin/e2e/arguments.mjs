// What the end-to-end scripts (run.mjs, load.mjs, shell/serve.mjs) check of their arguments, alike.

import { existsSync, readFileSync } from 'node:fs';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

/** A wrong or missing argument: the script says so and prints its usage. */
export class Usage extends Error {}

/** The kubeconfig to use: `given` (`--kubeconfig`), else the first file `$KUBECONFIG` names. */
export function kubeconfigPath(given) {
  const kubeconfig = given ?? process.env.KUBECONFIG?.split(delimiter)[0];
  if (!kubeconfig) {
    throw new Usage('--kubeconfig (or $KUBECONFIG) is required');
  }
  return kubeconfig;
}

/** Fails unless `dir` holds the built page `what` names (its `index.html`); `build` says how to build it. */
export function requireBuilt(dir, what, build) {
  const index = join(dir, 'index.html');
  if (!existsSync(index)) {
    throw new Usage(`${what} is not built (${index} is missing): run ${build} in console-plugin/`);
  }
}

/** The PEM file at `path`, which argument `flag` gave. */
export function readPem(path, flag) {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    throw new Usage(`${flag}: ${e.message}`);
  }
}

/** The arguments of every script that serves the console shell: the cluster, numo's plugin server, the shell. */
export const SHELL_OPTIONS = {
  kubeconfig: { type: 'string' },
  context: { type: 'string' },
  'plugin-url': { type: 'string' },
  'plugin-ca': { type: 'string' },
  // The logged-in user's bearer token that the shell's plugin proxy forwards to numo's backend, as the console does
  // for a ConsolePlugin proxy with `authorization: UserToken`; the kubeconfig's token when not given.
  'user-token': { type: 'string' },
  shell: { type: 'string', default: join(dirname(fileURLToPath(import.meta.url)), 'shell/dist') },
  help: { type: 'boolean' },
};

/**
 * The command line's values of `options` (with {@link SHELL_OPTIONS}): prints `usage` and exits on `--help`, fails
 * without one of `required` (option names).
 */
export function parseOptions(options, usage, required) {
  const { values } = parseArgs({ options: { ...SHELL_OPTIONS, ...options } });
  if (values.help) {
    process.stdout.write(usage);
    process.exit(0);
  }
  for (const name of ['plugin-url', 'plugin-ca', ...required]) {
    if (!values[name]) {
      throw new Usage(`--${name} is required (--help)`);
    }
  }
  return values;
}

/** {@link SHELL_OPTIONS}'s values checked: the kubeconfig's path, numo's server and its CA, the built shell. */
export function shellArguments(values) {
  const kubeconfig = kubeconfigPath(values.kubeconfig);
  const shell = resolve(values.shell);
  requireBuilt(shell, 'the console shell', '`npm run build:shell` (webpack -c e2e/shell/webpack.config.js)');
  return {
    kubeconfig,
    context: values.context,
    pluginURL: new URL(values['plugin-url']).origin,
    pluginCA: readPem(values['plugin-ca'], '--plugin-ca'),
    userToken: values['user-token'],
    shell,
  };
}

/**
 * The command line of a script that checks a run config's page (run.mjs, load.mjs): {@link parseOptions} with the
 * run config (`--namespace`, `--run-config`), the output folder (`--out`) and `options`, each required but for
 * `options`' names not in `required`. `options` gives `--timeout-seconds` its default.
 */
export function parsePageOptions(options, usage, required) {
  const page = { namespace: { type: 'string' }, 'run-config': { type: 'string' }, out: { type: 'string' } };
  return parseOptions({ ...page, ...options }, usage, ['namespace', 'run-config', 'out', ...required]);
}

/** {@link parsePageOptions}' values checked: {@link shellArguments}, the run config, the output folder, the time limit. */
export function pageArguments(values) {
  return {
    ...shellArguments(values),
    namespace: values.namespace,
    runConfig: values['run-config'],
    out: resolve(values.out),
    timeout: Number(values['timeout-seconds']) * 1000,
  };
}
