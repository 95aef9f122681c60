import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, hostsReady, startTestServer, type TestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';

/**
 * Run deadlines (#17): agents that never answer — one ignoring its signal, one that honours it —
 * are real drop-ins; what they saw is reported through a file of the workspace, since their
 * functions run in their own host thread (a global of this process would not see it).
 */
const files = {
  'agents/stuck.ts': agentSource(`{ description: 'Never answers and ignores its signal', run: () => new Promise(() => {}) }`),
  'agents/listener.ts': agentSource(
    `{
    description: 'Waits until its signal aborts, and says why it did',
    run: (input, ctx) => new Promise((_, reject) => {
      ctx.signal.addEventListener('abort', () => {
        writeFileSync(ctx.workspace + '/deadline-reason.txt', String(ctx.signal.reason?.message ?? ctx.signal.reason));
        reject(new Error('stopped'));
      });
    }),
  }`,
    "import { writeFileSync } from 'node:fs';",
  ),
  'agents/patient.ts': agentSource(`{ timeout_ms: 200, run: () => new Promise(() => {}) }`),
  'agents/roomy.ts': agentSource(
    `{ timeout_ms: 5000, run: (input) => new Promise((resolve) => setTimeout(() => resolve('late but fine'), 600)) }`,
  ),
  'agents/quick.ts': agentSource(`{ run: async (input) => ({ response: 'quick: ' + input.query }) }`),
  'agents/slow-talker.ts': agentSource(`{
    graph: {
      nodes: {
        first: () => ({ response: 'first step done' }),
        hang: () => new Promise(() => {}),
      },
      edges: [{ from: 'first', to: 'hang' }],
      entry: 'first',
    },
  }`),
};

