/**
 * Tool events everywhere a run is watched (#32, item 3): the model's tool calls reach A2A
 * JSON-RPC streams (a `working` status-update carrying the call as a data part), MCP clients that
 * asked for progress (`notifications/progress`), and /optimize/invoke's `tool_calls` (the calls
 * made, with results and errors).
 */
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';

const files: Record<string, string> = {
  'agents/clock.ts': `import { defineAgent, defineTool, z } from 'hangar';
const now = defineTool({ name: 'now', description: 'The time in a zone', input: z.object({ zone: z.string() }), run: ({ zone }) => zone + ' 12:00' });
export default defineAgent({ description: 'Tells the time', instructions: 'Tell the time.', tools: [now] });`,
};

describe('tool calls in A2A and MCP progress and in /optimize/invoke', () => {
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

  it('an A2A message/stream carries each tool call as a working status-update with a data part', async () => {
    fake.enqueue(
      {
        tool_calls: [
          { id: 'a1', name: 'now', arguments: { zone: 'UTC' } },
          { id: 'a2', name: 'now', arguments: { zone: 42 } },
        ],
      },
      { content: 'Noon.' },
    );
    const stream = await readSse(`${server.url}/api/v1/clock/a2a`, {
      method: 'POST',
      json: {
        jsonrpc: '2.0',
        id: 1,
        method: 'message/stream',
        params: { message: { kind: 'message', role: 'user', messageId: 'm-1', parts: [{ kind: 'text', text: 'time?' }] } },
      },
    });
    const calls = stream.frames
      .map((f) => f.data.result)
      .filter((r) => r?.kind === 'status-update' && r.status.message?.parts?.[0]?.kind === 'data')
      .map((r) => {
        expect(r).toMatchObject({ final: false, status: { state: 'working', message: { role: 'agent', kind: 'message' } } });
        return r.status.message.parts[0].data;
      });
    // A step's calls run concurrently: each call's start comes before its end.
    const of = (id: string) => calls.filter((c) => c.call_id === id);
    expect(of('a1').map((c) => c.event)).toEqual(['tool_start', 'tool_end']);
    expect(of('a2').map((c) => c.event)).toEqual(['tool_start', 'tool_end']);
    expect(of('a1')[1]).toMatchObject({ name: 'now', arguments: { zone: 'UTC' }, result: 'UTC 12:00', node: 'agent' });
    expect(of('a1')[1].duration_ms).toEqual(expect.any(Number));
    expect(of('a2')[1].error).toMatch(/invalid arguments for 'now'/);
    expect(of('a2')[1]).not.toHaveProperty('response');
    const last = stream.frames.at(-1)!.data.result;
    expect(last).toMatchObject({ kind: 'status-update', final: true, status: { state: 'completed' } });
  });

  it('an MCP tool call with a progress token gets a progress notification per tool_start and tool_end', async () => {
    const mcp = new McpClient({ name: 'hangar-test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    try {
      fake.enqueue({ tool_calls: [{ id: 'p1', name: 'now', arguments: { zone: 'CET' } }] }, { content: 'It is noon in CET.' });
      const progress: Array<{ progress: number; message?: string }> = [];
      const result = await mcp.callTool({ name: 'clock', arguments: { message: 'time in CET?' } }, undefined, {
        onprogress: (p) => progress.push({ progress: p.progress, message: p.message }),
      });
      expect(result.content).toEqual([{ type: 'text', text: 'It is noon in CET.' }]);
      expect(progress.map((p) => p.progress)).toEqual([1, 2]);
      expect(progress[0]!.message).toBe('tool now (p1) started with {"zone":"CET"}');
      expect(progress[1]!.message).toMatch(/^tool now \(p1\) finished in \d+ ms: "CET 12:00"$/);
    } finally {
      await mcp.close();
    }
  });

  it("/optimize/invoke's tool_calls are the calls the model made, with results and errors", async () => {
    fake.enqueue(
      {
        tool_calls: [
          { id: 'o1', name: 'now', arguments: { zone: 'JST' } },
          { id: 'o2', name: 'teleport', arguments: {} },
        ],
      },
      { content: 'Noon in Tokyo.' },
    );
    const res = await server.request('/api/v1/clock/optimize/invoke', {
      method: 'POST',
      json: { query: 'time in Tokyo?', include_steps: true },
    });
    expect(res.status).toBe(200);
    expect(res.body.tool_calls[0]).toEqual({ name: 'now', args: { zone: 'JST' }, result: 'JST 12:00' });
    expect(res.body.tool_calls[1]).toMatchObject({ name: 'teleport', args: {} });
    expect(res.body.tool_calls[1].error).toMatch(/no tool named 'teleport'/);
    expect(res.body.steps_taken).toEqual(expect.arrayContaining(['tool:now', 'tool:teleport']));
  });
});
