import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCheckpointer, StoreCheckpointer } from '../../core/agents/checkpointer.js';
import { Engine, NodeError, type RunRequest } from '../../core/agents/engine.js';
import type { RunEvent } from '../../core/agents/events.js';
import { graphView } from '../../core/agents/graph.js';
import { type Agent, normaliseAgent } from '../../core/agents/kind.js';
import { createModelProvider, UnconfiguredProvider } from '../../core/agents/model.js';
import type { AgentDefinition, AgentInput } from '../../core/agents/types.js';
import { HangarError } from '../../core/kernel/errors.js';
import { defineAgent, END } from '../../core/sdk.js';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';

const agent = (name: string, def: AgentDefinition): Agent => normaliseAgent(defineAgent(def), name);

const input = (query: string, extra: Partial<AgentInput> = {}): AgentInput => ({
  query,
  user_id: 'u1',
  context: {},
  thread_id: 't1',
  metadata: {},
  prompt_version: 'v1',
  temperature: null,
  max_tokens: null,
  history: [],
  ...extra,
});

function harness(agents: Agent[], provider = new UnconfiguredProvider() as ReturnType<typeof createModelProvider>) {
  const byName = new Map(agents.map((a) => [a.name, a]));
  const engine = new Engine({ resolveAgent: (n) => byName.get(n), provider, workspace: '/tmp' });
  const checkpointer = new MemoryCheckpointer();
  const run = async (name: string, req: Partial<RunRequest> & { query?: string } = {}) => {
    const events: RunEvent[] = [];
    const outcome = await engine.run({
      agent: byName.get(name)!,
      input: input(req.query ?? 'hello', req.input),
      prompt: '',
      checkpointer,
      onEvent: (e) => events.push(e),
      ...req,
    });
    return { outcome, events, types: events.map((e) => e.type) };
  };
  return { engine, checkpointer, run };
}

const echo = agent('echo', {
  run: async (i, ctx) => {
    ctx.step('echoed');
    return { response: `echo: ${i.query}`, suggestions: ['again'] };
  },
});

const router = agent('router', {
  graph: {
    nodes: {
      classify: (state) => ({ metadata: { ...state.metadata, kind: /\d/.test(state.messages.at(-1)!.content) ? 'math' : 'chat' } }),
      math: () => ({ response: 'a number' }),
      chat: () => ({ response: 'words' }),
    },
    edges: [
      { from: 'classify', to: 'math', when: (s) => s.metadata.kind === 'math', label: 'kind == math' },
      { from: 'classify', to: 'chat' },
      { from: 'math', to: END },
      { from: 'chat', to: END },
    ],
    entry: 'classify',
  },
});

const approvalFlow = agent('approver', {
  graph: {
    nodes: {
      draft: () => ({ response: 'drafted' }),
      approve_send: { type: 'approval', message: 'Send the email?' },
      send: (state) => ({ response: `sent to ${String(state.metadata.recipient ?? 'nobody')}` }),
      approve_archive: { type: 'approval', message: (s) => `Archive after "${s.response}"?` },
      archive: (state) => ({ response: `${state.response}; archived` }),
    },
    edges: [
      { from: 'draft', to: 'approve_send' },
      { from: 'approve_send', to: 'send' },
      { from: 'send', to: 'approve_archive' },
      { from: 'approve_archive', to: 'archive' },
    ],
    entry: 'draft',
  },
});

