/**
 * Issue #18, item 9, the smaller holes: secret comparisons that told the length, an endpoint
 * handler's secret in a 500, absolute paths in error bodies, control characters in ids answered
 * by node's own 500, and /metrics throttled like any route.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sameSecret } from '../../core/lib/same-secret.js';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';
import { rawRequest } from './raw.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const SECRET = 'sk-live-5f1c9a7e-do-not-leak';
const json = { 'content-type': 'application/json' };

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const full = path.join(dir, name);
    return statSync(full).isDirectory() ? sourceFiles(full) : full.endsWith('.ts') ? [full] : [];
  });
}

describe('secrets', () => {
  it('compares secrets without a length check first: every comparison in core goes through sameSecret', () => {
    expect(sameSecret('abc', 'abc')).toBe(true);
    expect(sameSecret('abc', 'abcd')).toBe(false);
    expect(sameSecret('', 'x'.repeat(64))).toBe(false);
    expect(sameSecret('ünïcode', 'ünïcode')).toBe(true);
    // `a.length === b.length && timingSafeEqual(a, b)` answers sooner for a wrong length; the only
    // timingSafeEqual left is sameSecret's, over two HMAC digests of the same size.
    const callers = sourceFiles(path.resolve('core')).filter((f) => /timingSafeEqual\(/.test(readFileSync(f, 'utf8')));
    expect(callers.map((f) => path.relative(process.cwd(), f))).toEqual([path.join('core', 'lib', 'same-secret.ts')]);
  });

  it("masks every ${NAME} value an endpoint references in a handler's error, the log and the invocation log", async () => {
    process.env.HANGAR_TEST_LEAKY_KEY = SECRET;
    server = await startTestServer({
      settings: { logs: { enabled: true } },
      files: {
        'endpoints/leaky.ts': `import { defineEndpoint } from 'hangar';
export default defineEndpoint({
  methods: ['POST'],
  upstreams: [{ name: 'up', base_url: 'http://127.0.0.1:9', path: '/', auth: { type: 'BEARER', api_key: '\${HANGAR_TEST_LEAKY_KEY}' } }],
  // Never calls the upstream, so the call itself never resolves the variable.
  handler: async () => { throw new Error('could not authenticate with ' + process.env.HANGAR_TEST_LEAKY_KEY); },
});
`,
      },
    });
    const s = server;
    await eventually(async () => (await s.request('/api/v1/endpoints')).body.endpoints?.length === 1);
    const res = await s.request('/api/v1/endpoints/leaky', { method: 'POST', json: {} });
    expect(res.status).toBe(500);
    expect(res.body.detail).toBe("endpoint 'leaky' handler failed: could not authenticate with ***");
    const logs = await eventually(async () => {
      const list = await s.request('/api/v1/logs');
      return list.body.logs?.length ? list : undefined;
    });
    expect(logs.text).toContain('could not authenticate with ***');
    expect(logs.text).not.toContain(SECRET);
    expect(s.logs.join('\n')).toContain('could not authenticate with ***');
    expect(s.logs.join('\n')).not.toContain(SECRET);
  });
});

describe('error bodies', () => {
  it('name workspace files relative to the workspace, never by absolute path', async () => {
    server = await startTestServer({
      files: {
        'agents/reader.ts': agentSource(
          `{ run: async (_i, ctx) => readFileSync(join(ctx.workspace, 'data', 'missing.json'), 'utf8') }`,
          `import { readFileSync } from 'node:fs';\nimport { join } from 'node:path';`,
        ),
      },
    });
    const res = await server.request('/api/v1/reader/invoke', { method: 'POST', json: { query: 'x' } });
    expect(res.status).toBe(500);
    expect(res.body.detail).toContain("'data/missing.json'");
    expect(res.text).not.toContain(server.root);
    // The log keeps the full path for the person at the machine.
    expect(server.logs.join('\n')).toContain(path.join(server.root, 'data', 'missing.json'));
  });
});

describe('control characters in ids', () => {
  it('are refused with 422 {detail}, in bodies, queries and paths, instead of reaching a response header', async () => {
    server = await startTestServer({
      files: {
        'agents/echo.ts': agentSource(`{ run: async (i) => i.query }`),
        'agents/approver.ts': agentSource(
          `{ graph: { nodes: { draft: () => ({ response: 'd' }), ok: { type: 'approval', message: 'Send?' } }, edges: [{ from: 'draft', to: 'ok' }], entry: 'draft' } }`,
        ),
      },
    });
    const s = server;
    // A suspended run names its thread in X-Thread-Id: node refuses the header, which was a bare 500.
    for (const [route, body] of [
      ['/api/v1/approver/invoke', { query: 'x', thread_id: 'a\nb' }],
      ['/api/v1/echo/invoke', { query: 'x', thread_id: 'a\u0001b' }],
      ['/api/v1/echo/chat', { content: 'x', thread_id: 'a\rX-Evil: 1' }],
      ['/api/v1/echo/threads', { thread_id: 'a\u007fb' }],
      ['/api/v1/echo/invoke', { query: 'x', user_id: 'u\u0000' }],
    ] as const) {
      const res = await s.request(route, { method: 'POST', json: body });
      expect([route, res.status, res.body.detail]).toEqual([
        route,
        422,
        expect.stringMatching(/^body\.(thread_id|user_id): must not contain control characters/),
      ]);
    }
    const query = await s.request('/api/v1/echo/threads?user_id=a%0Ab');
    expect([query.status, query.body.detail]).toEqual([422, 'query.user_id: must not contain control characters']);
    const inPath = await rawRequest(s.port, 'POST', '/api/v1/approver/threads/a%0Db/approve', json, '{"approval_id":"x"}');
    expect([inPath.status, inPath.body.detail]).toEqual([422, 'the request path contains a control character']);
    // Printable ids keep working.
    expect((await s.request('/api/v1/approver/invoke', { method: 'POST', json: { query: 'x', thread_id: 'ok-1' } })).status).toBe(202);
  });
});

describe('rate limit', () => {
  it('never limits /metrics or the probes', async () => {
    server = await startTestServer({ settings: { rateLimit: { enabled: true, max: 2, windowMs: 60_000 } } });
    for (let i = 0; i < 6; i++) {
      for (const route of ['/metrics', '/health', '/readiness'])
        expect([route, (await server.request(route)).status]).toEqual([route, 200]);
    }
    const limited = [];
    for (let i = 0; i < 3; i++) limited.push((await server.request('/api/v1/agents')).status);
    expect(limited).toEqual([200, 200, 429]);
  });
});
