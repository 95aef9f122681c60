/**
 * The shipped MCP example (agents/workspace-mcp.ts) with the real filesystem server from the npm
 * registry (@modelcontextprotocol/server-filesystem), confined to the workspace: the model lists
 * and reads a file through it; a path outside the workspace is refused by the server, and the
 * model reads that refusal as the call's error.
 */
import { cp } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { makeWorkspace, startTestServer, type TestServer } from '../support/server.js';

const SERVER = createRequire(import.meta.url).resolve('@modelcontextprotocol/server-filesystem/dist/index.js');

describe('the MCP filesystem example', () => {
  let server: TestServer;
  let fake: FakeOpenAI;
  beforeAll(async () => {
    const root = await makeWorkspace({ 'notes/plan.md': '# Plan\nShip the tool loop on Friday.\n' });
    await cp(fileURLToPath(new URL('../../agents/workspace-mcp.ts', import.meta.url)), path.join(root, 'agents/workspace-mcp.ts'));
    fake = await startFakeOpenAI(() => ({ content: 'no script' }));
    server = await startTestServer({
      root,
      settings: {
        model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 },
        // What the example's header configures with npx, with the installed package run directly (tests run offline).
        mcp: { servers: { filesystem: { command: process.execPath, args: [SERVER, root] } } },
        watch: false,
      },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });

  it('lists and reads workspace files through the server, and is refused outside the workspace', async () => {
    fake.enqueue(
      { tool_calls: [{ id: 'l1', name: 'filesystem__list_directory', arguments: { path: path.join(server.root, 'notes') } }] },
      {
        tool_calls: [
          { id: 'r1', name: 'filesystem__read_text_file', arguments: { path: path.join(server.root, 'notes/plan.md') } },
          { id: 'x1', name: 'filesystem__read_text_file', arguments: { path: '/etc/hostname' } },
        ],
      },
      { content: 'The plan is to ship on Friday (notes/plan.md).' },
    );
    const res = await server.request('/api/v1/workspace-mcp/invoke', { method: 'POST', json: { query: 'What is the plan?' } });
    expect(res.status).toBe(200);
    expect(res.body.response).toBe('The plan is to ship on Friday (notes/plan.md).');
    const offered = (fake.requests.at(-3)!.body.tools as Array<{ function: { name: string } }>).map((t) => t.function.name);
    expect(offered).toEqual(['filesystem__list_directory', 'filesystem__read_text_file', 'filesystem__search_files']);
    const results = fake.requests
      .at(-1)!
      .body.messages.filter((m) => m.role === 'tool')
      .map((m) => [m.tool_call_id, m.content]);
    expect(results[0]![1]).toContain('[FILE] plan.md');
    expect(results[1]![1]).toContain('Ship the tool loop on Friday.');
    expect(JSON.parse(results[2]![1]!).error).toMatch(/Access denied|outside allowed directories/i);
  });
});
