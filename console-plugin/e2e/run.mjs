#!/usr/bin/env node
// The console plugin end to end during a live rollout: the console shell (e2e/shell, the console 4.22's plugin
// loader and share scope) in Debian's headless Chromium loads the plugin's PRODUCTION build from numo's own HTTPS
// server (./session.mjs, as load.mjs does) and renders the run config's Rollout tab, its Actions menu (the
// console.action/resource-provider hook) and the held node's Upgrade gate item, against a real API server through
// the shell's proxy, which holds the kubeconfig's credentials. Prints one JSON line per check on stdout, keeps a
// screenshot of every stage in --out, and exits non-zero at the first failed expectation (with a screenshot of that
// moment and a message on stderr).
//
//   node e2e/run.mjs --kubeconfig KUBECONFIG --namespace NS --run-config NAME --nodes worker-0,worker-1,... \
//     --plugin-url https://127.0.0.1:PORT --plugin-ca CA.pem --out DIR [--hold-text TEXT] \
//     [--patch STAGE=API_PATH=JSON]... [--shell DIR] [--timeout-seconds 600]
//
// --nodes       the run config's nodes in the order numo takes them: the first must still be on its way when the
//               page opens; the second is the node the scenario holds, fails, retries and skips (its Node status is
//               shown)
// --plugin-url  numo's console plugin server (it serves console-plugin/dist)
// --plugin-ca   the PEM of the CA that signed its certificate
// --user-token  the logged-in user's token, which the shell's plugin proxy forwards to numo's backend (the timeline)
// --patch       merge patches the scenario applies through the proxy at its stages (the world's faults):
//                 upgrade    starts the upgrade (ClusterVersion desiredUpdate) once the page shows the run config
//                 degrade    makes a health check fail (e.g. a ClusterOperator Degraded) once the first node is gating
//                 recover    clears it
//                 break-gate makes the next gate Job fail (e.g. the MutexRule's Job template)
//                 fix-gate   makes it succeed again
//               Without degrade/recover the hold stage is left out; without break-gate/fix-gate, retry and skip.
// --hold-text   what the hold reason must say while degraded (default: ClusterOperator)
// --shell       the built shell (default: e2e/shell/dist); `npm run build:shell` in console-plugin/
// Chromium:     $NUMO_CHROMIUM, else chromium or chromium-browser on the PATH; never downloaded.
//
// Exit status: 0 every check passed, 1 a check failed, 2 the script could not run (arguments, kubeconfig, shell,
// Chromium).

import { Usage, pageArguments, parsePageOptions } from './arguments.mjs';
import { main } from './session.mjs';
import { api, patchSets } from './shell/server.mjs';

const GROUP = 'openshift-optional.skrzypek.io';
const RETRY = `${GROUP}/retry`;
const SKIP = `${GROUP}/skip`;
const STAGES = ['upgrade', 'degrade', 'recover', 'break-gate', 'fix-gate'];
const USAGE =
  'usage: node e2e/run.mjs --kubeconfig F --namespace NS --run-config NAME --nodes A,B,... --plugin-url URL ' +
  '--plugin-ca CA.pem --out DIR [--patch STAGE=PATH=JSON]... [--hold-text TEXT] [--shell DIR] [--timeout-seconds N]\n';

/* ------------------------------------------------------------------------------------------- arguments */

function options() {
  const values = parsePageOptions(
    {
      nodes: { type: 'string' },
      'hold-text': { type: 'string', default: 'ClusterOperator' },
      patch: { type: 'string', multiple: true, default: [] },
      'timeout-seconds': { type: 'string', default: '600' },
      'step-seconds': { type: 'string', default: '120' },
    },
    USAGE,
    ['nodes'],
  );
  const patches = {};
  for (const spec of values.patch) {
    const [stage, path, ...json] = spec.split('=');
    if (!STAGES.includes(stage) || !path?.startsWith('/') || json.length === 0) {
      throw new Usage(`--patch ${spec}: expected STAGE=API_PATH=JSON with STAGE one of ${STAGES.join(', ')}`);
    }
    let body;
    try {
      body = JSON.parse(json.join('='));
    } catch (e) {
      throw new Usage(`--patch ${stage}: ${e.message}`);
    }
    (patches[stage] ??= []).push({ path, body });
  }
  const nodes = values.nodes.split(',').filter(Boolean);
  if (nodes.length < 2) {
    throw new Usage('--nodes needs at least two nodes');
  }
  return {
    ...pageArguments(values),
    nodes,
    holdText: values['hold-text'],
    patches,
    step: Number(values['step-seconds']) * 1000,
  };
}

