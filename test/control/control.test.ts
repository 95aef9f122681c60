import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../../core/app/server.js';
import { agentSource, eventually, makeWorkspace, startTestServer, type TestServer } from '../support/server.js';

const TOKEN = 'control-secret-token';

const files = {
  // Sleeps for `query` milliseconds; with the query 'held' it stays in flight until the test
  // resolves the gate it put on globalThis, so it runs inline (in this process), not in a host.
  'agents/slow.ts': agentSource(`{
    isolation: 'inline',
    run: async (input) => {
      if (input.query === 'held') return 'released: ' + (await (globalThis as any).__controlGate);
      await new Promise((r) => setTimeout(r, Number(input.query)));
      return 'slept ' + input.query;
    },
  }`),
  'pipelines/nightly.json': JSON.stringify({ name: 'nightly', steps: [{ id: 'a', kind: 'agent', target: 'slow', input: { query: '1' } }] }),
  'plugins/double.ts': `import { definePlugin, z } from 'hangar';
export default definePlugin({ card: { task: 'test' }, input: z.object({ x: z.number() }), load: () => 2, predict: (k, i) => ({ y: i.x * k }) });`,
};

describe('control plane, enabled', () => {
  let server: TestServer;
  const control = (path: string, init: { method?: string; json?: unknown; token?: string | null } = {}) =>
    server.request(`/api/v1/control${path}`, {
      method: init.method ?? (init.json !== undefined ? 'POST' : 'GET'),
      json: init.json,
      headers: init.token === null ? {} : { 'x-control-token': init.token ?? TOKEN },
    });
  const invoke = (query: number | 'held') => server.request('/api/v1/slow/invoke', { method: 'POST', json: { query: String(query) } });

  beforeAll(async () => {
    server = await startTestServer({
      files,
      settings: { control: { enabled: true, token: TOKEN }, logs: { enabled: true }, watch: false },
    });
    await eventually(async () => (await server.request('/api/v1/plugins/double/health')).status === 200, 15_000);
  });
  afterAll(() => server?.stop());

  it('answers 401 without the right token, and logs the attempt', async () => {
    const missing = await control('/resources', { token: null });
    expect(missing.status).toBe(401);
    expect(missing.body.detail).toContain('X-Control-Token');
    expect((await control('/resources', { token: 'wrong' })).status).toBe(401);
    expect((await control('/maintenance', { json: { enabled: true }, token: 'wrong' })).status).toBe(401);
    expect((await server.request('/api/v1/agents')).status).toBe(200); // the failed attempt changed nothing
    const logs = await eventually(async () => {
      const { body } = await server.request('/api/v1/logs?resource=control&name=unauthorized');
      return body.total >= 3 ? body : undefined;
    });
    expect(logs.logs[0]).toMatchObject({ status: 'error', error: 'invalid control token' });
  });

  it('lists resources with their state', async () => {
    const { status, body } = await control('/resources');
    expect(status).toBe(200);
    expect(body.resources).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ resource: 'agent', name: 'slow', state: 'active', in_flight: 0 }),
        expect.objectContaining({ resource: 'plugin', name: 'double', state: 'active' }),
        expect.objectContaining({ resource: 'pipeline', name: 'nightly', state: 'active', file: 'pipelines/nightly.json' }),
      ]),
    );
    expect((await control('/resources/agent/nope')).status).toBe(404);
    expect((await control('/resources/spaceship/slow')).status).toBe(404);
  });

  it('drains: the call in flight finishes, new calls get 503 with Retry-After, enable serves again', async () => {
    // The call in flight waits for the test, not for a clock: it is still running however slowly
    // the drain requests below arrive.
    let release!: (value: string) => void;
    (globalThis as any).__controlGate = new Promise<string>((resolve) => (release = resolve));
    const inFlight = invoke('held');
    try {
      await eventually(async () => (await control('/resources/agent/slow')).body.in_flight === 1);

      const drained = await control('/resources/agent/slow/drain', { json: { retry_after: 7 } });
      expect(drained.status).toBe(200);
      expect(drained.body).toMatchObject({ state: 'draining', in_flight: 1 });

      const refused = await invoke(1);
      expect(refused.status).toBe(503);
      expect(refused.headers.get('retry-after')).toBe('7');
      expect(refused.body.detail).toContain('draining');
      // Health still answers while draining.
      expect((await server.request('/api/v1/slow/health')).status).toBe(200);

      // A drain that waits answers once the call in flight has finished.
      const waiting = control('/resources/agent/slow/drain', { json: { retry_after: 7, wait_ms: 30_000 } });
      release('done');
      const waited = await waiting;
      expect(waited.body).toMatchObject({ state: 'drained', in_flight: 0 });
      const finished = await inFlight;
      expect(finished.status).toBe(200);
      expect(finished.body.response).toBe('released: done');
    } finally {
      release('done'); // never leave the call hanging if an assertion failed
    }

    expect((await invoke(1)).status).toBe(503);
    expect((await control('/resources/agent/slow/enable', { json: {} })).body.state).toBe('active');
    expect((await invoke(1)).status).toBe(200);
  });

  it('disables and enables a plugin (and a pipeline); its health keeps answering', async () => {
    const disabled = await control('/resources/plugin/double/disable', { json: { reason: 'bad weights' } });
    expect(disabled.body).toMatchObject({ state: 'disabled', reason: 'bad weights' });
    const refused = await server.request('/api/v1/plugins/double/predict', { method: 'POST', json: { input: { x: 1 } } });
    expect(refused.status).toBe(503);
    expect(refused.body.detail).toContain('disabled by an operator: bad weights');
    expect((await server.request('/api/v1/plugins/double/health')).status).toBe(200);
    await control('/resources/plugin/double/enable', { json: {} });
    await control('/resources/pipeline/nightly/disable', { json: {} });
    const run = await server.request('/api/v1/pipelines/nightly/run', { method: 'POST', json: {} });
    expect(run.status).toBe(503);
    expect(run.body.detail).toContain('pipeline nightly is disabled');
    await control('/resources/pipeline/nightly/enable', { json: {} });
    const ok = await server.request('/api/v1/plugins/double/predict', { method: 'POST', json: { input: { x: 1 } } });
    expect(ok.body.output).toEqual({ y: 2 });
  });

  it('maintenance mode: everything but health, liveness and control answers 503; readiness says not ready', async () => {
    const on = await control('/maintenance', { json: { enabled: true, message: 'upgrading', retry_after: 120 } });
    expect(on.body).toMatchObject({ enabled: true, message: 'upgrading' });
    const blocked = await server.request('/api/v1/agents');
    expect(blocked.status).toBe(503);
    expect(blocked.headers.get('retry-after')).toBe('120');
    expect(blocked.body.detail).toContain('maintenance: upgrading');
    expect((await server.request('/api/v1/plugins/double/predict', { method: 'POST', json: { input: { x: 1 } } })).status).toBe(503);
    for (const path of ['/health', '/ready', '/api/v1/slow/health', '/api/v1/plugins/double/health']) {
      expect((await server.request(path)).status, path).toBe(200);
    }
    // A load balancer's readiness probe must take this server out of rotation.
    const readiness = await server.request('/readiness');
    expect(readiness.status).toBe(503);
    expect(readiness.body.detail).toBe('in maintenance: upgrading');
    expect(readiness.headers.get('retry-after')).toBe('120');
    expect((await server.request('/health')).body.status).toBe('maintenance');
    expect((await control('/resources')).status).toBe(200);
    expect((await server.request('/api/v1/logs')).status).toBe(503);
    await control('/maintenance', { json: { enabled: false } });
    expect((await server.request('/api/v1/agents')).status).toBe(200);
    expect((await server.request('/readiness')).status).toBe(200);
  });

  it('a disabled or draining agent is not healthy on its /health nor on the root /health', async () => {
    expect((await server.request('/api/v1/slow/health')).body.status).toBe('healthy');
    await control('/resources/agent/slow/disable', { json: { reason: 'investigating' } });
    try {
      const own = await server.request('/api/v1/slow/health');
      expect(own.status).toBe(200); // health keeps answering, saying what state it is in
      expect(own.body).toMatchObject({ status: 'disabled', agent: 'slow' });
      const root = await server.request('/health');
      expect(root.body).toMatchObject({ status: 'degraded', agents: { slow: { status: 'disabled' } } });
      await control('/resources/agent/slow/drain', { json: { retry_after: 1 } });
      expect((await server.request('/api/v1/slow/health')).body.status).toBe('draining');
    } finally {
      await control('/resources/agent/slow/enable', { json: {} });
    }
    expect((await server.request('/api/v1/slow/health')).body.status).toBe('healthy');
    expect((await server.request('/health')).body.agents.slow.status).toBe('healthy');
  });

  it('rediscovers drop-ins on demand', async () => {
    await server.write('agents/late.ts', agentSource(`{ run: async () => 'late' }`));
    // Watching is off in this server: the file is not seen until rediscovery.
    expect((await server.request('/api/v1/late/invoke', { method: 'POST', json: { query: 'x' } })).status).toBe(404);
    const { status, body } = await control('/rediscover', { json: {} });
    expect(status).toBe(200);
    expect(body.loaded.agent).toBe(2);
    expect((await server.request('/api/v1/late/invoke', { method: 'POST', json: { query: 'x' } })).status).toBe(200);
  });

  it('shows effective settings with secrets redacted, and changes the log level at run time', async () => {
    const before = await control('/settings');
    expect(before.body.control.token).toBe('***');
    expect(JSON.stringify(before.body)).not.toContain(TOKEN);
    const changed = await control('/log-level', { json: { level: 'warn' } });
    expect(changed.body).toEqual({ level: 'warn', previous: 'debug' });
    expect(server.ctx.log.level).toBe('warn');
    expect((await control('/settings')).body.logLevel).toBe('warn');
    const bad = await control('/log-level', { json: { level: 'loud' } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toContain('body.level');
    await control('/log-level', { json: { level: 'debug' } });
  });

  it('documents the control routes in the OpenAPI document', async () => {
    const { body } = await server.request('/openapi.json');
    expect(body.paths['/api/v1/control/resources/{resource}/{name}/drain'].post.requestBody).toBeDefined();
    expect(body.paths['/api/v1/control/maintenance'].post).toBeDefined();
  });

  it('logs every control action', async () => {
    const { body } = await server.request('/api/v1/logs?resource=control&limit=100');
    const actions = body.logs.map((r: any) => `${r.name} ${r.operation}`);
    expect(actions).toEqual(
      expect.arrayContaining([
        'drain agent/slow',
        'enable agent/slow',
        'disable plugin/double',
        'maintenance on',
        'maintenance off',
        'rediscover workspace',
        'log-level warn',
      ]),
    );
    const drain = body.logs.find((r: any) => r.name === 'drain');
    expect(drain).toMatchObject({ resource: 'control', principal: 'local', status: 'ok' });
    // Calls the gate refused are in the log too.
    const refused = await server.request('/api/v1/logs?resource=agent&name=slow&status=503');
    expect(refused.body.total).toBeGreaterThanOrEqual(2);
    expect(refused.body.logs[0].error).toContain('draining');
  });

  it('answers 422 naming the field for a bad body', async () => {
    const res = await control('/resources/agent/slow/drain', { json: { retry_after: 0 } });
    expect(res.status).toBe(422);
    expect(res.body.detail).toContain('body.retry_after');
    expect((await control('/rate-limit', { json: {} })).status).toBe(422);
  });

  it('changes rate limits at run time (last: it spends the window)', async () => {
    // A window long enough that the four requests below fall in it even on a slow machine.
    const on = await control('/rate-limit', { json: { enabled: true, max: 3, window_ms: 3_000 } });
    expect(on.body).toEqual({ enabled: true, max: 3, window_ms: 3_000 });
    expect((await control('/settings')).body.rateLimit).toEqual({ enabled: true, max: 3, window_ms: 3_000 });
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push((await server.request('/api/v1/agents')).status);
    expect(statuses).toEqual([200, 200, 429]);
    // The control plane is limited like any route; once the window has passed it can lift the limit.
    await new Promise((r) => setTimeout(r, 3_000));
    const off = await eventually(async () => {
      const res = await control('/rate-limit', { json: { enabled: false } });
      return res.status === 200 ? res : undefined;
    });
    expect(off.status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await server.request('/api/v1/agents')).status).toBe(200);
  });
});

describe('control plane, disabled or misconfigured', () => {
  it('answers 404 when disabled', async () => {
    const server = await startTestServer({ files });
    try {
      for (const path of ['/api/v1/control', '/api/v1/control/resources', '/api/v1/control/maintenance']) {
        const res = await server.request(path, { headers: { 'x-control-token': TOKEN } });
        expect(res.status).toBe(404);
        expect(res.body.detail).toContain('control.enabled');
      }
    } finally {
      await server.stop();
    }
  });

  it('refuses to start enabled without a token', async () => {
    const root = await makeWorkspace();
    await expect(startServer({ root, port: 0, control: { enabled: true } })).rejects.toThrow(/control\.token/);
  });
});
