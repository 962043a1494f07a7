// The console shell's server on 127.0.0.1, in the console's place:
//
// - `/api/plugins/<plugin>/<file>`: the plugin's files. The console's backend proxies them from the plugin's Service
//   over HTTPS (trusting the service CA) under its own origin, so the browser loads the plugin same-origin; here they
//   come from numo's HTTPS server, trusting the test's CA. Every request is recorded as `{path, upstream, status,
//   contentType, cacheControl, nosniff, bytes, authorized, issuer, protocol, error}`: what numo's server answered and
//   whether its certificate was verified.
// - `/api/proxy/plugin/<plugin>/<alias>/<path>`: the console's plugin proxy (the ConsolePlugin's `spec.proxy`):
//   `<path>` of numo's HTTPS server (the plugin's Service), trusting the test's CA, with the logged-in user's bearer
//   token (`userToken`) as the console forwards it for `authorization: UserToken`, and nothing else of the page's
//   request but its method and `accept`. Recorded in `proxied` as `{path, upstream, status, authorized, at}`.
// - `/api` and `/apis`: the real API server with the kubeconfig's credentials, streamed both ways (watches stay open).
//   Every request is recorded (writes with their bodies), so that a scenario can assert what the UI sent.
// - the rest: the built shell page (e2e/shell/dist) as static files.

import { createServer, request as httpRequest } from 'node:http';
import { request as httpsRequest, Agent } from 'node:https';
import { createReadStream, statSync } from 'node:fs';
import { extname, join, normalize, sep } from 'node:path';

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json',
  '.map': 'application/json',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
};

// Headers that belong to one connection, not to the request (RFC 9110 7.6.1), and those the API proxy sets itself.
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'upgrade',
  'te',
  'trailer',
  'host',
  'authorization',
  'cookie',
  'origin',
  'referer',
]);
// What the console's backend passes on of a plugin file's answer.
const PLUGIN_HEADERS = [
  'content-type',
  'content-length',
  'cache-control',
  'x-content-type-options',
  'etag',
  'last-modified',
];
// The header that marks a scenario's own requests through the API proxy ({@link api}).
const BY_SCRIPT = 'x-numo-e2e';

/** The headers of `headers` that are not `HOP`'s. */
const endToEnd = (headers) => Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP.has(name)));

/**
 * Starts the shell's server. `connection` is a loadKubeconfig result, `root` the built shell (e2e/shell/dist),
 * `plugin` the plugin's name, `pluginURL` numo's HTTPS server (`https://127.0.0.1:<port>`) and `pluginCA` the PEM of
 * the CA its certificate is verified against; `port` is where it listens on 127.0.0.1 (0, the default: a free port
 * the system picks). Resolves to `{url, plugin, proxied, requests, close()}`: `plugin` the plugin file records, `requests` the
 * API requests as `{by, method, path, contentType, body, status, at}`, writes with their body; `by` is `script` for
 * a scenario's own requests ({@link api}), else `page`; `proxied` the plugin proxy's requests. `userToken` is the
 * bearer token the plugin proxy forwards (none: it forwards no credentials), `alias` the proxy's alias.
 */
