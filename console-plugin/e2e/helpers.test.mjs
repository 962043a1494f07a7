// The e2e script's own pieces that need no cluster or browser: `node --test e2e/` (from console-plugin/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

import { loadKubeconfig, parseYaml } from './kubeconfig.mjs';
import { patchSets } from './shell/server.mjs';

test('a kubeconfig as kwokctl writes it: client certificate files relative to the kubeconfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'numo-e2e-kubeconfig-'));
  writeFileSync(join(dir, 'ca.crt'), 'CA');
  writeFileSync(join(dir, 'admin.crt'), 'CERT');
  writeFileSync(join(dir, 'admin.key'), 'KEY');
  const file = join(dir, 'kubeconfig.yaml');
  writeFileSync(
    file,
    `apiVersion: v1
clusters:
- cluster:
    certificate-authority: ca.crt
    server: https://127.0.0.1:32764/
  name: kwok-numo-test
contexts:
- context:
    cluster: kwok-numo-test
    user: kwok-numo-test
  name: kwok-numo-test
current-context: kwok-numo-test # a comment
kind: Config
preferences: {}
users:
- name: kwok-numo-test
  user:
    client-certificate: ${join(dir, 'admin.crt')}
    client-key: admin.key
`,
  );
  const c = loadKubeconfig(file);
  assert.equal(c.server, 'https://127.0.0.1:32764');
  assert.equal(c.context, 'kwok-numo-test');
  assert.equal(c.ca.toString(), 'CA');
  assert.equal(c.cert.toString(), 'CERT');
  assert.equal(c.key.toString(), 'KEY');
  assert.equal(c.token, undefined);
});

test('inline data and a token, another context', () => {
  const dir = mkdtempSync(join(tmpdir(), 'numo-e2e-kubeconfig-'));
  const file = join(dir, 'config');
  const b64 = (s) => Buffer.from(s).toString('base64');
  writeFileSync(
    file,
    `current-context: a
contexts:
  - name: a
    context:
      cluster: x
      user: u
  - name: b
    context:
      cluster: y
      user: t
clusters:
  - name: y
    cluster:
      server: "https://api.example:6443"
      certificate-authority-data: ${b64('CA2')}
users:
  - name: t
    user:
      token: 'sha256~abc'
`,
  );
  const c = loadKubeconfig(file, 'b');
  assert.equal(c.server, 'https://api.example:6443');
  assert.equal(c.ca.toString(), 'CA2');
  assert.equal(c.token, 'sha256~abc');
  assert.throws(() => loadKubeconfig(file), /no cluster named "x"/);
});

test('the YAML subset: sequences at their key, quotes, comments and empty collections', () => {
  assert.deepEqual(parseYaml('a:\n- 1\n- "two # not a comment"\nb: []\nc: {}\nd: true\ne: ~\n'), {
    a: ['1', 'two # not a comment'],
    b: [],
    c: {},
    d: true,
    e: null,
  });
  assert.deepEqual(parseYaml('{"json": [1]}'), { json: [1] });
  assert.throws(() => parseYaml('a: |\n  block\n'), /not supported/);
});

test('what a PATCH sets: JSON patch pointers unescaped, merge patch leaves, removals as null', () => {
  const retry = '/metadata/annotations/openshift-optional.skrzypek.io~1retry';
  assert.deepEqual(
    patchSets(
      JSON.stringify([
        { op: 'test', path: retry, value: 'worker-0' },
        { op: 'replace', path: retry, value: 'worker-1' },
      ]),
      'application/json-patch+json',
    ),
    { '/metadata/annotations/openshift-optional.skrzypek.io/retry': 'worker-1' },
  );
  assert.deepEqual(
    patchSets(JSON.stringify([{ op: 'add', path: '/metadata/annotations', value: { 'a/b': 'x' } }]), ''),
    { '/metadata/annotations/a/b': 'x' },
  );
  assert.deepEqual(
    patchSets(
      JSON.stringify({ spec: { paused: true }, metadata: { annotations: { x: null } } }),
      'application/merge-patch+json',
    ),
    { '/spec/paused': true, '/metadata/annotations/x': null },
  );
  assert.deepEqual(patchSets('not json'), {});
});
