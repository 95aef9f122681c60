import { afterEach, describe, expect, it } from 'vitest';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
afterEach(async () => {
  delete process.env.HANGAR_DEBUG;
  await server?.stop();
});

const BROKEN = `import { defineAgent } from 'hangar';\nexport default defineAgent({ run: async () => 'x' ;\n`;
const invoke = (name: string) => server.request(`/api/v1/${name}/invoke`, { method: 'POST', json: { query: 'hi' } });

describe('errors where users look', () => {
  it('a drop-in that fails to load answers calls with 503 and where it failed, not 404', async () => {
    server = await startTestServer({ files: { 'agents/broken.ts': BROKEN } });
    const res = await invoke('broken');
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({
      error: expect.stringMatching(/Expected/),
      file: 'agents/broken.ts',
      line: 2,
      column: expect.any(Number),
    });
    expect(res.body.detail).toMatch(
      /^agent "broken" failed to load: Expected .+ \(agents\/broken\.ts:2:\d+\); fix the file and it reloads$/,
    );
    // The code frame: numbered lines, the failing one marked, a caret under the column.
    const frame = (res.body.excerpt as string).split('\n');
    expect(frame[0]).toBe("  1 | import { defineAgent } from 'hangar';");
    expect(frame[1]).toBe("> 2 | export default defineAgent({ run: async () => 'x' ;");
    expect(frame[2]).toBe(`    | ${' '.repeat(res.body.column - 1)}^`);
    // Other routes of the agent say the same; an agent that never existed is still a 404.
    expect((await server.request('/api/v1/broken/health')).status).toBe(503);
    expect((await invoke('nobody')).status).toBe(404);

    await server.write('agents/broken.ts', agentSource(`{ run: async () => 'fixed' }`));
    await eventually(async () => (await invoke('broken')).status === 200);
  });

  it.each([
    [
      'endpoint',
      'endpoints/quote.ts',
      "import { defineEndpoint } from 'hangar';\nexport default defineEndpoint({ handler: async () => 1 ;\n",
      '/api/v1/endpoints/quote',
    ],
    [
      'plugin',
      'plugins/double.ts',
      "import { definePlugin } from 'hangar';\nexport default definePlugin({ load: () => 1 ;\n",
      '/api/v1/plugins/double/predict',
    ],
    [
      'ingestor',
      'ingestors/notes.ts',
      "import { defineIngestor } from 'hangar';\nexport default defineIngestor({ collection: 'n' ;\n",
      '/api/v1/ingestion/notes/run',
    ],
  ])('an %s drop-in that fails to load answers 503 with where it failed too', async (kind, file, source, route) => {
    server = await startTestServer({ files: { [file]: source } });
    const res = await server.request(route, { method: 'POST', json: {} });
    expect(res.status).toBe(503);
    expect(res.body).toMatchObject({ file, line: 2, error: expect.stringMatching(/Expected/), excerpt: expect.stringContaining('> 2 |') });
    expect(res.body.detail).toMatch(new RegExp(`^${kind} "\\w+" failed to load: `));
  });

  it('/health is degraded and names each failing drop-in with its error, and healthy again once fixed', async () => {
    server = await startTestServer({ files: { 'agents/ok.ts': agentSource(`{ run: async () => 'ok' }`), 'agents/broken.ts': BROKEN } });
    const health = await server.request('/health');
    expect(health.status).toBe(200);
    expect(health.body.status).toBe('degraded');
    expect(health.body.agents).toEqual({ ok: { status: 'healthy' } });
    expect(health.body.errors).toEqual([
      {
        kind: 'agent',
        name: 'broken',
        file: 'agents/broken.ts',
        line: 2,
        column: expect.any(Number),
        error: expect.stringMatching(/Expected/),
      },
    ]);
    await server.write('agents/broken.ts', agentSource(`{ run: async () => 'fixed' }`));
    await eventually(async () => (await server.request('/health')).body.status === 'healthy');
    expect((await server.request('/health')).body.errors).toEqual([]);
  });

  it('the terminal prints one line per reload and one per failure with the code frame', async () => {
    server = await startTestServer({ files: { 'agents/echo.ts': agentSource(`{ run: async () => 'one' }`) } });
    expect(server.logs.filter((l) => l.includes('reloaded'))).toEqual([]);
    await server.write('agents/echo.ts', agentSource(`{ run: async () => 'two' }`));
    const reloaded = await eventually(() => server.logs.find((l) => l.includes('reloaded agents/echo.ts')));
    expect(reloaded).toMatch(/ info {2}reloaded agents\/echo\.ts in \d+ ms$/);

    await server.write('agents/echo.ts', BROKEN);
    const failed = await eventually(() => server.logs.find((l) => l.includes('drop-in error in agents/echo.ts')));
    const lines = failed.split('\n');
    expect(lines[0]).toMatch(/ error drop-in error in agents\/echo\.ts:2:\d+: Expected /);
    expect(lines.slice(1, 3)).toEqual([
      "  1 | import { defineAgent } from 'hangar';",
      "> 2 | export default defineAgent({ run: async () => 'x' ;",
    ]);
    expect(lines[3]).toMatch(/^ {4}\| +\^$/);
    expect(server.logs.filter((l) => l.includes('reloaded agents/echo.ts'))).toHaveLength(1);
    // Fixing it is a reload too: the person sees the save that made it work again.
    await server.write('agents/echo.ts', agentSource(`{ run: async () => 'three' }`));
    await eventually(() => server.logs.filter((l) => l.includes('reloaded agents/echo.ts')).length === 2);
  });

  it("a run error points at the line of the user's file that threw, without build suffixes or Hangar frames", async () => {
    const crash = [
      "import { defineAgent } from 'hangar';",
      'function check(query: string): never {',
      '  throw new Error(`cannot answer ${query}`);',
      '}',
      'export default defineAgent({ run: async ({ query }) => check(query) });',
      '',
    ].join('\n');
    server = await startTestServer({ files: { 'agents/crash.ts': crash } });
    const res = await invoke('crash');
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({
      detail: "agent 'crash' failed at node 'agent': cannot answer hi",
      error: 'cannot answer hi',
      file: 'agents/crash.ts',
      line: 3,
      column: 9,
    });
    const stack = res.body.stack as string[];
    expect(stack[0]).toBe('at check (agents/crash.ts:3:9)');
    expect(stack[1]).toMatch(/^at .*\(agents\/crash\.ts:5:\d+\)$/);
    for (const frame of stack) {
      expect(frame).toContain('agents/crash.ts:');
      expect(frame).not.toMatch(/\?v=|hangar-dropin|chunk-|core\/|node:internal/);
    }
    const logged = server.logs.find((l) => l.includes("agent crash failed at node 'agent': cannot answer hi"))!;
    expect(logged).toContain('\n    at check (agents/crash.ts:3:9)');

    // An endpoint handler that throws answers the same way.
    await server.write(
      'endpoints/fail.ts',
      "import { defineEndpoint } from 'hangar';\nexport default defineEndpoint({\n  handler: async () => {\n    throw new Error('no stock');\n  },\n});\n",
    );
    const failed = await eventually(async () => {
      const r = await server.request('/api/v1/endpoints/fail', { method: 'POST', json: {} });
      return r.status === 500 && r;
    });
    expect(failed.body).toMatchObject({ error: 'no stock', file: 'endpoints/fail.ts', line: 4, column: 11 });
    expect(failed.body.stack[0]).toMatch(/\(endpoints\/fail\.ts:4:11\)$/);

    // HANGAR_DEBUG=1 asks for Hangar's own frames too.
    process.env.HANGAR_DEBUG = '1';
    const debug = await invoke('crash');
    expect(debug.body.stack[0]).toBe('at check (agents/crash.ts:3:9)');
    expect((debug.body.stack as string[]).some((f) => !f.includes('agents/crash.ts'))).toBe(true);
  });
});
