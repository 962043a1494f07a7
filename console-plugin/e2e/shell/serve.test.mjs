// serve.mjs's own pieces that need no cluster or server: `node --test e2e/` (from console-plugin/).
import { test } from 'node:test';
import assert from 'node:assert/strict';

import { pageURL } from './serve.mjs';

test("the page's address carries the shell's query: the run config and the node", () => {
  const base = 'http://127.0.0.1:9080';
  assert.equal(
    pageURL(base, { namespace: 'numo-demo', runConfig: 'demo', node: 'worker-0' }),
    'http://127.0.0.1:9080/?ns=numo-demo&name=demo&node=worker-0',
  );
  assert.equal(pageURL(base, { namespace: 'ns', runConfig: 'a b', node: '' }), 'http://127.0.0.1:9080/?ns=ns&name=a+b');
  // A run config needs its namespace: without one the page shows no run config.
  assert.equal(pageURL(base, { namespace: '', runConfig: 'demo', node: '' }), 'http://127.0.0.1:9080/');
});
