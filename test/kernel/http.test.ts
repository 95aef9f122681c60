import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { StartupError, startServer } from '../../core/app/server.js';
import { agentSource, makeWorkspace, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
afterEach(async () => server?.stop());

const echo = { 'agents/echo.ts': agentSource(`{ run: async (i) => i.query }`) };

/** A raw HTTP/1.1 request, so the Host header can be anything. */
function rawRequest(port: number, host: string, pathname = '/'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () =>
      socket.write(`GET ${pathname} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
    );
    let data = '';
    socket.on('data', (d) => (data += d));
    socket.on('end', () => resolve(data));
    socket.on('error', reject);
  });
}

describe('HTTP foundation', () => {
  it('answers unknown routes and unknown agents with 404 {detail}', async () => {
    server = await startTestServer({ files: echo });
    expect(await server.request('/nope')).toMatchObject({ status: 404, body: { detail: 'no route for GET /nope' } });
    expect(await server.request('/api/v1/ghost/card')).toMatchObject({ status: 404, body: { detail: 'agent "ghost" not found' } });
  });

  it('answers a body that is not JSON with 422 {detail}', async () => {
    server = await startTestServer({ files: echo });
    const res = await server.request('/api/v1/echo/health', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{bad',
    });
    // No POST route there: the parse error comes first and is a client error with a detail.
    expect(res.status).toBe(422);
    expect(res.body.detail).toMatch(/not valid JSON/);
  });

  it('rejects a foreign Host header (DNS rebinding) and accepts its own names', async () => {
    server = await startTestServer({ files: echo });
    expect(await rawRequest(server.port, 'evil.example')).toMatch(/^HTTP\/1.1 403[\s\S]*host \\"evil.example\\" is not allowed/);
    expect(await rawRequest(server.port, `localhost:${server.port}`)).toMatch(/^HTTP\/1.1 200/);
    expect(await rawRequest(server.port, `127.0.0.1:${server.port}`)).toMatch(/^HTTP\/1.1 200/);
  });

  it('checks Host and Origin on websocket upgrades', async () => {
    server = await startTestServer();
    server.ctx.upgrades.set('/ws-test', (_req, socket) => socket.end('HTTP/1.1 101 Switching Protocols\r\n\r\n'));
    const attempt = (headers: Record<string, string>, path = '/ws-test') =>
      new Promise<number>((resolve) => {
        const ws = new WebSocket(`ws://127.0.0.1:${server.port}${path}`, { headers });
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.on('error', () => resolve(-1));
      });
    expect(await attempt({ Origin: 'http://evil.example' })).toBe(403);
    expect(await attempt({ Host: 'evil.example' })).toBe(403);
    expect(await attempt({}, '/nowhere')).toBe(404);
  });

  it('sends no CORS headers, even to a preflight', async () => {
    server = await startTestServer({ files: echo });
    const res = await server.request('/api/v1/agents', {
      method: 'OPTIONS',
      headers: { Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' },
    });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
    expect(
      (await server.request('/api/v1/agents', { headers: { Origin: 'http://evil.example' } })).headers.get('access-control-allow-origin'),
    ).toBeNull();
  });

  it('requires a configured token and maps it to its principal; probes stay public', async () => {
    server = await startTestServer({ files: echo, settings: { auth: { tokens: { alice: 'secret-a', ci: '${HANGAR_TEST_CI_TOKEN}' } } } });
    process.env.HANGAR_TEST_CI_TOKEN = 'from-env';
    expect(await server.request('/api/v1/agents')).toMatchObject({ status: 401, body: { detail: 'missing or invalid credentials' } });
    expect((await server.request('/api/v1/agents', { headers: { Authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await server.request('/api/v1/agents', { headers: { Authorization: 'Bearer secret-a' } })).status).toBe(200);
    expect((await server.request('/api/v1/agents', { headers: { 'X-API-Key': 'from-env' } })).status).toBe(200);
    for (const probe of ['/health', '/ready', '/readiness', '/.well-known/agent.json'])
      expect((await server.request(probe)).status).toBe(200);
    expect(server.logs.join('\n')).not.toContain('secret-a');
  });

  it('refuses to bind beyond loopback without a token', async () => {
    const root = await makeWorkspace();
    await expect(startServer({ root, port: 0, host: '0.0.0.0' })).rejects.toThrow(StartupError);
    await expect(startServer({ root, port: 0, host: '0.0.0.0' })).rejects.toThrow(/exposes Hangar beyond this machine without a token/);
  });

  it('reports a port in use clearly', async () => {
    server = await startTestServer();
    const root = await makeWorkspace();
    await expect(startServer({ root, port: server.port })).rejects.toThrow(`port ${server.port} is already in use on 127.0.0.1`);
  });

  it('rate limits per principal with 429 and Retry-After when enabled', async () => {
    server = await startTestServer({ files: echo, settings: { rateLimit: { enabled: true, max: 3, windowMs: 60_000 } } });
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await server.request('/api/v1/agents')).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const limited = await server.request('/api/v1/agents');
    expect(limited.body.detail).toMatch(/rate limit exceeded/);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await server.request('/readiness')).status).toBe(200);
  });

  it('does not rate limit on loopback by default', async () => {
    server = await startTestServer({ files: echo, settings: { rateLimit: { max: 1 } } });
    for (let i = 0; i < 3; i++) expect((await server.request('/api/v1/agents')).status).toBe(200);
  });

  it('publishes an OpenAPI 3.1 document and renders /docs offline', async () => {
    server = await startTestServer({ files: echo });
    const doc = (await server.request('/openapi.json')).body;
    expect(doc.openapi).toBe('3.1.0');
    // Agent routes are documented once, with the loaded agents as the values of {agent}.
    const card = doc.paths['/api/v1/{agent}/card'].get;
    expect(card.responses['200'].content['application/json'].schema.properties.capabilities).toBeDefined();
    expect(card.parameters.find((p: { name: string }) => p.name === 'agent').schema.enum).toContain('echo');
    expect(doc.paths['/api/v1/echo/card']).toBeUndefined();
    expect(doc.paths['/api/v1/storage/stats']).toBeDefined();
    const page = await server.request('/docs');
    expect(page.text).toContain('/docs/assets/swagger-ui-bundle.js');
    expect(page.text).not.toMatch(/https?:\/\//);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'self'");
    const asset = await server.request('/docs/assets/swagger-ui.css');
    expect([asset.status, asset.headers.get('content-type'), asset.headers.get('cache-control')]).toEqual([
      200,
      'text/css; charset=utf-8',
      'public, max-age=3600',
    ]);
    expect(asset.text).toContain('.swagger-ui');
    // Conditional GET, as a browser revalidates (fetch adds `no-cache` to a request with
    // If-None-Match unless told otherwise): the ETag it sent answers 304 with no body.
    const again = await server.request('/docs/assets/swagger-ui.css', {
      headers: { 'if-none-match': asset.headers.get('etag')!, 'cache-control': 'max-age=0' },
    });
    expect([again.status, again.text]).toEqual([304, '']);
    // A range of it.
    const range = await server.request('/docs/assets/swagger-ui.css', { headers: { range: 'bytes=0-9' } });
    expect([range.status, range.text]).toEqual([206, asset.text.slice(0, 10)]);
    // Nothing outside the package folder, no folders, no missing files: the app's own 404.
    for (const target of [
      '/docs/assets/..%2Fpackage.json',
      '/docs/assets/%2E%2E%2Fpackage.json',
      '/docs/assets/',
      '/docs/assets/nope.js',
    ]) {
      const res = await server.request(target);
      expect([target, res.status, res.body?.detail]).toEqual([target, 404, expect.stringContaining('no route for GET')]);
    }
    expect((await server.request('/openapi.json')).body.paths['/docs/assets/{*}']).toBeUndefined();
  });
});
