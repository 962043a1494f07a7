// The console shell's server on 127.0.0.1, in the console's place: its backend proxies a plugin's files from the
// plugin's Service over HTTPS (trusting the service CA) under its own origin, `/api/plugins/<plugin>/<file>`, so the
// browser loads the plugin same-origin; here they come from numo's HTTPS server, trusting the test's CA. `/api` and
// `/apis` go to the real API server and the rest is the built shell page, both through the e2e server
// (../server.mjs), to which everything but the plugin's files is passed on.
//
// Every plugin file request is recorded as `{path, upstream, status, contentType, cacheControl, nosniff, bytes,
// authorized, issuer, error}`: what numo's server answered and whether its certificate was verified.

import { createServer, request as httpRequest } from 'node:http';
import { request as httpsRequest, Agent } from 'node:https';

import { startServer } from '../server.mjs';

// Headers of one connection (RFC 9110 7.6.1): never passed on by a proxy.
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'trailer']);
// What the console's backend passes on of a plugin file's answer.
const PLUGIN_HEADERS = [
  'content-type',
  'content-length',
  'cache-control',
  'x-content-type-options',
  'etag',
  'last-modified',
];

/**
 * Starts the shell's server. `connection` is a loadKubeconfig result, `root` the built shell (e2e/shell/dist),
 * `plugin` the plugin's name, `pluginURL` numo's HTTPS server (`https://127.0.0.1:<port>`) and `pluginCA` the PEM of
 * the CA its certificate is verified against; `port` is where it listens on 127.0.0.1 (0, the default: a free port
 * the system picks). Resolves to `{url, plugin: [records], requests, close()}`.
 */
export async function startShellServer({ connection, root, plugin, pluginURL, pluginCA, port = 0, log = () => {} }) {
  const inner = await startServer({ connection, root, log });
  const innerURL = new URL(inner.url);
  const upstream = new URL(pluginURL);
  // No client certificate, the CA of the plugin's certificate only: as the console's backend with the service CA.
  const agent = new Agent({ ca: pluginCA, rejectUnauthorized: true, keepAlive: true });
  const prefix = `/api/plugins/${plugin}/`;
  const records = [];
  const open = new Set();

  function proxyPlugin(req, res) {
    const path = `/${req.url.slice(prefix.length)}`;
    const record = { path: req.url, upstream: `${upstream.origin}${path}`, at: Date.now() };
    records.push(record);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      record.status = 405;
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const out = httpsRequest(
      {
        protocol: 'https:',
        hostname: upstream.hostname,
        port: upstream.port,
        method: req.method,
        path,
        headers: { accept: req.headers.accept ?? '*/*', 'user-agent': 'numo-console-shell' },
        agent,
      },
      (answer) => {
        record.status = answer.statusCode;
        record.contentType = answer.headers['content-type'];
        record.cacheControl = answer.headers['cache-control'];
        record.nosniff = answer.headers['x-content-type-options'] === 'nosniff';
        record.authorized = answer.socket.authorized === true;
        record.issuer = answer.socket.getPeerCertificate?.()?.issuer?.CN;
        record.protocol = answer.socket.getProtocol?.();
        const headers = {};
        for (const name of PLUGIN_HEADERS) {
          if (answer.headers[name] !== undefined) {
            headers[name] = answer.headers[name];
          }
        }
        let bytes = 0;
        answer.on('data', (chunk) => {
          bytes += chunk.length;
        });
        answer.on('end', () => {
          record.bytes = bytes;
        });
        res.writeHead(answer.statusCode ?? 502, headers);
        answer.pipe(res);
      },
    );
    open.add(out);
    out.on('close', () => open.delete(out));
    out.on('error', (e) => {
      record.status = 502;
      record.error = e.message;
      log(`plugin ${req.url} from ${record.upstream} failed: ${e.message}`);
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' }).end(`plugin proxy: ${e.message}\n`);
      } else {
        res.destroy();
      }
    });
    out.end();
  }

  /** Everything else: to the e2e server (the page, and the API server through its proxy), streamed both ways. */
  function passOn(req, res) {
    const headers = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (!HOP.has(name)) {
        headers[name] = value;
      }
    }
    const out = httpRequest(
      { hostname: innerURL.hostname, port: innerURL.port, method: req.method, path: req.url, headers },
      (answer) => {
        const back = {};
        for (const [name, value] of Object.entries(answer.headers)) {
          if (!HOP.has(name)) {
            back[name] = value;
          }
        }
        res.writeHead(answer.statusCode ?? 502, back);
        // A watch's headers come before its first event.
        res.flushHeaders();
        answer.on('data', (chunk) => res.write(chunk));
        answer.on('end', () => res.end());
        answer.on('error', () => res.destroy());
      },
    );
    open.add(out);
    out.on('close', () => open.delete(out));
    out.on('error', (e) => {
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8' }).end(`shell server: ${e.message}\n`);
      } else {
        res.destroy();
      }
    });
    res.on('close', () => {
      if (!res.writableEnded) {
        out.destroy();
      }
    });
    req.pipe(out);
  }

  const server = createServer((req, res) => {
    if (req.url.startsWith(prefix)) {
      proxyPlugin(req, res);
    } else {
      passOn(req, res);
    }
  });
  try {
    await new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', resolve);
    });
  } catch (e) {
    // The port is taken: the page's server goes too.
    agent.destroy();
    await inner.close();
    throw e;
  }
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    plugin: records,
    requests: inner.requests,
    close: async () => {
      for (const out of open) {
        out.destroy();
      }
      server.closeAllConnections?.();
      await new Promise((resolve) => server.close(() => resolve()));
      agent.destroy();
      await inner.close();
    },
  };
}
