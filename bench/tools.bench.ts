/**
 * The model's tool loop (#32): what Hangar's loop costs per step on top of the model calls it
 * makes, and the same for the Vercel AI SDK's loop, against one scripted OpenAI-protocol server
 * (test/support/fake-openai-server.ts) in the same run.
 *
 * A run is STEPS model calls: each but the last asks for one tool call (`add`), the last answers.
 * - baseline: the same STEPS streamed chat-completions calls made directly with the `openai`
 *   client (the conversation grown by hand, the tool run inline) — what any loop must pay;
 * - Hangar: an agent declared by `instructions` and `tools`, run by the engine (graph node, tool
 *   loop, argument validation, events, usage meter, journal), stateless as a plain /invoke;
 * - AI SDK: `streamText` with the same tool and `stopWhen: stepCountIs(STEPS)` through
 *   `@ai-sdk/openai-compatible`.
 * Figures: per-step overhead = (median run − median baseline run) / STEPS, rounds alternated so
 * drift in the machine's load falls on both sides.
 */

import { createOpenAICompatible } from '@ai-sdk/openai-compatible';
import { stepCountIs, streamText, tool } from 'ai';
import OpenAI from 'openai';
import { z } from 'zod';
import { UNRETAINED } from '../core/agents/checkpointer.js';
import { Engine } from '../core/agents/engine.js';
import { normaliseAgent } from '../core/agents/kind.js';
import { createModelProvider } from '../core/agents/model.js';
import type { AgentInput } from '../core/agents/types.js';
import { defineAgent, defineTool } from '../core/sdk.js';
import { startFakeOpenAI } from '../test/support/fake-openai-server.js';
import { median, report, round } from './lib/measure.js';

const STEPS = 5;
const ROUNDS = 9;
const RUNS_PER_ROUND = 20;

const fake = await startFakeOpenAI((request) => {
  const calls = request.body.messages.filter((m) => m.role === 'tool').length;
  if (calls < STEPS - 1) return { tool_calls: [{ id: `c${calls}`, name: 'add', arguments: { a: calls, b: 1 } }] };
  return { content: 'The sum is done.' };
});

const add = defineTool({
  name: 'add',
  description: 'Adds two numbers',
  input: z.object({ a: z.number(), b: z.number() }),
  run: ({ a, b }) => a + b,
});

// ——— baseline: the openai client, by hand ———
const client = new OpenAI({ baseURL: fake.baseUrl, apiKey: 'bench', maxRetries: 0 });
const toolsWire = [
  {
    type: 'function' as const,
    function: { name: 'add', description: 'Adds two numbers', parameters: z.toJSONSchema(add.input) as Record<string, unknown> },
  },
];
async function direct(): Promise<void> {
  const messages: OpenAI.ChatCompletionMessageParam[] = [
    { role: 'system', content: 'Add.' },
    { role: 'user', content: 'add them' },
  ];
  for (let step = 0; step < STEPS; step++) {
    const stream = await client.chat.completions.create({
      model: 'fake-1',
      messages,
      tools: toolsWire,
      stream: true,
      stream_options: { include_usage: true },
    });
    const calls: Array<{ id: string; name: string; arguments: string }> = [];
    for await (const chunk of stream) {
      for (const delta of chunk.choices[0]?.delta.tool_calls ?? []) {
        const call = (calls[delta.index] ??= { id: '', name: '', arguments: '' });
        if (delta.id) call.id = delta.id;
        if (delta.function?.name) call.name += delta.function.name;
        if (delta.function?.arguments) call.arguments += delta.function.arguments;
      }
    }
    if (!calls.length) return;
    messages.push({
      role: 'assistant',
      content: null,
      tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    });
    for (const call of calls) {
      const args = JSON.parse(call.arguments) as { a: number; b: number };
      messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify(args.a + args.b) });
    }
  }
}

// ——— Hangar: the engine and its tool loop ———
const engine = new Engine({
  resolveAgent: () => undefined,
  provider: createModelProvider({ baseUrl: fake.baseUrl, model: 'fake-1', timeoutMs: 10_000, retries: 0 }),
  workspace: '/tmp',
});
const agent = normaliseAgent(defineAgent({ instructions: 'Add.', tools: [add] }), 'adder');
const input = (): AgentInput => ({
  query: 'add them',
  user_id: 'bench',
  thread_id: null,
  context: {},
  metadata: {},
  prompt_version: 'v1',
  temperature: null,
  max_tokens: null,
  history: [],
});
async function hangar(): Promise<void> {
  const outcome = await engine.run({ agent, input: input(), prompt: 'Add.', checkpointer: UNRETAINED });
  if (outcome.result.response !== 'The sum is done.') throw new Error(`unexpected answer: ${outcome.result.response}`);
}

// ——— the AI SDK's loop ———
const provider = createOpenAICompatible({ name: 'bench', baseURL: fake.baseUrl, apiKey: 'bench', includeUsage: true });
const aiTools = {
  add: tool({ description: 'Adds two numbers', inputSchema: add.input, execute: async ({ a, b }: { a: number; b: number }) => a + b }),
};
async function aiSdk(): Promise<void> {
  const result = streamText({
    model: provider.chatModel('fake-1'),
    system: 'Add.',
    prompt: 'add them',
    tools: aiTools,
    stopWhen: stepCountIs(STEPS),
    maxRetries: 0,
  });
  const text = await result.text;
  if (text !== 'The sum is done.') throw new Error(`unexpected AI SDK answer: ${text}`);
}

async function timed(run: () => Promise<void>): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < RUNS_PER_ROUND; i++) await run();
  return (performance.now() - started) / RUNS_PER_ROUND;
}

// Warm up every path (JIT, sockets, lazy imports).
for (let i = 0; i < 10; i++) {
  await direct();
  await hangar();
  await aiSdk();
}
const rounds = { direct: [] as number[], hangar: [] as number[], ai: [] as number[] };
for (let r = 0; r < ROUNDS; r++) {
  rounds.direct.push(await timed(direct));
  rounds.hangar.push(await timed(hangar));
  rounds.ai.push(await timed(aiSdk));
}
await fake.close();

const base = median(rounds.direct);
const perStep = (run: number) => (run - base) / STEPS;
const hangarStep = perStep(median(rounds.hangar));
const aiStep = perStep(median(rounds.ai));
report({
  name: `tool loop: Hangar's overhead per step (${STEPS}-step run) over direct openai client calls`,
  value: round(hangarStep, 3),
  unit: 'ms',
  baseline: { label: 'direct calls per run', value: round(base, 3) },
  target: { on: 'value', op: '<', limit: 1 },
  detail: `${round(hangarStep, 3)} ms/step; run ${round(median(rounds.hangar), 2)} ms vs direct ${round(base, 2)} ms (medians of ${ROUNDS} rounds × ${RUNS_PER_ROUND})`,
});
report({
  name: `tool loop: AI SDK streamText overhead per step (${STEPS}-step run) over direct openai client calls`,
  value: round(aiStep, 3),
  unit: 'ms',
  baseline: { label: 'direct calls per run', value: round(base, 3) },
  target: null,
  detail: `${round(aiStep, 3)} ms/step; run ${round(median(rounds.ai), 2)} ms vs direct ${round(base, 2)} ms (medians of ${ROUNDS} rounds × ${RUNS_PER_ROUND})`,
});
