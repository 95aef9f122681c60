import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { EventMessage } from '../../core/ui/events.js';
import { glance, parsePrometheus } from '../../desktop/views/metrics.js';
import { agentSource, eventually, startTestServer as startServer, type TestServer } from '../support/server.js';
import { WITHOUT_PLUGIN_WORKERS } from './servers.js';

const startTestServer = (options: Parameters<typeof startServer>[0] = {}) =>
  startServer({ ...options, start: { subsystems: WITHOUT_PLUGIN_WORKERS } });

const echo = agentSource(`{ description: 'Echoes', run: (input) => ({ response: 'echo: ' + input.query }) }`);

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** A ws client that collects every message of the live channel. */
function listen(url: string, headers: Record<string, string> = {}) {
  const messages: EventMessage[] = [];
  const socket = new WebSocket(url, { headers });
  socket.on('message', (data) => messages.push(JSON.parse(String(data)) as EventMessage));
  const opened = new Promise<void>((resolve, reject) => {
    socket.once('open', () => resolve());
    socket.once('error', reject);
    socket.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
  });
  return { socket, messages, opened };
}

describe('ui subsystem', () => {
  it('serves the UI at /ui/ with a strict content security policy', async () => {
    server = await startTestServer();
    const page = await server.request('/ui/');
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    expect(page.text).toContain('<script type="module" src="app.js"></script>');
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    // Only style attributes may be inline; never scripts or <style> elements.
    expect(csp.replace("style-src-attr 'unsafe-inline'", '')).not.toContain('unsafe-inline');
    expect(csp).toContain(`connect-src 'self' ${server.url.replace('http', 'ws')}`);
    // A fresh style nonce per page load, in the policy and in the page (for the code editor).
    const nonce = /'nonce-([^']+)'/.exec(csp)![1]!;
    expect(page.text).toContain(`<meta name="hangar-style-nonce" content="${nonce}" />`);
    const again = await server.request('/ui/');
    expect(again.headers.get('content-security-policy')).not.toContain(nonce);

    const js = await server.request('/ui/app.js');
    expect(js.headers.get('content-type')).toMatch(/text\/javascript/);
    expect(js.text.length).toBeGreaterThan(1000);
    // Offline: nothing in the bundle loads from another origin.
    expect(js.text).not.toMatch(/https:\/\/(cdn|unpkg|fonts)\./);
    expect((await server.request('/ui/app.css')).headers.get('content-type')).toMatch(/text\/css/);
    expect((await server.request('/ui/secrets.json')).status).toBe(404);
    const redirect = await fetch(`${server.url}/ui`, { redirect: 'manual' });
    expect(redirect.status).toBe(301);
    expect(redirect.headers.get('location')).toBe('/ui/');
  });

  it('serves the UI files without a token even when the API requires one', async () => {
    server = await startTestServer({ settings: { auth: { tokens: { ada: 'secret-token' } } } });
    expect((await server.request('/ui/')).status).toBe(200);
    expect((await server.request('/ui/app.js')).status).toBe(200);
    expect((await server.request('/api/v1/status')).status).toBe(401);
  });

  it('streams the workspace over /api/v1/events and follows file changes', async () => {
    server = await startTestServer({ files: { 'agents/echo.ts': echo } });
    const client = listen(`${server.url.replace('http', 'ws')}/api/v1/events`);
    await client.opened;
    const first = await eventually(() => client.messages[0]);
    expect(first.type).toBe('workspace');
    expect(first.workspace.kinds.agent!.map((a) => a.name)).toEqual(['echo']);
    expect(first.workspace.kinds.agent![0]).toMatchObject({ file: 'agents/echo.ts', description: 'Echoes' });
    expect(Object.keys(first.workspace.kinds).slice(0, 6)).toEqual(['agent', 'endpoint', 'plugin', 'pipeline', 'notebook', 'run']);

    await server.write('agents/second.ts', echo);
    const added = await eventually(() => client.messages.find((m) => m.workspace.kinds.agent!.some((a) => a.name === 'second')));
    expect(added.changes).toContainEqual(expect.objectContaining({ type: 'added', kind: 'agent', name: 'second' }));
    expect(added.seq).toBeGreaterThan(first.seq);

    await server.write('agents/broken.ts', 'export default {{{');
    const broken = await eventually(() => client.messages.find((m) => m.workspace.problems.length > 0));
    expect(broken.workspace.problems[0]).toMatchObject({ kind: 'agent', file: 'agents/broken.ts' });
    expect(broken.workspace.problems[0]!.line).toBeGreaterThan(0);
    client.socket.close();
  });

  it('checks Origin and token on the live channel like every other route', async () => {
    server = await startTestServer({ settings: { auth: { tokens: { ada: 'secret-token' } } } });
    const ws = server.url.replace('http', 'ws');
    await expect(listen(`${ws}/api/v1/events`).opened).rejects.toThrow('HTTP 401');
    await expect(listen(`${ws}/api/v1/events?token=secret-token`, { origin: 'https://evil.example' }).opened).rejects.toThrow('HTTP 403');
    const ok = listen(`${ws}/api/v1/events?token=secret-token`, { origin: server.url });
    await ok.opened;
    expect((await eventually(() => ok.messages[0])).type).toBe('workspace');
    ok.socket.close();
  });

  it('tells connected clients it is going away when the server stops, without delaying the stop', async () => {
    server = await startTestServer();
    const client = listen(`${server.url.replace('http', 'ws')}/api/v1/events`);
    await client.opened;
    const closed = new Promise<number>((resolve) => client.socket.once('close', (code) => resolve(code)));
    const started = Date.now();
    await server.stop();
    server = undefined;
    expect(await closed).toBe(1001);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});

describe('metrics at a glance', () => {
  it('reads the Prometheus text of /metrics', async () => {
    server = await startTestServer({ files: { 'agents/echo.ts': echo } });
    await server.request('/api/v1/echo/invoke', { method: 'POST', json: { query: 'hi' } });
    await server.request('/api/v1/nope/health');
    const figures = glance(parsePrometheus((await server.request('/metrics')).text));
    expect(figures.requests).toBeGreaterThanOrEqual(2);
    expect(figures.meanLatencyMs).toBeGreaterThan(0);
    expect(figures.residentMemoryMb).toBeGreaterThan(1);
    expect(figures.serverErrors).toBe(0);
  });

  it('keeps escaped label values whole and sums by label', () => {
    const samples = parsePrometheus(
      [
        '# HELP http_requests_total Requests',
        '# TYPE http_requests_total counter',
        'http_requests_total{method="GET",route="/a,\\"b\\"",status="200"} 3',
        'http_requests_total{method="GET",route="/x",status="503"} 2',
        'dropin_reloads_total{kind="agent",outcome="error"} 1',
        'dropin_reloads_total{kind="agent",outcome="ok"} 4',
      ].join('\n'),
    );
    expect(samples[0]!.labels.route).toBe('/a,"b"');
    expect(glance(samples)).toMatchObject({ requests: 5, serverErrors: 2, reloads: 5, failedReloads: 1, meanLatencyMs: null });
  });
});
