/**
 * Rejecting a human approval ends the run in the rejected state, not the approved one (#30): the
 * node after the approval never runs (its side effect, a file, is absent), the thread's last
 * checkpoint is the rejection's, nothing stays pending, and a chat stores no answer. The same run
 * approved is the control: the file appears and the last checkpoint is after the node.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    settings: { watch: false },
    files: {
      'agents/gate.ts': agentSource(`{
        graph: {
          nodes: {
            prepare: () => ({ response: 'prepared' }),
            ok: { type: 'approval', message: 'Act?' },
            act: (s, ctx) => {
              require('node:fs').writeFileSync(require('node:path').join(ctx.workspace, 'acted-' + s.messages.filter((m) => m.role === 'user').at(-1).content), 'yes');
              return { response: 'acted' };
            },
          },
          edges: [{ from: 'prepare', to: 'ok' }, { from: 'ok', to: 'act' }],
          entry: 'prepare',
        },
      }`),
    },
  });
});
afterAll(async () => server?.stop());

const post = (url: string, json: unknown, headers: Record<string, string> = {}) => server.request(url, { method: 'POST', json, headers });
const get = (url: string) => server.request(url);

async function lastCheckpoint(thread: string) {
  const history = await get(`/studio/agents/gate/threads/${thread}/history`);
  expect(history.status).toBe(200);
  return history.body[0] as {
    metadata: { source?: string; node?: string; next?: string | null };
    state: { steps_taken?: string[]; response?: string; metadata?: Record<string, unknown> };
  };
}

describe('approval decisions end the run in their own state', () => {
  it('reject: the next node never runs, the last checkpoint is rejected, nothing is pending', async () => {
    const suspended = await post('/api/v1/gate/invoke', { query: 'rej-1', thread_id: 'rej-1' });
    expect(suspended.status).toBe(202);
    const id = suspended.body.detail.approval_id;

    const rejected = await post('/api/v1/gate/threads/rej-1/reject', { approval_id: id, reason: 'no' });
    expect(rejected.status).toBe(200);
    expect(rejected.body).toEqual({ status: 'rejected', approval_id: id, reason: 'no' });

    expect(existsSync(join(server.root, 'acted-rej-1'))).toBe(false);
    const last = await lastCheckpoint('rej-1');
    expect(last.metadata).toMatchObject({ source: 'rejected', next: null });
    expect(last.state.steps_taken).toEqual(['prepare']);
    expect(last.state.response).toBe('prepared');
    expect(last.state.metadata).toMatchObject({ hitl_approved: false, hitl_rejection_reason: 'no' });
    expect((await get('/api/v1/gate/threads/rej-1/pending')).body.count).toBe(0);
    // Decided once: neither decision can be taken again.
    expect((await post('/api/v1/gate/threads/rej-1/approve', { approval_id: id })).status).toBe(404);
    expect(existsSync(join(server.root, 'acted-rej-1'))).toBe(false);
  });

  it('approved: false is the same rejection', async () => {
    const suspended = await post('/api/v1/gate/invoke', { query: 'rej-2', thread_id: 'rej-2' });
    const declined = await post('/api/v1/gate/threads/rej-2/approve', { approval_id: suspended.body.detail.approval_id, approved: false });
    expect(declined.body.status).toBe('rejected');
    expect(existsSync(join(server.root, 'acted-rej-2'))).toBe(false);
    const last = await lastCheckpoint('rej-2');
    expect(last.metadata).toMatchObject({ source: 'rejected', next: null });
    expect(last.state.metadata).toMatchObject({ hitl_approved: false, hitl_rejection_reason: null });
  });

  it('approve (the control): the next node runs and the last checkpoint is after it', async () => {
    const suspended = await post('/api/v1/gate/invoke', { query: 'app-1', thread_id: 'app-1' });
    const approved = await post('/api/v1/gate/threads/app-1/approve', { approval_id: suspended.body.detail.approval_id });
    expect(approved.status).toBe(200);
    expect(approved.body.response).toBe('acted');
    expect(existsSync(join(server.root, 'acted-app-1'))).toBe(true);
    const last = await lastCheckpoint('app-1');
    expect(last.metadata).toMatchObject({ node: 'act', next: null });
    expect(last.state.steps_taken).toEqual(['prepare', 'ok', 'act']);
    expect(last.state.metadata).toMatchObject({ hitl_approved: true });
  });

  it('a rejected chat stores the question and no answer', async () => {
    const suspended = await post('/api/v1/gate/chat', { content: 'rej-chat', thread_id: 'rej-chat' });
    expect(suspended.status).toBe(202);
    await post('/api/v1/gate/threads/rej-chat/reject', { approval_id: suspended.body.detail.approval_id });
    const messages = (await get('/api/v1/gate/threads/rej-chat/messages')).body.messages.map((m: { content: string }) => m.content);
    expect(messages).toEqual(['rej-chat']);
    expect(existsSync(join(server.root, 'acted-rej-chat'))).toBe(false);
  });
});
