import { afterEach, describe, expect, it } from 'vitest';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';

/**
 * Load with a time limit (#17): a drop-in whose top-level code never finishes is interrupted and
 * reported; it never holds the server. Real files, a real server, a real synchronous loop.
 */
let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const LOOPING = `import { defineAgent } from 'hangar';\nlet n = 0;\nwhile (true) { n++; }\nexport default defineAgent({ run: async () => 'never' });\n`;
const MESSAGE = 'top-level code did not finish in 300 ms';

describe('a drop-in whose top level never finishes', () => {
  it('saved while running: reported in /api/v1/status and the log, the last good version keeps serving', { timeout: 60_000 }, async () => {
    server = await startTestServer({
      files: { 'agents/spinner.ts': agentSource(`{ run: async () => 'good version' }`) },
      settings: { dropins: { loadTimeoutMs: 300 } },
    });
    const live = server;
    await live.write('agents/spinner.ts', LOOPING);
    const status = await eventually(async () => {
      const body = (await live.request('/api/v1/status')).body;
      return body.errors?.length ? body : undefined;
    }, 30_000);
    expect(status.errors).toEqual([
      expect.objectContaining({ kind: 'agent', entry: 'agents/spinner.ts', file: 'agents/spinner.ts', message: MESSAGE }),
    ]);
    expect(live.logs.some((line) => line.includes(`drop-in error in agents/spinner.ts: ${MESSAGE}`))).toBe(true);

    const res = await live.request('/api/v1/spinner/invoke', { method: 'POST', json: { query: 'q' } });
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('good version');
    expect((await live.request('/readiness')).status).toBe(200);

    // Fixing the file loads it, as with any other load error.
    await live.write('agents/spinner.ts', agentSource(`{ run: async () => 'fixed' }`));
    await eventually(
      async () => (await live.request('/api/v1/spinner/invoke', { method: 'POST', json: { query: 'q' } })).body.response === 'fixed',
    );
    expect((await live.request('/api/v1/status')).body.errors).toEqual([]);
  });

  it('present at start-up: the server starts, /readiness answers, the entry is reported and the others load', {
    timeout: 60_000,
  }, async () => {
    server = await startTestServer({
      files: { 'agents/spinner.ts': LOOPING, 'agents/fine.ts': agentSource(`{ run: async () => 'fine' }`) },
      settings: { watch: false, dropins: { loadTimeoutMs: 300 } },
    });
    await eventually(async () => (await server!.request('/readiness')).status === 200, 30_000);
    const status = (await server.request('/api/v1/status')).body;
    expect(status.errors).toEqual([expect.objectContaining({ kind: 'agent', file: 'agents/spinner.ts', message: MESSAGE })]);
    const spinner = await server.request('/api/v1/spinner/invoke', { method: 'POST', json: { query: 'q' } });
    expect(spinner.status).toBe(503);
    expect(spinner.body.detail).toContain(MESSAGE);
    expect((await server.request('/api/v1/fine/invoke', { method: 'POST', json: { query: 'q' } })).body.response).toBe('fine');
  });

  it('at start-up among many entries (one shared watchdog): only the looping one is blamed, those after it load, a slow one beside it is not cut short', {
    timeout: 60_000,
  }, async () => {
    // 240 ms of top level in a 300 ms limit, right after 40 quick entries: a watchdog shared from
    // the first entry would cut it off; each entry still gets its whole limit.
    const slow = `import { defineAgent } from 'hangar';\nconst until = Date.now() + 240;\nwhile (Date.now() < until) {}\nexport default defineAgent({ run: async () => 'slow' });\n`;
    const files: Record<string, string> = { 'agents/m-spinner.ts': LOOPING, 'agents/n-slow.ts': slow };
    for (let i = 0; i < 40; i++) files[`agents/a-${String(i).padStart(2, '0')}.ts`] = agentSource(`{ run: async () => 'a${i}' }`);
    for (let i = 0; i < 5; i++) files[`agents/z-${i}.ts`] = agentSource(`{ run: async () => 'z${i}' }`);
    server = await startTestServer({ files, settings: { watch: false, dropins: { loadTimeoutMs: 300 } } });
    await eventually(async () => (await server!.request('/readiness')).status === 200, 30_000);
    const status = (await server.request('/api/v1/status')).body;
    expect(status.errors).toEqual([expect.objectContaining({ kind: 'agent', file: 'agents/m-spinner.ts', message: MESSAGE })]);
    const agents = Object.keys((await server.request('/api/v1/agents')).body.agents);
    expect(agents).toHaveLength(46);
    expect(agents).toEqual(expect.arrayContaining(['a-00', 'a-39', 'n-slow', 'z-0', 'z-4']));
    expect((await server.request('/api/v1/z-4/invoke', { method: 'POST', json: { query: 'q' } })).body.response).toBe('z4');
  });

  it('a top level that is merely slow but finishes in time loads normally', { timeout: 60_000 }, async () => {
    const slow = `import { defineAgent } from 'hangar';\nconst until = Date.now() + 50;\nwhile (Date.now() < until) {}\nexport default defineAgent({ run: async () => 'slow but loaded' });\n`;
    server = await startTestServer({ files: { 'agents/slow.ts': slow }, settings: { watch: false, dropins: { loadTimeoutMs: 5_000 } } });
    expect((await server.request('/api/v1/slow/invoke', { method: 'POST', json: { query: 'q' } })).body.response).toBe('slow but loaded');
  });

  it('a bad dropins.loadTimeoutMs is refused at start with the setting named', async () => {
    await expect(startTestServer({ settings: { dropins: { loadTimeoutMs: -5 } } })).rejects.toThrow(/loadTimeoutMs/);
  });
});
