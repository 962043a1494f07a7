// What the end-to-end scripts (run.mjs, load.mjs) share: the console shell (./shell) served by ./shell/server.mjs
// with the plugin's production build from numo's HTTPS server and the API server of a kubeconfig, Debian's headless
// Chromium on it (puppeteer-core), one JSON line per check on stdout, screenshots and a log in the output folder,
// the waiting, the failing (a screenshot of the moment, exit 1) and the time limit.

import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Usage } from './arguments.mjs';
import { loadKubeconfig } from './kubeconfig.mjs';
import { startShellServer } from './shell/server.mjs';

const plugin = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** A failed expectation: its check was reported and its screenshot taken. */
export class Failed extends Error {}

/**
 * What the plugin is, from its sources: its name and version (package.json consolePlugin), its extensions
 * (console-extensions.json) and its exposed modules.
 */
export function expectedPlugin(dir = plugin) {
  const { consolePlugin } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const extensions = JSON.parse(readFileSync(join(dir, 'console-extensions.json'), 'utf8'));
  return {
    name: consolePlugin.name,
    version: consolePlugin.version,
    exposedModules: Object.keys(consolePlugin.exposedModules ?? {}).sort(),
    extensions,
  };
}

/** Chromium: $NUMO_CHROMIUM, else chromium or chromium-browser on the PATH. */
export function chromium() {
  if (process.env.NUMO_CHROMIUM) {
    return process.env.NUMO_CHROMIUM;
  }
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    for (const name of ['chromium', 'chromium-browser']) {
      if (dir && existsSync(join(dir, name))) {
        return join(dir, name);
      }
    }
  }
  throw new Usage(
    "Chromium is missing: run hack/install-prerequisites.sh (it installs Debian's chromium), or set NUMO_CHROMIUM",
  );
}

const started = Date.now();

/** Prints one check as a JSON line. */
export function report(check, ok, detail = {}) {
  process.stdout.write(`${JSON.stringify({ check, ok, ...detail, elapsedMs: Date.now() - started })}\n`);
}

/**
 * Runs `scenario(session)` as the script `script` (its file's `import.meta.url` is `url`) when that file is the one
 * node runs, and exits with its status: 0 every check passed (then `done` is reported), 1 a check failed, 2 the
 * script could not run (`options()` threw: arguments, kubeconfig, shell; or Chromium is missing). `options()` gives
 * at least {kubeconfig, context, pluginURL, pluginCA, shell, out, timeout (ms)}; `logName` names the log in `out`.
 *
 * The session: `opts`, `log(line)`, `server` (./shell/server.mjs's), `pluginPrefix`, `report`, `open(query)`
 * (a page of the shell, which becomes the current `page`), `page`, `shot(name)`, `pass(check, detail, screenshot)`,
 * `fail(check, message, detail)`, `until(probe, accept, timeout, arg)`, `waitFor(check, what, probe, accept,
 * timeout, arg)`, `shellDone(check, timeout)` and `shellState()`.
 */
export function main(url, script, options, logName, scenario) {
  if (!process.argv[1] || resolve(process.argv[1]) !== fileURLToPath(url)) {
    return;
  }
  run(script, options, logName, scenario).then(
    (code) => process.exit(code),
    (e) => {
      process.stderr.write(`${script}: ${e.stack ?? e.message}\n`);
      process.exit(2);
    },
  );
}

