import { rm } from 'node:fs/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { agentSource, makeWorkspace, startTestServer } from '../support/server.js';

/** "A restart loses no thread, message, feedback or pending approval." */
describe('restart', () => {
  let root: string | undefined;
  afterAll(async () => {
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('keeps threads, messages, feedback and pending approvals, and the approval still resumes', async () => {
    root = await makeWorkspace({
      'agents/gate.ts': agentSource(`{
        graph: {
          nodes: { prepare: () => ({ response: 'prepared' }), ok: { type: 'approval', message: 'Go?' }, act: (s) => ({ response: 'done for ' + s.metadata.who }) },
          edges: [{ from: 'prepare', to: 'ok' }, { from: 'ok', to: 'act' }],
          entry: 'prepare',
        },
      }`),
      'agents/echo.ts': agentSource(`{ run: async (i) => 'echo: ' + i.query }`),
    });
    const first = await startTestServer({ root, settings: { watch: false } });
    await first.request('/api/v1/echo/chat', { method: 'POST', json: { content: 'persist me', thread_id: 'r1' } });
    await first.request('/api/v1/echo/feedback', { method: 'POST', json: { rating: 4 } });
    const suspended = await first.request('/api/v1/gate/invoke', { method: 'POST', json: { query: 'x', thread_id: 'g1' } });
    expect(suspended.status).toBe(202);
    await first.stop();

    const second = await startTestServer({ root, settings: { watch: false } });
    try {
      expect((await second.request('/api/v1/echo/threads/r1/messages')).body.total).toBe(2);
      expect((await second.request('/api/v1/echo/feedback')).body.count).toBe(1);
      const pending = await second.request('/api/v1/gate/threads/g1/pending');
      expect(pending.body.pending.map((p: { id: string }) => p.id)).toEqual([suspended.body.detail.approval_id]);
      const approved = await second.request('/api/v1/gate/threads/g1/approve', {
        method: 'POST',
        json: { approval_id: suspended.body.detail.approval_id, context: { who: 'ada' } },
      });
      expect(approved.status).toBe(200);
      expect(approved.body.response).toBe('done for ada');
    } finally {
      await second.stop();
    }
  });
});
