// The credentials of a kubeconfig's current context: the server, its CA, and a client certificate and key or a
// bearer token (inline `*-data`, or files relative to the kubeconfig's folder, as kubectl reads them).
//
// A kubeconfig is YAML (or JSON, which is YAML too); the subset kubeconfigs use — block mappings, block sequences
// of mappings, plain and quoted scalars, comments — is read here so that the e2e script needs no YAML package.

import { readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';

/** Parses the YAML subset of kubeconfigs (or JSON). Throws with the line number on anything else. */
export function parseYaml(text) {
  if (/^\s*[{[]/.test(text)) {
    return JSON.parse(text);
  }
  const lines = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = stripComment(raw);
    if (line.trim() === '' || line.trim() === '---') {
      return;
    }
    lines.push({ indent: line.length - line.trimStart().length, text: line.trim(), number: i + 1 });
  });
  let pos = 0;

  function fail(line, why) {
    throw new Error(`kubeconfig line ${line.number}: ${why}: ${line.text}`);
  }

  // A block (mapping or sequence) whose lines are indented exactly `indent`.
  function block(indent) {
    const first = lines[pos];
    if (first.text.startsWith('- ') || first.text === '-') {
      return sequence(indent);
    }
    return mapping(indent);
  }

  function sequence(indent) {
    const items = [];
    while (pos < lines.length && lines[pos].indent === indent && /^-( |$)/.test(lines[pos].text)) {
      const line = lines[pos];
      const rest = line.text.slice(1).trimStart();
      if (rest === '') {
        pos += 1;
        items.push(pos < lines.length && lines[pos].indent > indent ? block(lines[pos].indent) : null);
      } else if (keyValue(rest)) {
        // "- key: value" starts a mapping whose keys sit where "key" does.
        const inner = indent + (line.text.length - rest.length);
        lines[pos] = { ...line, indent: inner, text: rest };
        items.push(mapping(inner));
      } else {
        pos += 1;
        items.push(scalar(rest, line));
      }
    }
    return items;
  }

  function mapping(indent) {
    const object = {};
    while (pos < lines.length && lines[pos].indent === indent) {
      const line = lines[pos];
      const kv = keyValue(line.text);
      if (!kv) {
        fail(line, 'expected "key: value"');
      }
      pos += 1;
      const [key, value] = kv;
      if (value !== '') {
        object[key] = scalar(value, line);
      } else if (pos < lines.length && lines[pos].indent > indent) {
        object[key] = block(lines[pos].indent);
      } else if (pos < lines.length && lines[pos].indent === indent && /^-( |$)/.test(lines[pos].text)) {
        // A sequence may sit at its key's own indentation.
        object[key] = sequence(indent);
      } else {
        object[key] = null;
      }
    }
    if (pos < lines.length && lines[pos].indent > indent) {
      fail(lines[pos], 'unexpected indentation');
    }
    return object;
  }

  if (lines.length === 0) {
    return {};
  }
  const root = block(lines[0].indent);
  if (pos < lines.length) {
    fail(lines[pos], 'unexpected line');
  }
  return root;
}

function stripComment(line) {
  let quote = '';
  for (let i = 0; i < line.length; i += 1) {
    const c = line[i];
    if (quote) {
      if (c === quote) {
        quote = '';
      }
    } else if (c === '"' || c === "'") {
      quote = c;
    } else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]))) {
      return line.slice(0, i).trimEnd();
    }
  }
  return line.trimEnd();
}

function keyValue(text) {
  const match = /^("(?:[^"\\]|\\.)*"|'(?:[^']|'')*'|[^'"][^:]*?|[^:]+?):(?:\s+(.*))?$/.exec(text);
  if (!match) {
    return null;
  }
  return [unquote(match[1]), match[2] ?? ''];
}

function unquote(text) {
  if (text.startsWith('"')) {
    return JSON.parse(text);
  }
  if (text.startsWith("'")) {
    return text.slice(1, -1).replace(/''/g, "'");
  }
  return text;
}

function scalar(text, line) {
  if (text.startsWith('"') || text.startsWith("'")) {
    return unquote(text);
  }
  if (text === '[]') {
    return [];
  }
  if (text === '{}') {
    return {};
  }
  if (text.startsWith('[') || text.startsWith('{') || text.startsWith('|') || text.startsWith('>')) {
    throw new Error(`kubeconfig line ${line.number}: flow collections and block scalars are not supported`);
  }
  if (text === 'true' || text === 'false') {
    return text === 'true';
  }
  if (text === 'null' || text === '~') {
    return null;
  }
  return text;
}

/**
 * The connection of the kubeconfig's current context (or `context`): `{server, ca, cert, key, token, insecure,
 * context}` with the CA, certificate and key as PEM buffers.
 */
export function loadKubeconfig(path, context) {
  const config = parseYaml(readFileSync(path, 'utf8'));
  const base = dirname(resolve(path));
  const named = (list, name, what) => {
    const entry = (list ?? []).find((e) => e && e.name === name);
    if (!entry) {
      throw new Error(`${path}: no ${what} named ${JSON.stringify(name)}`);
    }
    return entry;
  };
  const contextName = context || config['current-context'];
  if (!contextName) {
    throw new Error(`${path} has no current-context`);
  }
  const ctx = named(config.contexts, contextName, 'context').context ?? {};
  const cluster = named(config.clusters, ctx.cluster, 'cluster').cluster ?? {};
  const user = ctx.user ? (named(config.users, ctx.user, 'user').user ?? {}) : {};
  const file = (p) => readFileSync(isAbsolute(p) ? p : resolve(base, p));
  const material = (data, filePath) => {
    if (data) {
      return Buffer.from(data, 'base64');
    }
    return filePath ? file(filePath) : undefined;
  };
  if (!cluster.server) {
    throw new Error(`${path}: cluster ${ctx.cluster} has no server`);
  }
  const token = user.token ?? (user.tokenFile ? file(user.tokenFile).toString('utf8').trim() : undefined);
  const connection = {
    context: contextName,
    server: String(cluster.server).replace(/\/+$/, ''),
    ca: material(cluster['certificate-authority-data'], cluster['certificate-authority']),
    insecure: cluster['insecure-skip-tls-verify'] === true,
    cert: material(user['client-certificate-data'], user['client-certificate']),
    key: material(user['client-key-data'], user['client-key']),
    token,
  };
  if (!connection.token && !(connection.cert && connection.key)) {
    throw new Error(`${path}: user ${ctx.user} has neither a client certificate and key nor a token`);
  }
  return connection;
}
