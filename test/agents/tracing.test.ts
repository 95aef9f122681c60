/**
 * Traces (#32, item 8): with `telemetry.otlp.endpoint` set, a run is exported over OTLP/HTTP as
 * OpenTelemetry spans with the GenAI conventions — invoke_agent → node → chat / execute_tool —
 * to a loopback receiver (a node:http server decoding what arrives). Off by default; content
 * only when asked; a failing run's span is an error; a header naming an unset variable stops
 * start-up with the setting named.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

interface Received {
  url: string;
  contentType: string;
  authorization: string | undefined;
  body: Buffer;
}

/** A loopback OTLP/HTTP collector: records every request. */
async function startReceiver(): Promise<{ url: string; received: Received[]; close(): Promise<void> }> {
  const received: Received[] = [];
  const server = http.createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    received.push({
      url: req.url ?? '',
      contentType: String(req.headers['content-type']),
      authorization: req.headers.authorization,
      body: Buffer.concat(chunks),
    });
    const json = String(req.headers['content-type']).includes('json');
    res.writeHead(200, { 'content-type': json ? 'application/json' : 'application/x-protobuf' }).end(json ? '{}' : '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

interface Span {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status?: { code?: number; message?: string };
  attrs: Record<string, unknown>;
}

type AnyValue = {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
  doubleValue?: number;
  arrayValue?: { values: AnyValue[] };
};
const decodeValue = (v: AnyValue): unknown =>
  v.stringValue ??
  (v.intValue !== undefined ? Number(v.intValue) : undefined) ??
  v.boolValue ??
  v.doubleValue ??
  (v.arrayValue ? v.arrayValue.values.map(decodeValue) : undefined);

/** Every span in the OTLP/JSON requests received. */
function spansOf(received: Received[]): Span[] {
  return received.flatMap((r) =>
    (JSON.parse(r.body.toString('utf8')).resourceSpans ?? []).flatMap((rs: any) =>
      rs.scopeSpans.flatMap((ss: any) =>
        ss.spans.map((s: any) => ({
          ...s,
          parentSpanId: s.parentSpanId || undefined,
          attrs: Object.fromEntries((s.attributes ?? []).map((a: { key: string; value: AnyValue }) => [a.key, decodeValue(a.value)])),
        })),
      ),
    ),
  );
}

const files: Record<string, string> = {
  'agents/clock.ts': `import { defineAgent, defineTool, z } from 'hangar';
const now = defineTool({ name: 'now', description: 'The time', input: z.object({ zone: z.string() }), run: ({ zone }) => zone + ' 12:00' });
export default defineAgent({ instructions: 'Tell the time.', tools: [now] });`,
  'agents/broken.ts': `import { defineAgent } from 'hangar';
export default defineAgent({ run: async () => { throw new Error('the clock fell off the wall'); } });`,
};

describe('OpenTelemetry spans over OTLP/HTTP (JSON)', () => {
  let server: TestServer;
  let fake: FakeOpenAI;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    fake = await startFakeOpenAI(() => ({ content: 'no script' }));
    server = await startTestServer({
      files,
      settings: {
        model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 },
        telemetry: { serviceName: 'hangar-test', otlp: { endpoint: receiver.url, protocol: 'http/json', batchDelayMs: 20 } },
        watch: false,
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
    await receiver?.close();
  });

  it('a tool-using run is a trace: invoke_agent → node → chat and execute_tool spans with GenAI attributes', async () => {
    fake.enqueue(
      { tool_calls: [{ id: 'c1', name: 'now', arguments: { zone: 'UTC' } }], usage: { prompt_tokens: 31, completion_tokens: 7 } },
      { content: 'Noon.', usage: { prompt_tokens: 45, completion_tokens: 3 } },
    );
    const res = await server.request('/api/v1/clock/invoke', { method: 'POST', json: { query: 'time?', thread_id: 'trace-1' } });
    expect(res.status).toBe(200);
    const runId = res.body.metadata.run_id;

    const spans = await eventually(() => {
      const all = spansOf(receiver.received);
      const run = all.find((s) => s.attrs['hangar.run.id'] === runId);
      return run && all.filter((s) => s.traceId === run.traceId).length >= 5 && all.filter((s) => s.traceId === run.traceId);
    });
    expect(receiver.received[0]!.url).toBe('/v1/traces');
    expect(receiver.received[0]!.contentType).toBe('application/json');
    const resource = JSON.parse(receiver.received[0]!.body.toString()).resourceSpans[0].resource.attributes;
    expect(resource).toContainEqual({ key: 'service.name', value: { stringValue: 'hangar-test' } });

    const byName = (name: string) => spans.filter((s) => s.name === name);
    const [run] = byName('invoke_agent clock');
    expect(run!.parentSpanId).toBeUndefined();
    expect(run!.attrs).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'clock',
      'gen_ai.conversation.id': 'trace-1',
      'hangar.run.status': 'completed',
    });
    const [node] = byName('node agent');
    expect(node!.parentSpanId).toBe(run!.spanId);

    const chats = byName('chat fake-1');
    expect(chats).toHaveLength(2);
    for (const chat of chats) {
      expect(chat.parentSpanId).toBe(node!.spanId);
      expect(chat.kind).toBe(3); // SPAN_KIND_CLIENT
      expect(chat.attrs).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'fake-1',
      });
    }
    const usage = chats.map((c) => [
      c.attrs['gen_ai.usage.input_tokens'],
      c.attrs['gen_ai.usage.output_tokens'],
      c.attrs['gen_ai.response.finish_reasons'],
    ]);
    expect(usage).toEqual(
      expect.arrayContaining([
        [31, 7, ['tool_calls']],
        [45, 3, ['stop']],
      ]),
    );
    expect(chats[0]!.attrs['hangar.request.tools']).toEqual(['now']);

    const [tool] = byName('execute_tool now');
    expect(tool!.parentSpanId).toBe(node!.spanId);
    expect(tool!.attrs).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'now',
      'gen_ai.tool.call.id': 'c1',
      'gen_ai.tool.type': 'function',
    });
    // Content is opt-in.
    expect(tool!.attrs['gen_ai.tool.call.arguments']).toBeUndefined();
    expect(chats[0]!.attrs['gen_ai.input.messages']).toBeUndefined();
  });

  it('a run that fails has an error span naming what failed; a tool that failed is an error span', async () => {
    const failed = await server.request('/api/v1/broken/invoke', { method: 'POST', json: { query: 'tick' } });
    expect(failed.status).toBe(500);
    fake.enqueue({ tool_calls: [{ id: 'bad', name: 'now', arguments: { zone: 5 } }] }, { content: 'Sorry.' });
    await server.request('/api/v1/clock/invoke', { method: 'POST', json: { query: 'time?' } });

    const spans = await eventually(() => {
      const all = spansOf(receiver.received);
      return all.some((s) => s.name === 'invoke_agent broken') && all.some((s) => s.attrs['gen_ai.tool.call.id'] === 'bad') && all;
    });
    const run = spans.find((s) => s.name === 'invoke_agent broken')!;
    expect(run.status).toMatchObject({ code: 2, message: expect.stringMatching(/the clock fell off the wall/) });
    const node = spans.find((s) => s.name === 'node agent' && s.parentSpanId === run.spanId)!;
    expect(node.status).toMatchObject({ code: 2 });
    const tool = spans.find((s) => s.attrs['gen_ai.tool.call.id'] === 'bad')!;
    expect(tool.status).toMatchObject({ code: 2, message: expect.stringMatching(/invalid arguments for 'now'/) });
    expect(tool.attrs['error.type']).toBe('tool_error');
  });
});

