import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';

const ALICE = { authorization: 'Bearer tok-alice' };
const BOB = { authorization: 'Bearer tok-bob' };

const files = {
  'agents/echo.ts': agentSource(`{
    description: 'echoes',
    prompts: { versions: { v1: 'first prompt', v2: 'second prompt' } },
    run: async (input, ctx) => {
      ctx.step('read');
      ctx.tool('lookup', { q: input.query });
      return {
        response: 'echo: ' + input.query,
        output: { prompt: ctx.prompt, history: input.history.length, temperature: input.temperature },
        suggestions: ['more'],
        citations: [{ source: 'a.md', snippet: 'from a' }],
        context: [{ content: 'passage one' }, 'passage two'],
        metadata: { custom: true },
      };
    },
  }`),
  'agents/boom.ts': agentSource(`{ run: async () => { throw new Error('exploded on purpose'); } }`),
  // Waits until its run is cancelled, then leaves a mark in the workspace.
  'agents/waiter.ts': agentSource(
    `{ run: (input, ctx) => new Promise((_resolve, reject) => { ctx.signal.addEventListener('abort', () => { writeFileSync(join(ctx.workspace, 'waiter-' + input.query), 'aborted'); reject(ctx.signal.reason); }); writeFileSync(join(ctx.workspace, 'waiter-started-' + input.query), ''); }) }`,
    `import { writeFileSync } from 'node:fs';\nimport { join } from 'node:path';`,
  ),
  'agents/approver.ts': agentSource(`{
    graph: {
      nodes: {
        draft: () => ({ response: 'draft ready' }),
        first_ok: { type: 'approval', message: 'Send it?' },
        send: (s) => ({ response: 'sent by ' + String(s.metadata.approver) }),
        second_ok: { type: 'approval', message: 'Archive it?' },
        archive: (s) => ({ response: s.response + ' and archived' }),
      },
      edges: [
        { from: 'draft', to: 'first_ok' }, { from: 'first_ok', to: 'send' },
        { from: 'send', to: 'second_ok' }, { from: 'second_ok', to: 'archive' },
      ],
      entry: 'draft',
    },
  }`),
  'agents/talker.ts': agentSource(`{
    requiresModel: true,
    run: async (input, ctx) => ctx.model.chat([...input.history, { role: 'user', content: input.query }]),
  }`),
};

