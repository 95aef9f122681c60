import { describe, expect, it } from 'vitest';
import { endpointClient, toolCallsOf, toWireMessage, toWireTools } from '../../core/lib/model-client.js';

const settings = { baseUrl: 'http://127.0.0.1:11434/v1', apiKey: '', timeoutMs: 60_000, retries: 2 };

describe('model client', () => {
  it('shares one client per settings and makes a new one when any setting differs', async () => {
    const client = await endpointClient(settings);
    expect(await endpointClient({ ...settings })).toBe(client);
    expect(client.baseURL).toBe(settings.baseUrl);
    expect(client.timeout).toBe(60_000);
    expect(client.maxRetries).toBe(2);
    // A local server needs no key; the client insists on one.
    expect(client.apiKey).toBe('not-needed');
    for (const changed of [
      { timeoutMs: 1_000 },
      { retries: 0 },
      { apiKey: 'sk-other' },
      { baseUrl: 'http://127.0.0.1:8080/v1' },
      { headers: { 'x-tenant': 'a' } },
    ]) {
      expect(await endpointClient({ ...settings, ...changed })).not.toBe(client);
    }
  });

  it('turns flat messages, tools and tool calls into the protocol shape and back', () => {
    const call = { id: 'c1', name: 'lookup', arguments: '{"q":1}' };
    expect(toWireMessage({ role: 'assistant', content: null, tool_calls: [call] })).toEqual({
      role: 'assistant',
      content: null,
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'lookup', arguments: '{"q":1}' } }],
    });
    expect(toWireMessage({ role: 'assistant', content: null })).toEqual({ role: 'assistant', content: '' });
    expect(toWireMessage({ role: 'tool', tool_call_id: 'c1', content: '42' })).toEqual({ role: 'tool', tool_call_id: 'c1', content: '42' });
    // Fields the protocol does not know (a chat message's timestamp) are not sent.
    expect(toWireMessage({ role: 'user', content: 'hi', timestamp: 'now' } as never)).toEqual({ role: 'user', content: 'hi' });
    expect(toWireTools([{ name: 'lookup', description: 'Looks up', parameters: { type: 'object' } }])).toEqual([
      { type: 'function', function: { name: 'lookup', description: 'Looks up', parameters: { type: 'object' } } },
    ]);
    const message = {
      role: 'assistant' as const,
      content: null,
      refusal: null,
      tool_calls: [
        { id: 'c1', type: 'function' as const, function: { name: 'lookup', arguments: '{"q":1}' } },
        { id: 'c2', type: 'custom' as const, custom: { name: 'grammar', input: 'x' } },
      ],
    };
    expect(toolCallsOf(message)).toEqual([call]);
    expect(toolCallsOf(undefined)).toEqual([]);
  });
});
