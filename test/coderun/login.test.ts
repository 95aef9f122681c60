import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { browserToken, LoginLinks, loginUrl } from '../../core/coderun/login.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * One-time login links (core/coderun/login.ts): a code from the link is exchanged once for the
 * coding-run session token (and an API token when the server needs one); a used, expired or
 * foreign code is refused with a message naming the file to read.
 */

const sessionOf = async (server: TestServer) =>
  (JSON.parse(await readFile(path.join(server.root, '.hangar', 'code-session.json'), 'utf8')) as { token: string }).token;

const exchange = (server: TestServer, code: unknown, headers: Record<string, string> = {}) =>
  server.request('/api/login', { method: 'POST', json: { code }, headers });

describe('login links on a loopback server without tokens', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.stop());

  it('exchanges a code once for the session token, then refuses it naming .hangar/code-session.json', async () => {
    const { code } = server.ctx.services.get('loginLinks').mint(browserToken(server.ctx));
    const first = await exchange(server, code);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ session: await sessionOf(server), token: null });
    // The session token works on the coding-run routes.
    expect((await server.request('/api/config', { headers: { 'x-hangar-session': first.body.session } })).status).toBe(200);

    const again = await exchange(server, code);
    expect(again.status).toBe(401);
    expect(again.body.detail).toBe(
      'this login link was already used (each link works once); read the session token in .hangar/code-session.json of the workspace, or run `hangar login` for a fresh link',
    );
  });

  it('refuses a code it never minted (an earlier launch) and a malformed body', async () => {
    const foreign = await exchange(server, 'f'.repeat(64));
    expect(foreign.status).toBe(401);
    expect(foreign.body.detail).toMatch(
      /^this login link is not valid for this server \(links end when Hangar restarts\); read the session token in \.hangar\/code-session\.json/,
    );
    const missing = await server.request('/api/login', { method: 'POST', json: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toMatch(/^body\.code: /);
    const wrongType = await exchange(server, 42);
    expect(wrongType.status).toBe(422);
    const notJson = await server.request('/api/login', { method: 'POST', body: 'code=abc', headers: { 'content-type': 'text/plain' } });
    expect(notJson.status).toBeGreaterThanOrEqual(400);
    expect(notJson.status).toBeLessThan(500);
    expect(notJson.body.detail).toBeTruthy();
  });

  it('mints fresh links for a caller holding the session token, and only for one', async () => {
    const refused = await server.request('/api/login/links', { method: 'POST' });
    expect(refused.status).toBe(401);
    expect(refused.body.detail).toContain('.hangar/code-session.json');

    const minted = await server.request('/api/login/links', { method: 'POST', headers: { 'x-hangar-session': await sessionOf(server) } });
    expect(minted.status).toBe(201);
    expect(minted.body.url).toBe(`${server.url}/ui/?login=${minted.body.code}`);
    expect(Date.parse(minted.body.expires_at) - Date.now()).toBeGreaterThan(23 * 3600_000);
    expect((await exchange(server, minted.body.code)).status).toBe(200);
  });

  it('lists both routes in /openapi.json', async () => {
    const doc = (await server.request('/openapi.json')).body as { paths: Record<string, Record<string, { summary: string }>> };
    expect(doc.paths['/api/login']?.post?.summary).toMatch(/one-time login code/);
    expect(doc.paths['/api/login/links']?.post?.summary).toMatch(/fresh one-time login link/);
  });
});

describe('login links on a server with API tokens', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ settings: { auth: { tokens: { alice: 'alice-secret-token' } } } as never });
  });
  afterAll(() => server?.stop());

  it('reaches the exchange without a bearer token and hands the browser an API token that works', async () => {
    const { code } = server.ctx.services.get('loginLinks').mint(browserToken(server.ctx));
    const answer = await exchange(server, code);
    expect(answer.status).toBe(200);
    expect(answer.body.token).toMatch(/^[0-9a-f]{64}$/);
    expect((await server.request('/api/v1/agents')).status).toBe(401);
    expect((await server.request('/api/v1/agents', { headers: { authorization: `Bearer ${answer.body.token}` } })).status).toBe(200);
  });

  it('hands over the bearer token a link was minted with, never another', async () => {
    const session = await sessionOf(server);
    expect((await server.request('/api/login/links', { method: 'POST', headers: { 'x-hangar-session': session } })).status).toBe(401);
    const minted = await server.request('/api/login/links', {
      method: 'POST',
      headers: { 'x-hangar-session': session, authorization: 'Bearer alice-secret-token' },
    });
    expect(minted.status).toBe(201);
    const answer = await exchange(server, minted.body.code);
    expect(answer.body).toEqual({ session, token: 'alice-secret-token' });
  });
});

describe('login link lifetime', () => {
  it('expires an unused code after 24 hours', () => {
    let now = 1_000_000;
    const links = new LoginLinks(
      () => 'session',
      () => now,
    );
    const { code } = links.mint();
    now += 24 * 3600_000;
    expect(() => links.exchange(code)).toThrow(
      /this login link has expired \(links last 24 hours\); read the session token in \.hangar\/code-session\.json/,
    );
  });

  it('settles `used` when the page exchanges the code, which is how the window knows it loaded', async () => {
    const links = new LoginLinks(() => 'session');
    const link = links.mint();
    let seen = false;
    void link.used.then(() => (seen = true));
    await Promise.resolve();
    expect(seen).toBe(false);
    links.exchange(link.code);
    await link.used;
    expect(seen).toBe(true);
  });

  it('builds the link on /ui/ of the server', () => {
    expect(loginUrl('http://127.0.0.1:8787', 'abc')).toBe('http://127.0.0.1:8787/ui/?login=abc');
  });
});
