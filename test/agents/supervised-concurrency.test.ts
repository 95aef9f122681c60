import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, hostsReady, startTestServer, type TestServer } from '../support/server.js';

/**
 * A supervised agent's host runs its calls at the same time (#27): they mostly wait on the model,
 * so one call must not wait for another to finish. piscina runs a task that can be aborted alone
 * on its thread unless told otherwise, and every host call can be aborted: calls of one agent ran
 * one after another, and the no-op /invoke benchmark measured the queue.
 */
const files = {
  // Each call arrives, then waits until all three have: only calls running together can finish.
  'agents/meet.ts': agentSource(
    `{ timeout_ms: 20_000, run: async (input, ctx) => {
      const dir = ctx.workspace + '/meet';
      mkdirSync(dir, { recursive: true });
      writeFileSync(dir + '/' + input.query, '');
      while (readdirSync(dir).length < 3) await new Promise((r) => setTimeout(r, 5));
      return 'met: ' + input.query;
    } }`,
    "import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';",
  ),
};

describe('a supervised host runs calls concurrently', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false } });
    await hostsReady(server, 1);
  }, 60_000);
  afterAll(() => server.stop());

  it('three calls of one agent that each wait for the others all answer', { timeout: 40_000 }, async () => {
    const calls = ['a', 'b', 'c'].map((query) => server.request('/api/v1/meet/invoke', { method: 'POST', json: { query } }));
    const answers = await Promise.all(calls);
    expect(answers.map((res) => [res.status, res.body.response])).toEqual([
      [200, 'met: a'],
      [200, 'met: b'],
      [200, 'met: c'],
    ]);
  });
});
