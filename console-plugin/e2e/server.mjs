// The e2e server on 127.0.0.1: the built harness (harness/dist) as static files, and /api and /apis proxied to the
// real API server with the kubeconfig's credentials, streamed both ways (watches stay open). Every request the page
// makes through the proxy is recorded (writes with their bodies), so the scenario can assert what the UI sent.

import { createServer } from 'node:http';
import { request as httpsRequest, Agent } from 'node:https';
import { request as httpRequest } from 'node:http';
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

// Headers that belong to one connection, not to the request (RFC 9110 7.6.1), and those the proxy sets itself.
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

/**
 * Starts the server. `connection` comes from loadKubeconfig; `root` is the harness's dist folder. Resolves to
 * `{url, requests, close()}`: `requests` is the list of `{by, method, path, contentType, body, status}` that went
 * through the proxy, writes with their body; `by` is `script` for the scenario's own requests ({@link api}), else
 * `page`.
 */
export async function startServer({ connection, root, log = () => {} }) {
  const upstream = new URL(connection.server);
  const secure = upstream.protocol === 'https:';
  const agent = secure
    ? new Agent({
        ca: connection.ca,
        cert: connection.cert,
        key: connection.key,
        rejectUnauthorized: !connection.insecure,
        keepAlive: true,
      })
    : undefined;
  const requests = [];
  const open = new Set();

  function proxy(req, res) {
    const headers = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (!HOP.has(name.toLowerCase())) {
        headers[name] = value;
      }
    }
    if (connection.token) {
      headers.authorization = `Bearer ${connection.token}`;
    }
    const prefix = upstream.pathname === '/' ? '' : upstream.pathname;
    const by = req.headers['x-numo-e2e'] === 'script' ? 'script' : 'page';
    delete headers['x-numo-e2e'];
    const record = { by, method: req.method, path: req.url, contentType: req.headers['content-type'], at: Date.now() };
    requests.push(record);
    const write = !['GET', 'HEAD', 'OPTIONS'].includes(req.method);
    const chunks = [];
    const out = (secure ? httpsRequest : httpRequest)(
      {
        protocol: upstream.protocol,
        hostname: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path: prefix + req.url,
        headers,
        agent,
      },
      (answer) => {
        record.status = answer.statusCode;
        if (write || answer.statusCode >= 400) {
          log(`proxy ${req.method} ${req.url} -> ${answer.statusCode}${record.body ? ` ${record.body}` : ''}`);
        }
        const back = {};
        for (const [name, value] of Object.entries(answer.headers)) {
          if (!HOP.has(name.toLowerCase())) {
            back[name] = value;
          }
        }
        res.writeHead(answer.statusCode ?? 502, back);
        // A watch's headers come before its first event: pass them on at once.
        res.flushHeaders();
        // A watch streams: flush every chunk as it comes.
        answer.on('data', (chunk) => res.write(chunk));
        answer.on('end', () => res.end());
        answer.on('error', () => res.destroy());
      },
    );
    open.add(out);
    out.on('close', () => open.delete(out));
    out.on('error', (e) => {
      record.status = 502;
      log(`proxy ${req.method} ${req.url} failed: ${e.message}`);
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Status', status: 'Failure', code: 502, message: `proxy: ${e.message}` }));
      } else {
        res.destroy();
      }
    });
    // The page went away (a watch ended by the page, a navigation): end the upstream request too.
    res.on('close', () => {
      if (!res.writableEnded) {
        out.destroy();
      }
    });
    req.on('data', (chunk) => {
      if (write) {
        chunks.push(chunk);
      }
      out.write(chunk);
    });
    req.on('end', () => {
      if (write) {
        record.body = Buffer.concat(chunks).toString('utf8');
      }
      out.end();
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
    if (/^\/apis?(\/|$|\?)/.test(req.url)) {
      proxy(req, res);
    } else {
      serveStatic(req, res);
    }
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise((resolve) => {
        for (const out of open) {
          out.destroy();
        }
        server.closeAllConnections?.();
        server.close(() => resolve());
        agent?.destroy();
      }),
  };
}

/** A JSON request through the server's proxy (so with the kubeconfig's credentials), as the page would make it. */
export async function api(base, method, path, body, contentType = 'application/merge-patch+json') {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: {
      accept: 'application/json',
      'x-numo-e2e': 'script',
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
