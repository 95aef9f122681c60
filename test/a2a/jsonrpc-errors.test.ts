import { randomUUID } from 'node:crypto';
import { type Message, Role } from '@a2a-js/sdk';
import { ClientFactory, DefaultAgentCardResolver, JsonRpcTransportFactory } from '@a2a-js/sdk/client';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';

/**
 * Issue #21, item 3: a body the JSON-RPC endpoints cannot read is answered as JSON-RPC (-32700 for
 * JSON that does not parse, -32600 naming what is wrong), and every A2A JSON-RPC and MCP call is
 * in the invocation log like a REST call.
 */
const files = {
  'agents/echo.ts': agentSource(`{ run: async (input) => 'echo: ' + input.query }`),
  'agents/boom.ts': agentSource(`{ run: async () => { throw new Error('exploded on purpose'); } }`),
};

describe('JSON-RPC errors and invocation logs', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { watch: false, logs: { enabled: true } } });
  });
  afterAll(() => server.stop());

  const raw = (path: string, body: string | undefined, contentType?: string, accept?: string) =>
    server.request(path, {
      method: 'POST',
      body,
      headers: { ...(contentType ? { 'content-type': contentType } : {}), ...(accept ? { accept } : {}) },
    });

  it('JSON that does not parse is a -32700 parse error with HTTP 200 and id null', async () => {
    const res = await raw('/api/v1/echo/a2a', '{"jsonrpc": "2.0", "method": ', 'application/json');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32700, message: expect.stringMatching(/^Parse error: request body is not valid JSON/) },
    });
  });

  it('a body that is not a request is -32600 naming the problem', async () => {
    const plain = await raw('/api/v1/echo/a2a', JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'message/send' }), 'text/plain');
    expect(plain.status).toBe(200);
    expect(plain.body).toMatchObject({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: expect.stringContaining('application/json') },
    });
    expect(plain.body.error.message).not.toMatch(/undefined/);

    const none = await raw('/api/v1/echo/a2a', undefined, 'application/json');
    expect(none.body.error).toEqual({ code: -32600, message: 'the request has no body: expected a JSON-RPC 2.0 request object' });
    const batch = await raw('/api/v1/echo/a2a', JSON.stringify([{ jsonrpc: '2.0', id: 1, method: 'tasks/get' }]), 'application/json');
    expect(batch.body.error).toEqual({ code: -32600, message: 'batch requests are not supported: send one JSON-RPC 2.0 request object' });
    const scalar = await raw('/api/v1/echo/a2a', '"hello"', 'application/json');
    expect(scalar.body.error.message).toBe('the request is a JSON string, not a JSON-RPC 2.0 request object');
    const noVersion = await raw('/api/v1/echo/a2a', JSON.stringify({ id: 4, method: 'message/send' }), 'application/json');
    expect(noVersion.body).toMatchObject({ id: 4, error: { code: -32600, message: expect.stringContaining('request.jsonrpc') } });
    // An unknown agent is still the platform's 404: there is no endpoint to speak JSON-RPC.
    expect(
      (
        await raw(
          '/api/v1/ghost/a2a',
          JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tasks/get', params: { id: 'x' } }),
          'application/json',
        )
      ).status,
    ).toBe(404);
  });

  it('MCP answers JSON that does not parse with -32700, HTTP 400 as the MCP SDK does', async () => {
    const res = await raw('/mcp', '{"jsonrpc":', 'application/json', 'application/json, text/event-stream');
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -32700 } });
  });

  it('records A2A JSON-RPC calls (unary, streamed, failed) and MCP tool calls in the invocation log', async () => {
    const factory = new ClientFactory({
      transports: [new JsonRpcTransportFactory({ legacyCompat: { enabled: true } })],
      cardResolver: new DefaultAgentCardResolver({ legacyCompat: { enabled: true } }),
    });
    const client = await factory.createFromUrl(`${server.url}/api/v1/echo/.well-known/agent.json`, '');
    const message = (text: string): Message => ({
      messageId: randomUUID(),
      contextId: '',
      taskId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
    });
    await client.sendMessage({ message: message('logged send'), configuration: undefined, metadata: undefined, tenant: '' });
    for await (const _event of client.sendMessageStream({
      message: message('logged stream'),
      configuration: undefined,
      metadata: undefined,
      tenant: '',
    })) {
      // drain
    }
    await expect(client.getTask({ id: 'nope', tenant: '' })).rejects.toThrow(/not found/);

    const mcp = new McpClient({ name: 'hangar-test', version: '1.0.0' });
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`)));
    await mcp.callTool({ name: 'echo', arguments: { message: 'logged tool' } });
    await mcp.callTool({ name: 'boom', arguments: { message: 'fail' } });
    await mcp.close();

    const logs = await eventually(async () => {
      const { body } = await server.request('/api/v1/logs?resource=agent&limit=50');
      const ops = body.logs.map((l: { operation: string }) => l.operation);
      return (
        ['a2a:message/send', 'a2a:message/stream', 'a2a:tasks/get', 'mcp'].every((op) => ops.includes(op)) &&
        ops.filter((o: string) => o === 'mcp').length >= 2 &&
        body.logs
      );
    });
    const find = (op: string, name = 'echo') =>
      logs.find((l: { operation: string; name: string }) => l.operation === op && l.name === name);
    expect(find('a2a:message/send')).toMatchObject({ status: 'ok', http_status: 200 });
    expect(JSON.stringify(find('a2a:message/send').input)).toContain('logged send');
    expect(JSON.stringify(find('a2a:message/send').output)).toContain('echo: logged send');
    expect(find('a2a:message/stream')).toMatchObject({ status: 'ok' });
    expect(JSON.stringify(find('a2a:message/stream').output)).toContain('completed');
    expect(find('a2a:tasks/get')).toMatchObject({ status: 'error', error: '-32001 task nope not found' });
    expect(find('mcp')).toMatchObject({ status: 'ok', input: { message: 'logged tool' } });
    expect(find('mcp', 'boom')).toMatchObject({ status: 'error', error: expect.stringContaining('exploded on purpose') });
    // The parse error of the first test is on record too.
    const invalid = logs.filter((l: { operation: string }) => l.operation === 'a2a:invalid').map((l: { error: string }) => l.error);
    expect(invalid.some((e: string) => e.startsWith('-32700 Parse error'))).toBe(true);
    expect(invalid).toContain('-32600 batch requests are not supported: send one JSON-RPC 2.0 request object');
  });
});