export async function startShellServer({
  connection,
  root,
  plugin,
  pluginURL,
  pluginCA,
  userToken,
  alias = 'numo',
  port = 0,
  log = () => {},
}) {
  const api = new URL(connection.server);
  const apiPrefix = api.pathname === '/' ? '' : api.pathname;
  const apiAgent = new Agent({
    ca: connection.ca,
    cert: connection.cert,
    key: connection.key,
    rejectUnauthorized: !connection.insecure,
    keepAlive: true,
  });
  const numo = new URL(pluginURL);
  // No client certificate, the CA of the plugin's certificate only: as the console's backend with the service CA.
  const pluginAgent = new Agent({ ca: pluginCA, rejectUnauthorized: true, keepAlive: true });
  const pluginPrefix = `/api/plugins/${plugin}/`;
  const proxyPrefix = `/api/proxy/plugin/${plugin}/${alias}/`;
  const records = [];
  const proxied = [];
  const requests = [];
  const open = new Set();

  /**
   * Sends `req` on to `target` (an http(s).request options object) and streams the answer back, each chunk as it
   * comes (a watch's headers come before its first event, then it streams); `answered(answer)` sees the answer first
   * and returns the headers passed back; `failed(error)` records a failure. Ends the upstream request when the page
   * goes away (a watch ended by the page, a navigation).
   */
  function forward(req, res, target, { answered, failed, body = true }) {
    const out = (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answered(answer));
      res.flushHeaders();
      answer.on('data', (chunk) => res.write(chunk));
      answer.on('end', () => res.end());
      answer.on('error', () => res.destroy());
    });
    open.add(out);
    out.on('close', () => open.delete(out));
    out.on('error', (e) => {
      const [type, text] = failed(e);
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': type }).end(text);
      } else {
        res.destroy();
      }
    });
    res.on('close', () => {
      if (!res.writableEnded) {
        out.destroy();
      }
    });
    if (body) {
      req.pipe(out);
    } else {
      out.end();
    }
  }

  function proxyPlugin(req, res) {
    const path = `/${req.url.slice(pluginPrefix.length)}`;
    const record = { path: req.url, upstream: `${numo.origin}${path}`, at: Date.now() };
    records.push(record);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      record.status = 405;
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const target = {
      protocol: 'https:',
      hostname: numo.hostname,
      port: numo.port,
      method: req.method,
      path,
      headers: { accept: req.headers.accept ?? '*/*', 'user-agent': 'numo-console-shell' },
      agent: pluginAgent,
    };
    forward(req, res, target, {
      body: false,
      answered: (answer) => {
        record.status = answer.statusCode;
        record.contentType = answer.headers['content-type'];
        record.cacheControl = answer.headers['cache-control'];
        record.nosniff = answer.headers['x-content-type-options'] === 'nosniff';
        record.authorized = answer.socket.authorized === true;
        record.issuer = answer.socket.getPeerCertificate?.()?.issuer?.CN;
        record.protocol = answer.socket.getProtocol?.();
        record.bytes = 0;
        answer.on('data', (chunk) => {
          record.bytes += chunk.length;
        });
        return Object.fromEntries(
          PLUGIN_HEADERS.filter((h) => answer.headers[h] !== undefined).map((h) => [h, answer.headers[h]]),
        );
      },
      failed: (e) => {
        record.status = 502;
        record.error = e.message;
        log(`plugin ${req.url} from ${record.upstream} failed: ${e.message}`);
        return ['text/plain; charset=utf-8', `plugin proxy: ${e.message}\n`];
      },
    });
  }

  function proxyToPlugin(req, res) {
    const path = `/${req.url.slice(proxyPrefix.length)}`;
    const record = { path: req.url, upstream: `${numo.origin}${path}`, method: req.method, at: Date.now() };
    proxied.push(record);
    const headers = { accept: req.headers.accept ?? '*/*', 'user-agent': 'numo-console-shell' };
    if (userToken) {
      headers.authorization = `Bearer ${userToken}`;
    }
    const target = {
      protocol: numo.protocol,
      hostname: numo.hostname,
      port: numo.port,
      method: req.method,
      path,
      headers,
      agent: numo.protocol === 'https:' ? pluginAgent : undefined,
    };
    forward(req, res, target, {
      body: false,
      answered: (answer) => {
        record.status = answer.statusCode;
        record.authorized = answer.socket.authorized === true;
        if (answer.statusCode >= 400) {
          log(`plugin proxy ${req.method} ${path} -> ${answer.statusCode}`);
        }
        return endToEnd(answer.headers);
      },
      failed: (e) => {
        record.status = 502;
        record.error = e.message;
        log(`plugin proxy ${path} from ${record.upstream} failed: ${e.message}`);
        return ['application/json', JSON.stringify({ code: 502, message: `plugin proxy: ${e.message}` })];
      },
    });
  }

  function proxyApi(req, res) {
    const headers = endToEnd(req.headers);
    if (connection.token) {
      headers.authorization = `Bearer ${connection.token}`;
    }
    const by = headers[BY_SCRIPT] === 'script' ? 'script' : 'page';
    delete headers[BY_SCRIPT];
    const record = { by, method: req.method, path: req.url, contentType: req.headers['content-type'], at: Date.now() };
    requests.push(record);
    const write = !['GET', 'HEAD', 'OPTIONS'].includes(req.method);
    if (write) {
      const chunks = [];
      req.on('data', (chunk) => chunks.push(chunk));
      req.on('end', () => {
        record.body = Buffer.concat(chunks).toString('utf8');
      });
    }
    const target = {
      protocol: api.protocol,
      hostname: api.hostname,
      port: api.port,
      method: req.method,
      path: apiPrefix + req.url,
      headers,
      agent: api.protocol === 'https:' ? apiAgent : undefined,
    };
    forward(req, res, target, {
      answered: (answer) => {
        record.status = answer.statusCode;
        if (write || answer.statusCode >= 400) {
          log(`proxy ${req.method} ${req.url} -> ${answer.statusCode}${record.body ? ` ${record.body}` : ''}`);
        }
        return endToEnd(answer.headers);
      },
      failed: (e) => {
        record.status = 502;
        log(`proxy ${req.method} ${req.url} failed: ${e.message}`);
        const status = { kind: 'Status', status: 'Failure', code: 502, message: `proxy: ${e.message}` };
        return ['application/json', JSON.stringify(status)];
      },
    });
  }

  function serveStatic(req, res) {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405).end();
      return;
    }
    const path = decodeURIComponent(new URL(req.url, 'http://localhost').pathname);
    const relative = normalize(path === '/' ? '/index.html' : path).replace(/^([/\\])+/, '');
    const file = join(root, relative);
    if (!(file + sep).startsWith(root + sep) && file !== root) {
      res.writeHead(403).end();
      return;
    }
    let stat;
    try {
      stat = statSync(file);
    } catch {
      stat = undefined;
    }
    if (!stat || !stat.isFile()) {
      log(`static ${path}: 404`);
      res.writeHead(404, { 'content-type': 'text/plain' }).end(`${path} is not in ${root}\n`);
      return;
    }
    res.writeHead(200, {
      'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
      'content-length': stat.size,
      'cache-control': 'no-store',
    });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    createReadStream(file).pipe(res);
  }

  const server = createServer((req, res) => {
    if (req.url.startsWith(pluginPrefix)) {
      proxyPlugin(req, res);
    } else if (req.url.startsWith(proxyPrefix)) {
      proxyToPlugin(req, res);
    } else if (/^\/apis?(\/|$|\?)/.test(req.url)) {
      proxyApi(req, res);
    } else {
      serveStatic(req, res);
    }
  });
  const agents = () => {
    apiAgent.destroy();
    pluginAgent.destroy();
  };
  try {
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
  } catch (e) {
    agents();
    throw e;
  }
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    plugin: records,
    proxied,
    requests,
    close: async () => {
      for (const out of open) {
        out.destroy();
      }
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(() => resolve()));
      agents();
    },
  };
}

