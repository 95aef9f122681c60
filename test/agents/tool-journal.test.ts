/**
 * Each finished tool call is checkpointed (#32): a node re-run from a checkpoint — a resume after a
 * failed model call, or after an approval — replays the model's recorded answers and the finished
 * calls' results, so no finished call runs twice. Side-effect counters prove it.
 */
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryCheckpointer } from '../../core/agents/checkpointer.js';
import { Engine } from '../../core/agents/engine.js';
import { type Agent, normaliseAgent } from '../../core/agents/kind.js';
import { createModelProvider } from '../../core/agents/model.js';
import type { AgentInput } from '../../core/agents/types.js';
import { defineAgent, defineTool, z } from '../../core/sdk.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { makeWorkspace, startTestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';

const input = (query: string): AgentInput => ({
  query,
  user_id: 'u',
  context: {},
  thread_id: `t-${Math.random()}`,
  metadata: {},
  prompt_version: 'v1',
  temperature: null,
  max_tokens: null,
  history: [],
});

describe('tool calls are checkpointed and never run twice on a resume', () => {
  let fake: FakeOpenAI;
  let engine: Engine;
  const effects = { charged: 0 };
  const charge = defineTool({
    name: 'charge',
    description: 'Charges a card (a side effect that must happen once)',
    input: z.object({ cents: z.number().int() }),
    run: ({ cents }) => {
      effects.charged += 1;
      return { charged: cents };
    },
  });
  const agents = new Map<string, Agent>();
  const add = (name: string, def: Parameters<typeof defineAgent>[0]) => agents.set(name, normaliseAgent(defineAgent(def), name)).get(name)!;

  beforeAll(async () => {
    fake = await startFakeOpenAI(() => ({ content: 'no script' }));
    engine = new Engine({
      resolveAgent: (n) => agents.get(n),
      provider: createModelProvider({ baseUrl: fake.baseUrl, model: 'fake-1', timeoutMs: 3000, retries: 0 }),
      workspace: '/tmp',
    });
  });
  afterAll(() => fake.close());

  it('a model call failing after the calls finished leaves a tool checkpoint; resuming it runs no call again', async () => {
    const cashier = add('cashier', { instructions: 'Charge.', tools: [charge] });
    const checkpointer = new MemoryCheckpointer();
    effects.charged = 0;
    fake.enqueue(
      {
        tool_calls: [
          { id: 'c1', name: 'charge', arguments: { cents: 100 } },
          { id: 'c2', name: 'charge', arguments: { cents: 250 } },
        ],
      },
      { status: 500, error: 'model server fell over' },
    );
    const run = input('charge twice');
    const failed = await engine.run({ agent: cashier, input: run, prompt: 'Charge.', checkpointer }).catch((e: unknown) => e);
    expect(String((failed as Error).message)).toMatch(/answered 500/);
    expect(effects.charged).toBe(2);

    const latest = (await checkpointer.latest('cashier', run.thread_id!))!;
    expect(latest.metadata).toMatchObject({ source: 'tool', node: 'agent', next: 'agent' });
    expect(Object.keys(latest.metadata.journal!.results).sort()).toEqual(['c1', 'c2']);

    const before = fake.requests.length;
    fake.enqueue({ content: 'Charged 3.50 in total.' });
    const resumed = await engine.run({ agent: cashier, input: run, prompt: 'Charge.', checkpointer, resume: { checkpoint: latest } });
    expect(resumed.status).toBe('completed');
    expect(resumed.result.response).toBe('Charged 3.50 in total.');
    expect(effects.charged).toBe(2);
    // One model call: the first answer came from the journal; the results went back to the model.
    expect(fake.requests.length - before).toBe(1);
    expect(
      fake.requests
        .at(-1)!
        .body.messages.filter((m) => m.role === 'tool')
        .map((m) => [m.tool_call_id, m.content]),
    ).toEqual([
      ['c1', '{"charged":100}'],
      ['c2', '{"charged":250}'],
    ]);
  });

  it('a node that calls tools, then asks for approval, resumes without asking the model or running the tools again', async () => {
    const guarded = add('guarded', {
      tools: [charge],
      run: async (i, ctx) => {
        const result = await ctx.model.run([{ role: 'user', content: i.query }]);
        const decision = await ctx.interrupt<{ note?: string }>(`Send the receipt for "${result.text}"?`);
        return `${result.text} (${decision.note ?? 'approved'})`;
      },
    });
    const checkpointer = new MemoryCheckpointer();
    effects.charged = 0;
    fake.enqueue({ tool_calls: [{ id: 'g1', name: 'charge', arguments: { cents: 5 } }] }, { content: 'Charged 5 cents.' });
    const run = input('charge a little');
    const paused = await engine.run({ agent: guarded, input: run, prompt: '', checkpointer });
    expect(paused.status).toBe('interrupted');
    expect(paused.checkpoint.metadata.journal!.turns).toHaveLength(2);
    expect(effects.charged).toBe(1);

    const before = fake.requests.length;
    const done = await engine.run({
      agent: guarded,
      input: run,
      prompt: '',
      checkpointer,
      resume: { checkpoint: paused.checkpoint, action: 'approve', value: { note: 'ok by Ada' } },
    });
    expect(done.status).toBe('completed');
    expect(done.result.response).toBe('Charged 5 cents. (ok by Ada)');
    expect(effects.charged).toBe(1);
    expect(fake.requests.length - before).toBe(0);
  });

  it('a node without tool calls keeps LangGraph semantics: its interrupt checkpoint has no journal and a resume re-runs its code', async () => {
    const plain = add('plain', {
      requiresModel: true,
      run: async (i, ctx) => {
        const text = await ctx.model.chat([{ role: 'user', content: i.query }]);
        await ctx.interrupt('ok?');
        return text;
      },
    });
    fake.enqueue({ content: 'first' }, { content: 'second' });
    const checkpointer = new MemoryCheckpointer();
    const run = input('q');
    const paused = await engine.run({ agent: plain, input: run, prompt: '', checkpointer });
    expect(paused.checkpoint.metadata.journal).toBeUndefined();
    const done = await engine.run({
      agent: plain,
      input: run,
      prompt: '',
      checkpointer,
      resume: { checkpoint: paused.checkpoint, action: 'approve', value: {} },
    });
    expect(done.result.response).toBe('second');
  });
});

