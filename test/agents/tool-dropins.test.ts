/**
 * Tools as drop-ins (#32): `tools/<name>.ts` is discovered and validated like an agent, hot
 * reloaded, listed and tried over HTTP, and used by agents that name it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FakeOpenAI, startFakeOpenAI } from '../support/fake-openai-server.js';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

const rate = (factor: number) => `import { defineTool, z } from 'hangar';
export default defineTool({
  description: 'Converts euros to dollars',
  input: z.object({ euros: z.number().nonnegative() }),
  output: z.object({ dollars: z.number() }),
  timeout_ms: 1000,
  run: ({ euros }) => ({ dollars: euros * ${factor} }),
});`;

describe('tools/ drop-ins', () => {
  let server: TestServer;
  let fake: FakeOpenAI;
  beforeAll(async () => {
    fake = await startFakeOpenAI(() => ({ content: 'no script' }));
    server = await startTestServer({
      files: {
        'tools/convert.ts': rate(2),
        'tools/broken.ts': `import { defineTool, z } from 'hangar';\nexport default defineTool({ name: 'broken', description: 'x', input: z.string(), run: () => 1 });`,
        'agents/banker.ts': `import { defineAgent } from 'hangar';\nexport default defineAgent({ instructions: 'Convert money.', tools: ['convert'] });`,
        'agents/lost.ts': `import { defineAgent } from 'hangar';\nexport default defineAgent({ instructions: 'x', tools: ['nowhere'] });`,
      },
      settings: { model: { baseUrl: fake.baseUrl, model: 'fake-1', retries: 0 } },
    });
  });
  afterAll(async () => {
    await server?.stop();
    await fake?.close();
  });

  it('lists loaded tools with what the model is told, and reports a bad one as a drop-in error', async () => {
    const { body } = await server.request('/api/v1/tools');
    expect(body.tools).toEqual([
      {
        name: 'convert',
        description: 'Converts euros to dollars',
        parameters: expect.objectContaining({ type: 'object', required: ['euros'] }),
        file: 'tools/convert.ts',
        needs_approval: false,
        timeout_ms: 1000,
      },
    ]);
    const status = await server.request('/api/v1/status');
    expect(JSON.stringify(status.body)).toMatch(/tools\/broken\.ts.*must be a z\.object/);
    expect(status.body.dropins.tool).toBe(1);
    const docs = await server.request('/openapi.json');
    expect(Object.keys(docs.body.paths)).toEqual(expect.arrayContaining(['/api/v1/tools', '/api/v1/tools/{name}/try']));
  });

  it('tries a tool as a model call would: a result, or the error the model would be told', async () => {
    const ok = await server.request('/api/v1/tools/convert/try', { method: 'POST', json: { arguments: { euros: 10 } } });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ name: 'convert', arguments: { euros: 10 }, result: { dollars: 20 } });
    const bad = await server.request('/api/v1/tools/convert/try', { method: 'POST', json: { arguments: { euros: -1 } } });
    expect(bad.status).toBe(200);
    expect(bad.body.error).toMatch(/invalid arguments for 'convert'/);
    // The unknown tool is its 404 before the body is judged.
    expect(await server.request('/api/v1/tools/nope/try', { method: 'POST', json: { arguments: 'not an object' } })).toMatchObject({
      status: 404,
      body: { detail: 'tool "nope" not found', code: 'HANGAR_AGENT_TOOL_NOT_FOUND' },
    });
  });

  it('an agent naming a tool uses the live one: a saved tool serves the next run', async () => {
    fake.enqueue({ tool_calls: [{ id: 'k', name: 'convert', arguments: { euros: 3 } }] }, { content: 'Six dollars.' });
    const first = await server.request('/api/v1/banker/invoke', { method: 'POST', json: { query: '3 EUR?' } });
    expect(first.body.response).toBe('Six dollars.');
    expect(fake.requests.at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'tool', content: '{"dollars":6}' });

    await server.write('tools/convert.ts', rate(3));
    await eventually(
      async () =>
        (await server.request('/api/v1/tools/convert/try', { method: 'POST', json: { arguments: { euros: 1 } } })).body.result?.dollars ===
        3,
    );
    fake.enqueue({ tool_calls: [{ id: 'k2', name: 'convert', arguments: { euros: 3 } }] }, { content: 'Nine dollars.' });
    await server.request('/api/v1/banker/invoke', { method: 'POST', json: { query: '3 EUR?' } });
    expect(fake.requests.at(-1)!.body.messages.at(-1)).toMatchObject({ role: 'tool', content: '{"dollars":9}' });
  });

  it('an agent naming a tool that is not loaded fails its run with a message naming both', async () => {
    const { status, body } = await server.request('/api/v1/lost/invoke', { method: 'POST', json: { query: 'x' } });
    expect(status).toBe(500);
    expect(body.detail).toMatch(/agent 'lost' lists tool 'nowhere', which is not a loaded tool \(tools\/nowhere\.ts\)/);
  });
});
