// Serves the page and proxies /v1/* to the worker's HTTP API, so the page
// and the API share an origin (the worker sets no CORS headers). Streams
// (the UI message stream) pass through unbuffered.
//
//   DEX_API=http://127.0.0.1:8080 PORT=5173 node server.mjs
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const upstream = new URL(process.env.DEX_API || 'http://127.0.0.1:8080');
const port = Number(process.env.PORT || 5173);
const files = {
  '/': ['index.html', 'text/html; charset=utf-8'],
  '/app.js': ['dist/app.js', 'text/javascript; charset=utf-8'],
  '/app.js.map': ['dist/app.js.map', 'application/json'],
};

const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://localhost');
  if (url.pathname.startsWith('/v1/')) {
    const out = http.request(
      { host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host } },
      (up) => {
        res.writeHead(up.statusCode, up.headers);
        res.flushHeaders();
        up.pipe(res);
      },
    );
    out.on('error', (err) => {
      res.writeHead(502, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'bad_gateway', message: `the worker at ${upstream.origin} is unreachable: ${err.message}` } }));
    });
    req.pipe(out);
    res.on('close', () => out.destroy());
    return;
  }
  const file = files[url.pathname];
  if (!file || req.method !== 'GET') {
    res.writeHead(404).end('not found');
    return;
  }
  fs.readFile(path.join(here, file[0]), (err, body) => {
    if (err) {
      res.writeHead(500).end(file[0] === 'dist/app.js' ? 'dist/app.js is missing: run npm run build' : String(err));
      return;
    }
    res.writeHead(200, { 'Content-Type': file[1], 'Cache-Control': 'no-store' }).end(body);
  });
});
server.listen(port, '127.0.0.1', () => console.log(`useChat example on http://127.0.0.1:${port} (API ${upstream.origin})`));