/** A JSON request through the server's API proxy (so with the kubeconfig's credentials), as the page would make it. */
export async function api(base, method, path, body, contentType = 'application/merge-patch+json') {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      accept: 'application/json',
      [BY_SCRIPT]: 'script',
      ...(body === undefined ? {} : { 'content-type': contentType }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  if (!response.ok) {
    throw new Error(`${method} ${path}: ${response.status} ${json?.message ?? text}`);
  }
  return json;
}

/**
 * What a PATCH body sets, as `{"/spec/paused": true, "/metadata/annotations/<key>": "<value>"}`: the leaves of a
 * merge patch, or of the values a JSON patch adds or replaces (its pointers unescaped). Removals are `null`.
 */
export function patchSets(body, contentType = '') {
  const sets = {};
  const leaves = (value, path) => {
    if (value && typeof value === 'object' && !Array.isArray(value)) {
      const keys = Object.keys(value);
      keys.forEach((k) => leaves(value[k], `${path}/${k}`));
      if (keys.length === 0) {
        sets[path] = {};
      }
    } else {
      sets[path] = value;
    }
  };
  let parsed;
  try {
    parsed = JSON.parse(body ?? '');
  } catch {
    return sets;
  }
  if (contentType.includes('json-patch') || Array.isArray(parsed)) {
    for (const op of parsed) {
      const path = op.path
        .split('/')
        .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
        .join('/');
      if (op.op === 'add' || op.op === 'replace') {
        leaves(op.value, path);
      } else if (op.op === 'remove') {
        sets[path] = null;
      }
    }
  } else {
    leaves(parsed, '');
  }
  return sets;
}
