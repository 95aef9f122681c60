import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';

/**
 * Agents are real drop-ins, discovered and run by the real runtime. The ones that must be observed
 * from the test (did it run, did it see the abort) report through a global the test reads, since
 * drop-ins run in this process.
 */
const files = {
  'agents/echo.ts': agentSource(`{
    description: 'Echoes the query',
    // Inline (README "Isolation"): the test reaches this agent through a global of its own process.
    isolation: 'inline',
    run: async (input, ctx) => {
      const g = globalThis as any;
      g.__a2aEchoRuns = (g.__a2aEchoRuns ?? 0) + 1;
      ctx.step('echoed');
      return { response: 'echo: ' + input.query, suggestions: ['again'] };
    },
  }`),
  'agents/sleeper.ts': agentSource(`{
    description: 'Works until cancelled',
    // Inline (README "Isolation"): the test reaches this agent through a global of its own process.
    isolation: 'inline',
    run: (input, ctx) => new Promise((_, reject) => {
      const g = globalThis as any;
      g.__a2aSleeperStarted = true;
      ctx.signal.addEventListener('abort', () => {
        g.__a2aSleeperAborted = String(ctx.signal.reason?.message ?? ctx.signal.reason);
        reject(new Error('stopped'));
      });
    }),
  }`),
  'agents/boom.ts': agentSource(`{ run: async () => { throw new Error('exploded on purpose'); } }`),
  'agents/gatekeeper.ts': agentSource(`{
    graph: {
      nodes: {
        draft: () => ({ response: 'drafted' }),
        approve: { type: 'approval', message: 'Publish it?' },
        publish: () => ({ response: 'published' }),
      },
      edges: [{ from: 'draft', to: 'approve' }, { from: 'approve', to: 'publish' }],
      entry: 'draft',
    },
  }`),
};

const g = globalThis as { __a2aEchoRuns?: number; __a2aSleeperStarted?: boolean; __a2aSleeperAborted?: string };

