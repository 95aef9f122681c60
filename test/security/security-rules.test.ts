/**
 * The guards of core/http/security.ts at their edges (#30): what a refusal says (the 401's
 * `WWW-Authenticate`, the 429's `Retry-After` against the seconds its body names, the Host and
 * Origin a 403 names, an absent Host), which requests are public (a route's own flag, the probes,
 * an invalid token on a public path), and how a credential is read from its header.
 */
import type { IncomingMessage } from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_PUBLIC_PATHS, presentedToken, upgradeChecker } from '../../core/http/security.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { rawRequest } from './raw.js';

const TOKEN = 'alice-security-rules-token';
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    settings: { watch: false, auth: { tokens: { alice: TOKEN } }, rateLimit: { enabled: true, max: 2, windowMs: 60_000 } } as never,
  });
});
afterAll(() => server?.stop());

const get = (target: string, headers: Record<string, string> = {}) => rawRequest(server.port, 'GET', target, headers);

/** A request sent on a bare socket, so it can leave out the Host header (HTTP/1.0 allows that). */
function withoutHost(target: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(server.port, '127.0.0.1', () => socket.write(`GET ${target} HTTP/1.0\r\n\r\n`));
    let text = '';
    socket.on('data', (chunk) => {
      text += chunk.toString('utf8');
    });
    socket.on('end', () => resolve(text));
    socket.on('error', reject);
  });
}

describe('a refused request says why and what to do', () => {
  it('401 asks for a bearer token, whether none or a wrong one came', async () => {
    const none = await get('/api/v1/agents');
    expect([none.status, none.body.code, none.headers['www-authenticate']]).toEqual([401, 'HANGAR_AUTH_MISSING', 'Bearer']);
    const wrong = await get('/api/v1/agents', { authorization: 'Bearer not-the-token' });
    expect([wrong.status, wrong.body.code, wrong.headers['www-authenticate']]).toEqual([401, 'HANGAR_AUTH_INVALID', 'Bearer']);
    expect((await get('/api/v1/agents', { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
  });

  it('429 names in Retry-After the seconds its body names', async () => {
    const auth = { 'x-api-key': TOKEN };
    // Two a minute for Alice (the 401 test above spent one of them): the third at most is refused.
    const statuses: number[] = [];
    let limited: Awaited<ReturnType<typeof get>> | undefined;
    while (!limited && statuses.length < 3) {
      const res = await get('/api/v1/agents', auth);
      statuses.push(res.status);
      if (res.status === 429) limited = res;
    }
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, -1).every((s) => s === 200)).toBe(true);
    const seconds = /retry after (\d+)s/.exec(limited!.body.detail)?.[1];
    expect(Number(seconds)).toBeGreaterThan(0);
    expect(limited!.headers['retry-after']).toBe(seconds);
  });

  it('403 names the Host it refused, an absent one as ""', async () => {
    const evil = await get('/health', { host: 'localhost.evil.example' });
    expect([evil.status, evil.body.detail]).toEqual([403, 'host "localhost.evil.example" is not allowed']);
    const raw = await withoutHost('/health');
    expect(raw.split('\r\n')[0]).toMatch(/^HTTP\/1\.[01] 403 /);
    expect(raw).toContain('host \\"\\" is not allowed');
  });
});

describe('public requests', () => {
  it('the probes and the discovery document answer without a token, and are never rate-limited', async () => {
    for (const path of DEFAULT_PUBLIC_PATHS) {
      for (let i = 0; i < 4; i++) expect([path, (await get(path)).status]).toEqual([path, 200]);
    }
  });

  it("a route's own public flag serves it without a token, and with an invalid one (as anonymous)", async () => {
    const ui = await get('/ui/');
    expect(ui.status).toBe(200);
    expect(ui.headers['content-type']).toMatch(/text\/html/);
    expect((await get('/ui/', { authorization: 'Bearer not-the-token' })).status).toBe(200);
    // The same invalid token anywhere else is refused.
    expect((await get('/api/v1/agents', { authorization: 'Bearer not-the-token' })).status).toBe(401);
  });
});

describe('the presented credential', () => {
  const req = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;

  it('is the bearer token, any case of the scheme, or else the X-API-Key, without surrounding blanks', () => {
    expect(presentedToken(req({ authorization: 'Bearer  tok ' }))).toBe('tok');
    expect(presentedToken(req({ authorization: 'bearer tok' }))).toBe('tok');
    expect(presentedToken(req({ 'x-api-key': ' tok\t' }))).toBe('tok');
    expect(presentedToken(req({ authorization: 'Basic dTpw', 'x-api-key': 'key' }))).toBe('key');
    expect(presentedToken(req({}))).toBeUndefined();
  });
});

describe('websocket upgrades', () => {
  const check = upgradeChecker({ host: '127.0.0.1', allowedHosts: [], allowedOrigins: [] } as never);
  const upgrade = (headers: Record<string, string>) => check({ headers } as unknown as IncomingMessage);

  it('name the Host or the Origin they refuse', () => {
    expect(upgrade({ host: 'evil.example:8787' })).toMatchObject({ status: 403, detail: 'host "evil.example:8787" is not allowed' });
    expect(upgrade({})).toMatchObject({ status: 403, detail: 'host "" is not allowed' });
    expect(upgrade({ host: '127.0.0.1:8787', origin: 'http://127.0.0.1:9999' })).toMatchObject({
      status: 403,
      detail: 'origin "http://127.0.0.1:9999" is not allowed',
    });
    expect(upgrade({ host: '127.0.0.1:8787', origin: 'http://127.0.0.1:8787' })).toBeUndefined();
  });
});
