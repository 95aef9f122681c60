import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Loopback, startLoopback } from '../endpoints/loopback.js';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';

/**
 * Supervised hosts for the drop-in kinds beside agents (#17): an endpoint handler or an ingestor
 * that loops, hangs or allocates without bound costs its own host thread, never the server.
 */
const endpoint = (body: string, extra = '') =>
  `import { defineEndpoint } from 'hangar';\n${extra}\nexport default defineEndpoint(${body});\n`;
const tool = (body: string) =>
  `import { defineTool } from 'hangar';\nimport { z } from 'zod';\nimport { isMainThread } from 'node:worker_threads';\nexport default defineTool(${body});\n`;
const ingestor = (body: string) => `import { defineIngestor } from 'hangar';\nexport default defineIngestor(${body});\n`;

const files = {
  'endpoints/spin.ts': endpoint(`{ timeout_ms: 1_000, handler: () => { while (true) {} } }`),
  'endpoints/hog.ts': endpoint(
    `{ max_heap_mb: 64, handler: () => { const keep: string[][] = []; for (;;) keep.push(new Array(1e5).fill('x'.repeat(8))); } }`,
  ),
  'endpoints/echo.ts': endpoint(
    `{ handler: (input: { text?: string }, ctx) => ({ text: input.text ?? null, thread: isMainThread ? 'main' : 'host', endpoint: ctx.endpoint }) }`,
    "import { isMainThread } from 'node:worker_threads';",
  ),
  'ingestors/stuck.ts': ingestor(`{
    collection: 'stuck-docs',
    timeout_ms: 1_000,
    discover: () => [{ id: 'a' }],
    read: () => { while (true) {} },
  }`),
  'ingestors/fine.ts': ingestor(`{
    collection: 'fine-docs',
    discover: () => [{ id: 'one' }, { id: 'two' }],
    read: (resource) => [{ id: resource.id, content: 'content of ' + resource.id }],
  }`),
  'tools/spinner.ts': tool(`{ description: 'spins', input: z.object({}), timeout_ms: 500, run: () => { while (true) {} } }`),
  'tools/where.ts': tool(`{ description: 'where it runs', input: z.object({}), run: () => ({ thread: isMainThread ? 'main' : 'host' }) }`),
  'agents/never.ts': agentSource(`{ timeout_ms: 60_000, run: () => { while (true) {} } }`),
  'agents/quick.ts': agentSource(`{ run: async (input) => ({ response: 'quick: ' + input.query }) }`),
  'pipelines/stalls.json': JSON.stringify({ steps: [{ name: 'wait', agent: 'never', timeout_ms: 1_000, input: { query: '$.input.q' } }] }),
  'pipelines/flows.json': JSON.stringify({ steps: [{ name: 'go', agent: 'quick', input: { query: '$.input.q' } }] }),
};