describe('graph engine', () => {
  it('runs a function agent as start → agent → end, with events and a checkpoint per step', async () => {
    const { run, checkpointer } = harness([echo]);
    const { outcome, types, events } = await run('echo', { query: 'hi' });
    expect(outcome.status).toBe('completed');
    expect(outcome.result).toMatchObject({ response: 'echo: hi', suggestions: ['again'], steps_taken: ['echoed'] });
    expect(types).toEqual(['run_start', 'node_start', 'node_end', 'run_complete']);
    expect(events[1]).toMatchObject({ type: 'node_start', node: 'agent', run_id: outcome.run_id, thread_id: 't1' });
    expect(events[2]).toMatchObject({ type: 'node_end', node: 'agent', output: { response: 'echo: hi' } });

    const history = await checkpointer.list('echo', 't1');
    expect(history.map((c) => c.step)).toEqual([1, 0]);
    expect(history[0]!.parent_id).toBe(history[1]!.id);
    expect(history[1]!.metadata).toMatchObject({ source: 'input', next: 'agent' });
    expect(history[0]!.state.messages).toEqual([{ role: 'user', content: 'hi' }]);

    const view = graphView(echo.definition);
    expect(view.nodes.map((n) => n.type)).toEqual(['start', 'agent', 'end']);
    expect(view.edges.map((e) => `${e.source}->${e.target}`)).toEqual(['__start__->agent', 'agent->__end__']);
  });

  it('follows the first edge whose condition holds and records node names as steps', async () => {
    const { run } = harness([router]);
    expect((await run('router', { query: 'what is 2+2' })).outcome.result).toMatchObject({
      response: 'a number',
      steps_taken: ['classify', 'math'],
    });
    expect((await run('router', { query: 'hello there' })).outcome.result).toMatchObject({
      response: 'words',
      steps_taken: ['classify', 'chat'],
    });
    const view = graphView(router.definition);
    expect(view.edges.find((e) => e.target === 'math')!.condition).toBe('kind == math');
    expect(view.end_points.sort()).toEqual(['chat', 'math']);
  });

  it('suspends at an approval node, resumes with the context merged, and suspends again at the next one', async () => {
    const { run } = harness([approvalFlow]);
    const first = await run('approver');
    expect(first.outcome.status).toBe('interrupted');
    expect(first.outcome.paused).toMatchObject({ node: 'approve_send', message: 'Send the email?' });
    expect(first.outcome.checkpoint.metadata.interrupt).toMatchObject({ node: 'approve_send', resume_values: [] });
    expect(first.events.at(-1)).toMatchObject({ type: 'breakpoint_hit', reason: 'interrupt', node: 'approve_send' });

    const second = await run('approver', {
      resume: { checkpoint: first.outcome.checkpoint, action: 'approve', value: { recipient: 'ada@example.com' } },
    });
    expect(second.outcome.status).toBe('interrupted');
    expect(second.outcome.state.metadata).toMatchObject({ recipient: 'ada@example.com', hitl_approved: true });
    expect(second.outcome.state.response).toBe('sent to ada@example.com');
    expect(second.outcome.paused!.message).toBe('Archive after "sent to ada@example.com"?');

    const third = await run('approver', { resume: { checkpoint: second.outcome.checkpoint, action: 'approve', value: {} } });
    expect(third.outcome.status).toBe('completed');
    expect(third.outcome.result.response).toBe('sent to ada@example.com; archived');
    expect(third.outcome.result.steps_taken).toEqual(['draft', 'approve_send', 'send', 'approve_archive', 'archive']);
  });

  it('discards the run on reject without running the node again', async () => {
    const { run } = harness([approvalFlow]);
    const first = await run('approver');
    const rejected = await run('approver', { resume: { checkpoint: first.outcome.checkpoint, action: 'reject', reason: 'no' } });
    expect(rejected.outcome.status).toBe('rejected');
    expect(rejected.outcome.state.response).toBe('drafted');
    expect(rejected.outcome.state.metadata).toMatchObject({ hitl_approved: false, hitl_rejection_reason: 'no' });
    expect(rejected.types).toEqual(['run_start', 'run_complete']);
  });

  it('re-runs an interrupted node and hands the n-th interrupt() the n-th resume value', async () => {
    let runs = 0;
    const asker = agent('asker', {
      run: async (_i, ctx) => {
        runs++;
        const a = await ctx.interrupt<{ answer: string }>('first?');
        const b = await ctx.interrupt<string>('second?');
        return `${a.answer}+${b}`;
      },
    });
    const { run } = harness([asker]);
    const one = await run('asker');
    expect(one.outcome.paused!.message).toBe('first?');
    const two = await run('asker', { resume: { checkpoint: one.outcome.checkpoint, action: 'approve', value: { answer: 'A' } } });
    expect(two.outcome.paused!.message).toBe('second?');
    expect(two.outcome.checkpoint.metadata.interrupt!.resume_values).toEqual([{ answer: 'A' }]);
    const three = await run('asker', { resume: { checkpoint: two.outcome.checkpoint, action: 'approve', value: 'B' } });
    expect(three.outcome.result.response).toBe('A+B');
    expect(runs).toBe(3);
  });

  it('pauses before a breakpoint node and continues from that checkpoint', async () => {
    const { run } = harness([router]);
    const paused = await run('router', { query: '42', breakpoints: ['math'] });
    expect(paused.outcome.status).toBe('breakpoint');
    expect(paused.events.at(-1)).toMatchObject({ type: 'breakpoint_hit', node: 'math', reason: 'breakpoint' });
    expect(paused.outcome.state.steps_taken).toEqual(['classify']);
    const resumed = await run('router', { breakpoints: ['math'], resume: { checkpoint: paused.outcome.checkpoint } });
    expect(resumed.outcome.status).toBe('completed');
    expect(resumed.outcome.result.response).toBe('a number');
    expect(resumed.outcome.checkpoint.parent_id).not.toBeNull();
  });

  it('runs another agent as a subgraph node and through ctx.callAgent, with subagent events', async () => {
    const parent = agent('parent', {
      graph: {
        nodes: {
          ask: { type: 'subagent', agent: 'echo', query: (s) => `sub ${s.messages.at(-1)!.content}` },
          twice: async (state, ctx) => ({ response: `${state.response} | ${(await ctx.callAgent('echo', 'again')).response}` }),
        },
        edges: [{ from: 'ask', to: 'twice' }],
        entry: 'ask',
      },
    });
    const { run } = harness([echo, parent]);
    const { outcome, events } = await run('parent', { query: 'x' });
    expect(outcome.result.response).toBe('echo: sub x | echo: again');
    expect(events.filter((e) => e.type.startsWith('subagent')).map((e) => `${e.type}:${(e as { node: string }).node}`)).toEqual([
      'subagent_start:echo',
      'subagent_end:echo',
      'subagent_start:echo',
      'subagent_end:echo',
    ]);
    expect(outcome.state.subagent_results).toMatchObject({ ask: { response: 'echo: sub x' } });
  });

  it('reports planning tools as task_update and keeps them as tool calls', async () => {
    const planner = agent('planner', {
      run: (_i, ctx) => {
        ctx.plan('write_todos', { todos: ['a', 'b'] });
        ctx.tool('search', { q: 'x' });
        return 'planned';
      },
    });
    const { run } = harness([planner]);
    const { outcome, events } = await run('planner');
    expect(events.find((e) => e.type === 'task_update')).toMatchObject({ node: 'planning:write_todos', args: { todos: ['a', 'b'] } });
    expect(outcome.tool_calls).toEqual([
      { name: 'write_todos', args: { todos: ['a', 'b'] } },
      { name: 'search', args: { q: 'x' } },
    ]);
  });

  it('stops cooperatively when the signal aborts', async () => {
    const slow = agent('slow', {
      graph: {
        nodes: {
          one: async (_s, ctx) => {
            await new Promise((r) => setTimeout(r, 50));
            return { response: ctx.signal.aborted ? 'saw abort' : 'one' };
          },
          two: () => ({ response: 'two' }),
        },
        edges: [{ from: 'one', to: 'two' }],
        entry: 'one',
      },
    });
    const { run } = harness([slow]);
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 10);
    const { outcome, events } = await run('slow', { signal: controller.signal });
    expect(outcome.status).toBe('cancelled');
    expect(outcome.state.steps_taken).toEqual(['one']);
    expect(events.at(-1)).toMatchObject({ type: 'run_error', cancelled: true, node: 'two' });
  });

  it('emits run_error and rejects with the node named when a node throws', async () => {
    const broken = agent('broken', {
      graph: {
        nodes: {
          boom: () => {
            throw new Error('kaput');
          },
        },
        edges: [],
        entry: 'boom',
      },
    });
    const { engine, checkpointer } = harness([broken]);
    const events: RunEvent[] = [];
    const err = await engine
      .run({ agent: broken, input: input('x'), prompt: '', checkpointer, onEvent: (e) => events.push(e) })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(NodeError);
    expect((err as NodeError).node).toBe('boom');
    expect(events.at(-1)).toMatchObject({ type: 'run_error', error: 'kaput', node: 'boom' });
  });

  it("a run that keeps no checkpoint makes its outcome's checkpoint when read: an own enumerable key, in place, the same each read", async () => {
    const { engine } = harness([echo]);
    const outcome = await engine.run({ agent: echo, input: input('hi', { thread_id: undefined }), prompt: '' });
    expect(Object.keys(outcome)).toEqual([
      'run_id',
      'thread_id',
      'status',
      'state',
      'result',
      'checkpoint',
      'paused',
      'tool_calls',
      'usage',
      'duration_ms',
    ]);
    const checkpoint = outcome.checkpoint;
    expect(checkpoint).toMatchObject({ thread_id: outcome.thread_id, step: 1, metadata: { run_id: outcome.run_id, source: 'loop' } });
    expect(outcome.checkpoint).toBe(checkpoint);
    expect({ ...outcome }.checkpoint).toBe(checkpoint);
    expect(JSON.parse(JSON.stringify(outcome)).checkpoint.id).toBe(checkpoint.id);
    expect(structuredClone(outcome).checkpoint).toEqual(checkpoint);
  });

  it('fails a cycle that never exits instead of looping forever', async () => {
    const loop = agent('loop', {
      graph: {
        nodes: { a: () => ({}), b: () => ({}) },
        edges: [
          { from: 'a', to: 'b' },
          { from: 'b', to: 'a' },
        ],
        entry: 'a',
      },
    });
    const byName = new Map([['loop', loop]]);
    const engine = new Engine({
      resolveAgent: (n) => byName.get(n),
      provider: new UnconfiguredProvider(),
      workspace: '/tmp',
      maxSteps: 10,
    });
    await expect(engine.run({ agent: loop, input: input('x'), prompt: '' })).rejects.toThrow(/exceeded 10 steps/);
  });
});