describe('run deadlines', () => {
  let server: TestServer;
  beforeAll(async () => {
    // A short workspace default, so the default and the cap are both observable.
    server = await startTestServer({ files, settings: { watch: false, agents: { timeoutMs: 400 } } });
    // Deadlines of a few hundred ms are about the agents, not about their hosts starting (which
    // happens in the background after readiness): wait until every host is running.
    await hostsReady(server, 6);
  }, 60_000);
  afterAll(() => server.stop());

  const invoke = (agent: string, json: Record<string, unknown>) => server.request(`/api/v1/${agent}/invoke`, { method: 'POST', json });

  it('an /invoke past its deadline answers 504 {detail} even though the agent ignores its signal', { timeout: 30_000 }, async () => {
    const res = await invoke('stuck', { query: 'q', timeout_ms: 250 });
    expect(res.status).toBe(504);
    expect(res.body).toMatchObject({ detail: "agent 'stuck' did not finish within 250 ms", code: 'HANGAR_AGENT_TIMEOUT' });
    // The server goes on serving other runs.
    expect((await invoke('quick', { query: 'after' })).body.response).toBe('quick: after');
  });

  it("at the deadline the run's signal aborts with the reason", { timeout: 30_000 }, async () => {
    const res = await invoke('listener', { query: 'q', timeout_ms: 200 });
    expect(res.status).toBe(504);
    const reason = await eventually(() => readFile(path.join(server.root, 'deadline-reason.txt'), 'utf8').catch(() => undefined));
    expect(reason).toBe("agent 'listener' did not finish within 200 ms");
    // Counted once, as a timeout: the cancelled outcome the agent reached after its signal is not.
    const metrics = (await server.request('/metrics')).text;
    expect(metrics.match(/agent_invocations_total\{agent="listener",[^}]*\} \d+/g)).toEqual([
      'agent_invocations_total{agent="listener",route="invoke",outcome="timeout"} 1',
    ]);
  });

  it("the agent's timeout_ms is its default; agents.timeoutMs is the default of the others", { timeout: 30_000 }, async () => {
    expect((await invoke('patient', { query: 'q' })).body.detail).toBe("agent 'patient' did not finish within 200 ms");
    expect((await invoke('stuck', { query: 'q' })).body.detail).toBe("agent 'stuck' did not finish within 400 ms");
    const roomy = await invoke('roomy', { query: 'q' });
    expect(roomy.status).toBe(200);
    expect(roomy.body.response).toBe('late but fine');
  });

  it('a request may shorten a deadline, and lengthen it only up to the setting (capped, not refused)', { timeout: 30_000 }, async () => {
    expect((await invoke('stuck', { query: 'q', timeout_ms: 60_000 })).body.detail).toBe("agent 'stuck' did not finish within 400 ms");
    // An agent whose own deadline is longer than the setting may be given up to its own.
    expect((await invoke('roomy', { query: 'q', timeout_ms: 60_000 })).status).toBe(200);
    expect((await invoke('roomy', { query: 'q', timeout_ms: 100 })).body.detail).toBe("agent 'roomy' did not finish within 100 ms");
  });

  it('/openapi.json documents timeout_ms and the 504 on invoke and chat', async () => {
    const { body } = await server.request('/openapi.json');
    // One path for every agent (#16).
    for (const route of ['/api/v1/{agent}/invoke', '/api/v1/{agent}/chat']) {
      const post = body.paths[route].post;
      expect(Object.keys(post.responses)).toContain('504');
      expect(JSON.stringify(post.requestBody)).toContain('timeout_ms');
    }
  });

  it('a bad timeout_ms is a 422 naming the field', async () => {
    for (const timeout_ms of [-1, 0, 1.5, 'soon', 86_400_001]) {
      const res = await invoke('quick', { query: 'q', timeout_ms });
      expect(res.status).toBe(422);
      expect(res.body.detail).toMatch(/timeout_ms/);
    }
  });

  it('a stream past its deadline ends with an error frame carrying the 504, then [DONE]', { timeout: 30_000 }, async () => {
    const read = await readSse(`${server.url}/api/v1/slow-talker/invoke/stream`, { method: 'POST', json: { query: 'q', timeout_ms: 300 } });
    expect(read.status).toBe(200);
    expect(read.done).toBe(true);
    expect(read.frames.map((f) => f.data.event)).toEqual(['start', 'step', 'error']);
    expect(read.frames.at(-1)!.data).toMatchObject({
      event: 'error',
      status: 504,
      detail: "agent 'slow-talker' did not finish within 300 ms",
      response: 'first step done',
    });
  });

  it('a chat past its deadline answers 504 and stores no half conversation', { timeout: 30_000 }, async () => {
    const res = await server.request('/api/v1/stuck/chat', {
      method: 'POST',
      json: { content: 'hi', thread_id: 'deadline-chat', timeout_ms: 200 },
    });
    expect(res.status).toBe(504);
    expect(res.body.detail).toBe("agent 'stuck' did not finish within 200 ms");
    const history = await server.request('/api/v1/stuck/threads/deadline-chat/messages');
    expect(history.status).toBe(200);
    expect(history.body.messages).toEqual([]);
  });

  it('tasks past their deadline end failed with the reason and free their slots', { timeout: 60_000 }, async () => {
    const ids: string[] = [];
    // More than the four slots: every one must end by its deadline, the queued ones included.
    for (let i = 0; i < 6; i++) {
      const res = await server.request('/api/v1/stuck/invoke/async', { method: 'POST', json: { query: `hang ${i}`, timeout_ms: 300 } });
      expect(res.status).toBe(202);
      ids.push(res.body.task_id ?? res.body.id);
    }
    for (const id of ids) {
      const task = await eventually(async () => {
        const body = (await server.request(`/api/v1/tasks/${id}`)).body;
        return body.status === 'failed' || body.status === 'completed' ? body : undefined;
      }, 20_000);
      // Its own deadline, or, when a sibling on the same host thread ignored its cancellation first and
      // the thread was stopped, that restart (a spare thread takes over at once, so a queued task may
      // start on a thread that is stopped before its own deadline): failed either way, never held.
      expect(task.status).toBe('failed');
      expect(task.error).toMatch(
        /^agent 'stuck' (did not finish within 300 ms|was stopped: its host was restarted \(.*ignored its cancellation)/,
      );
    }
    const res = await server.request('/api/v1/quick/invoke/async', { method: 'POST', json: { query: 'next' } });
    const id = res.body.task_id ?? res.body.id;
    const done = await eventually(async () => {
      const body = (await server.request(`/api/v1/tasks/${id}`)).body;
      return body.status === 'completed' || body.status === 'failed' ? body : undefined;
    }, 20_000);
    expect(done).toMatchObject({ status: 'completed', result: { response: 'quick: next' } });
  });
});

describe('a definition with a bad timeout_ms', () => {
  it('is a load error naming the field, not a crash', { timeout: 30_000 }, async () => {
    const server = await startTestServer({
      settings: { watch: false },
      files: { 'agents/odd.ts': agentSource(`{ timeout_ms: 'soon', run: async () => 'x' }`) },
    });
    try {
      const res = await server.request('/api/v1/odd/invoke', { method: 'POST', json: { query: 'q' } });
      expect(res.status).toBe(503);
      expect(JSON.stringify(res.body)).toMatch(/timeout_ms/);
    } finally {
      await server.stop();
    }
  });
});

describe('a studio run past its deadline', () => {
  it("ends error with the reason and a run_error event, the agent's own deadline applying", { timeout: 30_000 }, async () => {
    const server = await startTestServer({ settings: { watch: false }, files: { 'agents/patient.ts': files['agents/patient.ts'] } });
    try {
      const read = await readSse(`${server.url}/studio/agents/patient/runs/stream`, { method: 'POST', json: { query: 'q' } });
      expect(read.status).toBe(200);
      const types = read.frames.map((f) => f.data.type);
      expect(types.slice(-2)).toEqual(['run_error', 'done']);
      expect(read.frames.at(-2)!.data.error).toBe("agent 'patient' did not finish within 200 ms");
      expect(read.frames.at(-1)!.data.status).toBe('error');
    } finally {
      await server.stop();
    }
  });
});
