import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { eventually, startTestServer, type TestServer } from '../support/server.js';
import { json, type Loopback, startLoopback } from './loopback.js';

let server: TestServer | undefined;
let upstream: Loopback | undefined;
afterEach(async () => {
  await server?.stop();
  await upstream?.close();
  server = undefined;
  upstream = undefined;
});

/** An upstream that doubles `n`, and fails for n = 13. */
async function setup() {
  upstream = await startLoopback((req, res) => {
    const n = req.method === 'GET' ? Number(req.query.get('n')) : JSON.parse(req.body).n;
    if (n === 13) return json(res, 500, { error: 'unlucky' });
    json(res, 200, { doubled: n * 2, via: req.method });
  });
  server = await startTestServer();
  server.ctx.services.get('endpoints').register({
    name: 'double',
    path: '/run',
    methods: ['POST', 'GET'],
    request: z.object({ n: z.number() }),
    response: z.object({ doubled: z.number(), via: z.string() }),
    upstreams: [{ name: 'u', base_url: upstream.url, retries: 0 }],
  });
  return server;
}

async function finished(id: string) {
  return eventually(async () => {
    const task = (await server!.request(`/api/v1/tasks/${id}`)).body;
    return ['completed', 'failed', 'canceled'].includes(task.status) ? task : undefined;
  });
}

describe('async and batch runs on the task board', () => {
  it('/async queues a call and the task completes with the fan-out envelope', async () => {
    await setup();
    const accepted = await server!.request('/api/v1/endpoints/double/run/async', { method: 'POST', json: { n: 21 } });
    expect(accepted.status).toBe(202);
    expect(accepted.headers.get('location')).toBe(`/api/v1/tasks/${accepted.body.id}`);
    expect(accepted.body).toMatchObject({ kind: 'endpoint.call', target: 'double', input: { method: 'POST', input: { n: 21 } } });
    const task = await finished(accepted.body.id);
    expect(task.status).toBe('completed');
    expect(task.result).toMatchObject({ success: true, aggregated: { u: { doubled: 42, via: 'POST' } } });
  });

  it('?method= picks another declared method for the fan-out', async () => {
    await setup();
    const accepted = await server!.request('/api/v1/endpoints/double/run/async?method=GET', { method: 'POST', json: { n: 2 } });
    expect((await finished(accepted.body.id)).result.aggregated.u).toEqual({ doubled: 4, via: 'GET' });
    const refused = await server!.request('/api/v1/endpoints/double/run/async?method=PUT', { method: 'POST', json: { n: 2 } });
    expect(refused.status).toBe(422);
    expect(refused.body.detail).toMatch(/^query\.method: /);
  });

  it('refuses invalid input with 422 before any task exists', async () => {
    await setup();
    const res = await server!.request('/api/v1/endpoints/double/run/async', { method: 'POST', json: { n: 'x' } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/^body\.n: /);
    expect((await server!.request('/api/v1/tasks')).body).toMatchObject({ tasks: [], total: 0 });
  });

  it('a failing upstream fails the async task with the redacted 502 detail', async () => {
    await setup();
    const accepted = await server!.request('/api/v1/endpoints/double/run/async', { method: 'POST', json: { n: 13 } });
    const task = await finished(accepted.body.id);
    expect(task.status).toBe('failed');
    expect(task.error).toContain("upstream 'u' http_error: HTTP 500");
  });

  it('/batch runs every input, recording each success or failure, and names a bad item field up front', async () => {
    await setup();
    const bad = await server!.request('/api/v1/endpoints/double/run/batch', { method: 'POST', json: { inputs: [{ n: 1 }, { n: 'two' }] } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toMatch(/^body\.inputs\.1\.n: /);

    const accepted = await server!.request('/api/v1/endpoints/double/run/batch', {
      method: 'POST',
      json: { inputs: [{ n: 1 }, { n: 13 }, { n: 3 }, { n: 4 }, { n: 5 }] },
    });
    expect(accepted.status).toBe(202);
    const task = await finished(accepted.body.id);
    expect(task.status).toBe('completed');
    expect(task.progress.percent).toBe(100);
    expect(task.result).toMatchObject({ total: 5, succeeded: 4, failed: 1 });
    expect(task.result.results.map((r: { index: number; success: boolean; status: number }) => [r.index, r.success, r.status])).toEqual([
      [0, true, 200],
      [1, false, 502],
      [2, true, 200],
      [3, true, 200],
      [4, true, 200],
    ]);
    expect(task.result.results[2].aggregated).toEqual({ u: { doubled: 6, via: 'POST' } });
    expect(task.result.results[1].upstreams[0]).toMatchObject({ name: 'u', status: 500 });
  });

  it('answers 501 when the task board is switched off', async () => {
    upstream = await startLoopback((_req, res) => json(res, 200, {}));
    server = await startTestServer({ settings: { tasks: { enabled: false } } });
    server.ctx.services.get('endpoints').register({ name: 'e', upstreams: [{ name: 'u', base_url: upstream.url }] });
    const res = await server.request('/api/v1/endpoints/e/async', { method: 'POST', json: {} });
    expect(res.status).toBe(501);
    expect((await server.request('/api/v1/endpoints/e', { method: 'POST', json: {} })).status).toBe(200);
  });
});
