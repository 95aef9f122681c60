import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';

const files = {
  'agents/echo.ts': agentSource(`{ run: async (input) => 'echo: ' + input.query }`),
  'agents/boom.ts': agentSource(`{ run: async () => { throw new Error('exploded on purpose'); } }`),
  'endpoints/sum.ts': `import { defineEndpoint, z } from 'hangar';
export default defineEndpoint({ path: '/add', request: z.object({ a: z.number(), b: z.number() }), handler: (input) => ({ sum: input.a + input.b }) });`,
  'plugins/double.ts': `import { definePlugin, z } from 'hangar';
export default definePlugin({ card: { task: 'test' }, input: z.object({ x: z.number() }), load: () => 2, predict: (k, i) => ({ y: i.x * k }) });`,
};

const invoke = (server: TestServer, agent: string, body: Record<string, unknown>) =>
  server.request(`/api/v1/${agent}/invoke`, { method: 'POST', json: body });

describe('invocation logs, history on', () => {
  let server: TestServer;

  beforeAll(async () => {
    server = await startTestServer({
      files,
      settings: { logs: { enabled: true, maxFieldChars: 600 }, auth: { tokens: { local: 'hangar-test-token-123' } } },
    });
  });
  afterAll(() => server?.stop());

  const auth = { authorization: 'Bearer hangar-test-token-123' };
  const get = (path: string) => server.request(path, { headers: auth });
  const post = (path: string, json: unknown) => server.request(path, { method: 'POST', json, headers: auth });

  it('records one record per agent call, with secrets redacted and long input truncated', async () => {
    const res = await post('/api/v1/echo/invoke', {
      query: 'hello, my key is sk-abcdefghijklmnopqrstuvwx',
      context: {
        api_key: 'plain-secret-value',
        password: 'hunter2',
        nested: { header: 'Bearer abc.def.ghi-jkl' },
        echo: 'hangar-test-token-123',
      },
    });
    expect(res.status).toBe(200);
    const page = await eventually(async () => {
      const { body } = await get('/api/v1/logs?resource=agent&name=echo');
      return body.total >= 1 ? body : undefined;
    });
    const record = page.logs[0];
    expect(record).toMatchObject({
      resource: 'agent',
      name: 'echo',
      operation: 'invoke',
      principal: 'local',
      status: 'ok',
      http_status: 200,
    });
    expect(record.duration_ms).toBeGreaterThanOrEqual(0);
    const input = JSON.stringify(record.input);
    expect(input).not.toContain('sk-abcdefghijklmnopqrstuvwx');
    expect(input).not.toContain('plain-secret-value');
    expect(input).not.toContain('hunter2');
    expect(input).not.toContain('abc.def.ghi-jkl');
    expect(input).not.toContain('hangar-test-token-123');
    expect(record.input.context.api_key).toBe('[REDACTED]');
    expect(JSON.stringify(record.output)).toContain('echo: hello');

    await post('/api/v1/echo/invoke', { query: 'x'.repeat(1000) });
    const long = await eventually(async () => {
      const { body } = await get('/api/v1/logs?resource=agent&name=echo&limit=1');
      return body.logs[0]?.truncated ? body.logs[0] : undefined;
    });
    expect(typeof long.input).toBe('string');
    expect(long.input.length).toBeLessThanOrEqual(601);
  });

  it('records failures with their error, and filters by status', async () => {
    expect((await post('/api/v1/boom/invoke', { query: 'go' })).status).toBe(500);
    const page = await eventually(async () => {
      const { body } = await get('/api/v1/logs?status=error&name=boom');
      return body.total >= 1 ? body : undefined;
    });
    expect(page.logs[0]).toMatchObject({ status: 'error', http_status: 500, error: expect.stringContaining('exploded on purpose') });
    const ok = await get('/api/v1/logs?status=ok');
    expect(ok.body.logs.every((r: any) => r.status === 'ok')).toBe(true);
  });

  it('records custom endpoint calls', async () => {
    const res = await post('/api/v1/endpoints/sum/add', { a: 2, b: 3 });
    expect(res.status).toBe(200);
    const page = await eventually(async () => {
      const { body } = await get('/api/v1/logs?resource=endpoint&name=sum');
      return body.total >= 1 ? body : undefined;
    });
    expect(page.logs[0]).toMatchObject({ operation: 'POST /add', status: 'ok', input: { a: 2, b: 3 } });
    expect(JSON.stringify(page.logs[0].output)).toContain('5');
  });

  it('records plugin predictions, including failed ones', async () => {
    await eventually(async () => (await get('/api/v1/plugins/double/health')).status === 200, 15_000);
    expect((await post('/api/v1/plugins/double/predict', { input: { x: 21 } })).body.output).toEqual({ y: 42 });
    expect((await post('/api/v1/plugins/double/predict', { input: { x: 'no' } })).status).toBe(422);
    const page = await eventually(async () => {
      const { body } = await get('/api/v1/logs?resource=plugin&name=double');
      return body.total >= 2 ? body : undefined;
    });
    expect(page.logs.map((r: any) => r.http_status).sort()).toEqual([200, 422]);
    expect(page.logs.find((r: any) => r.status === 'ok').output).toEqual({ y: 42 });
  });

  it('pages newest first, filters by time range, and fetches one record by id', async () => {
    for (let i = 0; i < 3; i++) await post('/api/v1/echo/invoke', { query: `page ${i}` });
    const first = await eventually(async () => {
      const { body } = await get('/api/v1/logs?name=echo&limit=2');
      return body.total >= 5 ? body : undefined;
    });
    expect(first.logs).toHaveLength(2);
    expect(first.next_offset).toBe(2);
    expect(first.logs[0].started_at >= first.logs[1].started_at).toBe(true);
    const second = await get(`/api/v1/logs?name=echo&limit=2&offset=${first.next_offset}`);
    expect(second.body.logs[0].id).not.toBe(first.logs[1].id);

    const future = await get(`/api/v1/logs?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`);
    expect(future.body.total).toBe(0);
    const past = await get(`/api/v1/logs?until=${Date.now() - 3_600_000}`);
    expect(past.body.total).toBe(0);

    const one = await get(`/api/v1/logs/${first.logs[0].id}`);
    expect(one.status).toBe(200);
    expect(one.body.id).toBe(first.logs[0].id);
    expect((await get('/api/v1/logs/00000000-0000-0000-0000-000000000000')).status).toBe(404);
    const bad = await get('/api/v1/logs?status=maybe');
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toContain('query.status');
  });

  it('analyses a window per resource and keeps the latest analysis', async () => {
    const none = await get('/api/v1/logs/analysis');
    expect(none.status).toBe(404);
    const { status, body } = await post('/api/v1/logs/analyze', { window: '1h', top: 3 });
    expect(status).toBe(200);
    const agent = body.resources.find((r: any) => r.resource === 'agent');
    expect(agent.count).toBeGreaterThanOrEqual(6);
    expect(agent.errors).toBe(1);
    expect(agent.error_rate).toBeCloseTo(1 / agent.count, 3);
    expect(agent.latency_ms.p50).toBeLessThanOrEqual(agent.latency_ms.p95);
    expect(agent.latency_ms.p95).toBeLessThanOrEqual(agent.latency_ms.p99);
    expect(agent.slowest.length).toBeLessThanOrEqual(3);
    expect(agent.slowest[0].duration_ms).toBe(agent.latency_ms.max);
    expect(agent.top_errors[0]).toMatchObject({ count: 1, names: ['boom'], error: expect.stringContaining('exploded') });
    expect(agent.names.map((n: any) => n.name)).toEqual(['boom', 'echo']);
    expect(body.resources.find((r: any) => r.resource === 'plugin').count).toBe(2);

    const latest = await get('/api/v1/logs/analysis');
    expect(latest.body.id).toBe(body.id);
    expect((await post('/api/v1/logs/analyze', { window: 'forever' })).status).toBe(422);
    const empty = await post('/api/v1/logs/analyze', { since: new Date(Date.now() + 3_600_000).toISOString() });
    expect(empty.body.total).toBe(0);
  });
});

