import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nestsDeeperThan } from '../../core/http/app.js';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';

/**
 * A body nested thousands deep used to parse, then overflow the stack of the code that stored it
 * ("Maximum call stack size exceeded" for every later write to that shard). Now the depth is
 * checked before parsing (setting bodyDepthLimit, 64) and the store never sees such a value.
 */
const nested = (depth: number, leaf: unknown = 1) => {
  let value: unknown = leaf;
  for (let i = 0; i < depth; i++) value = i % 2 ? [value] : { k: value };
  return value;
};

describe('the JSON depth limit', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      files: { 'agents/echo.ts': agentSource(`{ run: async (input) => 'echo: ' + input.query }`) },
      settings: { watch: false },
    });
  });
  afterAll(() => server?.stop());

  /** JSON text nested `depth` deep, written as text: JSON.stringify itself overflows on such values. */
  const deepText = (depth: number) => '{"k":'.repeat(depth) + '1' + '}'.repeat(depth);
  const post = (pathname: string, body: string) =>
    server.request(pathname, { method: 'POST', body, headers: { 'content-type': 'application/json' } });

  it('refuses a 5,000-level body with 400 naming the limit, and later writes still work', async () => {
    const deep = await post('/api/v1/echo/invoke/async', `{"query":"x","metadata":${deepText(5000)}}`);
    expect(deep.status).toBe(400);
    expect(deep.body).toEqual({
      detail: 'request body nests arrays and objects deeper than 64 levels (setting bodyDepthLimit)',
      code: expect.stringMatching(/^HANGAR_[A-Z_]+$/),
    });
    const thread = await post('/api/v1/echo/threads', `{"thread_id":"deep","metadata":{"context":${deepText(5000)}}}`);
    expect(thread.status).toBe(400);
    expect((await server.request('/api/v1/echo/threads/deep')).status).toBe(404);
    // Within the limit is stored and read back whole; a valid write afterwards is unaffected.
    const ok = await server.request('/api/v1/echo/threads', { method: 'POST', json: { thread_id: 'fine', metadata: { v: nested(60) } } });
    expect(ok.status).toBe(200);
    expect((await server.request('/api/v1/echo/threads/fine')).body.metadata).toEqual({ v: nested(60) });
    expect((await server.request('/api/v1/echo/invoke', { method: 'POST', json: { query: 'after' } })).body.response).toBe('echo: after');
  });

  it('counts only structure: brackets inside strings, escaped quotes and a flat long array do not nest', () => {
    expect(nestsDeeperThan(JSON.stringify({ s: '[[[[[[[[{{{{{{', t: 'say \\"[[[[\\"' }), 2)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify(Array.from({ length: 10_000 }, () => [1])), 2)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify(nested(3)), 3)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify(nested(4)), 3)).toBe(true);
  });
});
