/**
 * Guards at their edges (#30): each limit with the request just under and just over it, and each
 * credential check with its near misses, so an off-by-one or a prefix match fails a test.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const echo = { 'agents/echo.ts': agentSource(`{ run: async (i) => String(i.query.length) }`) };

/** A JSON body `{"query":"xxx…"}` of exactly `bytes` bytes. */
const bodyOf = (bytes: number) => {
  const overhead = JSON.stringify({ query: '' }).length;
  return JSON.stringify({ query: 'x'.repeat(bytes - overhead) });
};

const post = (s: TestServer, body: string, headers: Record<string, string> = {}) =>
  s.request('/api/v1/echo/invoke', { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });

describe('body size limit', () => {
  it('takes a body of exactly bodyLimit bytes and refuses one byte more with 413', async () => {
    server = await startTestServer({ files: echo, settings: { watch: false, bodyLimit: '1kb' } });
    expect(bodyOf(1024)).toHaveLength(1024);
    const at = await post(server, bodyOf(1024));
    expect([at.status, at.body.response]).toEqual([200, String(1024 - 12)]);
    expect((await post(server, bodyOf(1025))).status).toBe(413);
  });
});

describe('body depth limit', () => {
  const nested = (depth: number) => `{"query":"q","context":${'['.repeat(depth - 1)}${']'.repeat(depth - 1)}}`;
  it('takes a body nesting exactly bodyDepthLimit levels and refuses one level more with 400', async () => {
    server = await startTestServer({ files: echo, settings: { watch: false, bodyDepthLimit: 8 } });
    expect((await post(server, nested(8))).status).not.toBe(400);
    const over = await post(server, nested(9));
    expect(over.status).toBe(400);
    expect(over.body.detail).toMatch(/deeper than 8 levels/);
  });
});

describe('rate limit per principal', () => {
  it('answers max requests, refuses the next with 429 and Retry-After, and counts a second principal apart', async () => {
    server = await startTestServer({
      files: echo,
      settings: {
        watch: false,
        auth: { tokens: { alice: 'alice-token-1', bob: 'bob-token-2' } },
        rateLimit: { enabled: true, max: 3, windowMs: 60_000 },
      },
    });
    const as = (token: string) => ({ authorization: `Bearer ${token}` });
    const alice = [];
    for (let i = 0; i < 4; i++) alice.push((await server.request('/api/v1/agents', { headers: as('alice-token-1') })).status);
    expect(alice).toEqual([200, 200, 200, 429]);
    const refused = await server.request('/api/v1/agents', { headers: as('alice-token-1') });
    expect(refused.status).toBe(429);
    const retryAfter = Number(refused.headers.get('retry-after'));
    // Most of the minute's window is still ahead: not the floor of one second.
    expect(retryAfter).toBeGreaterThan(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Bob's counter is his own.
    expect((await server.request('/api/v1/agents', { headers: as('bob-token-2') })).status).toBe(200);
  });
});

describe('tokens and their near misses', () => {
  it('accepts the exact token as Bearer (any case) or X-API-Key, and refuses prefixes, extensions and another scheme', async () => {
    server = await startTestServer({ files: echo, settings: { watch: false, auth: { tokens: { alice: 'alice-token-1' } } } });
    const status = async (headers: Record<string, string>) => (await server!.request('/api/v1/agents', { headers })).status;
    expect(await status({ authorization: 'Bearer alice-token-1' })).toBe(200);
    expect(await status({ authorization: 'bearer alice-token-1' })).toBe(200);
    expect(await status({ 'x-api-key': 'alice-token-1' })).toBe(200);
    for (const headers of <Array<Record<string, string>>>[
      {},
      { authorization: 'Bearer alice-token-' },
      { authorization: 'Bearer alice-token-12' },
      { authorization: 'Bearer ALICE-TOKEN-1' },
      { authorization: 'Basic alice-token-1' },
      { authorization: 'alice-token-1' },
      { 'x-api-key': 'alice-token' },
      { 'x-api-key': '' },
    ]) {
      expect([headers, await status(headers)]).toEqual([headers, 401]);
    }
  });

  it('a refusal names the scheme (WWW-Authenticate: Bearer); a Bearer token with extra spaces counts, and another scheme falls through to X-API-Key', async () => {
    server = await startTestServer({ files: echo, settings: { watch: false, auth: { tokens: { alice: 'alice-token-1' } } } });
    const res = async (headers: Record<string, string>) => server!.request('/api/v1/agents', { headers });
    const missing = await res({});
    expect([missing.status, missing.headers.get('www-authenticate')]).toEqual([401, 'Bearer']);
    const wrong = await res({ authorization: 'Bearer nope' });
    expect([wrong.status, wrong.headers.get('www-authenticate')]).toEqual([401, 'Bearer']);
    expect((await res({ authorization: 'Bearer    alice-token-1' })).status).toBe(200);
    expect((await res({ authorization: 'Basic dXNlcjpwYXNz', 'x-api-key': 'alice-token-1' })).status).toBe(200);
  });

  it('a public probe learns the principal of a valid token and is anonymous, not refused, without one', async () => {
    server = await startTestServer({ files: echo, settings: { watch: false, auth: { tokens: { alice: 'alice-token-1' } } } });
    expect((await server.request('/health')).status).toBe(200);
    expect((await server.request('/health', { headers: { authorization: 'Bearer wrong' } })).status).toBe(200);
  });
});
