/**
 * Issue #18, item 6: deleting a thread deletes the conversation — its messages, checkpoints
 * (studio state and history), pending approvals and studio runs — and a fork's lineage says
 * which ancestor was deleted.
 */
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';

let server: TestServer;

beforeAll(async () => {
  server = await startTestServer({
    files: {
      'agents/chat.ts': agentSource(`{ run: async (input) => 'you said ' + input.query }`),
      'agents/approval.ts': await readFile(path.resolve('agents/approval.ts'), 'utf8'),
      // One node that waits until cancelled: a studio run that is still executing.
      'agents/slow.ts': agentSource(`{
        run: async (input, ctx) => {
          await new Promise((resolve) => {
            const timer = setTimeout(resolve, 10000);
            ctx.signal.addEventListener('abort', () => { clearTimeout(timer); resolve(undefined); });
          });
          return 'waited';
        },
      }`),
    },
    settings: { watch: false },
  });
}, 60_000);
afterAll(async () => {
  await server?.stop();
});

const post = (p: string, json: unknown = {}) => server.request(p, { method: 'POST', json });
const get = (p: string) => server.request(p);
const del = (p: string) => server.request(p, { method: 'DELETE' });

describe('DELETE /api/v1/{agent}/threads/{thread_id}', () => {
  it('leaves nothing of the conversation readable: messages, studio state, history and runs go', async () => {
    for (let i = 0; i < 5; i++) expect((await post('/api/v1/chat/chat', { thread_id: 't1', content: `private ${i}` })).status).toBe(200);
    const run = await post('/studio/agents/chat/runs', { thread_id: 't1', query: 'studio turn' });
    expect(run.status).toBe(200);
    expect((await get('/studio/agents/chat/threads/t1/state')).text).toContain('private 4');
    expect((await get('/studio/agents/chat/threads/t1/history')).body.length).toBeGreaterThanOrEqual(10);

    expect(await del('/api/v1/chat/threads/t1')).toMatchObject({ status: 200, body: { status: 'deleted', thread_id: 't1' } });

    expect((await get('/api/v1/chat/threads/t1')).status).toBe(404);
    expect((await get('/api/v1/chat/threads/t1/messages')).status).toBe(404);
    const state = await get('/studio/agents/chat/threads/t1/state');
    expect(state.status).toBe(404);
    expect(state.text).not.toContain('private');
    expect((await get('/studio/agents/chat/threads/t1/history')).status).toBe(404);
    expect((await get('/studio/agents/chat/runs?thread_id=t1')).body).toEqual([]);
    expect((await get(`/studio/agents/chat/runs/${run.body.run_id}`)).status).toBe(404);
    expect((await del('/api/v1/chat/threads/t1')).status).toBe(404);
  });

  it('a new thread with the same id starts empty, with no old checkpoints under it', async () => {
    await post('/api/v1/chat/chat', { thread_id: 't2', content: 'old words' });
    await del('/api/v1/chat/threads/t2');
    expect((await post('/api/v1/chat/threads', { thread_id: 't2' })).status).toBe(200);
    expect((await get('/api/v1/chat/threads/t2/messages')).body.total).toBe(0);
    expect((await get('/studio/agents/chat/threads/t2/state')).status).toBe(404);
    const again = await post('/api/v1/chat/chat', { thread_id: 't2', content: 'new words' });
    expect(again.status).toBe(200);
    expect((await get('/studio/agents/chat/threads/t2/state')).text).not.toContain('old words');
  });

  it('drops the pending approvals, so the suspended run can no longer be approved', async () => {
    const suspended = await post('/api/v1/approval/chat', { thread_id: 'p1', content: 'publish me' });
    expect(suspended.status).toBe(202);
    expect((await get('/api/v1/approval/threads/p1/pending')).body.count).toBe(1);

    expect((await del('/api/v1/approval/threads/p1')).status).toBe(200);

    expect((await get('/api/v1/approval/threads/p1/pending')).body).toMatchObject({ pending: [], count: 0 });
    const approve = await post('/api/v1/approval/threads/p1/approve', { approval_id: suspended.body.detail.approval_id });
    expect(approve.status).toBe(404);
    expect(existsSync(path.join(server.root, '.hangar', 'outbox', 'notes.jsonl'))).toBe(false);
  });

  it('deletes a thread the studio made (checkpoints and runs, no thread record)', async () => {
    const run = await post('/studio/agents/chat/runs', { thread_id: 's1', query: 'only in the studio' });
    expect(run.status).toBe(200);
    expect((await get('/api/v1/chat/threads/s1')).status).toBe(404);
    expect((await del('/api/v1/chat/threads/s1')).status).toBe(200);
    expect((await get('/studio/agents/chat/threads/s1/state')).status).toBe(404);
    expect((await get(`/studio/agents/chat/runs/${run.body.run_id}`)).status).toBe(404);
  });

  it('refuses with 409 while a studio run executes on the thread, and deletes once it is cancelled', async () => {
    const started = await fetch(`${server.url}/studio/agents/slow/runs/stream`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ thread_id: 'busy', query: 'wait' }),
    });
    const runId = started.headers.get('x-studio-run-id')!;
    const refused = await del('/api/v1/slow/threads/busy');
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toMatch(/studio run in progress/);
    expect((await post(`/studio/agents/slow/runs/${runId}/cancel`)).status).toBe(200);
    await started.body?.cancel();
    await eventually(async () => (await del('/api/v1/slow/threads/busy')).status === 200);
    expect((await get('/studio/agents/slow/threads/busy/history')).status).toBe(404);
  });
});

describe('lineage after an ancestor was deleted', () => {
  it('names the deleted ancestor with deleted: true, and the chain ends there', async () => {
    await post('/api/v1/chat/chat', { thread_id: 'root', content: 'a' });
    await post('/api/v1/chat/chat', { thread_id: 'root', content: 'b' });
    expect((await post('/api/v1/chat/threads/root/fork', { message_index: 2, new_thread_id: 'child', title: 'Child' })).status).toBe(200);
    expect((await post('/api/v1/chat/threads/child/fork', { message_index: 1, new_thread_id: 'grandchild' })).status).toBe(200);
    expect((await get('/api/v1/chat/threads/grandchild/lineage')).body.ancestors).toEqual([
      { id: 'root', title: null, parent_thread_id: null, deleted: false },
      { id: 'child', title: 'Child', parent_thread_id: 'root', deleted: false },
    ]);

    expect((await del('/api/v1/chat/threads/child')).status).toBe(200);

    const lineage = await get('/api/v1/chat/threads/grandchild/lineage');
    expect(lineage.body).toEqual({
      thread_id: 'grandchild',
      ancestors: [{ id: 'child', title: null, parent_thread_id: null, deleted: true }],
      descendants: [],
    });
    expect((await get('/api/v1/chat/threads/root/lineage')).body.descendants).toEqual([]);
  });
});
