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

  it('a top level that is merely slow but finishes in time loads normally', { timeout: 60_000 }, async () => {
    const slow = `import { defineAgent } from 'hangar';\nconst until = Date.now() + 50;\nwhile (Date.now() < until) {}\nexport default defineAgent({ run: async () => 'slow but loaded' });\n`;
    server = await startTestServer({ files: { 'agents/slow.ts': slow }, settings: { watch: false, dropins: { loadTimeoutMs: 5_000 } } });
    expect((await server.request('/api/v1/slow/invoke', { method: 'POST', json: { query: 'q' } })).body.response).toBe('slow but loaded');
  });

  it('a bad dropins.loadTimeoutMs is refused at start with the setting named', async () => {
    await expect(startTestServer({ settings: { dropins: { loadTimeoutMs: -5 } } })).rejects.toThrow(/loadTimeoutMs/);
  });
});