describe('invocation logs, retention and restarts', () => {
  it('keeps at most `retain` records, and finds them again after a restart', async () => {
    const server = await startTestServer({ files, settings: { logs: { enabled: true, retain: 5 } } });
    const root = server.root;
    try {
      for (let i = 0; i < 9; i++) await invoke(server, 'echo', { query: `call ${i}` });
      const page = await eventually(async () => {
        const { body } = await server.request('/api/v1/logs?limit=100');
        return body.logs.some((r: any) => r.input?.query === 'call 8') ? body : undefined;
      });
      expect(page.total).toBeLessThanOrEqual(6);
      expect(page.logs.some((r: any) => r.input?.query === 'call 0')).toBe(false);
    } finally {
      await server.close();
    }
    const again = await startTestServer({ root, settings: { logs: { enabled: true, retain: 5 } } });
    try {
      const { body } = await again.request('/api/v1/logs?limit=100');
      expect(body.logs.some((r: any) => r.input?.query === 'call 8')).toBe(true);
      expect(body.total).toBeLessThanOrEqual(6);
    } finally {
      await again.stop();
    }
  });
});

describe('invocation logs, history off', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files });
  });
  afterAll(() => server?.stop());

  it('documents the log routes, with their 501, in the OpenAPI document', async () => {
    const { body } = await server.request('/openapi.json');
    expect(body.paths['/api/v1/logs'].get.responses['501']).toBeDefined();
    expect(body.paths['/api/v1/logs/analyze'].post.requestBody).toBeDefined();
  });

  it('answers 501 naming the setting on every route', async () => {
    await invoke(server, 'echo', { query: 'not recorded' });
    for (const [method, path] of [
      ['GET', '/api/v1/logs'],
      ['GET', '/api/v1/logs/x'],
      ['POST', '/api/v1/logs/analyze'],
      ['GET', '/api/v1/logs/analysis'],
    ]) {
      const res = await server.request(path!, { method, json: method === 'POST' ? {} : undefined });
      expect(res.status).toBe(501);
      expect(res.body.detail).toContain('logs.enabled');
    }
  });
});
