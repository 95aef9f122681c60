/**
 * Agents that act (#32): typed tools declared with `defineTool`, the model's tool loop against a
 * scripted chat-completions server (whole and streamed tool calls, parallel calls, invalid
 * arguments, a model that never stops calling), tool events in the streams, and token usage.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, type RecordedRequest, type ScriptedReply, startFakeOpenAI } from '../support/fake-openai-server.js';
import { eventually, startTestServer, type TestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';

const weatherTool = `
import { defineAgent, defineTool, z } from 'hangar';

export const calls = { weather: 0, active: 0, peak: 0 };
export const weather = defineTool({
  name: 'weather',
  description: 'The temperature in a city now',
  input: z.object({ city: z.string().describe('a city name'), unit: z.enum(['c', 'f']).default('c') }),
  output: z.object({ city: z.string(), temperature: z.number(), unit: z.string() }),
  run: async ({ city, unit }, ctx) => {
    calls.weather++;
    calls.active++;
    calls.peak = Math.max(calls.peak, calls.active);
    await new Promise((r) => setTimeout(r, city === 'Slowtown' ? 150 : 60));
    calls.active--;
    return { city, temperature: city.length, unit };
  },
});
`;

const files: Record<string, string> = {
  // An agent of instructions and tools alone: the tool loop is its run.
  'agents/forecaster.ts': `${weatherTool}
export default defineAgent({
  description: 'Answers weather questions',
  instructions: 'You answer weather questions with the weather tool.',
  tools: [weather],
});
`,
  // The same tool through ctx.model.run, with the loop's options.
  'agents/runner.ts': `${weatherTool}
const stats = defineTool({
  name: 'stats',
  description: 'How many weather calls ran, and the most at once',
  input: z.object({}),
  run: async () => ({ ...calls }),
});
const broken = defineTool({
  name: 'broken',
  description: 'Always fails',
  input: z.object({}),
  run: async () => { throw new Error('the backend is down'); },
});
const slow = defineTool({
  name: 'slow',
  description: 'Never answers in time',
  input: z.object({}),
  timeout_ms: 50,
  run: (_args, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('aborted'))),
});
const liar = defineTool({
  name: 'liar',
  description: 'Returns what its output schema refuses',
  input: z.object({}),
  output: z.object({ ok: z.boolean() }),
  run: async () => ({ ok: 'yes' }),
});
const guarded = defineTool({
  name: 'guarded',
  description: 'Needs approval',
  input: z.object({ target: z.string() }),
  needsApproval: (args) => args.target === 'prod',
  run: async ({ target }) => { calls.weather += 1000; return 'deployed ' + target; },
});
export default defineAgent({
  tools: [weather, stats, broken, slow, liar, guarded],
  run: async (input, ctx) => {
    const options = input.context.options ?? {};
    const result = await ctx.model.run([{ role: 'user', content: input.query }], options);
    return {
      response: result.text,
      output: {
        finishReason: result.finishReason,
        steps: result.steps.map((s) => ({ text: s.text, calls: s.toolCalls.map((c) => c.name), finishReason: s.finishReason, usage: s.usage })),
        toolCalls: result.toolCalls,
        toolResults: result.toolResults.map(({ duration_ms, ...r }) => ({ ...r, timed: duration_ms >= 0 })),
        usage: result.usage,
        calls: { ...calls },
      },
    };
  },
});
`,
  'agents/talker.ts': `import { defineAgent } from 'hangar';
export default defineAgent({
  requiresModel: true,
  run: async (input, ctx) => {
    const first = await ctx.model.chat([{ role: 'user', content: input.query }]);
    const second = await ctx.model.chat([{ role: 'user', content: first }]);
    return second;
  },
});
`,
};

const toolCall = (name: string, args: unknown, id?: string) => ({
  name,
  arguments: typeof args === 'string' ? args : (args as Record<string, unknown>),
  ...(id ? { id } : {}),
});

describe('tools and the tool loop (real server, scripted model)', () => {
  let server: TestServer;
  let fake: FakeOpenAI;
  let responder: ((request: RecordedRequest) => ScriptedReply) | undefined;

  beforeAll(async () => {
    fake = await startFakeOpenAI((request) => responder?.(request) ?? { content: 'no script' });
    server = await startTestServer({
      files,
      settings: {
        model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0, maxSteps: 4 },
        logs: { enabled: true, maxFieldChars: 20_000 },
        watch: false,
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });
  afterEach(() => {
    responder = undefined;
  });

  const post = (path: string, json: unknown) => server.request(path, { method: 'POST', json });
  const since = () => {
    const at = fake.requests.length;
    return () => fake.requests.slice(at);
  };

  it('an agent of instructions and tools answers through the tool loop: schema sent, tool run, result returned to the model', async () => {
    const sent = since();
    fake.enqueue(
      { tool_calls: [toolCall('weather', { city: 'Paris' }, 'call_a')], usage: { prompt_tokens: 31, completion_tokens: 7 } },
      { content: 'It is 5 degrees in Paris.', usage: { prompt_tokens: 52, completion_tokens: 9 } },
    );
    const { status, body } = await post('/api/v1/forecaster/invoke', { query: 'Weather in Paris?' });
    expect(status).toBe(200);
    expect(body.response).toBe('It is 5 degrees in Paris.');
    const [first, second] = sent();
    expect(first!.body.messages[0]).toEqual({ role: 'system', content: 'You answer weather questions with the weather tool.' });
    expect(first!.body.messages.at(-1)).toEqual({ role: 'user', content: 'Weather in Paris?' });
    // The JSON Schema of the zod input, made by zod itself.
    const tool = (first!.body.tools as any[])[0];
    expect(tool).toMatchObject({ type: 'function', function: { name: 'weather', description: 'The temperature in a city now' } });
    expect(tool.function.parameters).toMatchObject({
      type: 'object',
      properties: { city: { type: 'string', description: 'a city name' }, unit: { enum: ['c', 'f'] } },
      required: ['city'],
    });
    // The model's call and the tool's result (after its defaults and output schema) go back.
    expect(second!.body.messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'call_a', type: 'function', function: { name: 'weather', arguments: '{"city":"Paris"}' } }],
      },
      { role: 'tool', tool_call_id: 'call_a', content: '{"city":"Paris","temperature":5,"unit":"c"}' },
    ]);
    expect(body.steps_taken).toEqual(['tool:weather']);
    expect(body.metadata).toMatchObject({
      finish_reason: 'stop',
      model_steps: 2,
      usage: {
        prompt_tokens: 83,
        completion_tokens: 16,
        total_tokens: 99,
        calls: [
          { model: 'fake-1', prompt_tokens: 31, completion_tokens: 7 },
          { model: 'fake-1', prompt_tokens: 52, completion_tokens: 9 },
        ],
      },
    });
  });

  it('gets the thread history: a chat turn carries the earlier turns to the model', async () => {
    fake.enqueue({ content: 'Hello Ada.' });
    await post('/api/v1/forecaster/chat', { content: 'I am Ada', thread_id: 'ada', persist: true });
    const sent = since();
    fake.enqueue({ content: 'You are Ada.' });
    const { body } = await post('/api/v1/forecaster/chat', { content: 'Who am I?', thread_id: 'ada', persist: true });
    expect(body.response).toBe('You are Ada.');
    expect(sent()[0]!.body.messages.map((m) => [m.role, m.content])).toEqual([
      ['system', 'You answer weather questions with the weather tool.'],
      ['user', 'I am Ada'],
      ['assistant', 'Hello Ada.'],
      ['user', 'Who am I?'],
    ]);
  });

  it('streams: tool calls assembled from streamed deltas, tool_start/tool_end frames in order, usage from the last chunk', async () => {
    fake.enqueue(
      { tool_calls: [toolCall('weather', { city: 'Rome', unit: 'f' }, 'call_s')], usage: { prompt_tokens: 40, completion_tokens: 12 } },
      { chunks: ['Rome ', 'is ', 'warm.'], usage: { prompt_tokens: 60, completion_tokens: 3 } },
    );
    const read = await readSse(`${server.url}/api/v1/forecaster/invoke/stream`, { method: 'POST', json: { query: 'Rome?' } });
    const events = read.frames.map((f) => f.data.event);
    expect(events).toEqual(['start', 'tool_start', 'tool_end', 'token', 'token', 'token', 'step', 'complete']);
    const start = read.frames[1]!.data;
    const end = read.frames[2]!.data;
    expect(start).toMatchObject({ name: 'weather', call_id: 'call_s', arguments: { city: 'Rome', unit: 'f' }, node: 'agent' });
    expect(end).toMatchObject({ name: 'weather', call_id: 'call_s', result: { city: 'Rome', temperature: 4, unit: 'f' } });
    expect(end.duration_ms).toBeGreaterThanOrEqual(50);
    expect(end.error).toBeUndefined();
    const complete = read.frames.at(-1)!.data;
    expect(complete.response).toBe('Rome is warm.');
    expect(complete.metadata.usage).toMatchObject({ prompt_tokens: 100, completion_tokens: 15, total_tokens: 115 });
  });

  it('runs the parallel calls of one step concurrently and answers each call by its id', async () => {
    const sent = since();
    fake.enqueue(
      {
        tool_calls: [
          toolCall('weather', { city: 'Slowtown' }, 'p1'),
          toolCall('weather', { city: 'Oslo' }, 'p2'),
          toolCall('stats', {}, 'p3'),
        ],
      },
      { content: 'done' },
    );
    const started = performance.now();
    const { body } = await post('/api/v1/runner/invoke', { query: 'both' });
    const elapsed = performance.now() - started;
    expect(body.output.finishReason).toBe('stop');
    expect(body.output.calls.peak).toBe(2);
    // Run one after another they would take 210 ms at least.
    expect(elapsed).toBeLessThan(1000);
    expect(body.output.toolResults.map((r: any) => [r.id, r.name, r.result?.city ?? null])).toEqual([
      ['p1', 'weather', 'Slowtown'],
      ['p2', 'weather', 'Oslo'],
      ['p3', 'stats', null],
    ]);
    const tools = sent()[1]!.body.messages.filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.tool_call_id)).toEqual(['p1', 'p2', 'p3']);
    expect(JSON.parse(tools[0]!.content!)).toEqual({ city: 'Slowtown', temperature: 8, unit: 'c' });
  });

  it('returns invalid arguments, unknown tools and JSON that does not parse to the model as the call result, without running the tool', async () => {
    const sent = since();
    const before = (await post('/api/v1/runner/invoke', { query: 'count', context: { options: { tools: [], maxSteps: 1 } } })).body.output
      .calls.weather;
    fake.enqueue(
      {
        tool_calls: [
          toolCall('weather', { city: 5 }, 'bad1'),
          toolCall('weather', '{"city": "Par', 'bad2'),
          toolCall('teleport', { to: 'moon' }, 'bad3'),
        ],
      },
      { tool_calls: [toolCall('weather', { city: 'Lima' }, 'good')] },
      { content: 'Lima it is.' },
    );
    const { status, body } = await post('/api/v1/runner/invoke', { query: 'weather' });
    expect(status).toBe(200);
    expect(body.response).toBe('Lima it is.');
    const results = body.output.toolResults;
    expect(results[0]).toMatchObject({ id: 'bad1', name: 'weather', args: { city: 5 } });
    expect(results[0].error).toMatch(/invalid arguments for 'weather'/);
    expect(results[0].error).toMatch(/city/);
    expect(results[1]).toMatchObject({ id: 'bad2', args: '{"city": "Par' });
    expect(results[1].error).toMatch(/not valid JSON/);
    expect(results[2].error).toMatch(/no tool named 'teleport'.*weather, stats/);
    expect(results[3]).toMatchObject({ id: 'good', result: { city: 'Lima' } });
    // Only the valid call ran.
    expect(body.output.calls.weather - before).toBe(1);
    const toModel = sent()
      .at(-2)!
      .body.messages.filter((m) => m.role === 'tool');
    expect(JSON.parse(toModel[0]!.content!).error).toMatch(/invalid arguments/);
    expect(body.output.steps.map((s: any) => s.calls)).toEqual([['weather', 'weather', 'teleport'], ['weather'], []]);
  });

  it('a tool that throws, times out or breaks its output schema: the model is told, the run goes on', async () => {
    // (A call that needs approval suspends the run instead: test/agents/tool-approvals.test.ts.)
    fake.enqueue({ tool_calls: [toolCall('broken', {}), toolCall('slow', {}), toolCall('liar', {})] }, { content: 'recovered' });
    const { status, body } = await post('/api/v1/runner/invoke', { query: 'try' });
    expect(status).toBe(200);
    expect(body.response).toBe('recovered');
    const errors = body.output.toolResults.map((r: any) => r.error);
    expect(errors[0]).toBe("'broken' failed: the backend is down");
    expect(errors[1]).toBe("'slow' timed out after 50 ms");
    expect(errors[2]).toMatch(/output schema refuses/);
    expect(body.output.calls.weather).toBeLessThan(1000);
  });

  it('stops a model that never stops calling tools at maxSteps (the setting, or the call option) with finish reason max_steps', async () => {
    responder = () => ({ tool_calls: [toolCall('weather', { city: 'Loop' })] });
    const sent = since();
    const declared = await post('/api/v1/forecaster/invoke', { query: 'forever' });
    expect(declared.status).toBe(200);
    expect(sent()).toHaveLength(4); // model.maxSteps in the settings
    expect(declared.body.metadata.finish_reason).toBe('max_steps');
    expect(declared.body.response).toMatch(/Stopped after 4 model calls \(maxSteps\)/);

    const sentAgain = since();
    const direct = await post('/api/v1/runner/invoke', { query: 'forever', context: { options: { maxSteps: 2 } } });
    expect(sentAgain()).toHaveLength(2);
    expect(direct.body.output.finishReason).toBe('max_steps');
    expect(direct.body.output.toolCalls).toHaveLength(2);
  });

  it('sends toolChoice in the protocol shape and only the tools the call names', async () => {
    const sent = since();
    fake.enqueue({ tool_calls: [toolCall('stats', {})] }, { content: 'ok' });
    await post('/api/v1/runner/invoke', { query: 'x', context: { options: { toolChoice: 'required' } } });
    expect(sent()[0]!.body.tool_choice).toBe('required');
    expect((sent()[0]!.body.tools as any[]).map((t) => t.function.name)).toEqual(['weather', 'stats', 'broken', 'slow', 'liar', 'guarded']);
    const named = since();
    fake.enqueue({ content: 'fine' });
    const { body } = await post('/api/v1/runner/invoke', { query: 'x', context: { options: { toolChoice: { name: 'weather' } } } });
    expect(named()[0]!.body.tool_choice).toEqual({ type: 'function', function: { name: 'weather' } });
    expect(body.output.steps).toEqual([
      { text: 'fine', calls: [], finishReason: 'stop', usage: { prompt_tokens: 1, completion_tokens: 1 } },
    ]);
  });

  it('/optimize/invoke lists the tool calls the run made, with their results', async () => {
    fake.enqueue({ tool_calls: [toolCall('weather', { city: 'Kyiv' }), toolCall('weather', { city: 7 })] }, { content: 'Cold.' });
    const { body } = await post('/api/v1/forecaster/optimize/invoke', { query: 'Kyiv?', include_steps: true });
    expect(body.tool_calls).toEqual([
      { name: 'weather', args: { city: 'Kyiv', unit: 'c' }, result: { city: 'Kyiv', temperature: 4, unit: 'c' } },
      { name: 'weather', args: { city: 7 }, error: expect.stringMatching(/invalid arguments/) },
    ]);
    expect(body.steps_taken).toEqual(['tool:weather', 'tool:weather']);
  });

  it('shows tool_start and tool_end in the studio stream, between the node events', async () => {
    fake.enqueue({ tool_calls: [toolCall('weather', { city: 'Bern' }, 'st1')] }, { content: 'Mild.' });
    const read = await readSse(`${server.url}/studio/agents/forecaster/runs/stream`, {
      json: { query: 'Bern?', thread_id: 'studio-tools' },
    });
    const types = read.frames.map((f) => f.data.type);
    expect(types.filter((t) => t !== 'message_chunk')).toEqual([
      'run_start',
      'node_start',
      'tool_start',
      'tool_end',
      'node_end',
      'run_complete',
      'done',
    ]);
    const end = read.frames.find((f) => f.data.type === 'tool_end')!.data;
    expect(end).toMatchObject({
      node: 'agent',
      call_id: 'st1',
      name: 'weather',
      arguments: { city: 'Bern' },
      result: { city: 'Bern', temperature: 4 },
    });
  });

  it('records the usage of every model call of a plain chat agent, whole and streamed, in the response and the invocation log', async () => {
    fake.enqueue(
      { content: 'one', usage: { prompt_tokens: 11, completion_tokens: 2 } },
      { content: 'two', usage: { prompt_tokens: 13, completion_tokens: 4 } },
    );
    const { body } = await post('/api/v1/talker/invoke', { query: 'q' });
    expect(body.metadata.usage).toEqual({
      prompt_tokens: 24,
      completion_tokens: 6,
      total_tokens: 30,
      calls: [
        { model: 'fake-1', prompt_tokens: 11, completion_tokens: 2 },
        { model: 'fake-1', prompt_tokens: 13, completion_tokens: 4 },
      ],
    });
    const record = await eventually(async () => {
      const page = await server.request('/api/v1/logs?resource=agent&name=talker');
      return page.body.logs?.find((r: any) => r.output?.metadata?.run_id === body.metadata.run_id);
    });
    expect(record.output.metadata.usage).toEqual(body.metadata.usage);
    // Beside the output too, so a truncated output keeps them.
    expect(record.usage).toEqual({ prompt_tokens: 24, completion_tokens: 6, total_tokens: 30 });

    fake.enqueue(
      { chunks: ['a ', 'b'], usage: { prompt_tokens: 5, completion_tokens: 2 } },
      { chunks: ['c'], usage: { prompt_tokens: 6, completion_tokens: 1 } },
    );
    const read = await readSse(`${server.url}/api/v1/talker/invoke/stream`, { method: 'POST', json: { query: 'q' } });
    const complete = read.frames.at(-1)!.data;
    expect(complete.metadata.usage).toMatchObject({ prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 });
    const streamed = await eventually(async () => {
      const page = await server.request('/api/v1/logs?resource=agent&name=talker');
      return page.body.logs?.find((r: any) => r.operation !== 'invoke' && r.usage);
    });
    expect(streamed.usage).toEqual({ prompt_tokens: 11, completion_tokens: 3, total_tokens: 14 });
  });

  it('counts tokens in /metrics per agent, model and kind', async () => {
    const count = async (kind: string) => {
      const text = (await server.request('/metrics')).text;
      return Number(new RegExp(`model_tokens_total\\{agent="forecaster",model="fake-1",kind="${kind}"\\} (\\d+)`).exec(text)?.[1] ?? 0);
    };
    const before = [await count('prompt'), await count('completion')];
    fake.enqueue(
      { tool_calls: [toolCall('weather', { city: 'Graz' })], usage: { prompt_tokens: 100, completion_tokens: 10 } },
      { content: 'ok', usage: { prompt_tokens: 200, completion_tokens: 20 } },
    );
    await post('/api/v1/forecaster/invoke', { query: 'Graz?' });
    expect([(await count('prompt')) - before[0]!, (await count('completion')) - before[1]!]).toEqual([300, 30]);
  });

  it('keeps the usage of a long answer in the log record when its output is cut to a preview', async () => {
    const long = 'word '.repeat(6000);
    fake.enqueue(
      { content: 'short', usage: { prompt_tokens: 3, completion_tokens: 1 } },
      { content: long, usage: { prompt_tokens: 6001, completion_tokens: 6000 } },
    );
    const { body } = await post('/api/v1/talker/invoke', { query: 'long' });
    const record = await eventually(async () => {
      const page = await server.request('/api/v1/logs?resource=agent&name=talker&limit=200');
      return page.body.logs?.find((r: any) => r.usage?.prompt_tokens === 6004);
    });
    expect(body.metadata.usage.total_tokens).toBe(12005);
    expect(record.truncated).toBe(true);
    expect(typeof record.output).toBe('string');
    expect(record.usage).toEqual({ prompt_tokens: 6004, completion_tokens: 6001, total_tokens: 12005 });
  });
});

describe('tool definitions are checked at discovery', () => {
  let server: TestServer;
  afterAll(() => server?.stop());

  it('a bad tool is a drop-in error naming the tool and the field; a good agent beside it loads', async () => {
    server = await startTestServer({
      files: {
        'agents/badname.ts': `import { defineAgent, defineTool, z } from 'hangar';
export default defineAgent({ instructions: 'x', tools: [defineTool({ name: 'has space', description: 'd', input: z.object({}), run: () => 1 })] });`,
        'agents/notobject.ts': `import { defineAgent, defineTool, z } from 'hangar';
export default defineAgent({ instructions: 'x', tools: [defineTool({ name: 'n', description: 'd', input: z.string(), run: () => 1 })] });`,
        'agents/both.ts': `import { defineAgent } from 'hangar';
export default defineAgent({ instructions: 'x', prompts: { versions: { v1: 'y' } } });`,
        'agents/fine.ts': `import { defineAgent, defineTool, z } from 'hangar';
export default defineAgent({ instructions: 'x', tools: [defineTool({ name: 'ok', description: 'd', input: z.object({ a: z.number() }), run: ({ a }) => a })] });`,
      },
      settings: { watch: false },
    });
    const { body } = await server.request('/api/v1/status');
    const text = JSON.stringify(body);
    expect(text).toMatch(/tools\.'has space'\.name/);
    expect(text).toMatch(/tools\.'n'\.input: must be a z\.object/);
    expect(text).toMatch(/give `instructions` or `prompts`, not both/);
    // Declared by instructions, it needs a model: without one it answers 503 before running.
    const run = await server.request('/api/v1/fine/invoke', { method: 'POST', json: { query: 'q' } });
    expect(run.status).toBe(503);
  });
});
