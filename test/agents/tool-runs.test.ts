/**
 * The tool loop inside the rest of the platform (#32): tool frames in an agent task's events,
 * streamed parallel calls, a subagent's tool calls and tokens counted in its parent's run, and a
 * run deadline reaching a tool through its signal.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';

const files: Record<string, string> = {
  'agents/clock.ts': `import { defineAgent, defineTool, z } from 'hangar';
export const seen = { aborted: 0 };
const now = defineTool({ name: 'now', description: 'The time in a zone', input: z.object({ zone: z.string() }), run: ({ zone }) => zone + ' 12:00' });
const wait = defineTool({
  name: 'wait',
  description: 'Waits until the run is stopped',
  input: z.object({}),
  run: (_args, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => { seen.aborted++; resolve('stopped'); })),
});
const aborted = defineTool({ name: 'aborted', description: 'How many waits were stopped', input: z.object({}), run: () => seen.aborted });
export default defineAgent({ instructions: 'Tell the time.', tools: [now, wait, aborted], timeout_ms: 2000 });`,
  'agents/boss.ts': `import { defineAgent } from 'hangar';
export default defineAgent({
  requiresModel: true,
  run: async (input, ctx) => {
    const own = await ctx.model.chat([{ role: 'user', content: input.query }]);
    const sub = await ctx.callAgent('clock', input.query);
    return own + ' / ' + sub.response;
  },
});`,
};

describe('the tool loop in tasks, subagents and deadlines', () => {
  let server: TestServer;
  let fake: FakeOpenAI;

  beforeAll(async () => {
    fake = await startFakeOpenAI(() => ({ content: 'no script' }));
    server = await startTestServer({ files, settings: { model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 }, watch: false } });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });

  it("an agent task's events carry tool_start and tool_end frames, for streamed parallel calls", async () => {
    fake.enqueue(
      // Streamed (the task's run streams tokens): two calls whose deltas arrive by index.
      {
        tool_calls: [
          { id: 'z1', name: 'now', arguments: { zone: 'UTC' } },
          { id: 'z2', name: 'now', arguments: { zone: 'CET' } },
        ],
      },
      { content: 'Noon.' },
    );
    const res = await server.request('/api/v1/clock/invoke/async', { method: 'POST', json: { query: 'time?' } });
    expect(res.status).toBe(202);
    const stream = await readSse(`${server.url}/api/v1/tasks/${res.body.id}/events`);
    const outputs = stream.frames.filter((f) => f.data.type === 'output').map((f) => f.data.data);
    const tools = outputs.filter((o) => o.event === 'tool_start' || o.event === 'tool_end');
    expect(tools.filter((o) => o.event === 'tool_start').map((o) => [o.call_id, o.arguments])).toEqual([
      ['z1', { zone: 'UTC' }],
      ['z2', { zone: 'CET' }],
    ]);
    expect(
      tools
        .filter((o) => o.event === 'tool_end')
        .map((o) => [o.call_id, o.result])
        .sort(),
    ).toEqual([
      ['z1', 'UTC 12:00'],
      ['z2', 'CET 12:00'],
    ]);
    expect(stream.frames.at(-1)!.data).toMatchObject({ status: 'completed', result: { response: 'Noon.' } });
  });

  it("a subagent's tool calls show in its parent's stream and its tokens count in the parent's usage", async () => {
    fake.enqueue(
      { content: 'Boss here.', usage: { prompt_tokens: 10, completion_tokens: 2 } },
      { tool_calls: [{ id: 's1', name: 'now', arguments: { zone: 'JST' } }], usage: { prompt_tokens: 30, completion_tokens: 5 } },
      { content: 'It is noon in Tokyo.', usage: { prompt_tokens: 40, completion_tokens: 6 } },
    );
    const read = await readSse(`${server.url}/api/v1/boss/invoke/stream`, { method: 'POST', json: { query: 'Tokyo time?' } });
    const events = read.frames.map((f) => f.data);
    expect(events.filter((e) => e.event === 'tool_end').map((e) => [e.name, e.result])).toEqual([['now', 'JST 12:00']]);
    const complete = events.at(-1)!;
    expect(complete.response).toBe('Boss here. / It is noon in Tokyo.');
    expect(complete.metadata.usage).toMatchObject({ prompt_tokens: 80, completion_tokens: 13, total_tokens: 93 });
    expect(complete.metadata.usage.calls).toHaveLength(3);
  });

  it("a run's deadline aborts a running tool's signal and answers 504", async () => {
    fake.enqueue({ tool_calls: [{ name: 'wait', arguments: {} }] });
    const started = performance.now();
    const { status, body } = await server.request('/api/v1/clock/invoke', { method: 'POST', json: { query: 'wait' } });
    expect(status).toBe(504);
    expect(body.detail).toMatch(/did not finish within 2000 ms/);
    expect(performance.now() - started).toBeLessThan(10_000);
    // The tool saw its signal abort (asked through another tool of the same module).
    fake.enqueue({ tool_calls: [{ name: 'aborted', arguments: {} }] }, { content: 'checked' });
    const check = await server.request('/api/v1/clock/invoke', { method: 'POST', json: { query: 'count' } });
    expect(check.status).toBe(200);
    const second = fake.requests.at(-1)!.body.messages.at(-1)!;
    expect(second).toMatchObject({ role: 'tool', content: '1' });
  });
});