/* ---------------------------------------------------------------------------------------- the scenario */

/** The checks, in order, on the session's shell (./session.mjs). */
async function scenario(session) {
  const { opts, log, server, report, open, shot, pass, fail, until, shellDone, shellState } = session;
  /** Polls `probe` until `accept` holds for its value, and returns it; fails `check` after `timeout` ms. */
  const waitFor = (check, what, probe, accept, timeout = opts.step, arg = undefined) =>
    session.waitFor(check, what, probe, accept, timeout, arg);

  // What the page shows, read in the page.
  const probe = {
    /** The text of the first element `selector` matches (null if none). */
    text: (selector) => document.querySelector(selector)?.textContent?.trim() ?? null,
    /** The node table row of a node: its data-phase (null while the table has no row for it). */
    row: (node) => document.querySelector(`[data-test="node-row-${node}"]`)?.getAttribute('data-phase') ?? null,
    /** Nodes done, from the progress bar. */
    done: () => document.querySelector('[data-test="progress"]')?.getAttribute('data-done') ?? null,
    /** The Node status (the node's "Upgrade gate" details item): its state and its words. */
    nodeStatus: () => {
      const status = document.querySelector('[data-test="shell-node"] [data-test="node-status"]');
      return status ? { state: status.getAttribute('data-state'), text: status.textContent.trim() } : null;
    },
    /** Whether `selector` is there and can be clicked (not disabled, not aria-disabled). */
    enabled: (selector) => {
      const b = document.querySelector(selector);
      return b ? !b.disabled && b.getAttribute('aria-disabled') !== 'true' : null;
    },
    present: (selector) => Boolean(document.querySelector(selector)),
  };
  const read = (what, arg) => page.evaluate(probe[what], arg);
  const waitRow = (check, node, accept, what, timeout = opts.step) =>
    waitFor(check, `the row of ${node} ${what}`, probe.row, accept, timeout, node);

  const namespacePath = `/apis/${GROUP}/v1alpha1/namespaces/${encodeURIComponent(opts.namespace)}`;
  const rcPath = `${namespacePath}/mutexrunconfigs/${encodeURIComponent(opts.runConfig)}`;
  const getRunConfig = () => api(server.url, 'GET', rcPath);
  /**
   * Applies a stage's patches. An object whose controller reports `status.observedGeneration` is waited for until
   * it observed the patched generation (a changed MutexRule is judged again before numo uses it), so that the next
   * stage does not race the change.
   */
  const patchWorld = async (stage) => {
    const settled = [];
    for (const { path, body } of opts.patches[stage] ?? []) {
      const patched = await api(server.url, 'PATCH', path, body);
      log(`${stage}: patched ${path} with ${JSON.stringify(body)}`);
      const generation = patched?.metadata?.generation;
      if (generation !== undefined && patched.status?.observedGeneration !== undefined) {
        const deadline = Date.now() + opts.step;
        let observed = patched.status.observedGeneration;
        while (observed < generation) {
          if (Date.now() > deadline) {
            await fail(
              `world-${stage}`,
              `${path} observed generation ${observed}, not ${generation}, within ${opts.step / 1000}s`,
            );
          }
          await new Promise((r) => setTimeout(r, 200));
          observed = (await api(server.url, 'GET', path)).status?.observedGeneration ?? observed;
        }
        settled.push({ path, generation });
      }
    }
    report(`world-${stage}`, true, { patched: (opts.patches[stage] ?? []).map((p) => p.path), settled });
  };
  /** The page's writes to the run config since `since`. */
  const pageWrites = (since) =>
    server.requests.filter(
      (r) => r.by === 'page' && r.method !== 'GET' && r.at >= since && r.path.split('?')[0] === rcPath,
    );
  /** The highest Job attempt of `node` in the run config's status. */
  const attempts = (rc, node) =>
    Math.max(0, ...((rc.status?.nodes ?? []).find((e) => e.name === node)?.jobs ?? []).map((j) => j.attempt ?? 1));

  const [first, held] = opts.nodes;
  const last = opts.nodes[opts.nodes.length - 1];
  // The run config's page with the held node's: the console shell loads the plugin and renders them.
  const { page, seen, url } = await open({ ns: opts.namespace, name: opts.runConfig, node: held });
  // 1. The run config is shown: its phase. Then the upgrade starts, with the page open. A mark in the page's
  //    window tells whether it was ever reloaded.
  if ((await shellDone('page-loaded', opts.step)) !== 'rendered') {
    const { plugin, errors } = await shellState();
    await fail('page-loaded', `the console did not load the plugin: ${plugin?.errorMessage ?? ''}`, { errors });
  }
  const phase = await waitFor(
    'page-loaded',
    'the phase shown',
    probe.text,
    (v) => !!v && v !== 'Unknown',
    opts.step,
    '[data-test="phase"]',
  );
  await page.evaluate(() => {
    window.numoE2eMark = 'never reloaded';
  });
  const reloaded = async () => (await page.evaluate(() => window.numoE2eMark)) !== 'never reloaded';
  await pass('page-loaded', { phase, url }, 'loaded');
  if (opts.patches.upgrade) {
    await patchWorld('upgrade');
  }

  // 2. Rows advance as nodes finish, with the page open: the first node's row from Pending/Gating to Done.
  const before = await waitRow('row-gating', first, (v) => v === 'Pending' || v === 'Gating', 'pending or gating');
  const gating = before === 'Gating' ? before : await waitRow('row-gating', first, (v) => v === 'Gating', 'gating');
  const doneBefore = await read('done');
  await pass(
    'row-gating',
    { node: first, seen: [...new Set([before, gating])], done: doneBefore },
    'first-node-gating',
  );
  if (opts.patches.degrade) {
    // While the first node is in flight: the node after it is held.
    await patchWorld('degrade');
  }
  await waitRow('row-advances', first, (v) => v === 'Done', 'done');
  if (await reloaded()) {
    await fail('row-advances', 'the page was reloaded; it must follow the rollout by itself');
  }
  const eta = await read('text', '[data-test="eta"]');
  await pass('row-advances', { node: first, from: gating, to: 'Done', reloaded: false, eta }, 'first-node-done');
  const doneAfter = await waitFor(
    'progress-advances',
    `more than ${doneBefore} nodes done`,
    probe.done,
    (v) => Number(v) > Number(doneBefore),
  );
  // The timeline, which numo lays out and the plugin fetches through the console's plugin proxy as the user, follows.
  const timelineOutcome = await waitFor(
    'progress-advances',
    `the timeline's row of ${first} done`,
    (node) => document.querySelector(`[data-test="timeline-row-${node}"]`)?.getAttribute('data-outcome') ?? null,
    (v) => v === 'Done',
    opts.step,
    first,
  );
  const timelineFetches = server.proxied.filter((r) => r.path.includes('/api/timeline/'));
  report('progress-advances', true, {
    from: Number(doneBefore),
    to: Number(doneAfter),
    text: await read('text', '[data-test="progress"]'),
    timeline: {
      outcome: timelineOutcome,
      fetches: timelineFetches.length,
      statuses: [...new Set(timelineFetches.map((r) => r.status))],
      path: timelineFetches[0]?.path,
    },
  });

  // 3. The failing health check holds the next node: the hold reason, and that node's status.
  if (opts.patches.degrade) {
    const reason = await waitFor(
      'hold-shown',
      `the hold reason saying ${JSON.stringify(opts.holdText)}`,
      probe.text,
      (v) => !!v && v.includes(opts.holdText),
      opts.step,
      '[data-test="hold-reason"]',
    );
    const holds = await waitFor(
      'hold-shown',
      'a hold drawn on the timeline',
      () => document.querySelectorAll('[data-test="timeline-hold"]').length,
      (n) => n > 0,
    );
    await pass('hold-shown', { reason, timelineHolds: holds }, 'held');
    const status = await waitFor(
      'node-status-held',
      `the Node status of ${held} held, saying ${JSON.stringify(opts.holdText)}`,
      probe.nodeStatus,
      (v) => v?.state === 'held' && v.text.includes(opts.holdText),
    );
    report('node-status-held', true, { node: held, state: status.state, status: status.text });
  }

  // 4. Pause and Resume through the Rollout tab: spec.paused on the object.
  for (const [action, paused] of [
    ['pause', true],
    ['resume', false],
  ]) {
    const check = `${action}-sets-paused`;
    const since = Date.now();
    await confirmAction(check, action, `[data-test="action-${action}"]`);
    const rc = await waitForObject(check, `spec.paused ${paused}`, (o) => Boolean(o.spec?.paused) === paused);
    const sent = await waitForWrite(check, since, (sets) => sets['/spec/paused'] === paused);
    // The page follows: the other button of the pair.
    const other = paused ? 'resume' : 'pause';
    await waitFor(check, `the ${other} button`, probe.present, Boolean, opts.step, `[data-test="action-${other}"]`);
    await pass(
      check,
      { paused: rc.spec?.paused ?? false, sent: describeWrite(sent) },
      action === 'pause' ? 'paused' : 'resumed',
    );
  }

  // 5. A failed node: Retry (from the Actions menu) and Skip (from the Rollout tab) set numo's annotations.
  if (opts.patches['break-gate']) {
    await patchWorld('break-gate');
    if (opts.patches.recover) {
      await patchWorld('recover');
    }
    await waitRow('node-failed', held, (v) => v === 'Failed', 'failed');
    const failedRc = await getRunConfig();
    await pass(
      'node-failed',
      { node: held, phase: await read('text', '[data-test="phase"]'), attempt: attempts(failedRc, held) },
      'node-failed',
    );

    let since = Date.now();
    const attemptsBefore = attempts(failedRc, held);
    await confirmAction('retry-annotates', 'retry', `[data-test="menu-action-numo-retry-${held}"]`);
    const sentRetry = await waitForWrite(
      'retry-annotates',
      since,
      (sets) => sets[`/metadata/annotations/${RETRY}`] === held,
    );
    // numo removes the annotation once it acted on it: it is still there, or the node's next attempt ran.
    const retried = await waitForObject(
      'retry-annotates',
      `${RETRY}=${held}, or a new attempt of ${held}`,
      (o) => o.metadata?.annotations?.[RETRY] === held || attempts(o, held) > attemptsBefore,
    );
    await pass(
      'retry-annotates',
      {
        node: held,
        sent: describeWrite(sentRetry),
        annotation: retried.metadata?.annotations?.[RETRY] ?? null,
        attempt: attempts(retried, held),
      },
      'retried',
    );
    const again = await waitForObject(
      'retry-runs-again',
      `attempt ${attemptsBefore + 1} of ${held} failed`,
      (o) =>
        attempts(o, held) > attemptsBefore &&
        (o.status?.nodes ?? []).some((e) => e.name === held && e.phase === 'Failed'),
    );
    await waitRow('retry-runs-again', held, (v) => v === 'Failed', 'failed again');
    await pass('retry-runs-again', { node: held, attempt: attempts(again, held) }, 'failed-again');

    if (opts.patches['fix-gate']) {
      await patchWorld('fix-gate');
    }
    since = Date.now();
    await confirmAction('skip-annotates', 'skip', '[data-test="action-skip"]', held);
    const sentSkip = await waitForWrite('skip-annotates', since, (sets) =>
      (sets[`/metadata/annotations/${SKIP}`] ?? '').split(',').includes(held),
    );
    const skipped = await waitForObject('skip-annotates', `${SKIP} naming ${held}`, (o) =>
      (o.metadata?.annotations?.[SKIP] ?? '')
        .split(',')
        .map((n) => n.trim())
        .includes(held),
    );
    await pass(
      'skip-annotates',
      { node: held, sent: describeWrite(sentSkip), annotation: skipped.metadata.annotations[SKIP] },
      'skipped',
    );
    await waitRow('rollout-goes-on', held, (v) => v === 'Skipped', 'skipped');
    await waitRow('rollout-goes-on', last, (v) => v === 'Done', 'done after the skip', opts.step * 2);
    await pass(
      'rollout-goes-on',
      { skipped: held, done: last, phase: await read('text', '[data-test="phase"]') },
      'rollout-goes-on',
    );
  }

  // Nothing went wrong on the way: nothing thrown in the page, no error the shell kept (a component's render, the
  // plugin's loading), no word the plugin showed missing from its catalogue.
  const { errors, missingKeys } = await shellState();
  if (seen.pageErrors.length > 0 || errors.length > 0 || missingKeys.length > 0) {
    const all = [...seen.pageErrors, ...errors, ...missingKeys.map((k) => `missing translation ${k}`)];
    await fail('no-page-errors', `the page threw: ${all.join(' | ')}`);
  }
  report('no-page-errors', true, {});

  /* helpers that need the page */

  /**
   * Clicks `selector` once it is enabled, waits for the confirmation of `action` (choosing `node` where it asks
   * for one), keeps a screenshot of it, confirms, and waits until it closed.
   */
  async function confirmAction(check, action, selector, node) {
    await waitFor(check, `${selector} enabled`, probe.enabled, (v) => v === true, opts.step, selector);
    const modal = `[data-test="action-modal"][data-action="${action}"]`;
    // A click that opened nothing (the page re-rendered under the pointer) is logged and made once more, as a user
    // would; the confirmation must then open.
    for (let click = 1; ; click += 1) {
      const target = await page.$eval(selector, (b) => {
        b.scrollIntoView({ block: 'center' });
        const r = b.getBoundingClientRect();
        const top = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
        return {
          x: Math.round(r.left + r.width / 2),
          y: Math.round(r.top + r.height / 2),
          covered: !b.contains(top),
          top: top ? `${top.tagName.toLowerCase()}.${top.className}` : null,
        };
      });
      log(`${action}: click ${click} on ${selector} at ${JSON.stringify(target)}`);
      await page.click(selector);
      if (click === 1) {
        if ((await until(probe.present, Boolean, 10_000, modal)).ok) {
          break;
        }
        log(`${action}: the confirmation did not open after the first click`);
      } else {
        const what = `the ${action} confirmation after ${click} clicks on ${selector} (${JSON.stringify(target)})`;
        await waitFor(check, what, probe.present, Boolean, opts.step, modal);
        break;
      }
    }
    if (node) {
      await chooseNode(node);
    }
    const confirm = '[data-test="confirm"]';
    await waitFor(
      check,
      `the ${action} confirmation's ${confirm} enabled`,
      probe.enabled,
      (v) => v === true,
      opts.step,
      confirm,
    );
    await shot(`${action}-confirmation`);
    await page.click(confirm);
    await waitFor(
      check,
      `the ${action} confirmation closed`,
      (m) => !document.querySelector(m),
      Boolean,
      opts.step,
      modal,
    );
  }

  /** Picks `node` in a confirmation that offers a choice of nodes (radio buttons, or a select). */
  async function chooseNode(node) {
    const radio = `[data-test="node-choice-${node}"]`;
    const select = '[data-test="node-select"]';
    if (await read('present', radio)) {
      if (!(await page.$eval(radio, (r) => r.checked))) {
        await page.click(radio);
      }
    } else if (await read('present', select)) {
      await page.select(select, node);
    }
  }

  async function waitForObject(check, what, accept) {
    const deadline = Date.now() + opts.step;
    let last;
    for (;;) {
      last = await getRunConfig();
      if (accept(last)) {
        return last;
      }
      if (Date.now() > deadline) {
        await fail(
          check,
          `${what}: not within ${opts.step / 1000}s; the run config has spec ${JSON.stringify(last.spec)} and annotations ${JSON.stringify(last.metadata?.annotations ?? {})}`,
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }

  async function waitForWrite(check, since, accept) {
    const deadline = Date.now() + opts.step;
    for (;;) {
      const write = pageWrites(since).find((w) => w.status < 300 && accept(patchSets(w.body, w.contentType)));
      if (write) {
        return write;
      }
      if (Date.now() > deadline) {
        await fail(
          check,
          `the page sent no accepted write to the run config that matches; it sent ${JSON.stringify(pageWrites(since).map(describeWrite))}`,
        );
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}

function describeWrite(w) {
  return {
    method: w.method,
    contentType: w.contentType,
    status: w.status,
    body: w.body,
    sets: patchSets(w.body, w.contentType),
  };
}

main(import.meta.url, 'run.mjs', options, 'e2e.log', scenario);