describe('OTLP/HTTP protobuf, content capture, and tracing off', () => {
  let fake: FakeOpenAI;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  beforeAll(async () => {
    receiver = await startReceiver();
    fake = await startFakeOpenAI(() => ({ content: 'no script' }));
  });
  afterAll(async () => {
    await fake?.close();
    await receiver?.close();
  });

  it('protobuf by default, to the endpoint as given when it names /v1/traces, with headers from ${ENV}; content when captureContent', async () => {
    process.env.HANGAR_TEST_OTLP_TOKEN = 'Bearer secret-otlp';
    const server = await startTestServer({
      files,
      settings: {
        model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 },
        telemetry: {
          captureContent: true,
          otlp: { endpoint: `${receiver.url}/v1/traces`, headers: { Authorization: '${HANGAR_TEST_OTLP_TOKEN}' }, batchDelayMs: 20 },
        },
        watch: false,
      },
    });
    try {
      fake.enqueue({ tool_calls: [{ id: 'p1', name: 'now', arguments: { zone: 'Europe/Oslo' } }] }, { content: 'Noon in Oslo.' });
      await server.request('/api/v1/clock/invoke', { method: 'POST', json: { query: 'time in Oslo?' } });
      const body = await eventually(() => {
        const all = Buffer.concat(receiver.received.map((r) => r.body)).toString('latin1');
        return all.includes('execute_tool now') && all.includes('Noon in Oslo.') && all;
      });
      expect(receiver.received[0]).toMatchObject({
        url: '/v1/traces',
        contentType: 'application/x-protobuf',
        authorization: 'Bearer secret-otlp',
      });
      for (const text of [
        'invoke_agent clock',
        'gen_ai.operation.name',
        'gen_ai.usage.input_tokens',
        'gen_ai.tool.call.arguments',
        'Europe/Oslo',
        'gen_ai.tool.call.result',
        'time in Oslo?',
      ])
        expect(body).toContain(text);
    } finally {
      await server.stop();
      delete process.env.HANGAR_TEST_OTLP_TOKEN;
    }
  });

  it('off without an endpoint: no tracer is made', async () => {
    const server = await startTestServer({ files, settings: { model: { baseUrl: fake.baseUrl, model: 'fake-1' }, watch: false } });
    try {
      expect(server.ctx.services.get('agents').tracing.tracing.enabled).toBe(false);
    } finally {
      await server.stop();
    }
  });

  it('a header naming an unset variable stops start-up with the setting named', async () => {
    const started = await startTestServer({
      files,
      settings: {
        telemetry: { otlp: { endpoint: receiver.url, headers: { 'x-api-key': '${HANGAR_TEST_UNSET_OTLP_KEY}' } } },
        watch: false,
      },
    }).catch((err: unknown) => err);
    expect(String(started)).toMatch(/telemetry\.otlp\.headers\.x-api-key: environment variable HANGAR_TEST_UNSET_OTLP_KEY is not set/);
  });
});