describe('a restart after a finished tool call and before the next model step', () => {
  it('the studio resumes the thread on the new server and the call does not run again', async () => {
    const fake = await startFakeOpenAI(() => ({ content: 'no script' }));
    const root = await makeWorkspace({
      'agents/ledger.ts': `import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { defineAgent, defineTool, z } from 'hangar';
const book = defineTool({
  name: 'book',
  description: 'Books an entry (appends a line to ledger.txt: a side effect that survives restarts)',
  input: z.object({ entry: z.string() }),
  run: ({ entry }, ctx) => { appendFileSync(path.join(ctx.workspace, 'ledger.txt'), entry + '\\n'); return 'booked ' + entry; },
});
export default defineAgent({ instructions: 'Book it.', tools: [book] });`,
    });
    const settings = { watch: false, model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 } };
    try {
      const first = await startTestServer({ root, settings });
      fake.enqueue(
        { tool_calls: [{ id: 'b1', name: 'book', arguments: { entry: 'rent' } }] },
        { status: 500, error: 'down for maintenance' },
      );
      const failed = (
        await first.request('/studio/agents/ledger/runs', { method: 'POST', json: { query: 'book rent', thread_id: 'books' } })
      ).body;
      expect(failed.status).toBe('error');
      await first.stop();

      const second = await startTestServer({ root, settings });
      try {
        expect((await second.request('/studio/agents/ledger/threads/books/state')).body).toMatchObject({ next: 'agent' });
        fake.enqueue({ content: 'Rent is booked.' });
        const before = fake.requests.length;
        const resumed = await readSse(`${second.url}/studio/agents/ledger/threads/books/resume`, { json: {} });
        expect(resumed.frames.at(-1)!.data).toMatchObject({ type: 'done', status: 'completed' });
        expect(resumed.frames.find((f) => f.data.type === 'run_complete')!.data.response).toBe('Rent is booked.');
        expect(fake.requests.length - before).toBe(1);
        expect(await readFile(path.join(root, 'ledger.txt'), 'utf8')).toBe('rent\n');
      } finally {
        await second.stop();
      }
    } finally {
      await fake.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});