describe('agents on the task board (tasks enabled)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false } });
  });
  afterAll(() => server.stop());

  const a2a = (agent: string, rest = '') => `/api/v1/${agent}/a2a/tasks${rest}`;

  it('POST /invoke/async returns the task id; frames and the AgentInvokeResponse arrive as events and result', async () => {
    const res = await server.request('/api/v1/echo/invoke/async', { method: 'POST', json: { query: 'hello', metadata: { from: 'test' } } });
    expect(res.status).toBe(202);
    expect(res.body).toMatchObject({ kind: 'agent', target: 'echo', status: 'submitted' });
    const id = res.body.id as string;
    expect(res.body.links.events).toBe(`/api/v1/tasks/${id}/events`);

    const stream = await readSse(`${server.url}/api/v1/tasks/${id}/events`);
    expect(stream.done).toBe(true);
    const outputs = stream.frames.filter((f) => f.data.type === 'output').map((f) => f.data.data);
    expect(outputs).toContainEqual({ event: 'step', node: 'agent', response: 'echo: hello', steps_taken: ['echoed'] });
    const last = stream.frames.at(-1)!.data;
    expect(last).toMatchObject({ type: 'status', status: 'completed', result: { response: 'echo: hello', agent_type: 'echo' } });

    const result = await server.request(`/api/v1/tasks/${id}/result`);
    expect(result.body.status).toBe('completed');
    expect(result.body.result).toMatchObject({
      response: 'echo: hello',
      agent_type: 'echo',
      suggestions: ['again'],
      steps_taken: ['echoed'],
      metadata: { prompt_version: 'v1' },
    });
    expect(typeof result.body.result.duration_ms).toBe('number');
  });

  it('/invoke/async validates like /invoke: 422 naming the field, 404 for an unknown agent', async () => {
    const bad = await server.request('/api/v1/echo/invoke/async', { method: 'POST', json: { query: 'x', temperature: 3 } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toMatch(/^body\.temperature: /);
    const missing = await server.request('/api/v1/echo/invoke/async', { method: 'POST', json: {} });
    expect(missing.body.detail).toMatch(/^body\.query: /);
    const unknown = await server.request('/api/v1/ghost/invoke/async', { method: 'POST', json: { query: 'x' } });
    expect(unknown.status).toBe(404);
  });

  it('an agent that throws ends its task failed with the message', async () => {
    const res = await server.request('/api/v1/boom/invoke/async', { method: 'POST', json: { query: 'x' } });
    const task = await eventually(async () => {
      const t = await server.request(`/api/v1/tasks/${res.body.id}`);
      return t.body.status === 'failed' && t.body;
    });
    // The same message /invoke answers its 500 with.
    const sync = await server.request('/api/v1/boom/invoke', { method: 'POST', json: { query: 'x' } });
    expect(sync.status).toBe(500);
    expect(task.error).toBe(sync.body.detail);
    expect(task.error).toMatch(/exploded on purpose$/);
  });

  it('accepts the protocol message form and both simplified forms', async () => {
    const forms = [
      { message: { role: 'user', parts: [{ type: 'text', text: 'from parts' }] } },
      {
        message: {
          role: 'user',
          parts: [
            { kind: 'text', text: 'from kind' },
            { kind: 'data', data: { x: 1 } },
          ],
        },
      },
      { message: { content: 'from content' } },
      { message: { text: 'from text' } },
    ];
    for (const body of forms) {
      const res = await server.request(a2a('echo', '?wait=true'), { method: 'POST', json: body });
      expect(res.status).toBe(200);
      const text = (body.message as any).content ?? (body.message as any).text ?? (body.message as any).parts[0].text;
      expect(res.body).toMatchObject({ status: 'completed', result: `echo: ${text}`, message: 'completed' });
      expect(typeof res.body.task_id).toBe('string');
    }
    const queued = await server.request(a2a('echo'), { method: 'POST', json: { message: { content: 'later' } } });
    expect(queued.body).toMatchObject({ status: 'submitted', result: '' });
    const status = await eventually(async () => {
      const s = await server.request(a2a('echo', `/${queued.body.task_id}`));
      return s.body.status === 'completed' && s.body;
    });
    expect(status).toMatchObject({ task_id: queued.body.task_id, status: 'completed', message: 'completed', result: 'echo: later' });
  });

  it('a message with no readable text is 422 and the agent never runs', async () => {
    const before = g.__a2aEchoRuns ?? 0;
    for (const body of [
      { message: { role: 'user', parts: [] } },
      { message: { role: 'user', parts: [{ type: 'text', text: '   ' }] } },
      { message: { role: 'user', parts: [{ kind: 'file', file: { uri: 'file:///x' } }] } },
      { message: { content: '' } },
      { message: { role: 'user' } },
    ]) {
      const res = await server.request(a2a('echo'), { method: 'POST', json: body });
      expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 422]);
      expect(res.body.detail).toMatch(/^body\.message: no readable text/);
    }
    const noMessage = await server.request(a2a('echo'), { method: 'POST', json: {} });
    expect(noMessage.status).toBe(422);
    expect(noMessage.body.detail).toMatch(/^body\.message/);
    await new Promise((r) => setTimeout(r, 50));
    expect(g.__a2aEchoRuns ?? 0).toBe(before);
  });

  it("another agent's task answers 404 exactly like an unknown id; the shared board is cross-agent", async () => {
    const { body } = await server.request(a2a('echo', '?wait=true'), { method: 'POST', json: { message: { text: 'mine' } } });
    const id = body.task_id as string;
    const unknownStatus = await server.request(a2a('sleeper', '/no-such-task'));
    for (const [method, rest] of [
      ['GET', `/${id}`],
      ['GET', `/${id}/events`],
      ['POST', `/${id}/cancel`],
    ] as const) {
      const res = await server.request(a2a('sleeper', rest), { method });
      expect([rest, res.status, res.body]).toEqual([rest, 404, { detail: `task ${id} not found`, code: 'HANGAR_TASK_NOT_FOUND' }]);
    }
    expect(unknownStatus).toMatchObject({ status: 404, body: { detail: 'task no-such-task not found' } });
    expect((await server.request(a2a('echo', '/no-such-task/events'))).status).toBe(404);
    const board = await server.request(`/api/v1/tasks/${id}`);
    expect(board.body).toMatchObject({ kind: 'agent', target: 'echo', status: 'completed' });
    expect((await server.request(a2a('ghost', `/${id}`))).status).toBe(404);
  });

  it('cancel reaches the running agent through its signal; the stream ends canceled with [DONE]', async () => {
    const { body } = await server.request(a2a('sleeper'), { method: 'POST', json: { message: { text: 'work' } } });
    const id = body.task_id as string;
    await eventually(() => g.__a2aSleeperStarted === true);
    expect((await server.request(a2a('sleeper', `/${id}`))).body.status).toBe('working');

    const following = readSse(`${server.url}${a2a('sleeper', `/${id}/events`)}`);
    await new Promise((r) => setTimeout(r, 50));
    const cancel = await server.request(a2a('sleeper', `/${id}/cancel`), { method: 'POST' });
    expect(cancel).toMatchObject({ status: 200, body: { task_id: id, status: 'canceled', canceled: true } });
    expect(g.__a2aSleeperAborted).toBe('canceled by request');

    const stream = await following;
    expect(stream.done).toBe(true);
    expect(stream.frames.map((f) => f.data.status)).toEqual(['submitted', 'working', 'canceled']);
    expect(stream.frames.map((f) => Number(f.id))).toEqual([1, 2, 3]);

    const again = await server.request(a2a('sleeper', `/${id}/cancel`), { method: 'POST' });
    expect(again.body).toMatchObject({ canceled: false, status: 'canceled', message: 'task already canceled; cancel changed nothing' });
    const status = await server.request(a2a('sleeper', `/${id}`));
    expect(status.body).toMatchObject({ status: 'canceled', message: 'canceled by request', result: '' });
  });

  it('A2A events resume after Last-Event-ID and after since', async () => {
    const { body } = await server.request(a2a('echo', '?wait=true'), { method: 'POST', json: { message: { text: 'resume me' } } });
    const url = `${server.url}${a2a('echo', `/${body.task_id}/events`)}`;
    const all = await readSse(url);
    expect(all.frames.every((f) => f.data.task_id === body.task_id && f.data.sequence === Number(f.id))).toBe(true);
    const total = all.frames.length;
    expect(total).toBeGreaterThanOrEqual(4);
    const tail = await readSse(url, { headers: { 'Last-Event-ID': String(total - 2) } });
    expect(tail.frames.map((f) => Number(f.id))).toEqual([total - 1, total]);
    expect(tail.done).toBe(true);
    const since = await readSse(`${url}?since=${total - 1}`);
    expect(since.frames.map((f) => Number(f.id))).toEqual([total]);
  });

  it('a HITL suspension leaves the task input-required with the suspension body as its result', async () => {
    const { body } = await server.request(a2a('gatekeeper', '?wait=true'), { method: 'POST', json: { message: { text: 'post' } } });
    expect(body.status).toBe('input-required');
    expect(body.result).toBe('Publish it?');
    expect(body.message).toMatch(/^waiting at node 'approve' for approval /);
    const board = await server.request(`/api/v1/tasks/${body.task_id}/result`);
    expect(board.body.result.detail).toMatchObject({ status: 'suspended', node_name: 'approve', message: 'Publish it?' });
  });

  it('the board submits agent tasks too, validating the input as an AgentInvokeRequest', async () => {
    const bad = await server.request('/api/v1/tasks', { method: 'POST', json: { kind: 'agent', target: 'echo', input: { query: 5 } } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail).toMatch(/^body\.input\.query: /);
    const ghost = await server.request('/api/v1/tasks', {
      method: 'POST',
      json: { kind: 'agent', target: 'ghost', input: { query: 'x' } },
    });
    expect(ghost.status).toBe(404);
    const ok = await server.request('/api/v1/tasks', {
      method: 'POST',
      json: { kind: 'agent', target: 'echo', input: { query: 'via board' } },
    });
    expect(ok.status).toBe(202);
    const done = await eventually(async () => {
      const r = await server.request(`/api/v1/tasks/${ok.body.id}/result`);
      return r.status === 200 && r.body;
    });
    expect(done.result.response).toBe('echo: via board');
  });

  it('the card advertises the task-backed A2A capabilities and endpoints', async () => {
    const card = await server.request('/api/v1/echo/card');
    expect(card.body.capabilities).toMatchObject({
      a2a: true,
      stateTransitionHistory: true,
      resumableStreams: true,
      pushNotifications: false,
    });
    expect(card.body.endpoints).toMatchObject({
      a2a_tasks: '/api/v1/echo/a2a/tasks',
      a2a_events: '/api/v1/echo/a2a/tasks/{task_id}/events',
      invoke_async: '/api/v1/echo/invoke/async',
    });
    const discovery = await server.request('/.well-known/agent.json');
    expect(discovery.body.agents.echo.endpoints.a2a_tasks).toBe('/api/v1/echo/a2a/tasks');
  });
});