describe('engine with a model', () => {
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());

  it('streams tokens as message_chunk events named after the model and passes overrides', async () => {
    const chatty = agent('chatty', {
      config: { model: 'tiny-model' },
      run: async (i, ctx) =>
        ctx.model.chat([
          { role: 'system', content: ctx.prompt },
          { role: 'user', content: i.query },
        ]),
    });
    const provider = createModelProvider({ baseUrl: fake.baseUrl, model: 'default-model', timeoutMs: 5000, retries: 0 });
    const { run } = harness([chatty], provider);
    fake.enqueue({ chunks: ['Hel', 'lo ', 'there'] });
    const { outcome, events } = await run('chatty', { input: input('hi', { temperature: 0.3, max_tokens: 20 }), prompt: 'Be brief.' });
    expect(outcome.result.response).toBe('Hello there');
    const chunks = events.filter((e) => e.type === 'message_chunk');
    expect(chunks.map((c) => (c as { content: string }).content)).toEqual(['Hel', 'lo ', 'there']);
    expect(chunks[0]).toMatchObject({ node: 'tiny-model' });
    const sent = fake.requests.at(-1)!.body;
    expect(sent).toMatchObject({ model: 'tiny-model', temperature: 0.3, max_tokens: 20, stream: true });
    expect(sent.messages[0]).toEqual({ role: 'system', content: 'Be brief.' });
  });

  it('gives a node a model whose methods work destructured and whose name survives a spread of ctx', async () => {
    const detached = agent('detached', {
      config: { model: 'tiny-model' },
      run: async (i, ctx) => {
        const { chat } = ctx.model;
        const { model } = { ...ctx };
        return { response: `${model.name}/${model.configured}: ${await chat([{ role: 'user', content: i.query }])}` };
      },
    });
    const provider = createModelProvider({ baseUrl: fake.baseUrl, model: 'default-model', timeoutMs: 5000, retries: 0 });
    const { run } = harness([detached], provider);
    const { outcome } = await run('detached', { input: input('ping'), prompt: '' });
    expect(outcome.result.response).toBe('tiny-model/true: Echo: ping');
    expect(fake.requests.at(-1)!.body).toMatchObject({ model: 'tiny-model' });
  });

  it('fails with a 503 naming the setting when the agent needs a model and none is configured', async () => {
    const chatty = agent('needy', { run: async (i, ctx) => ctx.model.chat([{ role: 'user', content: i.query }]) });
    const { run } = harness([chatty]);
    const err = await run('needy').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HangarError);
    expect((err as HangarError).status).toBe(503);
    expect(String((err as HangarError).detail)).toMatch(/HANGAR_MODEL__BASE_URL/);
    expect(String((err as HangarError).detail)).toMatch(/model\.baseUrl/);
  });
});

describe('persistent checkpoints', () => {
  it('survive reopening the store (a restart)', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-cp-'));
    try {
      const firstStore = new SqliteStore(path.join(dir, 'hangar.db'));
      const first = new StoreCheckpointer(firstStore);
      const byName = new Map([['approver', approvalFlow]]);
      const engine = new Engine({ resolveAgent: (n) => byName.get(n), provider: new UnconfiguredProvider(), workspace: dir });
      const paused = await engine.run({ agent: approvalFlow, input: input('x'), prompt: '', checkpointer: first });
      firstStore.close();

      const reopened = new StoreCheckpointer(new SqliteStore(path.join(dir, 'hangar.db')));
      const latest = await reopened.latest('approver', 't1');
      expect(latest!.id).toBe(paused.checkpoint.id);
      expect((await reopened.list('approver', 't1')).map((c) => c.step)).toEqual([2, 1, 0]);
      const done = await engine.run({
        agent: approvalFlow,
        input: input('x'),
        prompt: '',
        checkpointer: reopened,
        resume: { checkpoint: latest!, action: 'approve', value: { recipient: 'bob' } },
      });
      expect(done.status).toBe('interrupted');
      expect(done.state.response).toBe('sent to bob');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
