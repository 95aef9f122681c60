/**
 * The deadline's own rules (core/agents/deadline.ts, #30) where an agent sees them directly: agents
 * that run inline share the run's signal, so what the deadline does to it after the answer, and what
 * a caller's cancel does to it before the deadline, are observable (in a host thread the call's own
 * signal ends with the call). What each agent saw is written to a workspace file.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';

const files = {
  // Answers at once, then looks at its signal again well past its 150 ms deadline.
  'agents/prompt.ts': agentSource(
    `{
    isolation: 'inline',
    timeout_ms: 150,
    run: (input, ctx) => {
      setTimeout(() => appendFileSync(ctx.workspace + '/late-look-' + input.query + '.txt', String(ctx.signal.aborted) + '\\n'), 450);
      return 'in time';
    },
  }`,
    "import { appendFileSync } from 'node:fs';",
  ),
  // Waits for its signal, and writes down why it was stopped.
  'agents/listener.ts': agentSource(
    `{
    isolation: 'inline',
    run: (input, ctx) => new Promise((_, reject) => {
      appendFileSync(ctx.workspace + '/started-' + input.query + '.txt', 'yes');
      ctx.signal.addEventListener('abort', () => {
        const reason = ctx.signal.reason;
        appendFileSync(ctx.workspace + '/stopped-' + input.query + '.txt', String(reason?.message ?? reason));
        reject(new Error('stopped'));
      });
    }),
  }`,
    "import { appendFileSync } from 'node:fs';",
  ),
};

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ files, settings: { watch: false } });
});
afterAll(() => server?.stop());

const read = (name: string) => readFile(path.join(server.root, name), 'utf8').catch(() => undefined);

describe("a run's deadline, seen from an inline agent", () => {
  it('never aborts the signal of a run that answered in time (the timer is cleared)', { timeout: 30_000 }, async () => {
    const res = await server.request('/api/v1/prompt/invoke', { method: 'POST', json: { query: 'one' } });
    expect([res.status, res.body.response]).toEqual([200, 'in time']);
    expect(await eventually(() => read('late-look-one.txt'))).toBe('false\n');
  });

  it("hands a caller's cancel to the run at once, with the caller's reason, long before the deadline", { timeout: 30_000 }, async () => {
    const submitted = await server.request('/api/v1/listener/invoke/async', { method: 'POST', json: { query: 'c1', timeout_ms: 8000 } });
    expect(submitted.status).toBe(202);
    const id = submitted.body.task_id ?? submitted.body.id;
    await eventually(() => read('started-c1.txt'));
    expect((await server.request(`/api/v1/tasks/${id}/cancel`, { method: 'POST' })).status).toBe(200);
    // Without the caller's signal forwarded, the agent would be stopped only by its deadline.
    const reason = await eventually(() => read('stopped-c1.txt'));
    expect(reason).not.toMatch(/did not finish within/);
    const task = await eventually(async () => {
      const body = (await server.request(`/api/v1/tasks/${id}`)).body;
      return ['cancelled', 'canceled', 'failed', 'completed'].includes(body.status) ? body : undefined;
    });
    expect(task.status).toMatch(/^cancel/);
  });

  it('stops a run at its deadline with the reason when nobody cancels it', { timeout: 30_000 }, async () => {
    const res = await server.request('/api/v1/listener/invoke', { method: 'POST', json: { query: 'd1', timeout_ms: 200 } });
    expect(res.status).toBe(504);
    expect(await eventually(() => read('stopped-d1.txt'))).toBe("agent 'listener' did not finish within 200 ms");
  });
});
