import { existsSync } from 'node:fs';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

/**
 * Express-router endpoints run supervised (#17): the router is served in its own host thread and
 * the server proxies the endpoint's requests to it, so a router that loops or allocates without
 * bound costs its host, never the server.
 */
const router = (routes: string, extra = '') =>
  `import express from 'express';\nimport { isMainThread } from 'node:worker_threads';\nconst router = express.Router();\n${routes}\nexport default ${extra ? `Object.assign(router, ${extra})` : 'router'};\n`;

const where = `router.get('/where', (req, res) => { res.json({ thread: isMainThread ? 'main' : 'host', principal: req.principal ?? null }); });`;
const spinning = `router.get('/work', () => { while (true) {} });`;
const fixed = `router.get('/work', (_req, res) => { res.json({ fixed: true }); });`;
const hog = `router.get('/eat', () => { const keep: string[][] = []; for (;;) keep.push(new Array(1e5).fill('x'.repeat(8))); });`;
const streaming = `router.get('/stream', (_req, res) => {
  res.status(207).set('x-custom', 'yes').type('text/plain');
  let n = 0;
  const tick = setInterval(() => { res.write('chunk ' + n + '\\n'); if (++n === 3) { clearInterval(tick); res.end(); } }, 5);
});
router.post('/echo', (req, res) => { res.status(201).json({ body: req.body, query: req.query, url: req.url, base: req.baseUrl }); });`;

describe('supervised express-router endpoints', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      files: {
        'endpoints/hosted.ts': router(`${where}\n${streaming}`),
        'endpoints/inline.ts': router(where, "{ isolation: 'inline' }"),
        'endpoints/spin.ts': router(spinning, '{ timeout_ms: 1_000 }'),
        'endpoints/hog.ts': router(hog, '{ max_heap_mb: 64 }'),
      },
      settings: { dropins: { watchdogMs: 60_000 } } as never,
    });
  }, 60_000);
  afterAll(() => server?.stop());

  const hostOf = async (name: string) =>
    (await server.request('/api/v1/status')).body.hosts.find(
      (h: { kind: string; name: string }) => h.kind === 'endpoint' && h.name === name,
    );

  it('serves a router in its host thread, and an inline one on the server thread', async () => {
    const res = await server.request('/api/v1/endpoints/hosted/where');
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ thread: 'host', principal: 'local' });
    expect((await server.request('/api/v1/endpoints/inline/where')).body.thread).toBe('main');
    expect(await hostOf('hosted')).toMatchObject({ kind: 'endpoint', name: 'hosted' });
    expect(await hostOf('inline')).toBeUndefined();
  });

  it('passes the body, query, status, headers and a streamed answer through the host', async () => {
    const echo = await server.request('/api/v1/endpoints/hosted/echo?x=1', { method: 'POST', json: { a: [1, 2] } });
    expect(echo.status).toBe(201);
    expect(echo.body).toEqual({ body: { a: [1, 2] }, query: { x: '1' }, url: '/echo?x=1', base: '/api/v1/endpoints/hosted' });
    const stream = await server.request('/api/v1/endpoints/hosted/stream');
    expect(stream.status).toBe(207);
    expect(stream.headers.get('x-custom')).toBe('yes');
    expect(stream.headers.get('x-request-id')).toBeTruthy();
    expect(stream.text).toBe('chunk 0\nchunk 1\nchunk 2\n');
  });

  it('answers a router stuck in a loop with 504 at its deadline, /health meanwhile, and serves the fixed router after a save', async () => {
    const stuck = server.request('/api/v1/endpoints/spin/work');
    expect((await server.request('/health')).status).toBe(200);
    const res = await stuck;
    expect(res.status).toBe(504);
    expect(res.body.detail).toBe("endpoint 'spin' did not finish within 1000 ms");
    expect(await eventually(async () => ((await hostOf('spin'))?.restarts >= 1 ? true : undefined))).toBe(true);

    await server.write('endpoints/spin.ts', router(fixed, '{ timeout_ms: 1_000 }'));
    const answer = await eventually(async () => {
      const r = await server.request('/api/v1/endpoints/spin/work');
      return r.status === 200 ? r : undefined;
    });
    expect(answer.body).toEqual({ fixed: true });
    const metrics = (await server.request('/metrics')).text;
    // At least the one above: a request sent before the save was seen may have found the old build.
    expect(metrics).toMatch(/dropin_host_restarts_total\{kind="endpoint",name="spin",reason="stopped"\} [1-9]/);
  });

  it('fails a router that allocates without bound with a clear out-of-memory error, the server alive', async () => {
    const res = await server.request('/api/v1/endpoints/hog/eat');
    expect(res.status).toBe(500);
    expect(res.body.detail).toBe('out of memory: endpoint hog exceeded 64 MB');
    expect((await server.request('/health')).status).toBe(200);
    expect((await server.request('/api/v1/endpoints/hosted/where')).body.thread).toBe('host');
    expect(await hostOf('hog')).toMatchObject({ out_of_memory: 1 });
    expect((await server.request('/metrics')).text).toContain(
      'dropin_host_restarts_total{kind="endpoint",name="hog",reason="out_of_memory"} 1',
    );
  });

  // Listening sockets are read from Linux's /proc; elsewhere this check has nothing to read.
  it.skipIf(!existsSync('/proc/net/tcp'))("reaches the host's port only through the server, with its thread's token", async () => {
    // A path that looks like another target still reaches the router, as its own path.
    const odd = await server.request('/api/v1/endpoints/hosted//127.0.0.1:1/where');
    expect(odd.status).toBe(404);
    expect(odd.body.detail).toContain("endpoint 'hosted' has no route");
    // Every port a host thread listens on refuses a request that does not carry its token.
    const ports = await listeningLoopbackPorts();
    const own = new URL(server.url).port;
    const hosts = ports.filter((p) => String(p) !== own);
    expect(hosts.length).toBeGreaterThan(0);
    for (const port of hosts) {
      const status = await new Promise<number>((resolve) => {
        http
          .get({ host: '127.0.0.1', port, path: '/where', headers: { 'x-hangar-call': encodeURIComponent('{}') } }, (r) => {
            r.resume();
            resolve(r.statusCode ?? 0);
          })
          .on('error', () => resolve(0));
      });
      expect(status === 403 || status === 0 || status >= 400).toBe(true);
    }
  });
});

/**
 * TCP ports this process (its host threads included: they share its descriptors) listens on at
 * 127.0.0.1: Linux's /proc/net/tcp (state 0A = LISTEN) lists the whole machine's, so only the
 * sockets among /proc/self/fd count. Another test file's server on the machine is not ours to probe.
 */
async function listeningLoopbackPorts(): Promise<number[]> {
  const { readFile, readdir, readlink } = await import('node:fs/promises');
  const ours = new Set<string>();
  for (const fd of await readdir('/proc/self/fd')) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => '');
    const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1];
    if (inode) ours.add(inode);
  }
  const table = await readFile('/proc/net/tcp', 'utf8');
  return table
    .split('\n')
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((cols) => cols[3] === '0A' && cols[1]?.startsWith('0100007F:') && ours.has(cols[9] ?? ''))
    .map((cols) => Number.parseInt(cols[1]!.split(':')[1]!, 16));
}
