import { readFile } from 'node:fs/promises';
import path from 'node:path';
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
  // Siblings on one host: a call that waits, and one that spins past its deadline and is stopped.
  'agents/pair.ts': agentSource(
    `{ timeout_ms: 30_000, run: async (input, ctx) => {
      if (input.query === 'spin') { while (true) {} }
      if (input.query === 'wait') { writeFileSync(ctx.workspace + '/pair-waiting.txt', 'yes'); await new Promise((r) => setTimeout(r, 60_000)); }
      return 'pair: ' + input.query;
    } }`,
    "import { writeFileSync } from 'node:fs';",
  ),
  'agents/spinner.ts': agentSource(`{ timeout_ms: 30_000, run: () => { while (true) {} } }`),
  'agents/trusted.ts': agentSource(
    `{ isolation: 'inline', run: () => ({ response: isMainThread ? 'main' : 'host' }) }`,
    "import { isMainThread } from 'node:worker_threads';",
  ),
};

describe('supervised agent hosts', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false, agents: { timeoutMs: 1_000, watchdogMs: 60_000 } } });
    await hostsReady(server, 6);
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

  it('a call sharing a host with one that is stopped fails saying so; the next run answers', { timeout: 60_000 }, async () => {
    const waiting = invoke('pair', { query: 'wait' });
    await eventually(() => readFile(path.join(server.root, 'pair-waiting.txt'), 'utf8').catch(() => undefined));
    const spun = await invoke('pair', { query: 'spin', timeout_ms: 300 });
    expect(spun.status).toBe(504);
    const sibling = await waiting;
    expect(sibling.status).toBe(500);
    expect(sibling.body).toMatchObject({
      code: 'HANGAR_AGENT_HOST_RESTARTED',
      detail: "agent 'pair' was stopped: its host was restarted (a run of agent 'pair' ignored its cancellation and was stopped)",
    });
    expect((await invoke('pair', { query: 'hello' })).body.response).toBe('pair: hello');
    const host = (await server.request('/api/v1/status')).body.hosts.find((h: { agent: string }) => h.agent === 'pair');
    expect(host).toMatchObject({ restarts: 1, running: 0 });
  });

  it('six tasks stuck in a synchronous loop, cancelled, free their slots: a new task completes', { timeout: 60_000 }, async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await server.request('/api/v1/spinner/invoke/async', { method: 'POST', json: { query: `spin ${i}` } });
      expect(res.status).toBe(202);
      ids.push(res.body.task_id ?? res.body.id);
    }
    await eventually(async () => (await server.request(`/api/v1/tasks/${ids[3]}`)).body.status === 'working');
    for (const id of ids) {
      const res = await server.request(`/api/v1/tasks/${id}/cancel`, { method: 'POST' });
      expect(res.body.task?.status ?? res.body.status).toBe('canceled');
    }
    const res = await server.request('/api/v1/quick/invoke/async', { method: 'POST', json: { query: 'freed' } });
    const id = res.body.task_id ?? res.body.id;
    const done = await eventually(async () => {
      const task = (await server.request(`/api/v1/tasks/${id}`)).body;
      return task.status === 'completed' || task.status === 'failed' ? task : undefined;
    }, 20_000);
    expect(done).toMatchObject({ status: 'completed', result: { response: 'quick: freed' } });
    // The loop is gone with its thread, not left spinning: the host is stopped and answers again.
    await eventually(async () => {
      const host = (await server.request('/api/v1/status')).body.hosts.find((h: { agent: string }) => h.agent === 'spinner');
      return host?.running === 0 && host.restarts > 0;
    });
  });
});

describe('the watchdog', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      files: {
        'agents/blocker.ts': agentSource(
          `{ run: (input) => { if (input.query === 'block') { while (true) {} } return 'fine: ' + input.query; } }`,
        ),
      },
      // A deadline far away: what stops the blocked host here is its silence, not the run's deadline.
      settings: { watch: false, agents: { timeoutMs: 60_000, watchdogMs: 1_000 } },
    });
    await hostsReady(server, 1);
  }, 60_000);
  afterAll(() => server.stop());

  it('a host whose event loop is blocked past agents.watchdogMs is restarted; its call fails saying why; the next run answers', {
    timeout: 60_000,
  }, async () => {
    const res = await server.request('/api/v1/blocker/invoke', { method: 'POST', json: { query: 'block' } });
    expect(res.status).toBe(500);
    expect(res.body).toMatchObject({
      code: 'HANGAR_AGENT_UNRESPONSIVE',
      detail: "agent 'blocker' stopped answering: its host's event loop was blocked for more than 1000 ms, so the host was restarted",
    });
    const next = await server.request('/api/v1/blocker/invoke', { method: 'POST', json: { query: 'again' } });
    expect(next.body.response).toBe('fine: again');
    const host = (await server.request('/api/v1/status')).body.hosts.find((h: { agent: string }) => h.agent === 'blocker');
    expect(host).toMatchObject({ restarts: 1, last_restart: { reason: 'unresponsive' } });
    expect((await server.request('/metrics')).text).toContain(
      'dropin_host_restarts_total{kind="agent",name="blocker",reason="unresponsive"} 1',
    );
  });
});
