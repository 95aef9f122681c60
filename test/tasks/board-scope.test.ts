import { afterEach, describe, expect, it } from 'vitest';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';

/**
 * Without `auth.tokens` every caller is the one local user: a task submitted before the desktop
 * window opened (as `local`) shows on the window's board, though the window reaches the API with a
 * run-time token of its own (`desktop`), and a login-link tab (`browser`) sees the window's. With
 * tokens, each principal sees only its own.
 */
let server: TestServer | undefined;
afterEach(async () => server?.stop());

const files = { 'agents/echo.ts': agentSource(`{ run: async (input) => 'echo: ' + input.query }`) };
const submit = (s: TestServer, query: string, token?: string) =>
  s.request('/api/v1/tasks', {
    method: 'POST',
    json: { kind: 'agent', target: 'echo', input: { query } },
    headers: token ? { authorization: `Bearer ${token}` } : {},
  });
const board = async (s: TestServer, token?: string) =>
  ((await s.request('/api/v1/tasks', { headers: token ? { authorization: `Bearer ${token}` } : {} })).body.tasks as Array<{ id: string }>)
    .map((t) => t.id)
    .sort();

describe('whose tasks the board shows', () => {
  it("tokenless: the window sees the tasks submitted before it opened, and a login-link tab the window's", async () => {
    server = await startTestServer({ files, settings: { watch: false } });
    const before = (await submit(server, 'a')).body.id as string;
    // The window opens: from now on the API takes its run-time token (and a login-link tab's).
    server.ctx.runtimeTokens.desktop = 'window-token';
    server.ctx.runtimeTokens.browser = 'tab-token';
    const fromWindow = (await submit(server, 'b', 'window-token')).body.id as string;
    expect(await board(server, 'window-token')).toEqual([before, fromWindow].sort());
    expect(await board(server, 'tab-token')).toEqual([before, fromWindow].sort());
    expect((await server.request(`/api/v1/tasks/${before}`, { headers: { authorization: 'Bearer window-token' } })).body.principal).toBe(
      'local',
    );
    const cancel = await server.request(`/api/v1/tasks/${fromWindow}/cancel`, {
      method: 'POST',
      headers: { authorization: 'Bearer tab-token' },
    });
    expect(cancel.status).toBe(200);
  });

  it("with tokens: each principal sees only its own, another's is 404", async () => {
    server = await startTestServer({ files, settings: { watch: false, auth: { tokens: { alice: 'alice-token', bob: 'bob-token' } } } });
    const alices = (await submit(server, 'a', 'alice-token')).body.id as string;
    const bobs = (await submit(server, 'b', 'bob-token')).body.id as string;
    expect(await board(server, 'alice-token')).toEqual([alices]);
    expect(await board(server, 'bob-token')).toEqual([bobs]);
    expect((await server.request(`/api/v1/tasks/${bobs}`, { headers: { authorization: 'Bearer alice-token' } })).status).toBe(404);
  });
});