describe('supervised endpoint handlers, ingestors and pipeline steps', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      files,
      settings: { agents: { watchdogMs: 60_000 }, dropins: { watchdogMs: 60_000 }, tasks: { concurrency: 1 } } as never,
    });
  }, 60_000);
  afterAll(() => server.stop());

  const post = (url: string, json: unknown = {}) => server.request(url, { method: 'POST', json });
  const hostOf = async (kind: string, name: string) =>
    (await server.request('/api/v1/status')).body.hosts.find((h: { kind: string; name: string }) => h.kind === kind && h.name === name);

  it("runs an endpoint's handler in its host thread", async () => {
    const res = await post('/api/v1/endpoints/echo', { text: 'hi' });
    expect(res.status).toBe(200);
    expect(res.body.aggregated).toEqual({ text: 'hi', thread: 'host', endpoint: 'echo' });
  });

  it('a handler that loops forever answers 504 at its deadline while /health answers; the fixed handler answers next', {
    timeout: 60_000,
  }, async () => {
    const spinning = post('/api/v1/endpoints/spin');
    await new Promise((r) => setTimeout(r, 300));
    expect((await server.request('/health')).status).toBe(200);
    const res = await spinning;
    expect(res.status).toBe(504);
    expect(res.body).toMatchObject({ code: 'HANGAR_ENDPOINT_TIMEOUT', detail: "endpoint 'spin' did not finish within 1000 ms" });
    // The stuck thread ignored its cancellation: it was stopped, and counted.
    await eventually(async () => (await hostOf('endpoint', 'spin'))?.restarts === 1);
    expect(await hostOf('endpoint', 'spin')).toMatchObject({ running: 0, last_restart: { reason: 'stopped' } });
    expect((await server.request('/metrics')).text).toContain('dropin_host_restarts_total{kind="endpoint",name="spin",reason="stopped"} 1');

    await server.write('endpoints/spin.ts', endpoint(`{ timeout_ms: 1_000, handler: () => ({ fixed: true }) }`));
    const fixed = await eventually(async () => {
      const again = await post('/api/v1/endpoints/spin');
      return again.status === 200 ? again : undefined;
    });
    expect(fixed.body.aggregated).toEqual({ fixed: true });
  });

  it('a handler that allocates without bound fails with out of memory; the server and other endpoints answer', {
    timeout: 60_000,
  }, async () => {
    const res = await post('/api/v1/endpoints/hog');
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ code: 'HANGAR_DROPIN_OUT_OF_MEMORY', detail: 'out of memory: endpoint hog exceeded 64 MB' });
    expect((await server.request('/health')).status).toBe(200);
    expect((await post('/api/v1/endpoints/echo', { text: 'still' })).body.aggregated).toMatchObject({ text: 'still' });
    expect(await hostOf('endpoint', 'hog')).toMatchObject({ heap_mb: 64, out_of_memory: 1, restarts: 1 });
    expect((await server.request('/metrics')).text).toContain(
      'dropin_host_restarts_total{kind="endpoint",name="hog",reason="out_of_memory"} 1',
    );
  });

  it('an ingestor that hangs fails at its deadline; other ingestors run', { timeout: 60_000 }, async () => {
    // Its host is started first (a health check discovers through it), so the run's 1 s deadline is
    // spent in the `read` that hangs, not in starting the thread: on a loaded machine the start and
    // `discover` could use it all, `read` was then never called, and no host had to be stopped.
    expect((await server.request('/api/v1/ingestion/stuck/health')).body).toMatchObject({ ok: true });
    const stuck = post('/api/v1/ingestion/stuck/run');
    await new Promise((r) => setTimeout(r, 300));
    expect((await server.request('/health')).status).toBe(200);
    const res = await stuck;
    expect(res.status).toBe(504);
    expect(res.body).toMatchObject({ code: 'HANGAR_INGESTOR_TIMEOUT', detail: "ingestor 'stuck' did not finish within 1000 ms" });
    const fine = await post('/api/v1/ingestion/fine/run');
    expect(fine.status).toBe(200);
    expect(fine.body).toMatchObject({ status: 'completed', documents: { created: 2 } });
    await eventually(async () => (await hostOf('ingestor', 'stuck'))?.restarts === 1);
  });

  it('a tools/ drop-in runs in its host; one that loops fails at its timeout and is stopped while /health answers', {
    timeout: 60_000,
  }, async () => {
    const where = await post('/api/v1/tools/where/try', { arguments: {} });
    expect(where.body.result).toEqual({ thread: 'host' });
    const spinning = post('/api/v1/tools/spinner/try', { arguments: {} });
    await new Promise((r) => setTimeout(r, 200));
    expect((await server.request('/health')).status).toBe(200);
    const res = await spinning;
    expect(res.status).toBe(200);
    expect(res.body.error).toContain('500 ms');
    await eventually(async () => (await hostOf('tool', 'spinner'))?.restarts === 1);
    expect((await server.request('/metrics')).text).toContain('dropin_host_restarts_total{kind="tool",name="spinner",reason="stopped"} 1');
    expect((await post('/api/v1/tools/where/try', { arguments: {} })).body.result).toEqual({ thread: 'host' });
  });

  it('a pipeline step whose agent never returns fails the run at its deadline, and frees its slot', { timeout: 60_000 }, async () => {
    const submitted = await post('/api/v1/pipelines/stalls/run/async', { q: 'x' });
    expect(submitted.status).toBe(202);
    const id = submitted.body.task_id ?? submitted.body.id;
    const ended = await eventually(async () => {
      const task = (await server.request(`/api/v1/tasks/${id}`)).body;
      return task.status === 'failed' || task.status === 'completed' ? task : undefined;
    }, 20_000);
    expect(ended.status).toBe('failed');
    expect(ended.error).toContain("pipeline 'stalls' failed at step 'wait': timed out after 1000 ms");
    // The agent's loop ignored its cancellation: its host was stopped, not left spinning.
    await eventually(async () => (await hostOf('agent', 'never'))?.restarts === 1);
    // One slot (tasks.concurrency 1): the next pipeline task runs in it.
    const next = await post('/api/v1/pipelines/flows/run/async', { q: 'after' });
    const nextId = next.body.task_id ?? next.body.id;
    const done = await eventually(async () => {
      const task = (await server.request(`/api/v1/tasks/${nextId}`)).body;
      return task.status === 'failed' || task.status === 'completed' ? task : undefined;
    }, 20_000);
    expect(done.status).toBe('completed');
  });
});