describe('agent tasks: retention and restart', () => {
  it('A2A events send the truncated marker and the current task when the resume point was evicted', async () => {
    const server = await startTestServer({ files, settings: { watch: false, tasks: { eventsPerTask: 2 } } });
    try {
      const { body } = await server.request('/api/v1/echo/a2a/tasks?wait=true', {
        method: 'POST',
        json: { message: { text: 'short log' } },
      });
      // submitted, working, step frame, completed: only the newest two are kept.
      const stream = await readSse(`${server.url}/api/v1/echo/a2a/tasks/${body.task_id}/events`, { headers: { 'Last-Event-ID': '0' } });
      expect(stream.frames[0]!.data).toEqual({ event: 'truncated', requested_after: 0, first_retained: 3 });
      expect(stream.frames[1]!.data).toMatchObject({ id: body.task_id, status: 'completed' });
      expect(stream.frames.slice(2).map((f) => [f.id, f.data.type])).toEqual([
        ['3', 'output'],
        ['4', 'status'],
      ]);
      expect(stream.done).toBe(true);
    } finally {
      await server.stop();
    }
  });

  it('an agent task running when Hangar stops comes back failed as interrupted; its events stay replayable', async () => {
    const first = await startTestServer({ files, settings: { watch: false } });
    const root = first.root;
    g.__a2aSleeperStarted = false;
    const { body } = await first.request('/api/v1/sleeper/a2a/tasks', { method: 'POST', json: { message: { text: 'long job' } } });
    await eventually(() => g.__a2aSleeperStarted === true);
    await first.close();

    const second = await startTestServer({ root, settings: { watch: false } });
    try {
      const status = await eventually(async () => {
        const res = await second.request(`/api/v1/sleeper/a2a/tasks/${body.task_id}`);
        return res.body.status === 'failed' && res.body;
      });
      expect(status.message).toMatch(/^interrupted: Hangar stopped while the task was working; its work is not idempotent/);
      const stream = await readSse(`${second.url}/api/v1/sleeper/a2a/tasks/${body.task_id}/events`);
      expect(stream.frames.map((f) => [Number(f.id), f.data.status])).toEqual([
        [1, 'submitted'],
        [2, 'working'],
        [3, 'failed'],
      ]);
    } finally {
      await second.stop();
      await rm(root, { recursive: true, force: true });
    }
  });
});

