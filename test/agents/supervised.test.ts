import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, hostsReady, startTestServer, type TestServer } from '../support/server.js';

/**
 * Supervised agent hosts (#17): drop-ins that loop, allocate without bound or never return run in
 * their own worker threads, so the server keeps answering while they misbehave.
 */
const files = {
  'agents/quick.ts': agentSource(`{ run: async (input, ctx) => { ctx.step('looked'); return { response: 'quick: ' + input.query }; } }`),
  'agents/spin.ts': agentSource(`{ run: () => { while (true) {} } }`),
  'agents/hog.ts': agentSource(
    `{ max_heap_mb: 64, timeout_ms: 60_000, run: () => { const keep: string[][] = []; for (;;) keep.push(new Array(1e5).fill('x'.repeat(8))); } }`,
  ),
  'agents/where.ts': agentSource(
    `{ run: () => ({ response: isMainThread ? 'main' : 'host' }) }`,
    "import { isMainThread } from 'node:worker_threads';",
  ),
  'agents/trusted.ts': agentSource(
    `{ isolation: 'inline', run: () => ({ response: isMainThread ? 'main' : 'host' }) }`,
    "import { isMainThread } from 'node:worker_threads';",
  ),
};

describe('supervised agent hosts', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false, agents: { timeoutMs: 1_000, watchdogMs: 60_000 } } });
    await hostsReady(server, 4);
  }, 60_000);
  afterAll(() => server.stop());

  const invoke = (agent: string, json: Record<string, unknown> = { query: 'q' }) =>
    server.request(`/api/v1/${agent}/invoke`, { method: 'POST', json });

  it("runs an agent's function in its host thread, and an inline agent on the server's", async () => {
    expect((await invoke('where')).body.response).toBe('host');
    expect((await invoke('trusted')).body.response).toBe('main');
    const quick = await invoke('quick', { query: 'hi' });
    expect(quick.body).toMatchObject({ response: 'quick: hi', steps_taken: ['looked'] });
  });

  it('a synchronous loop in run() ends at the deadline while /health answers; the next run answers', { timeout: 30_000 }, async () => {
    const spinning = invoke('spin');
    await new Promise((r) => setTimeout(r, 200));
    const health = await server.request('/health');
    expect(health.status).toBe(200);
    const res = await spinning;
    expect(res.status).toBe(504);
    expect(res.body).toMatchObject({ code: 'HANGAR_AGENT_TIMEOUT', detail: "agent 'spin' did not finish within 1000 ms" });
    expect((await invoke('quick', { query: 'after' })).body.response).toBe('quick: after');
    // The stuck host ignored the abort, so it was stopped (within a short grace) and is counted.
    const host = await eventually(async () =>
      (await server.request('/api/v1/status')).body.hosts.find(
        (h: { agent: string; restarts: number }) => h.agent === 'spin' && h.restarts,
      ),
    );
    expect(host).toMatchObject({ restarts: 1, running: 0, last_restart: { reason: 'stopped' } });
    expect((await server.request('/metrics')).text).toContain('dropin_host_restarts_total{kind="agent",name="spin",reason="stopped"} 1');
  });

  it('an unbounded allocation fails with out of memory, is counted, and other agents keep answering', { timeout: 60_000 }, async () => {
    const res = await invoke('hog');
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({ code: 'HANGAR_AGENT_OUT_OF_MEMORY', detail: 'out of memory: agent hog exceeded 64 MB' });
    expect((await invoke('quick', { query: 'still' })).body.response).toBe('quick: still');
    const metrics = (await server.request('/metrics')).text;
    expect(metrics).toContain('dropin_host_restarts_total{kind="agent",name="hog",reason="out_of_memory"} 1');
    const status = await server.request('/api/v1/status');
    expect(status.body.hosts.find((h: { agent: string }) => h.agent === 'hog')).toMatchObject({ out_of_memory: 1, heap_mb: 64 });
    await eventually(async () => (await invoke('where')).body.response === 'host');
  });
});
