/**
 * Issue #18, item 1: one normalised path for every guard and the router. Each guarded prefix is
 * walked with encoded spellings (`%63ontrol`, `//`, `/./`, `/x/../`, `%2e`, trailing slashes): a
 * guard must refuse what the router would route, and let through what the router would serve.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { CODE_PREFIXES } from '../../core/coderun/session.js';
import { normalizeUrl } from '../../core/http/normalize.js';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';
import { encodedVariants, rawRequest } from './raw.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const echo = { 'agents/echo.ts': agentSource(`{ run: async (i) => i.query }`) };
const json = { 'content-type': 'application/json' };

describe('path normalisation before every guard', () => {
  it('normalises percent-encoding, empty and dot segments and trailing slashes, and nothing else', () => {
    expect(normalizeUrl('/api/v1/agents')).toBe('/api/v1/agents');
    expect(normalizeUrl('/api/v1/%63ontrol/maintenance?x=%2F')).toBe('/api/v1/control/maintenance?x=%2F');
    expect(normalizeUrl('//api//v1/./x/../control/')).toBe('/api/v1/control');
    expect(normalizeUrl('/api/v1/x/%2e%2E/control')).toBe('/api/v1/control');
    expect(normalizeUrl('/../../etc/passwd')).toBe('/etc/passwd');
    // Reserved characters keep their meaning: an encoded slash is not a separator.
    expect(normalizeUrl('/api/v1/control%2fmaintenance')).toBe('/api/v1/control%2Fmaintenance');
    expect(normalizeUrl('/api/v1/a%20b%zz')).toBe('/api/v1/a%20b%zz');
    expect(normalizeUrl('/')).toBe('/');
  });

  it('refuses every spelling of a control-plane path without the control token, and routes each one with it', async () => {
    server = await startTestServer({ files: echo, settings: { control: { enabled: true, token: 'control-secret' } } });
    const routes: Array<[string, string, string?]> = [
      ['POST', '/api/v1/control/maintenance', '{"enabled":true}'],
      ['POST', '/api/v1/control/rate-limit', '{"enabled":true,"max":1}'],
      ['GET', '/api/v1/control/settings'],
      ['GET', '/api/v1/control'],
    ];
    for (const [method, route, body] of routes) {
      for (const target of encodedVariants(route)) {
        const res = await rawRequest(server.port, method, target, body ? json : {}, body);
        expect([method, target, res.status, typeof res.body?.detail]).toEqual([method, target, 401, 'string']);
      }
    }
    // The issue's exact request.
    const issue = await rawRequest(server.port, 'POST', '/api/v1/%63ontrol/maintenance', json, '{"enabled":true}');
    expect(issue.status).toBe(401);
    expect((await server.request('/api/v1/echo/health')).status).toBe(200);
    // With the token, each spelling reaches the route the guard judged.
    for (const target of encodedVariants('/api/v1/control/settings')) {
      const res = await rawRequest(server.port, 'GET', target, { 'x-control-token': 'control-secret' });
      expect([target, res.status]).toEqual([target, 200]);
    }
  });

  it('refuses every spelling of every coding-run prefix without the session token', async () => {
    server = await startTestServer({ files: echo });
    const token = JSON.parse(await readFile(path.join(server.root, '.hangar', 'code-session.json'), 'utf8')).token as string;
    for (const prefix of CODE_PREFIXES) {
      for (const target of [prefix, ...encodedVariants(prefix)]) {
        const res = await rawRequest(server.port, 'GET', target);
        expect([target, res.status]).toEqual([target, 401]);
      }
    }
    for (const target of encodedVariants('/api/teams')) {
      const res = await rawRequest(server.port, 'GET', target, { 'x-hangar-session': token });
      expect([target, res.status]).toEqual([target, 200]);
    }
  });

  it('asks every spelling of a private path for a token and serves every spelling of a public one without', async () => {
    server = await startTestServer({ files: echo, settings: { auth: { tokens: { alice: 'alice-token' } } } });
    for (const route of ['/api/v1/agents', '/api/v1/status', '/metrics', '/openapi.json', '/api/v1/echo/card']) {
      for (const target of encodedVariants(route)) {
        const res = await rawRequest(server.port, 'GET', target);
        expect([target, res.status]).toEqual([target, 401]);
        const authorised = await rawRequest(server.port, 'GET', target, { authorization: 'Bearer alice-token' });
        expect([target, authorised.status]).toEqual([target, 200]);
      }
    }
    for (const route of ['/health', '/readiness', '/ready', '/.well-known/agent.json', '/ui/app.js']) {
      for (const target of encodedVariants(route)) {
        const res = await rawRequest(server.port, 'GET', target);
        expect([target, res.status]).toEqual([target, 200]);
      }
    }
  });

  it('never rate-limits a spelling of a probe, and counts every spelling of a limited path', async () => {
    server = await startTestServer({ files: echo, settings: { rateLimit: { enabled: true, max: 3, windowMs: 60_000 } } });
    for (const route of ['/health', '/readiness']) {
      for (const target of encodedVariants(route)) expect((await rawRequest(server.port, 'GET', target)).status).toBe(200);
    }
    const statuses: number[] = [];
    for (const target of encodedVariants('/api/v1/agents').slice(0, 5))
      statuses.push((await rawRequest(server.port, 'GET', target)).status);
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
  });

  it('answers a path that is not valid percent-encoding with 400 {detail}, and an encoded control character with 422 {detail}', async () => {
    server = await startTestServer({ files: echo });
    for (const target of ['/api/v1/%zz', '/api/v1/echo/threads/%C3%28/pending']) {
      const res = await rawRequest(server.port, 'GET', target);
      expect([target, res.status, typeof res.body.detail]).toEqual([target, 400, 'string']);
    }
    for (const target of ['/api/v1/echo/threads/a%01b/pending', '/api/v1/echo/invoke/stream/%0d%0aX-Evil:%201', '/api/v1/%7f']) {
      const res = await rawRequest(server.port, 'GET', target);
      expect([target, res.status, res.body.detail]).toEqual([target, 422, 'the request path contains a control character']);
    }
  });
});