async function run(script, options, logName, scenario) {
  let opts;
  let connection;
  let executablePath;
  let puppeteer;
  try {
    opts = options();
    connection = loadKubeconfig(opts.kubeconfig, opts.context);
    executablePath = chromium();
    puppeteer = (await import('puppeteer-core')).default;
  } catch (e) {
    process.stderr.write(`${script}: ${e.message}\n`);
    return 2;
  }
  mkdirSync(opts.out, { recursive: true });
  const logFile = join(opts.out, logName);
  writeFileSync(logFile, '');
  const log = (line) => appendFileSync(logFile, `${new Date().toISOString()} ${line}\n`);

  const { name } = expectedPlugin();
  const server = await startShellServer({
    connection,
    root: opts.shell,
    plugin: name,
    pluginURL: opts.pluginURL,
    pluginCA: opts.pluginCA,
    userToken: opts.userToken ?? connection.token,
    log,
  });
  const profile = mkdtempSync(join(tmpdir(), 'numo-e2e-chromium-'));
  let browser;
  let shots = 0;
  const overall = setTimeout(() => {
    process.stderr.write(`${script}: it took more than ${opts.timeout / 1000}s\n`);
    report('timeout', false, { message: `it took more than ${opts.timeout / 1000}s` });
    process.exit(1);
  }, opts.timeout);

  const session = {
    opts,
    log,
    server,
    pluginPrefix: `/api/plugins/${name}/`,
    report,
    page: undefined,

    /**
     * Opens the shell on `query` (its `?ns=&name=&node=&console-version=`) in a new page, which becomes the
     * session's page: `{page, seen, url}`, `seen` what the page printed, threw and loaded.
     */
    async open(query) {
      const seen = { console: [], errors: [], warnings: [], pageErrors: [], responses: [], failed: [] };
      const page = await browser.newPage();
      page.on('console', (m) => {
        const text = m.text();
        seen.console.push({ type: m.type(), text });
        if (m.type() === 'error') {
          seen.errors.push(text);
        } else if (m.type() === 'warn' || m.type() === 'warning') {
          seen.warnings.push(text);
        }
        log(`browser ${m.type()}: ${text}`);
      });
      page.on('pageerror', (e) => {
        seen.pageErrors.push(e.message);
        log(`page error: ${e.stack ?? e.message}`);
      });
      page.on('response', (r) => {
        seen.responses.push({
          path: new URL(r.url()).pathname,
          status: r.status(),
          contentType: r.headers()['content-type'],
          type: r.request().resourceType(),
        });
      });
      page.on('requestfailed', (r) => {
        seen.failed.push(`${r.url()} ${r.failure()?.errorText ?? ''}`);
        log(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`);
      });
      const url = `${server.url}/?${new URLSearchParams(query)}`;
      log(`opening ${url}`);
      session.page = page;
      await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 60_000 });
      return { page, seen, url };
    },

    /** A full-page screenshot `NN-name.png` in the output folder; returns its file name. */
    async shot(name) {
      shots += 1;
      const file = `${String(shots).padStart(2, '0')}-${name}.png`;
      // No tooltip of the last button clicked over what the picture is of.
      await session.page.mouse.move(0, 0);
      await session.page.evaluate(() => document.activeElement?.blur?.());
      await session.page.screenshot({ path: join(opts.out, file), fullPage: true });
      return file;
    },

    /** Reports `check` passed, with a screenshot `screenshot` if named. */
    async pass(check, detail, screenshot) {
      const file = screenshot ? await session.shot(screenshot) : undefined;
      report(check, true, { ...detail, ...(file ? { screenshot: file } : {}) });
    },

    /** Fails `check`: a screenshot of the moment, its JSON line, and the message. */
    async fail(check, message, detail = {}) {
      let file;
      try {
        file = session.page ? await session.shot(`FAILED-${check}`) : undefined;
      } catch (e) {
        log(`no screenshot of the failure: ${e.message}`);
      }
      report(check, false, { message, ...detail, ...(file ? { screenshot: file } : {}) });
      throw new Failed(`${check}: ${message}${file ? ` (screenshot ${join(opts.out, file)})` : ''}`);
    },

    /** Polls `probe` (run in the page with `arg`) until `accept` holds for its value: `{ok, last}` at the latest
     * after `timeout` ms. */
    async until(probe, accept, timeout, arg) {
      const deadline = Date.now() + timeout;
      let last;
      for (;;) {
        try {
          last = await session.page.evaluate(probe, arg);
        } catch (e) {
          last = `error: ${e.message}`;
        }
        if (accept(last)) {
          return { ok: true, last };
        }
        if (Date.now() > deadline) {
          return { ok: false, last };
        }
        await new Promise((r) => setTimeout(r, 250));
      }
    },

    /** Polls `probe` until `accept` holds for its value, and returns it; fails `check` after `timeout` ms. */
    async waitFor(check, what, probe, accept, timeout, arg) {
      const { ok, last } = await session.until(probe, accept, timeout, arg);
      if (!ok) {
        await session.fail(check, `${what}: not within ${timeout / 1000}s; last seen ${JSON.stringify(last)}`);
      }
      return last;
    },

    /** What the shell kept of what happened (`window.numoShell`), as data. */
    shellState: () => session.page.evaluate(() => JSON.parse(JSON.stringify(window.numoShell ?? null))),

    /** Waits until the shell loaded the plugin and rendered it, or failed: `rendered` or `failed`. */
    shellDone: (check, timeout) =>
      session.waitFor(
        check,
        'the shell loading the plugin',
        () => window.numoShell?.state,
        (s) => s === 'rendered' || s === 'failed',
        timeout,
      ),
  };

  try {
    browser = await puppeteer.launch({
      executablePath,
      headless: true,
      args: ['--no-sandbox', '--headless=new', '--disable-gpu', '--disable-dev-shm-usage'],
      userDataDir: profile,
      defaultViewport: { width: 1400, height: 1000 },
      timeout: 60_000,
    });
    await scenario(session);
    report('done', true, { screenshots: shots, out: opts.out });
    return 0;
  } catch (e) {
    if (e instanceof Failed) {
      process.stderr.write(`${script}: FAILED ${e.message}\n  log: ${logFile}\n`);
      return 1;
    }
    report('error', false, { message: e.message });
    process.stderr.write(`${script}: ${e.stack ?? e.message}\n  log: ${logFile}\n`);
    return 1;
  } finally {
    clearTimeout(overall);
    writeFileSync(join(opts.out, 'plugin-requests.json'), `${JSON.stringify(server.plugin, null, 2)}\n`);
    await browser?.close().catch(() => {});
    await server.close();
    rmSync(profile, { recursive: true, force: true });
  }
}
