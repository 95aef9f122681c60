import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createModelProvider, ModelCallAborted, UnconfiguredProvider } from '../../core/agents/model.js';
import { HangarError } from '../../core/kernel/errors.js';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';

describe('OpenAI-compatible provider (against a loopback chat-completions server)', () => {
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI();
  });
  afterAll(() => fake.close());

  const settings = () => ({ baseUrl: fake.baseUrl, model: 'm1', timeoutMs: 2000, retries: 2 });

  it('returns a whole completion when not streaming', async () => {
    fake.enqueue({ content: 'plain answer' });
    const provider = createModelProvider(settings());
    expect(await provider.complete({ messages: [{ role: 'user', content: 'q' }] })).toBe('plain answer');
    expect(fake.requests.at(-1)!.body.stream).toBeFalsy();
  });

  it('streams tokens in order and returns their concatenation', async () => {
    fake.enqueue({ chunks: ['a', 'b', 'c'], chunkDelayMs: 5 });
    const tokens: string[] = [];
    const text = await createModelProvider(settings()).complete({
      messages: [{ role: 'user', content: 'q' }],
      onToken: (t) => tokens.push(t),
    });
    expect(tokens).toEqual(['a', 'b', 'c']);
    expect(text).toBe('abc');
  });

  it('retries a 5xx answer with backoff and then succeeds', async () => {
    const before = fake.requests.length;
    fake.enqueue({ status: 500 }, { status: 503 }, { content: 'third time' });
    expect(await createModelProvider(settings()).complete({ messages: [{ role: 'user', content: 'q' }] })).toBe('third time');
    expect(fake.requests.length - before).toBe(3);
  });

  it('gives up after the configured retries with a 502 naming the upstream status', async () => {
    fake.enqueue({ status: 500, error: 'broken' }, { status: 500 });
    const err = await createModelProvider({ ...settings(), retries: 1 })
      .complete({ messages: [{ role: 'user', content: 'q' }] })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HangarError);
    expect((err as HangarError).status).toBe(502);
    expect(String((err as HangarError).detail)).toMatch(/answered 500/);
  });

  it('times out a slow endpoint as a 504, as gateways answer an upstream that does not answer in time', async () => {
    fake.enqueue({ content: 'late', delayMs: 500 });
    const err = await createModelProvider({ ...settings(), timeoutMs: 100, retries: 0 })
      .complete({ messages: [{ role: 'user', content: 'q' }] })
      .catch((e: unknown) => e);
    expect((err as HangarError).status).toBe(504);
    expect(String((err as HangarError).detail)).toMatch(/timed out/);
  });

  it('stops a streamed call when the signal aborts', async () => {
    fake.enqueue({ chunks: ['1', '2', '3', '4', '5'], chunkDelayMs: 40 });
    const controller = new AbortController();
    const tokens: string[] = [];
    const call = createModelProvider(settings()).complete({
      messages: [{ role: 'user', content: 'q' }],
      signal: controller.signal,
      onToken: (t) => {
        tokens.push(t);
        if (tokens.length === 2) controller.abort();
      },
    });
    await expect(call).rejects.toBeInstanceOf(ModelCallAborted);
    expect(tokens.length).toBeLessThan(5);
  });

  it('resolves a ${ENV} key at call time and sends it as the bearer token', async () => {
    const env: NodeJS.ProcessEnv = { MY_KEY: 'sk-first' };
    const provider = createModelProvider({ ...settings(), apiKey: '${MY_KEY}' }, env);
    fake.enqueue({ content: 'ok' }, { content: 'ok' });
    await provider.complete({ messages: [{ role: 'user', content: 'q' }] });
    expect(fake.requests.at(-1)!.authorization).toBe('Bearer sk-first');
    env.MY_KEY = 'sk-rotated';
    await provider.complete({ messages: [{ role: 'user', content: 'q' }] });
    expect(fake.requests.at(-1)!.authorization).toBe('Bearer sk-rotated');
  });

  it('names the missing variable (not its value) when the key reference cannot be resolved', async () => {
    const err = await createModelProvider({ ...settings(), apiKey: '${NOT_SET_ANYWHERE}' }, {})
      .complete({ messages: [{ role: 'user', content: 'q' }] })
      .catch((e: unknown) => e);
    expect((err as HangarError).status).toBe(503);
    expect(String((err as HangarError).detail)).toMatch(/NOT_SET_ANYWHERE/);
  });

  it('is unconfigured without a base URL', async () => {
    const provider = createModelProvider({ model: 'm', timeoutMs: 1, retries: 0 });
    expect(provider).toBeInstanceOf(UnconfiguredProvider);
    expect(provider.configured).toBe(false);
    await expect(provider.complete({ messages: [] })).rejects.toMatchObject({ status: 503 });
  });
});
