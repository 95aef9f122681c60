/**
 * Cost of a run (#32, item 7): with a price table in the settings (`model.prices`, per million
 * tokens), a run's usage carries each call's cost and the run's sum in the response, the
 * invocation log, a task's result and the studio run view; a call to a model that is not priced
 * makes the run's cost null, never a partial sum. Without a table, usage has no cost fields.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { StudioEvent } from '../../core/studio/events.js';
import { applyEvent, idleRun } from '../../desktop/views/studio/run-state.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

const files: Record<string, string> = {
  'agents/clock.ts': `import { defineAgent, defineTool, z } from 'hangar';
const now = defineTool({ name: 'now', description: 'The time', input: z.object({}), run: () => '12:00' });
export default defineAgent({ instructions: 'Tell the time.', tools: [now] });`,
  'agents/mixed.ts': `import { defineAgent } from 'hangar';
export default defineAgent({
  requiresModel: true,
  run: async (input, ctx) => (await ctx.model.chat([{ role: 'user', content: input.query }])) + (await ctx.model.chat([{ role: 'user', content: 'again' }], { model: 'unpriced-model' })),
});`,
};

const prices = { 'fake-1': { prompt_per_1m: 2.5, completion_per_1m: 10 } };

describe('the cost of a run from the price table', () => {
  let server: TestServer;
  let fake: FakeOpenAI;

  beforeAll(async () => {
    fake = await startFakeOpenAI(() => ({ content: 'no script' }));
    server = await startTestServer({
      files,
      settings: {
        model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0, prices, currency: 'EUR' },
        logs: { enabled: true },
        watch: false,
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });

  it('each call is priced and the run sums them, in the response and the invocation log', async () => {
    fake.enqueue(
      { tool_calls: [{ id: 'c1', name: 'now', arguments: {} }], usage: { prompt_tokens: 1000, completion_tokens: 200 } },
      { content: 'Noon.', usage: { prompt_tokens: 1300, completion_tokens: 10 } },
    );
    const res = await server.request('/api/v1/clock/invoke', { method: 'POST', json: { query: 'time?' } });
    expect(res.status).toBe(200);
    const usage = res.body.metadata.usage;
    // 1000 × 2.5/1M + 200 × 10/1M = 0.0045; 1300 × 2.5/1M + 10 × 10/1M = 0.00335.
    expect(usage.calls.map((c: { cost: number }) => c.cost)).toEqual([0.0045, 0.00335]);
    expect(usage).toMatchObject({ prompt_tokens: 2300, completion_tokens: 210, cost: 0.00785, currency: 'EUR' });

    const logged = await eventually(async () => {
      const page = await server.request('/api/v1/logs?resource=agent&name=clock');
      return page.body.logs?.find((r: any) => r.output?.metadata?.run_id === res.body.metadata.run_id);
    });
    expect(logged.usage).toEqual({ prompt_tokens: 2300, completion_tokens: 210, total_tokens: 2510, cost: 0.00785, currency: 'EUR' });
  });

  it("a call to a model not in the table makes the run's cost null; the priced call keeps its own", async () => {
    fake.enqueue(
      { content: 'a', usage: { prompt_tokens: 100, completion_tokens: 100 } },
      { content: 'b', usage: { prompt_tokens: 100, completion_tokens: 100 } },
    );
    const res = await server.request('/api/v1/mixed/invoke', { method: 'POST', json: { query: 'go' } });
    expect(res.body.response).toBe('ab');
    const usage = res.body.metadata.usage;
    expect(usage.calls).toEqual([
      { model: 'fake-1', prompt_tokens: 100, completion_tokens: 100, cost: 0.00125 },
      { model: 'unpriced-model', prompt_tokens: 100, completion_tokens: 100, cost: null },
    ]);
    expect(usage).toMatchObject({ cost: null, currency: 'EUR' });
  });

  it("a task's result and the studio run view carry the cost", async () => {
    fake.enqueue({ content: 'Noon.', usage: { prompt_tokens: 400, completion_tokens: 40 } });
    const submitted = await server.request('/api/v1/clock/invoke/async', { method: 'POST', json: { query: 'time?' } });
    const done = await eventually(async () => {
      const r = await server.request(`/api/v1/tasks/${submitted.body.id}`);
      return r.body.status === 'completed' && r.body;
    });
    expect(done.result.metadata.usage).toMatchObject({ cost: 0.0014, currency: 'EUR' });

    fake.enqueue({ content: 'Noon.', usage: { prompt_tokens: 400, completion_tokens: 40 } });
    const run = await server.request('/studio/agents/clock/runs', { method: 'POST', json: { query: 'time?', thread_id: 'cost-1' } });
    const view = (run.body.events as StudioEvent[]).reduce(applyEvent, idleRun);
    expect(view.usage).toEqual({ prompt: 400, completion: 40, cost: 0.0014, currency: 'EUR' });
  });
});

describe('without a price table', () => {
  let server: TestServer;
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI(() => ({ content: 'plain', usage: { prompt_tokens: 5, completion_tokens: 5 } }));
    server = await startTestServer({ files, settings: { model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 }, watch: false } });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });

  it('usage has tokens and no cost fields', async () => {
    const res = await server.request('/api/v1/clock/invoke', { method: 'POST', json: { query: 'time?' } });
    expect(res.body.metadata.usage).toEqual({
      prompt_tokens: 5,
      completion_tokens: 5,
      total_tokens: 10,
      calls: [{ model: 'fake-1', prompt_tokens: 5, completion_tokens: 5 }],
    });
  });

  it('a price table the settings schema refuses stops start-up with the setting named', async () => {
    const started = await startTestServer({
      files,
      settings: { model: { baseUrl: fake.baseUrl, prices: { 'fake-1': { prompt_per_1m: -1, completion_per_1m: 1 } } }, watch: false },
    }).catch((err: unknown) => err);
    expect(String(started)).toMatch(/prices[\s\S]*prompt_per_1m[\s\S]*expected number to be >=0/);
  });
});