describe('agents without the task subsystem (tasks.enabled = false)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false, tasks: { enabled: false } } });
  });
  afterAll(() => server.stop());

  it('submit still runs the agent and answers with the result', async () => {
    const res = await server.request('/api/v1/echo/a2a/tasks', {
      method: 'POST',
      json: { message: { role: 'user', parts: [{ type: 'text', text: 'sync' }] } },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'completed', result: 'echo: sync' });
    expect(res.body.message).toMatch(/task tracking requires a storage backend/);
    const empty = await server.request('/api/v1/echo/a2a/tasks', { method: 'POST', json: { message: { text: ' ' } } });
    expect(empty.status).toBe(422);
  });

  it('status says tracking needs a storage backend; events and cancel answer 501', async () => {
    const status = await server.request('/api/v1/echo/a2a/tasks/some-id');
    expect(status).toMatchObject({ status: 200, body: { task_id: 'some-id', status: 'unknown' } });
    expect(status.body.message).toMatch(/^task tracking requires a storage backend/);
    const events = await server.request('/api/v1/echo/a2a/tasks/some-id/events');
    expect(events.status).toBe(501);
    expect(events.body.detail).toMatch(/task subsystem is disabled/);
    const cancel = await server.request('/api/v1/echo/a2a/tasks/some-id/cancel', { method: 'POST' });
    expect(cancel.status).toBe(501);
    const invokeAsync = await server.request('/api/v1/echo/invoke/async', { method: 'POST', json: { query: 'x' } });
    expect(invokeAsync.status).toBe(501);
    // Unknown agents are still 404, before anything about tasks.
    expect((await server.request('/api/v1/ghost/a2a/tasks/x/events')).status).toBe(404);
  });

  it('the card turns the task-backed capabilities off and omits the task endpoints', async () => {
    const card = await server.request('/api/v1/echo/card');
    expect(card.body.capabilities).toMatchObject({
      a2a: true,
      stateTransitionHistory: false,
      pushNotifications: false,
      resumableStreams: false,
    });
    expect(card.body.endpoints).not.toHaveProperty('a2a_tasks');
    expect(card.body.endpoints).not.toHaveProperty('a2a_events');
    expect(card.body.endpoints).not.toHaveProperty('invoke_async');
    const discovery = await server.request('/.well-known/agent.json');
    expect(discovery.body.agents.echo.endpoints).not.toHaveProperty('a2a_tasks');
  });
});
