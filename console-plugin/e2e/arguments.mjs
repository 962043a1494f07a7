// What the end-to-end scripts (run.mjs, load.mjs, shell/serve.mjs) check of their arguments, alike.

import { existsSync, readFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';

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
