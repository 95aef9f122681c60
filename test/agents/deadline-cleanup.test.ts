/**
 * What a deadline leaves behind (#30): a run that finished in time never sees its signal abort
 * later (the deadline's timer is cleared), and a run that ignored its deadline and fails afterwards
 * is no unhandled rejection (nobody waits for it, and the server goes on). The agents run in their
 * host threads (#17), so what they saw is reported through files of the workspace.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, hostsReady, startTestServer, type TestServer } from '../support/server.js';

const files = {
  // Answers at once, then looks at its signal again well past its deadline.
  'agents/prompt.ts': agentSource(
    `{
    timeout_ms: 150,
    run: (input, ctx) => {
      setTimeout(() => appendFileSync(ctx.workspace + '/aborted-after-answer.txt', String(ctx.signal.aborted) + '\\n'), 450);
      return 'in time';
    },
  }`,
    "import { appendFileSync } from 'node:fs';",
  ),
  // Ignores its signal and fails after its deadline has answered the caller.
  'agents/late-failer.ts': agentSource(
    `{
    timeout_ms: 150,
    run: (input, ctx) => new Promise((_, reject) => setTimeout(() => { writeFileSync(ctx.workspace + '/late-failure.txt', 'thrown'); reject(new Error('late failure')); }, 400)),
  }`,
    "import { writeFileSync } from 'node:fs';",
  ),
  'agents/quick.ts': agentSource(`{ run: async (input) => 'quick: ' + input.query }`),
};

describe('deadline clean-up', () => {
  let server: TestServer;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    server = await startTestServer({ files, settings: { watch: false } });
    // The 150 ms deadlines are about the agents, not about their host threads starting.
    await hostsReady(server, 3);
  }, 60_000);
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    await server.stop();
  });

  const invoke = (agent: string) => server.request(`/api/v1/${agent}/invoke`, { method: 'POST', json: { query: 'q' } });

  it('a run that answered in time never has its signal aborted afterwards', { timeout: 30_000 }, async () => {
    const res = await invoke('prompt');
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('in time');
    const seen = await eventually(() => readFile(path.join(server.root, 'aborted-after-answer.txt'), 'utf8').catch(() => undefined));
    expect(seen).toBe('false\n');
  });

  it('a run failing after its deadline answered 504 is no unhandled rejection, and the server goes on', { timeout: 30_000 }, async () => {
    const res = await invoke('late-failer');
    expect(res.status).toBe(504);
    await eventually(() => readFile(path.join(server.root, 'late-failure.txt'), 'utf8').catch(() => undefined));
    // Give the rejection a turn of the event loop to surface if nobody handles it.
    await new Promise((r) => setTimeout(r, 100));
    expect(unhandled.map(String)).toEqual([]);
    expect((await invoke('quick')).body.response).toBe('quick: q');
    // Nor did the host thread die of it: the late failure was its call's, not the thread's.
    const host = (await server.request('/api/v1/status')).body.hosts.find((h: { agent: string }) => h.agent === 'late-failer');
    expect(host).toMatchObject({ restarts: 0 });
  });
});
