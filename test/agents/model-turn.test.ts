/**
 * One model call with tools (#32), against a loopback chat-completions server: tool calls read
 * from a whole answer and assembled from streamed deltas, usage from the body and from the last
 * chunk, and a refusal keeping the endpoint's status.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelProvider, ModelEndpointError } from '../../core/agents/model.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';

describe('provider.turn', () => {
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());

  const provider = () => createModelProvider({ baseUrl: fake.baseUrl, model: 'm1', timeoutMs: 2000, retries: 0 });
  const tools = [{ name: 'look', description: 'Looks', parameters: { type: 'object', properties: { q: { type: 'string' } } } }];
  const calls = [
    { id: 'a', name: 'look', arguments: { q: 'first' } },
    { id: 'b', name: 'look', arguments: { q: 'second, with "quotes"' } },
  ];
  const expected = [
    { id: 'a', name: 'look', arguments: '{"q":"first"}' },
    { id: 'b', name: 'look', arguments: '{"q":"second, with \\"quotes\\""}' },
  ];

  it('reads tool calls and usage from a whole answer', async () => {
    fake.enqueue({ tool_calls: calls, usage: { prompt_tokens: 7, completion_tokens: 3 } });
    const turn = await provider().turn({ messages: [{ role: 'user', content: 'q' }], tools, tool_choice: 'required' });
    expect(fake.requests.at(-1)!.body).toMatchObject({
      stream: false,
      tool_choice: 'required',
      tools: [{ type: 'function', function: tools[0] }],
    });
    expect(turn).toEqual({
      model: 'm1',
      content: '',
      tool_calls: expected,
      finish_reason: 'tool_calls',
      usage: { prompt_tokens: 7, completion_tokens: 3 },
    });
  });

  it('assembles streamed tool-call deltas by index and reads usage from the last chunk', async () => {
    fake.enqueue({ content: 'Looking. ', tool_calls: calls, usage: { prompt_tokens: 9, completion_tokens: 4 }, chunkDelayMs: 2 });
    const tokens: string[] = [];
    const turn = await provider().turn({ messages: [{ role: 'user', content: 'q' }], tools, onToken: (t) => tokens.push(t) });
    expect(fake.requests.at(-1)!.body).toMatchObject({ stream: true, stream_options: { include_usage: true } });
    expect(tokens.join('')).toBe('Looking. ');
    expect(turn).toEqual({
      model: 'm1',
      content: 'Looking. ',
      tool_calls: expected,
      finish_reason: 'tool_calls',
      usage: { prompt_tokens: 9, completion_tokens: 4 },
    });
  });

  it('sends the conversation of a tool loop in the protocol shape', async () => {
    fake.enqueue({ content: 'ok' });
    await provider().turn({
      messages: [
        { role: 'user', content: 'q' },
        { role: 'assistant', content: null, tool_calls: [{ id: 'a', name: 'look', arguments: '{}' }] },
        { role: 'tool', tool_call_id: 'a', content: '"seen"' },
      ],
    });
    expect(fake.requests.at(-1)!.body.messages).toEqual([
      { role: 'user', content: 'q' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'look', arguments: '{}' } }] },
      { role: 'tool', tool_call_id: 'a', content: '"seen"' },
    ]);
  });

  it('a refusal is a 502 that keeps the status the endpoint answered', async () => {
    fake.enqueue({ status: 400, error: 'tools are not supported' });
    const err = await provider()
      .turn({ messages: [{ role: 'user', content: 'q' }], tools })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelEndpointError);
    expect((err as ModelEndpointError).status).toBe(502);
    expect((err as ModelEndpointError).upstream).toBe(400);
    expect((err as ModelEndpointError).code).toBe('HANGAR_AGENT_MODEL_REFUSED');
    expect((err as ModelEndpointError).detail).toMatch(/^model endpoint answered 400: /);
  });
});
