/**
 * What a deadline leaves behind (#30): a run that finished in time never sees its signal abort
 * later (the deadline's timer is cleared), and a run that ignored its deadline and fails afterwards
 * is no unhandled rejection (nobody waits for it, and the server goes on).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';

type Seen = { __abortedAfterAnswer?: boolean[]; __lateFailureThrown?: boolean };
const seen = globalThis as Seen;

const files = {
  // Answers at once, then looks at its signal again well past its deadline.
  'agents/prompt.ts': agentSource(`{
    timeout_ms: 150,
    run: (input, ctx) => {
      setTimeout(() => ((globalThis as any).__abortedAfterAnswer ??= []).push(ctx.signal.aborted), 450);
      return 'in time';
    },
  }`),
  // Ignores its signal and fails after its deadline has answered the caller.
  'agents/late-failer.ts': agentSource(`{
    timeout_ms: 150,
    run: () => new Promise((_, reject) => setTimeout(() => { (globalThis as any).__lateFailureThrown = true; reject(new Error('late failure')); }, 400)),
  }`),
  'agents/quick.ts': agentSource(`{ run: async (input) => 'quick: ' + input.query }`),
};

describe('deadline clean-up', () => {
  let server: TestServer;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);
  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    server = await startTestServer({ files, settings: { watch: false } });
  });
  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    await server.stop();
  });

  const invoke = (agent: string) => server.request(`/api/v1/${agent}/invoke`, { method: 'POST', json: { query: 'q' } });

  it('a run that answered in time never has its signal aborted afterwards', { timeout: 30_000 }, async () => {
    const res = await invoke('prompt');
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('in time');
    await eventually(() => seen.__abortedAfterAnswer?.length);
    expect(seen.__abortedAfterAnswer).toEqual([false]);
  });

  it('a run failing after its deadline answered 504 is no unhandled rejection, and the server goes on', { timeout: 30_000 }, async () => {
    const res = await invoke('late-failer');
    expect(res.status).toBe(504);
    await eventually(() => seen.__lateFailureThrown);
    // Give the rejection a turn of the event loop to surface if nobody handles it.
    await new Promise((r) => setTimeout(r, 100));
    expect(unhandled.map(String)).toEqual([]);
    expect((await invoke('quick')).body.response).toBe('quick: q');
  });
});
