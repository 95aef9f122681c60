import { afterEach, describe, expect, it } from 'vitest';
import { startServer } from '../../core/app/server.js';
import { agentSource, makeWorkspace, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
afterEach(async () => server?.stop());

const files = {
  'agents/alpha.ts': agentSource(
    `{ description: 'First', version: '1.2.3', framework: 'custom', prompts: { versions: { v1: 'a', v2: 'b' }, active: 'v2' }, config: { model: 'm1', temperature: 0.3 }, run: async () => 'a' }`,
  ),
  'agents/beta.ts': agentSource(`{ run: async () => 'b' }`),
};

describe('platform routes', () => {
  it('GET / gives platform info', async () => {
    server = await startTestServer({ files });
    expect((await server.request('/')).body).toEqual({ platform: 'Hangar', version: server.ctx.version, agents: 2 });
    const json = await server.request('/', { headers: { accept: 'application/json' } });
    expect(json.body).toEqual({ platform: 'Hangar', version: server.ctx.version, agents: 2 });
  });

  it('GET / from a browser (Accept: text/html) redirects to the UI', async () => {
    server = await startTestServer({ files });
    const browserAccept = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8';
    const res = await fetch(server.url + '/', { headers: { accept: browserAccept }, redirect: 'manual' });
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toBe('/ui/');
    expect(res.headers.get('vary')).toContain('Accept');
    const followed = await fetch(server.url + '/', { headers: { accept: browserAccept } });
    expect(followed.url).toBe(server.url + '/ui/');
    expect(followed.headers.get('content-type')).toContain('text/html');
  });

  it('GET /health aggregates per agent', async () => {
    server = await startTestServer({ files });
    expect((await server.request('/health')).body).toEqual({
      status: 'healthy',
      agents: { alpha: { status: 'healthy' }, beta: { status: 'healthy' } },
      errors: [],
      warnings: [],
    });
  });

  it('GET /readiness is 503 until discovery finished, then 200; /ready answers throughout', async () => {
    let release!: () => void;
    const own = await startServer(
      { root: await makeWorkspace(files), port: 0, logLevel: 'silent' },
      { discoveryGate: new Promise<void>((r) => (release = r)) },
    );
    const before = await fetch(own.url + '/readiness');
    expect(before.status).toBe(503);
    expect(await before.json()).toEqual({ detail: 'discovery in progress', code: 'HANGAR_PLATFORM_STARTING' });
    expect(before.headers.get('retry-after')).toBe('1');
    expect((await fetch(own.url + '/ready')).status).toBe(200);
    release();
    await own.discovered;
    expect((await fetch(own.url + '/readiness')).status).toBe(200);
    await own.close();
    expect(own.ctx.lifecycle.ready).toBe(false);
  });

  it('GET /api/v1/agents lists summaries keyed by name', async () => {
    server = await startTestServer({ files });
    expect((await server.request('/api/v1/agents')).body).toEqual({
      agents: {
        alpha: { name: 'alpha', slug: 'alpha', description: 'First', version: '1.2.3', framework: 'custom' },
        beta: { name: 'beta', slug: 'beta', description: '', version: '0.1.0', framework: 'hangar' },
      },
    });
  });

  it('per-agent health, config and prompts', async () => {
    server = await startTestServer({ files });
    expect((await server.request('/api/v1/alpha/health')).body).toEqual({ status: 'healthy', agent: 'alpha', framework: 'custom' });
    expect((await server.request('/api/v1/alpha/config')).body).toEqual({
      agent: 'alpha',
      config: { prompt_version: 'v2', model: 'm1', temperature: 0.3 },
    });
    expect((await server.request('/api/v1/alpha/prompts')).body).toEqual({ agent: 'alpha', versions: ['v1', 'v2'], active: 'v2' });
    expect((await server.request('/api/v1/beta/prompts')).body).toEqual({ agent: 'beta', versions: ['v1'], active: 'v1' });
  });

  it('the card and the discovery document come from the same builder', async () => {
    server = await startTestServer({ files });
    const card = (await server.request('/api/v1/alpha/card')).body;
    const discovery = (await server.request('/.well-known/agent.json')).body;
    expect(discovery).toMatchObject({ platform: 'Hangar', version: server.ctx.version });
    expect(discovery.agents.alpha).toEqual(card);
    expect(card).toMatchObject({ name: 'alpha', description: 'First', version: '1.2.3', framework: 'custom' });
    expect(Object.keys(card.capabilities).sort()).toEqual(
      ['a2a', 'chat', 'invoke', 'pushNotifications', 'resumableStreams', 'stateTransitionHistory', 'streaming'].sort(),
    );
    expect(card.endpoints.health).toBe('/api/v1/alpha/health');
    expect(card.endpoints.card).toBe('/api/v1/alpha/card');
  });

  it('card rules: with the task subsystem off, task-backed capabilities are false and a2a endpoints omitted', async () => {
    for (const enabled of [true, false]) {
      server = await startTestServer({ files, settings: { tasks: { enabled } } });
      // What a subsystem serving A2A with task persistence declares.
      Object.assign(server.ctx.agentSurface.endpoints, {
        a2a_tasks: '/api/v1/{agent}/a2a/tasks',
        a2a_events: '/api/v1/{agent}/a2a/tasks/{task_id}/events',
      });
      Object.assign(server.ctx.agentSurface.capabilities, { a2a: true, stateTransitionHistory: true, resumableStreams: true });
      const card = (await server.request('/api/v1/beta/card')).body;
      expect(card.capabilities.stateTransitionHistory).toBe(enabled);
      expect(card.capabilities.resumableStreams).toBe(enabled);
      expect(card.capabilities.pushNotifications).toBe(false);
      expect(card.capabilities.a2a).toBe(true);
      expect('a2a_tasks' in card.endpoints).toBe(enabled);
      expect('a2a_events' in card.endpoints).toBe(enabled);
      if (enabled) expect(card.endpoints.a2a_tasks).toBe('/api/v1/beta/a2a/tasks');
      await server.stop();
    }
    server = undefined as never;
  });

  it('status as JSON and as an HTML dashboard', async () => {
    server = await startTestServer({ files: { ...files, 'agents/broken.ts': 'export default {' } });
    await server.request('/api/v1/alpha/health');
    const status = (await server.request('/api/v1/status')).body;
    expect(status).toMatchObject({ platform: 'Hangar', ready: true, status: 'degraded', dropins: { agent: 2 }, tasks: { enabled: true } });
    expect(status.agents.map((a: { name: string }) => a.name)).toEqual(['alpha', 'beta']);
    expect(status.errors).toHaveLength(1);
    expect(status.errors[0]).toMatchObject({ kind: 'agent', file: 'agents/broken.ts', line: 1 });
    expect(status.requests.total).toBeGreaterThanOrEqual(1);
    expect(status.uptime_seconds).toBeGreaterThanOrEqual(0);
    const page = await server.request('/status');
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.text).toContain('alpha');
    expect(page.text).toContain('agents/broken.ts:1');
    expect(page.text).toMatch(/Uptime:/);
  });

  it('escapes user text in the dashboard', async () => {
    server = await startTestServer({
      files: { 'agents/x.ts': agentSource(`{ version: '<script>alert(1)</script>', run: async () => 'x' }`) },
    });
    const page = await server.request('/status');
    expect(page.text).not.toContain('<script>alert(1)</script>');
    expect(page.text).toContain('&lt;script&gt;');
  });

  it('/metrics exposes request counts and durations by route, per-agent invocations and drop-in reloads', async () => {
    server = await startTestServer({ files });
    await server.request('/api/v1/alpha/health');
    await server.request('/api/v1/ghost/health');
    await server.request('/api/v1/alpha/invoke', { method: 'POST', json: { query: 'q' } });
    await server.request('/api/v1/beta/chat', { method: 'POST', json: { content: 'hi' } });
    const text = (await server.request('/metrics')).text;
    expect(text).toMatch(/agent_invocations_total\{agent="alpha",route="invoke",outcome="completed"\} 1/);
    expect(text).toMatch(/agent_invocations_total\{agent="beta",route="chat",outcome="completed"\} 1/);
    expect(text).toMatch(/http_requests_total\{method="GET",route="\/api\/v1\/:agent\/health",status="200"\} 1/);
    expect(text).toMatch(/http_requests_total\{method="GET",route="\/api\/v1\/:agent\/health",status="404"\} 1/);
    expect(text).toContain('http_request_duration_seconds_bucket');
    expect(text).toMatch(/dropin_reloads_total\{kind="agent",outcome="ok"\} 2/);
  });
});