describe('execution routes against the real server', () => {
  let server: TestServer;
  let fake: FakeOpenAI;

  beforeAll(async () => {
    fake = await startFakeOpenAI();
    server = await startTestServer({
      files,
      settings: {
        auth: { tokens: { alice: 'tok-alice', bob: 'tok-bob' } },
        model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 },
        streams: { retain: 3, ttlSeconds: 60 },
        watch: false,
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });

  const post = (path: string, json: unknown, headers: Record<string, string> = ALICE) =>
    server.request(path, { method: 'POST', json, headers });
  const get = (path: string, headers: Record<string, string> = ALICE) => server.request(path, { headers });

  describe('POST /invoke', () => {
    it('answers an AgentInvokeResponse with every field', async () => {
      const { status, body } = await post('/api/v1/echo/invoke', { query: 'hi', temperature: 0.5 });
      expect(status).toBe(200);
      expect(Object.keys(body).sort()).toEqual(
        [
          'agent_type',
          'citations',
          'context',
          'duration_ms',
          'metadata',
          'output',
          'response',
          'steps_taken',
          'suggestions',
          'thread_id',
        ].sort(),
      );
      expect(body).toMatchObject({
        response: 'echo: hi',
        agent_type: 'echo',
        suggestions: ['more'],
        citations: [{ source: 'a.md' }],
        steps_taken: ['read'],
        output: { prompt: 'first prompt', temperature: 0.5 },
        metadata: { prompt_version: 'v1', custom: true },
      });
      expect(typeof body.thread_id).toBe('string');
      expect(typeof body.duration_ms).toBe('number');
    });

    it('selects a prompt version, and names the known ones for an unknown version (404)', async () => {
      expect((await post('/api/v1/echo/invoke', { query: 'x', prompt_version: 'v2' })).body.output.prompt).toBe('second prompt');
      const { status, body } = await post('/api/v1/echo/invoke', { query: 'x', prompt_version: 'v9' });
      expect(status).toBe(404);
      expect(body).toEqual({
        detail: "prompt version 'v9' not found for agent 'echo'; known versions: v1, v2",
        code: 'HANGAR_AGENT_PROMPT_NOT_FOUND',
      });
    });

    it('validates the body: 422 naming the field', async () => {
      const hot = await post('/api/v1/echo/invoke', { query: 'x', temperature: 2.5 });
      expect(hot.status).toBe(422);
      expect(hot.body.detail).toMatch(/body\.temperature/);
      const missing = await post('/api/v1/echo/invoke', { user_id: 'u' });
      expect(missing.status).toBe(422);
      expect(missing.body.detail).toMatch(/body\.query/);
    });

    it('answers 404 for an unknown agent and 500 with the message for an agent that throws, and keeps serving', async () => {
      expect((await post('/api/v1/nope/invoke', { query: 'x' })).status).toBe(404);
      const boom = await post('/api/v1/boom/invoke', { query: 'x' });
      expect(boom.status).toBe(500);
      expect(boom.body.detail).toMatch(/exploded on purpose/);
      expect(boom.body.code).toBe('HANGAR_AGENT_FAILED');
      expect(server.logs.some((l) => l.includes('exploded on purpose'))).toBe(true);
      expect((await post('/api/v1/echo/invoke', { query: 'still up' })).status).toBe(200);
    });

    it('cancels the run when the client goes away before the answer', async () => {
      const controller = new AbortController();
      const request = fetch(`${server.url}/api/v1/waiter/invoke`, {
        method: 'POST',
        headers: { ...ALICE, 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'gone' }),
        signal: controller.signal,
      }).catch(() => undefined);
      await eventually(() => existsSync(path.join(server.root, 'waiter-started-gone')));
      controller.abort();
      await request;
      const mark = path.join(server.root, 'waiter-gone');
      await eventually(() => existsSync(mark));
      expect(readFileSync(mark, 'utf8')).toBe('aborted');
      const counted = await eventually(
        async () => /agent_invocations_total\{agent="waiter",[^}]*\} 1/.exec((await get('/metrics')).text)?.[0],
      );
      expect(counted).toBe('agent_invocations_total{agent="waiter",route="invoke",outcome="cancelled"} 1');
    });

    it('passes temperature and max_tokens overrides to the model', async () => {
      fake.enqueue({ content: 'model says hi' });
      const { body } = await post('/api/v1/talker/invoke', { query: 'hello', temperature: 1.5, max_tokens: 7 });
      expect(body.response).toBe('model says hi');
      expect(fake.requests.at(-1)!.body).toMatchObject({ model: 'fake-1', temperature: 1.5, max_tokens: 7 });
    });
  });

  describe('POST /invoke/stream and replay', () => {
    it('streams frames with response and steps_taken, ending in [DONE], with X-Agent and X-Stream-Id', async () => {
      fake.enqueue({ chunks: ['Hel', 'lo'] });
      const read = await readSse(`${server.url}/api/v1/talker/invoke/stream`, { method: 'POST', json: { query: 'q' }, headers: ALICE });
      expect(read.status).toBe(200);
      expect(read.headers.get('content-type')).toMatch(/text\/event-stream/);
      expect(read.headers.get('cache-control')).toBe('no-cache');
      expect(read.headers.get('x-agent')).toBe('talker');
      expect(read.headers.get('x-stream-id')).toBeTruthy();
      expect(read.done).toBe(true);
      for (const frame of read.frames) {
        expect(typeof frame.data.response).toBe('string');
        expect(Array.isArray(frame.data.steps_taken)).toBe(true);
      }
      expect(read.frames.map((f) => Number(f.id))).toEqual(read.frames.map((_, i) => i + 1));
      expect(read.frames.filter((f) => f.data.event === 'token').map((f) => f.data.response)).toEqual(['Hel', 'Hello']);
      expect(read.frames.at(-1)!.data).toMatchObject({ event: 'complete', response: 'Hello', agent_type: 'talker' });
    });

    it('replays only frames after since / Last-Event-ID, without re-running the agent', async () => {
      const live = await readSse(`${server.url}/api/v1/echo/invoke/stream`, { method: 'POST', json: { query: 'r' }, headers: ALICE });
      const id = live.headers.get('x-stream-id')!;
      const before = fake.requests.length;
      const all = await readSse(`${server.url}/api/v1/echo/invoke/stream/${id}`, { headers: ALICE });
      expect(all.frames.map((f) => f.data)).toEqual(live.frames.map((f) => f.data));
      const after1 = await readSse(`${server.url}/api/v1/echo/invoke/stream/${id}?since=1`, { headers: ALICE });
      expect(after1.frames.map((f) => f.id)).toEqual(live.frames.slice(1).map((f) => f.id));
      const byHeader = await readSse(`${server.url}/api/v1/echo/invoke/stream/${id}`, { headers: { ...ALICE, 'last-event-id': '2' } });
      expect(byHeader.frames.map((f) => f.id)).toEqual(live.frames.slice(2).map((f) => f.id));
      expect(byHeader.done).toBe(true);
      expect(fake.requests.length).toBe(before);
    });

    it('answers the same 404 for an unknown id, another agent and another principal', async () => {
      const live = await readSse(`${server.url}/api/v1/echo/invoke/stream`, { method: 'POST', json: { query: 's' }, headers: ALICE });
      const id = live.headers.get('x-stream-id')!;
      const unknown = await get(`/api/v1/echo/invoke/stream/00000000-0000-0000-0000-000000000000`);
      const otherAgent = await get(`/api/v1/talker/invoke/stream/${id}`);
      const otherPrincipal = await get(`/api/v1/echo/invoke/stream/${id}`, BOB);
      for (const r of [unknown, otherAgent, otherPrincipal]) expect(r.status).toBe(404);
      // Identical apart from the id the caller typed.
      expect(otherAgent.body).toEqual({ detail: `stream '${id}' not found`, code: 'HANGAR_AGENT_STREAM_NOT_FOUND' });
      expect(otherPrincipal.body).toEqual(otherAgent.body);
    });

    it('evicts the oldest finished streams beyond the retained count (404 afterwards)', async () => {
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) {
        const r = await readSse(`${server.url}/api/v1/echo/invoke/stream`, { method: 'POST', json: { query: `e${i}` }, headers: ALICE });
        ids.push(r.headers.get('x-stream-id')!);
      }
      expect((await get(`/api/v1/echo/invoke/stream/${ids[0]}`)).status).toBe(404);
      expect((await readSse(`${server.url}/api/v1/echo/invoke/stream/${ids[3]}`, { headers: ALICE })).done).toBe(true);
    });

    it('keeps running when the client disconnects mid-stream, and the frames stay replayable', async () => {
      fake.enqueue({ chunks: ['a ', 'b ', 'c ', 'd'], chunkDelayMs: 30 });
      const cut = await readSse(`${server.url}/api/v1/talker/invoke/stream`, {
        method: 'POST',
        json: { query: 'long' },
        headers: ALICE,
        stopAfter: (f) => f.data.event === 'token',
      });
      expect(cut.done).toBe(false);
      const id = cut.headers.get('x-stream-id')!;
      const replay = await eventually(async () => {
        const r = await readSse(`${server.url}/api/v1/talker/invoke/stream/${id}`, { headers: ALICE });
        return r.frames.at(-1)?.data.event === 'complete' ? r : undefined;
      });
      expect(replay.frames.at(-1)!.data.response).toBe('a b c d');
    });

    it('rejects a bad body with a JSON 422 before any stream starts', async () => {
      const r = await readSse(`${server.url}/api/v1/echo/invoke/stream`, {
        method: 'POST',
        json: { query: 'x', temperature: -1 },
        headers: ALICE,
      });
      expect(r.status).toBe(422);
      expect(r.body.detail).toMatch(/body\.temperature/);
    });
  });

  describe('POST /chat', () => {
    it('stores the conversation and loads it as history on the next turn', async () => {
      const first = await post('/api/v1/echo/chat', { content: 'one', thread_id: 'chat-1' });
      expect(first.status).toBe(200);
      expect(first.body).toMatchObject({
        response: 'echo: one',
        thread_id: 'chat-1',
        history_loaded: 0,
        metadata: { prompt_version: 'v1' },
      });
      const second = await post('/api/v1/echo/chat', { content: 'two', thread_id: 'chat-1' });
      expect(second.body.history_loaded).toBe(2);
      const msgs = await get('/api/v1/echo/threads/chat-1/messages');
      expect(msgs.body.messages.map((m: { role: string; content: string }) => `${m.role}:${m.content}`)).toEqual([
        'user:one',
        'assistant:echo: one',
        'user:two',
        'assistant:echo: two',
      ]);
    });

    it('honours include_history, max_history, caller-supplied messages and persist', async () => {
      for (const c of ['a', 'b', 'c']) await post('/api/v1/echo/chat', { content: c, thread_id: 'chat-2' });
      expect(
        (await post('/api/v1/echo/chat', { content: 'x', thread_id: 'chat-2', include_history: false, persist: false })).body
          .history_loaded,
      ).toBe(0);
      expect(
        (await post('/api/v1/echo/chat', { content: 'x', thread_id: 'chat-2', max_history: 2, persist: false })).body.history_loaded,
      ).toBe(2);
      const supplied = await post('/api/v1/echo/chat', {
        content: 'x',
        thread_id: 'chat-2',
        persist: false,
        messages: [{ role: 'user', content: 'from caller' }],
      });
      expect(supplied.body.history_loaded).toBe(1);
      expect((await get('/api/v1/echo/threads/chat-2/messages')).body.total).toBe(6);
      const noThread = await post('/api/v1/echo/chat', { content: 'ephemeral', persist: false });
      expect((await get(`/api/v1/echo/threads/${noThread.body.thread_id}`)).status).toBe(404);
    });

    it('loses no message with 50 concurrent chats on one thread', async () => {
      const replies = await Promise.all(
        Array.from({ length: 50 }, (_, i) => post('/api/v1/echo/chat', { content: `m${i}`, thread_id: 'busy' })),
      );
      expect(replies.every((r) => r.status === 200)).toBe(true);
      const { body } = await get('/api/v1/echo/threads/busy/messages?limit=1000');
      expect(body.total).toBe(100);
      const contents = new Set(body.messages.map((m: { content: string }) => m.content));
      for (let i = 0; i < 50; i++) {
        expect(contents.has(`m${i}`)).toBe(true);
        expect(contents.has(`echo: m${i}`)).toBe(true);
      }
    });

    it('uses the model with history and validates the body', async () => {
      fake.enqueue({ content: 'first reply' }, { content: 'second reply' });
      await post('/api/v1/talker/chat', { content: 'hello', thread_id: 'mchat' });
      await post('/api/v1/talker/chat', { content: 'again', thread_id: 'mchat' });
      expect(fake.requests.at(-1)!.body.messages.map((m) => m.content)).toEqual(['hello', 'first reply', 'again']);
      const bad = await post('/api/v1/echo/chat', { content: 'x', max_history: -1 });
      expect(bad.status).toBe(422);
      expect(bad.body.detail).toMatch(/body\.max_history/);
    });
  });

  describe('human in the loop', () => {
    it('suspends with 202, lists pending, and approves a chain of two approvals to completion', async () => {
      const first = await post('/api/v1/approver/invoke', { query: 'mail', thread_id: 'hitl-1' });
      expect(first.status).toBe(202);
      expect(first.body.detail).toMatchObject({ status: 'suspended', node_name: 'first_ok', message: 'Send it?' });
      expect(first.body.code).toBe('HANGAR_AGENT_SUSPENDED');
      const firstId = first.body.detail.approval_id;

      const pending = await get('/api/v1/approver/threads/hitl-1/pending');
      expect(pending.body).toMatchObject({ thread_id: 'hitl-1', count: 1 });
      expect(pending.body.pending[0]).toMatchObject({ id: firstId, node_name: 'first_ok', state_snapshot: { response: 'draft ready' } });

      const second = await post('/api/v1/approver/threads/hitl-1/approve', { approval_id: firstId, context: { approver: 'ada' } });
      expect(second.status).toBe(202);
      expect(second.body.detail).toMatchObject({ status: 'suspended', node_name: 'second_ok' });
      expect(second.body.detail.approval_id).not.toBe(firstId);
      expect((await get('/api/v1/approver/threads/hitl-1/pending')).body.pending.map((p: { id: string }) => p.id)).toEqual([
        second.body.detail.approval_id,
      ]);

      // The first id is gone: approving it again is an unknown id.
      expect((await post('/api/v1/approver/threads/hitl-1/approve', { approval_id: firstId })).status).toBe(404);

      const done = await post('/api/v1/approver/threads/hitl-1/approve', { approval_id: second.body.detail.approval_id });
      expect(done.status).toBe(200);
      expect(done.body).toMatchObject({ response: 'sent by ada and archived', thread_id: 'hitl-1', agent_type: 'approver' });
      expect(done.body.steps_taken).toEqual(['draft', 'first_ok', 'send', 'second_ok', 'archive']);
      expect((await get('/api/v1/approver/threads/hitl-1/pending')).body.count).toBe(0);
    });

    it('rejects (discarding the run) and answers 404 for unknown ids', async () => {
      const first = await post('/api/v1/approver/invoke', { query: 'mail', thread_id: 'hitl-2' });
      const id = first.body.detail.approval_id;
      const rejected = await post('/api/v1/approver/threads/hitl-2/reject', { approval_id: id, reason: 'not today' });
      expect(rejected.body).toEqual({ status: 'rejected', approval_id: id, reason: 'not today' });
      expect((await get('/api/v1/approver/threads/hitl-2/pending')).body.count).toBe(0);
      expect((await post('/api/v1/approver/threads/hitl-2/approve', { approval_id: id })).status).toBe(404);
      expect((await post('/api/v1/approver/threads/hitl-2/reject', { approval_id: 'nope' })).body).toEqual({
        detail: "no pending approval 'nope' for thread 'hitl-2' of agent 'approver'",
        code: 'HANGAR_AGENT_APPROVAL_NOT_FOUND',
      });
      expect((await post('/api/v1/approver/threads/hitl-2/approve', {})).status).toBe(422);
    });

    it('treats approved: false as a rejection', async () => {
      const first = await post('/api/v1/approver/invoke', { query: 'mail', thread_id: 'hitl-4' });
      const id = first.body.detail.approval_id;
      const declined = await post('/api/v1/approver/threads/hitl-4/approve', { approval_id: id, approved: false });
      expect(declined.body).toEqual({ status: 'rejected', approval_id: id, reason: null });
      expect((await get('/api/v1/approver/threads/hitl-4/pending')).body.count).toBe(0);
    });

    it('a suspended chat keeps the question and stores the answer when the approvals complete it', async () => {
      const first = await post('/api/v1/approver/chat', { content: 'mail bob', thread_id: 'hitl-chat' });
      expect(first.status).toBe(202);
      expect((await get('/api/v1/approver/threads/hitl-chat/messages')).body.messages.map((m: { content: string }) => m.content)).toEqual([
        'mail bob',
      ]);
      const second = await post('/api/v1/approver/threads/hitl-chat/approve', {
        approval_id: first.body.detail.approval_id,
        context: { approver: 'cy' },
      });
      await post('/api/v1/approver/threads/hitl-chat/approve', { approval_id: second.body.detail.approval_id });
      const msgs = (await get('/api/v1/approver/threads/hitl-chat/messages')).body.messages;
      expect(msgs.map((m: { role: string; content: string }) => `${m.role}:${m.content}`)).toEqual([
        'user:mail bob',
        'assistant:sent by cy and archived',
      ]);
    });

    it('keeps per-step checkpoints of a named thread, visible and editable through the studio routes', async () => {
      const first = await post('/api/v1/approver/invoke', { query: 'mail', thread_id: 'hitl-5' });
      const history = (await get('/studio/agents/approver/threads/hitl-5/history')).body;
      expect(history.map((c: { step: number }) => c.step)).toEqual([2, 1, 0]);
      expect(history[0].metadata).toMatchObject({ source: 'interrupt', next: 'first_ok' });
      const edited = (await post('/studio/agents/approver/threads/hitl-5/state', { updates: { response: 'edited draft' } })).body;
      expect(edited).toMatchObject({ state: { response: 'edited draft' }, updated_keys: ['response'] });
      const newest = (await get('/studio/agents/approver/threads/hitl-5/history')).body[0];
      expect(newest).toMatchObject({ id: edited.checkpoint_id, step: 3, parent_id: history[0].id });
      expect((await get('/studio/agents/approver/threads/hitl-5/state')).body.checkpoint_id).toBe(edited.checkpoint_id);
      expect((await get('/studio/agents/approver/threads/never-ran/state')).status).toBe(404);
      // The HTTP approval of the same suspension is still pending and independent.
      expect((await get('/api/v1/approver/threads/hitl-5/pending')).body.pending[0].id).toBe(first.body.detail.approval_id);
    });

    it('does not resolve an approval through another thread', async () => {
      const first = await post('/api/v1/approver/invoke', { query: 'mail', thread_id: 'hitl-3' });
      expect((await post('/api/v1/approver/threads/other/approve', { approval_id: first.body.detail.approval_id })).status).toBe(404);
      expect((await get('/api/v1/approver/threads/hitl-3/pending')).body.count).toBe(1);
    });
  });

  describe('POST /optimize/invoke', () => {
    it('returns retrieval context, tool calls, steps and reasoning, honouring the override and switches', async () => {
      const { status, body } = await post('/api/v1/echo/optimize/invoke', { query: 'opt', system_prompt_override: 'OVERRIDE' });
      expect(status).toBe(200);
      expect(body).toMatchObject({
        response: 'echo: opt',
        retrieval_context: ['passage one', 'passage two'],
        tool_calls: [{ name: 'lookup', args: { q: 'opt' } }],
        steps_taken: ['read'],
        citations: [{ source: 'a.md' }],
        metadata: { system_prompt_overridden: true },
      });
      expect(typeof body.reasoning).toBe('string');
      expect(typeof body.duration_ms).toBe('number');
      const lean = await post('/api/v1/echo/optimize/invoke', { query: 'opt', include_retrieval_context: false, include_steps: false });
      expect(lean.body).toMatchObject({ retrieval_context: [], steps_taken: [] });
      expect((await post('/api/v1/echo/optimize/invoke', {})).status).toBe(422);
    });
  });

  // Each route is documented once for every agent, `{agent}` listing the agents' names (#16).
  it('documents the execution routes in /openapi.json', async () => {
    const { body } = await get('/openapi.json');
    for (const p of [
      '/api/v1/{agent}/invoke',
      '/api/v1/{agent}/invoke/stream',
      '/api/v1/{agent}/chat',
      '/api/v1/{agent}/threads/{thread_id}/approve',
    ]) {
      expect(Object.keys(body.paths)).toContain(p);
    }
    expect(Object.keys(body.paths)).not.toContain('/api/v1/echo/invoke');
    const invoke = body.paths['/api/v1/{agent}/invoke'].post;
    expect(invoke.requestBody.content['application/json'].schema.properties.query).toBeDefined();
    expect(invoke.responses['200'].content['application/json'].schema.properties.response).toBeDefined();
  });
});

describe('without a model configured', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files: { 'agents/talker.ts': files['agents/talker.ts'] }, settings: { watch: false } });
  });
  afterAll(() => server?.stop());

  it('an agent that needs one answers {detail} naming the setting to set', async () => {
    const { status, body } = await server.request('/api/v1/talker/invoke', { method: 'POST', json: { query: 'hi' } });
    expect(status).toBe(503);
    expect(body.detail).toMatch(/HANGAR_MODEL__BASE_URL/);
    expect(body.detail).toMatch(/model\.baseUrl/);
    expect(body.code).toBe('HANGAR_AGENT_MODEL_NOT_CONFIGURED');
  });
});
