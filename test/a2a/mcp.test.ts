import http from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';

const files = {
  'agents/echo.ts': agentSource(`{
    description: 'Echoes the query',
    run: async (input, ctx) => { ctx.step('echoed'); return 'echo: ' + input.query; },
  }`),
  'agents/boom.ts': agentSource(`{ description: 'Always fails', run: async () => { throw new Error('exploded on purpose'); } }`),
};

/** A raw request, so the Host header is ours to choose (fetch would not let us forge it). */
function rawPost(url: string, host: string, body: unknown): Promise<{ status: number; text: string }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        hostname,
        port,
        path: '/mcp',
        method: 'POST',
        headers: { host, 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      },
      (res) => {
        let text = '';
        res.on('data', (c) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

describe('MCP at /mcp with the official SDK client', () => {
  let server: TestServer;
  let client: Client;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: true } });
    client = new Client({ name: 'hangar-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
  });
  afterAll(async () => {
    await client.close();
    await server.stop();
  });

  it('lists every agent as a tool with its card description and a message/thread input', async () => {
    const { tools } = await client.listTools();
    const echo = tools.find((t) => t.name === 'echo')!;
    expect(echo.description).toBe('Echoes the query');
    expect(echo.inputSchema.properties).toHaveProperty('message');
    expect(echo.inputSchema.properties).toHaveProperty('thread_id');
    expect(echo.inputSchema.required).toEqual(['message']);
    // Beside the agents, the tool that decides human approvals (see approvals.test.ts).
    expect(tools.map((t) => t.name).sort()).toEqual(['boom', 'echo', 'hangar.decide_approval']);
  });

  it('calls an agent as a tool', async () => {
    const result = await client.callTool({ name: 'echo', arguments: { message: 'over mcp' } });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'echo: over mcp' }]);
    expect(result.structuredContent).toMatchObject({ response: 'echo: over mcp', agent_type: 'echo', steps_taken: ['echoed'] });
  });

  it('an agent failure is a tool error, not a protocol error', async () => {
    const result = await client.callTool({ name: 'boom', arguments: { message: 'x' } });
    expect(result.isError).toBe(true);
    expect((result.content as Array<{ text: string }>)[0]!.text).toMatch(/exploded on purpose/);
  });

  it('an agent dropped into the workspace becomes a tool without a restart', async () => {
    await server.write('agents/late.ts', agentSource(`{ description: 'Arrived later', run: async () => 'late' }`));
    const tools = await eventually(async () => {
      const { tools } = await client.listTools();
      return tools.some((t) => t.name === 'late') && tools;
    }, 10_000);
    expect(tools.find((t) => t.name === 'late')!.description).toBe('Arrived later');
  });

  it('refuses a request whose Host is not this server (DNS rebinding)', async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } },
    };
    const evil = await rawPost(server.url, 'evil.example:80', init);
    expect(evil.status).toBe(403);
    const own = await rawPost(server.url, `127.0.0.1:${server.port}`, init);
    expect(own.status).toBe(200);
  });
});
