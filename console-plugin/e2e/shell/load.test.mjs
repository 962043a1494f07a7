// load.mjs's own pieces that need no cluster, browser or server: `node --test e2e/` (from console-plugin/).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { codeRefsOf, manifestProblems } from '../load.mjs';
import { expectedPlugin } from '../session.mjs';

const plugin = join(dirname(fileURLToPath(import.meta.url)), '../..');

test('the plugin, from its sources: name, version, exposed modules, extensions', () => {
  const expected = expectedPlugin(plugin);
  assert.equal(expected.name, 'numo-console-plugin');
  assert.match(expected.version, /^\d+\.\d+\.\d+/);
  assert.ok(expected.exposedModules.includes('RolloutTab'));
  // Every code reference names an exposed module (the loader calls container.get(<module>)).
  for (const ref of codeRefsOf(expected.extensions)) {
    assert.ok(expected.exposedModules.includes(ref.split('.')[0]), ref);
  }
});

test('code references: every {"$codeRef"} object, nested anywhere in the properties, once', () => {
  const extensions = [
    { type: 'a', properties: { component: { $codeRef: 'Tab' }, page: { name: 'x' } } },
    { type: 'b', properties: { deep: [{ provider: { $codeRef: 'actions.useActions' } }], other: { $codeRef: 'Tab' } } },
    { type: 'c', properties: { notARef: { $codeRef: 'X', extra: 1 } } },
  ];
  assert.deepEqual(codeRefsOf(extensions), ['Tab', 'actions.useActions']);
});

test('a manifest is checked against the sources: name, version, callback, base URL, scripts, extensions', () => {
  const expected = { name: 'p', version: '1.0.0', exposedModules: [], extensions: [{ type: 't', properties: {} }] };
  const good = {
    name: 'p',
    version: '1.0.0',
    registrationMethod: 'callback',
    baseURL: '/api/plugins/p/',
    loadScripts: ['plugin-entry.js'],
    extensions: [{ type: 't', properties: {} }],
  };
  assert.deepEqual(manifestProblems(good, expected), []);
  assert.deepEqual(manifestProblems(undefined, expected), ['no manifest']);
  const bad = {
    ...good,
    version: '0.9.0',
    registrationMethod: 'custom',
    baseURL: '/',
    loadScripts: [],
    extensions: [],
  };
  assert.deepEqual(manifestProblems(bad, expected), [
    'version 0.9.0, not 1.0.0',
    'registrationMethod custom, not callback',
    'baseURL /, not /api/plugins/p/',
    'no loadScripts',
    'extensions differ from console-extensions.json: [] against [t]',
  ]);
});

const built = existsSync(join(plugin, 'dist/plugin-manifest.json'));

test('the production build, when there is one, has the manifest its sources say', { skip: !built }, () => {
  const manifest = JSON.parse(readFileSync(join(plugin, 'dist/plugin-manifest.json'), 'utf8'));
  assert.deepEqual(manifestProblems(manifest, expectedPlugin(plugin)), []);
  for (const script of manifest.loadScripts) {
    assert.ok(existsSync(join(plugin, 'dist', script)), script);
  }
});
