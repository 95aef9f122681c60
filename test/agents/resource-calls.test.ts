/**
 * Which agent routes count as calls to the agent: each declares it in `config.resource` (#16), and
 * the invocation log records exactly those, under the operation the URL used to be parsed into.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';

const files = {
  'agents/echo.ts': agentSource(`{ run: async (input) => 'echo: ' + input.query }`),
  'agents/gate.ts': agentSource(`{
    graph: {
      nodes: { draft: () => ({ response: 'draft' }), ok: { type: 'approval', message: 'Go?' }, done: (s) => ({ response: s.response + ' done' }) },
      edges: [{ from: 'draft', to: 'ok' }, { from: 'ok', to: 'done' }],
      entry: 'draft',
    },
  }`),
};

describe('agent routes as logged resource calls', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files, settings: { logs: { enabled: true }, watch: false } });
  });
  afterAll(() => server?.stop());

  const post = (path: string, json: unknown) => server.request(path, { method: 'POST', json });
  const operations = async (agent: string) => {
    const { body } = await server.request(`/api/v1/logs?resource=agent&name=${agent}&limit=100`);
    return (body.logs as Array<{ operation: string }>).map((record) => record.operation).sort();
  };

  it('logs invoke, stream, chat, optimize, approve and reject, and nothing that only reads', async () => {
    expect((await post('/api/v1/echo/invoke', { query: 'a' })).status).toBe(200);
    expect((await readSse(`${server.url}/api/v1/echo/invoke/stream`, { method: 'POST', json: { query: 'b' } })).done).toBe(true);
    expect((await post('/api/v1/echo/chat', { content: 'c', thread_id: 'logged' })).status).toBe(200);
    expect((await post('/api/v1/echo/optimize/invoke', { query: 'd' })).status).toBe(200);
    // Reads are not calls: threads, approvals, feedback.
    expect((await server.request('/api/v1/echo/threads')).status).toBe(200);
    expect((await server.request('/api/v1/echo/approvals')).status).toBe(200);
    expect((await server.request('/api/v1/echo/threads/logged/pending')).status).toBe(200);

    const first = await post('/api/v1/gate/invoke', { query: 'x', thread_id: 'g1' });
    expect(first.status).toBe(202);
    expect((await post('/api/v1/gate/threads/g1/approve', { approval_id: first.body.detail.approval_id })).status).toBe(200);
    const second = await post('/api/v1/gate/invoke', { query: 'y', thread_id: 'g2' });
    expect((await post('/api/v1/gate/threads/g2/reject', { approval_id: second.body.detail.approval_id })).status).toBe(200);

    await eventually(async () => (await operations('echo')).length >= 4 && (await operations('gate')).length >= 4);
    expect(await operations('echo')).toEqual(['chat', 'invoke', 'optimize', 'stream']);
    expect(await operations('gate')).toEqual(['approve', 'invoke', 'invoke', 'reject']);
  });
});
