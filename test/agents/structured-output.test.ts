/**
 * Structured output (#32): `ctx.model.object(schema, messages)` against a scripted chat-completions
 * server — the JSON-Schema response format, one repair round, the forced tool call for a server that
 * refuses the response format, a schema whose root is not an object, and usage counted.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';

const agent = (model: string) => `import { defineAgent, z } from 'hangar';
const Trip = z.object({ city: z.string(), days: z.number().int().positive(), pace: z.enum(['slow', 'fast']).default('slow') });
export default defineAgent({
  config: { model: '${model}' },
  run: async (input, ctx) => {
    const mode = input.context.mode;
    if (input.context.list) {
      const cities = await ctx.model.object(z.array(z.string()).min(2), [{ role: 'user', content: input.query }], { name: 'cities', mode });
      return { response: cities.join(', '), output: cities };
    }
    const trip = await ctx.model.object(Trip, [{ role: 'user', content: input.query }], { name: 'trip', description: 'A planned trip', mode });
    return { response: trip.city + ' for ' + trip.days + ' days', output: trip };
  },
});
`;

describe('ctx.model.object (real server, scripted model)', () => {
  let server: TestServer;
  let fake: FakeOpenAI;

  beforeAll(async () => {
    fake = await startFakeOpenAI(() => ({ content: 'no script' }));
    server = await startTestServer({
      files: { 'agents/planner.ts': agent('json-model'), 'agents/oldserver.ts': agent('tools-only-model') },
      settings: { model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 }, watch: false },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });

  const post = (path: string, json: unknown) => server.request(path, { method: 'POST', json });
  const since = () => {
    const at = fake.requests.length;
    return () => fake.requests.slice(at);
  };

  it('asks with the schema as a JSON-Schema response format and answers the parsed, typed value', async () => {
    const sent = since();
    fake.enqueue({ content: '{"city":"Lisbon","days":3}', usage: { prompt_tokens: 20, completion_tokens: 8 } });
    const { status, body } = await post('/api/v1/planner/invoke', { query: 'Plan a trip' });
    expect(status).toBe(200);
    expect(body.output).toEqual({ city: 'Lisbon', days: 3, pace: 'slow' });
    expect(body.response).toBe('Lisbon for 3 days');
    const format = sent()[0]!.body.response_format as any;
    expect(format).toMatchObject({ type: 'json_schema', json_schema: { name: 'trip', description: 'A planned trip', strict: false } });
    expect(format.json_schema.schema).toMatchObject({
      type: 'object',
      properties: { city: { type: 'string' }, days: { type: 'integer', exclusiveMinimum: 0 }, pace: { enum: ['slow', 'fast'] } },
      required: ['city', 'days'],
    });
    expect(sent()[0]!.body.tools).toBeUndefined();
    expect(body.metadata.usage).toMatchObject({ prompt_tokens: 20, completion_tokens: 8 });
  });

  it('gives a wrong answer one repair round, showing the model what was wrong', async () => {
    const sent = since();
    fake.enqueue({ content: '```json\n{"city":"Porto","days":-2}\n```' }, { content: '{"city":"Porto","days":2,"pace":"fast"}' });
    const { body } = await post('/api/v1/planner/invoke', { query: 'Plan a trip' });
    expect(body.output).toEqual({ city: 'Porto', days: 2, pace: 'fast' });
    const [, second] = sent();
    expect(second!.body.messages.slice(-2)).toEqual([
      { role: 'assistant', content: '```json\n{"city":"Porto","days":-2}\n```' },
      { role: 'user', content: expect.stringMatching(/does not match the required JSON Schema:[\s\S]*days[\s\S]*Answer again/) },
    ]);
  });

  it('a second wrong answer is a 502 naming the problem', async () => {
    fake.enqueue({ content: 'Sure! Lisbon is lovely.' }, { content: '{"city":"Lisbon"}' });
    const { status, body } = await post('/api/v1/planner/invoke', { query: 'Plan a trip' });
    expect(status).toBe(502);
    expect(body.detail).toMatch(/did not match the schema after one repair: .*days/s);
  });

  it('falls back to a forced tool call when the server refuses the response format, and remembers it', async () => {
    const sent = since();
    fake.enqueue(
      { status: 400, error: "response_format 'json_schema' is not supported" },
      { tool_calls: [{ name: 'trip', arguments: { city: 'Oslo', days: 4 } }] },
    );
    const { status, body } = await post('/api/v1/oldserver/invoke', { query: 'Plan a trip' });
    expect(status).toBe(200);
    expect(body.output).toEqual({ city: 'Oslo', days: 4, pace: 'slow' });
    const [refused, forced] = sent();
    expect(refused!.body.response_format).toBeDefined();
    expect(forced!.body.response_format).toBeUndefined();
    expect(forced!.body.tool_choice).toEqual({ type: 'function', function: { name: 'trip' } });
    expect((forced!.body.tools as any[])[0].function).toMatchObject({
      name: 'trip',
      parameters: { type: 'object', required: ['city', 'days'] },
    });

    // The next call to that model goes straight to the tool call, repairs included.
    const next = since();
    fake.enqueue(
      { tool_calls: [{ id: 'c1', name: 'trip', arguments: { city: 'Oslo' } }] },
      { tool_calls: [{ name: 'trip', arguments: { city: 'Oslo', days: 1 } }] },
    );
    const again = await post('/api/v1/oldserver/invoke', { query: 'Plan a trip' });
    expect(again.body.output).toEqual({ city: 'Oslo', days: 1, pace: 'slow' });
    expect(next()[0]!.body.response_format).toBeUndefined();
    expect(next()[1]!.body.messages.slice(-2)).toEqual([
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'trip', arguments: '{"city":"Oslo"}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: expect.stringMatching(/does not match/) },
    ]);
  });

  it('a schema whose root is not an object is sent wrapped as {value} and answered unwrapped', async () => {
    const sent = since();
    fake.enqueue({ content: '{"value":["Rome","Turin"]}' });
    const { body } = await post('/api/v1/planner/invoke', { query: 'Two cities', context: { list: true } });
    expect(body.output).toEqual(['Rome', 'Turin']);
    expect((sent()[0]!.body.response_format as any).json_schema.schema).toMatchObject({
      type: 'object',
      properties: { value: { type: 'array', items: { type: 'string' }, minItems: 2 } },
      required: ['value'],
    });
  });

  it('does not stream the JSON as answer tokens', async () => {
    fake.enqueue({ content: '{"city":"Bergen","days":2}' });
    const read = await readSse(`${server.url}/api/v1/planner/invoke/stream`, { method: 'POST', json: { query: 'Plan' } });
    expect(read.frames.map((f) => f.data.event)).toEqual(['start', 'step', 'complete']);
    expect(read.frames.at(-1)!.data.response).toBe('Bergen for 2 days');
  });
});
