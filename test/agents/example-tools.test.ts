/**
 * The shipped tool-using example (agents/workspace-files.ts, #32): its tools read the workspace for
 * the model and refuse paths outside it or hidden in it.
 */
import { cp, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { makeWorkspace, startTestServer, type TestServer } from '../support/server.js';

const example = fileURLToPath(new URL('../../agents/workspace-files.ts', import.meta.url));

describe('agents/workspace-files.ts', () => {
  let server: TestServer;
  let fake: FakeOpenAI;
  let root: string;
  beforeAll(async () => {
    fake = await startFakeOpenAI(() => ({ content: 'no script' }));
    root = await makeWorkspace({ 'notes/plan.md': '# Plan\nShip the tool loop.\n', '.env': 'SECRET=1\n' });
    await cp(example, path.join(root, 'agents', 'workspace-files.ts'));
    await writeFile(path.join(root, 'notes', 'other.txt'), 'x');
    server = await startTestServer({ root, settings: { watch: false, model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 } } });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
    await rm(root, { recursive: true, force: true });
  });

  it('lists and reads workspace files for the model, and refuses hidden files and paths outside', async () => {
    fake.enqueue(
      {
        tool_calls: [
          { id: 'l', name: 'list_files', arguments: { folder: 'notes' } },
          { id: 'r', name: 'read_file', arguments: { file: 'notes/plan.md' } },
          { id: 'h', name: 'read_file', arguments: { file: '.env' } },
          { id: 'o', name: 'read_file', arguments: { file: '../../etc/passwd' } },
        ],
      },
      { content: 'The plan (notes/plan.md) is to ship the tool loop.' },
    );
    const { status, body } = await server.request('/api/v1/workspace-files/invoke', {
      method: 'POST',
      json: { query: 'What is the plan?' },
    });
    expect(status).toBe(200);
    expect(body.response).toBe('The plan (notes/plan.md) is to ship the tool loop.');
    const results = Object.fromEntries(
      fake.requests
        .at(-1)!
        .body.messages.filter((m) => m.role === 'tool')
        .map((m) => [m.tool_call_id, m.content]),
    );
    expect(JSON.parse(results.l!)).toEqual([
      { name: 'other.txt', kind: 'file' },
      { name: 'plan.md', kind: 'file' },
    ]);
    expect(results.r).toBe('# Plan\nShip the tool loop.\n');
    expect(JSON.parse(results.h!).error).toMatch(/hidden/);
    expect(JSON.parse(results.o!).error).toMatch(/outside the workspace/);
    expect(JSON.stringify(fake.requests.at(-1)!.body)).not.toContain('SECRET');
  });
});
