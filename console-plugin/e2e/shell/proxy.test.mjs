// The shell server's plugin proxy plays the console's (a ConsolePlugin proxy with `authorization: UserToken`): the
// path after the alias goes to numo's server with the logged-in user's token, and nothing else of the page's request.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startShellServer } from './server.mjs';

test("the plugin proxy forwards the path after the alias to numo's server with the user's token", async () => {
  const seen = [];
  const numo = createServer((req, res) => {
    seen.push({
      method: req.method,
      url: req.url,
      authorization: req.headers.authorization,
      cookie: req.headers.cookie,
    });
    res.writeHead(403, { 'content-type': 'application/json' }).end('{"code":403,"message":"forbidden"}');
  });
  await new Promise((resolve) => numo.listen(0, '127.0.0.1', resolve));
  const shell = await startShellServer({
    connection: { server: 'http://127.0.0.1:1' },
    root: mkdtempSync(join(tmpdir(), 'numo-shell-')),
    plugin: 'numo-console-plugin',
    pluginURL: `http://127.0.0.1:${numo.address().port}`,
    pluginCA: '',
    userToken: 'user-token',
  });
  try {
    const response = await fetch(`${shell.url}/api/proxy/plugin/numo-console-plugin/numo/api/timeline/ops/gated`, {
      headers: { authorization: 'Bearer the-page-s', cookie: 'session=1' },
    });
    assert.equal(response.status, 403, 'the answer passed back as it is');
    assert.deepEqual(await response.json(), { code: 403, message: 'forbidden' });
    assert.deepEqual(seen, [
      { method: 'GET', url: '/api/timeline/ops/gated', authorization: 'Bearer user-token', cookie: undefined },
    ]);
    assert.equal(shell.proxied.length, 1);
    assert.equal(shell.proxied[0].status, 403);
    // Another alias, or another plugin, is not proxied to numo.
    const other = await fetch(`${shell.url}/api/proxy/plugin/other-plugin/numo/api/timeline/ops/gated`);
    assert.notEqual(other.status, 403);
    assert.equal(seen.length, 1);
  } finally {
    await shell.close();
    numo.close();
  }
});
