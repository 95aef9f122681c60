/**
 * MCP servers' tools (#32, item 5): `mcp.servers` in the settings, through the official SDK
 * client. A stdio server (test/fixtures/mcp/stdio-server.mjs) started on first use, its stderr in
 * the log, its state and tools in /api/v1/status, killed mid-run and restarted; a Streamable HTTP
 * server on loopback with a header from ${ENV}; namespaced names; a server that cannot start is
 * an error in the run and the status, never a crash; unknown servers and tools are named.
 */
import { mkdtemp, readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

const FIXTURE = path.resolve(import.meta.dirname, '../fixtures/mcp/stdio-server.mjs');

/** A Streamable HTTP MCP server on loopback (stateless: a server per request), refusing requests without the token. */
async function startHttpMcp(token: string) {
  const http_ = http.createServer(async (req, res) => {
    if (req.headers.authorization !== `Bearer ${token}`) {
      res.writeHead(401).end();
      return;
    }
    const server = new McpServer({ name: 'loud', version: '1.0.0' });
    server.registerTool('shout', { description: 'Upper-cases the text', inputSchema: { text: z.string() } }, ({ text }) => ({
      content: [{ type: 'text', text: text.toUpperCase() }],
    }));
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    let raw = '';
    for await (const chunk of req) raw += chunk;
    await transport.handleRequest(req, res, raw ? JSON.parse(raw) : undefined);
  });
  await new Promise<void>((resolve) => http_.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(http_.address() as AddressInfo).port}/mcp`,
    close: () => new Promise<void>((resolve) => http_.close(() => resolve())),
  };
}

const files: Record<string, string> = {
  'agents/helper.ts': `import { defineAgent } from 'hangar';
export default defineAgent({ instructions: 'Use the tools.', tools: ['mcp:fixture/*', 'mcp:loud/shout'] });`,
  'agents/missing_tool.ts': `import { defineAgent } from 'hangar';
export default defineAgent({ instructions: 'x', tools: ['mcp:fixture/teleport'] });`,
  'agents/ghost.ts': `import { defineAgent } from 'hangar';
export default defineAgent({ instructions: 'x', tools: ['mcp:ghost/*'] });`,
  'agents/broken.ts': `import { defineAgent } from 'hangar';
export default defineAgent({ instructions: 'x', tools: ['mcp:nowhere/*'] });`,
};

describe("MCP servers' tools", () => {
  let server: TestServer;
  let fake: FakeOpenAI;
  let loud: Awaited<ReturnType<typeof startHttpMcp>>;
  let starts: string;

  beforeAll(async () => {
    starts = path.join(await mkdtemp(path.join(os.tmpdir(), 'hangar-mcp-')), 'starts.log');
    process.env.HANGAR_TEST_MCP_GREETING = 'hello';
    process.env.HANGAR_TEST_MCP_TOKEN = 'loud-token';
    loud = await startHttpMcp('loud-token');
    fake = await startFakeOpenAI(() => ({ content: 'no script' }));
    server = await startTestServer({
      files,
      settings: {
        model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 },
        mcp: {
          servers: {
            fixture: {
              command: process.execPath,
              args: [FIXTURE],
              env: { MCP_FIXTURE_GREETING: '${HANGAR_TEST_MCP_GREETING}', MCP_FIXTURE_STARTS: starts },
            },
            loud: { url: loud.url, headers: { Authorization: 'Bearer ${HANGAR_TEST_MCP_TOKEN}' } },
            nowhere: { command: '/nonexistent/mcp-server' },
          },
        },
        watch: false,
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
    await loud?.close();
    delete process.env.HANGAR_TEST_MCP_GREETING;
    delete process.env.HANGAR_TEST_MCP_TOKEN;
  });

  const invoke = (agent: string, query: string) => server.request(`/api/v1/${agent}/invoke`, { method: 'POST', json: { query } });
  const toolMessages = () =>
    fake.requests
      .at(-1)!
      .body.messages.filter((m) => m.role === 'tool')
      .map((m) => [m.tool_call_id, m.content]);
  const mcpStatus = async (name: string) =>
    (await server.request('/api/v1/status')).body.mcp_servers.find((s: { name: string }) => s.name === name);

  it('servers are idle until first used; then a run calls stdio and Streamable HTTP tools under namespaced names', async () => {
    expect(await mcpStatus('fixture')).toEqual({
      name: 'fixture',
      transport: 'stdio',
      state: 'idle',
      error: null,
      restarts: 0,
      pid: null,
      tools: [],
    });

    fake.enqueue(
      {
        tool_calls: [
          { id: 'e1', name: 'fixture__echo', arguments: { text: 'hi' } },
          { id: 'a1', name: 'fixture__add', arguments: { a: 2, b: 3 } },
          { id: 's1', name: 'loud__shout', arguments: { text: 'quiet' } },
          { id: 'f1', name: 'fixture__fail', arguments: {} },
        ],
      },
      { content: 'Done.' },
    );
    const res = await invoke('helper', 'use everything');
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('Done.');
    const offered = (fake.requests.at(-2)!.body.tools as Array<{ function: { name: string; parameters: any } }>).map((t) => t.function);
    expect(offered.map((t) => t.name).sort()).toEqual(['fixture__add', 'fixture__crash', 'fixture__echo', 'fixture__fail', 'loud__shout']);
    // The server's own JSON Schema reaches the model.
    expect(offered.find((t) => t.name === 'fixture__echo')!.parameters).toMatchObject({
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
    });
    expect(toolMessages()).toEqual([
      ['e1', 'hello: hi'],
      ['a1', JSON.stringify({ sum: 5 })],
      ['s1', 'QUIET'],
      ['f1', JSON.stringify({ error: "'fixture__fail' failed: the disk is full" })],
    ]);

    const status = await mcpStatus('fixture');
    expect(status).toMatchObject({ state: 'ready', error: null, restarts: 0, tools: ['echo', 'add', 'fail', 'crash'] });
    expect(status.pid).toEqual(expect.any(Number));
    expect(await mcpStatus('loud')).toMatchObject({ transport: 'http', state: 'ready', tools: ['shout'] });
    // The stdio server's stderr is in the log, named by the server.
    expect(server.logs.join('\n')).toContain('[mcp:fixture] fixture mcp server started (greeting: hello)');
  });

  it('a server killed mid-run: the call is an error the model reads, the run goes on, and the server is restarted', async () => {
    const before = (await mcpStatus('fixture')).pid;
    fake.enqueue({ tool_calls: [{ id: 'k1', name: 'fixture__crash', arguments: {} }] }, { content: 'It crashed; carrying on.' });
    const res = await invoke('helper', 'crash it');
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('It crashed; carrying on.');
    const [[id, content]] = toolMessages();
    expect(id).toBe('k1');
    expect(JSON.parse(content!).error).toMatch(/^'fixture__crash' failed: /);

    const restarted = await eventually(async () => {
      const status = await mcpStatus('fixture');
      return status.state === 'ready' && status.restarts >= 1 && status;
    });
    expect(restarted.pid).not.toBe(before);
    expect((await readFile(starts, 'utf8')).trim().split('\n').length).toBeGreaterThanOrEqual(2);

    fake.enqueue({ tool_calls: [{ id: 'e2', name: 'fixture__echo', arguments: { text: 'again' } }] }, { content: 'Back.' });
    expect((await invoke('helper', 'echo again')).body.response).toBe('Back.');
    expect(toolMessages()).toEqual([['e2', 'hello: again']]);
  });

  it('a server that cannot start fails the run that needs it (502, named) and shows failed in the status; Hangar keeps serving', async () => {
    const res = await invoke('broken', 'go');
    expect(res.status).toBe(502);
    expect(res.body.code).toBe('HANGAR_AGENT_MCP_UNAVAILABLE');
    expect(res.body.detail).toMatch(/MCP server 'nowhere' is not available: could not start: .*ENOENT/);
    const status = await mcpStatus('nowhere');
    expect(status).toMatchObject({ state: 'failed', error: expect.stringMatching(/could not start/), tools: [] });
    // Within its backoff, a second use fails at once with the same error.
    const again = await invoke('broken', 'go');
    expect(again.body.code).toBe('HANGAR_AGENT_MCP_UNAVAILABLE');
    expect((await server.request('/api/v1/status')).status).toBe(200);
  });

  it('an unknown server or tool is named in the run’s error', async () => {
    const ghost = await invoke('ghost', 'go');
    expect(ghost.status).toBe(500);
    expect(ghost.body.code).toBe('HANGAR_AGENT_MCP_UNKNOWN_SERVER');
    expect(ghost.body.detail).toBe("agent 'ghost' lists 'mcp:ghost/*', but mcp.servers has no server 'ghost'");
    const missing = await invoke('missing_tool', 'go');
    expect(missing.body.code).toBe('HANGAR_AGENT_MCP_NO_TOOL');
    expect(missing.body.detail).toMatch(/has no such tool \(it has: echo, add, fail, crash\)/);
  });

  it('stopping Hangar stops the stdio server', async () => {
    const { pid } = await mcpStatus('fixture');
    await server.stop();
    await eventually(() => {
      try {
        process.kill(pid, 0);
        return false;
      } catch {
        return true;
      }
    });
  });
});