describe("a hosted handler's ctx and the drop-in watchdog", () => {
  let server: TestServer;
  let upstream: Loopback;
  beforeAll(async () => {
    upstream = await startLoopback((req, res) => {
      res.setHeader('content-type', 'application/json');
      if (req.path === '/broken') {
        res.statusCode = 500;
        return void res.end('{"error":"down"}');
      }
      res.end(JSON.stringify({ path: req.path, body: req.body ? JSON.parse(req.body) : null }));
    });
    const upstreams = `[{ name: 'ok', base_url: '${upstream.url}', path: '/ok', retries: 0 }, { name: 'broken', base_url: '${upstream.url}', path: '/broken', retries: 0 }]`;
    server = await startTestServer({
      files: {
        // Calls one upstream, fans out to both, and catches the broken one's UpstreamCallError by class, in its host.
        'endpoints/relay.ts': endpoint(
          `{ upstreams: ${upstreams}, handler: async (input: { n: number }, ctx) => {
            const one = await ctx.call<{ path: string; body: { n: number } }>('ok', { input: { n: input.n + 1 } });
            const all = await ctx.fanOut(undefined, ['ok']);
            let caught = null;
            try { await ctx.call('broken'); } catch (err) { caught = err instanceof UpstreamCallError ? err.result.outcome : 'other'; }
            return { one, fanned: all.success, caught, thread: isMainThread ? 'main' : 'host' };
          } }`,
          "import { UpstreamCallError } from 'hangar';\nimport { isMainThread } from 'node:worker_threads';",
        ),
        'endpoints/fails.ts': endpoint(`{ upstreams: ${upstreams}, handler: async (_input, ctx) => ctx.call('broken') }`),
        // A deadline far away: what stops it is its host's silence.
        'ingestors/blocks.ts': ingestor(`{ collection: 'blocked', discover: () => { while (true) {} }, read: () => [] }`),
      },
      settings: { watch: false, dropins: { watchdogMs: 1_000 } } as never,
    });
  }, 60_000);
  afterAll(async () => {
    await server.stop();
    await upstream.close();
  });

  it("answers ctx.call and ctx.fanOut on the server; an upstream's failure is an UpstreamCallError in the host, and a 502 when it escapes", {
    timeout: 60_000,
  }, async () => {
    const res = await server.request('/api/v1/endpoints/relay', { method: 'POST', json: { n: 1 } });
    expect(res.status).toBe(200);
    expect(res.body.aggregated).toEqual({ one: { path: '/ok', body: { n: 2 } }, fanned: true, caught: 'http_error', thread: 'host' });
    expect(res.body.upstreams.map((u: { name: string; ok: boolean }) => [u.name, u.ok])).toEqual([
      ['ok', true],
      ['ok', true],
      ['broken', false],
    ]);
    const failed = await server.request('/api/v1/endpoints/fails', { method: 'POST', json: {} });
    expect(failed.status).toBe(502);
    expect(failed.body).toMatchObject({ success: false, upstreams: [{ name: 'broken', ok: false, outcome: 'http_error' }] });
  });

  it('an ingestor whose host stops answering past dropins.watchdogMs fails saying so; its host is restarted', {
    timeout: 60_000,
  }, async () => {
    const res = await server.request('/api/v1/ingestion/blocks/run', { method: 'POST', json: {} });
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({
      code: 'HANGAR_DROPIN_UNRESPONSIVE',
      detail: "ingestor 'blocks' stopped answering: its host's event loop was blocked for more than 1000 ms, so the host was restarted",
    });
    const host = (await server.request('/api/v1/status')).body.hosts.find((h: { name: string }) => h.name === 'blocks');
    expect(host).toMatchObject({ kind: 'ingestor', restarts: 1, last_restart: { reason: 'unresponsive' } });
  });
});
