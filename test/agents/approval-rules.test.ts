/**
 * The rules of the pending-approval store (core/agents/approvals.ts, #30), each against its near
 * miss: a second principal, the same thread id under another agent, another thread of the same
 * agent, a deleted thread. Every refused decision is followed by the end state: the approval is
 * still pending, the next node never ran (its side effect, a file, is absent), and its owner can
 * still decide it.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';

const TOKENS = { alice: 'alice-approval-rules-token', bob: 'bob-approval-rules-token' };

/** Suspends at `ok`; `act` leaves a file named after the agent and the query when it runs. */
const gated = (name: string) =>
  agentSource(`{
    graph: {
      nodes: {
        prepare: () => ({ response: 'prepared' }),
        ok: { type: 'approval', message: 'Act for ${name}?' },
        act: (s, ctx) => {
          const query = s.messages.filter((m) => m.role === 'user').at(-1).content;
          require('node:fs').writeFileSync(require('node:path').join(ctx.workspace, 'acted-${name}-' + query), 'yes');
          return { response: 'acted' };
        },
      },
      edges: [{ from: 'prepare', to: 'ok' }, { from: 'ok', to: 'act' }],
      entry: 'prepare',
    },
  }`);

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({
    settings: { watch: false, auth: { tokens: TOKENS } } as never,
    files: { 'agents/gate.ts': gated('gate'), 'agents/other.ts': gated('other') },
  });
});
afterAll(async () => server?.stop());

const as = (who: keyof typeof TOKENS) => {
  const headers = { authorization: `Bearer ${TOKENS[who]}` };
  return {
    get: (url: string) => server.request(url, { headers }),
    post: (url: string, json: unknown) => server.request(url, { method: 'POST', json, headers }),
    delete: (url: string) => server.request(url, { method: 'DELETE', headers }),
  };
};
const alice = as('alice');
const bob = as('bob');

/** Run `agent` until it suspends; the approval's id and thread. */
async function suspend(who: ReturnType<typeof as>, agent: string, query: string, threadId?: string) {
  const res = await who.post(`/api/v1/${agent}/invoke`, { query, ...(threadId ? { thread_id: threadId } : {}) });
  expect(res.status).toBe(202);
  return { id: res.body.detail.approval_id as string, thread: res.body.detail.thread_id as string };
}

const acted = (agent: string, query: string) => existsSync(join(server.root, `acted-${agent}-${query}`));
const pendingIds = async (who: ReturnType<typeof as>, agent: string, thread: string) =>
  (await who.get(`/api/v1/${agent}/threads/${thread}/pending`)).body.pending.map((p: { id: string }) => p.id);

describe('pending approvals', () => {
  it('belong to one principal: another neither lists nor decides them, and they stay pending for the owner', async () => {
    const { id, thread } = await suspend(alice, 'gate', 'p1', 'rules-p1');
    expect(await pendingIds(alice, 'gate', thread)).toEqual([id]);
    expect(await pendingIds(bob, 'gate', thread)).toEqual([]);
    expect((await bob.get('/api/v1/approvals')).body.approvals.map((a: { id: string }) => a.id)).not.toContain(id);

    for (const decision of ['approve', 'reject']) {
      const res = await bob.post(`/api/v1/gate/threads/${thread}/${decision}`, { approval_id: id });
      expect(res.status).toBe(404);
      expect(res.body.code).toBe('HANGAR_AGENT_APPROVAL_NOT_FOUND');
      expect(res.body.detail).toBe(`no pending approval '${id}' for thread '${thread}' of agent 'gate'`);
    }
    // Bob's attempts took nothing: the approval is still Alice's to decide, and the run did not go on.
    expect(await pendingIds(alice, 'gate', thread)).toEqual([id]);
    expect(acted('gate', 'p1')).toBe(false);
    expect((await alice.post(`/api/v1/gate/threads/${thread}/approve`, { approval_id: id })).status).toBe(200);
    expect(acted('gate', 'p1')).toBe(true);
  });

  it('are decided only on their own agent and thread: the same id elsewhere is unknown and takes nothing', async () => {
    const { id } = await suspend(alice, 'gate', 'p2', 'rules-shared');
    // The same thread id under another agent, with its own pending approval.
    const other = await suspend(alice, 'other', 'p2', 'rules-shared');
    const elsewhere = await suspend(alice, 'gate', 'p2-elsewhere', 'rules-elsewhere');

    expect(await pendingIds(alice, 'gate', 'rules-shared')).toEqual([id]);
    expect(await pendingIds(alice, 'other', 'rules-shared')).toEqual([other.id]);

    expect((await alice.post('/api/v1/other/threads/rules-shared/approve', { approval_id: id })).status).toBe(404);
    expect((await alice.post('/api/v1/gate/threads/rules-elsewhere/approve', { approval_id: id })).status).toBe(404);
    expect(await pendingIds(alice, 'gate', 'rules-shared')).toEqual([id]);
    expect(await pendingIds(alice, 'gate', 'rules-elsewhere')).toEqual([elsewhere.id]);
    expect(acted('gate', 'p2') || acted('other', 'p2')).toBe(false);

    const rejected = await alice.post('/api/v1/gate/threads/rules-shared/reject', { approval_id: id });
    expect(rejected.body).toMatchObject({ status: 'rejected', approval_id: id });
    // Deciding one left the other agent's approval on the same thread id pending.
    expect(await pendingIds(alice, 'gate', 'rules-shared')).toEqual([]);
    expect(await pendingIds(alice, 'other', 'rules-shared')).toEqual([other.id]);
  });

  it("are a thread's oldest first, however many are pending on it", async () => {
    // Each invoke on a thread that waits suspends again: one pending approval more on the same thread.
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push((await suspend(alice, 'gate', `p5-${i}`, 'rules-many')).id);
    expect(await pendingIds(alice, 'gate', 'rules-many')).toEqual(ids);
    const listed = (await alice.get('/api/v1/gate/approvals')).body.approvals.map((a: { id: string }) => a.id);
    expect(listed.filter((id: string) => ids.includes(id))).toEqual([...ids].reverse());
  });

  it('are listed newest first across threads, of one agent when it is named, with the links that decide them', async () => {
    const first = await suspend(alice, 'gate', 'p3-a', 'rules-list-a');
    const second = await suspend(alice, 'other', 'p3-b', 'rules-list-b');
    const third = await suspend(alice, 'gate', 'p3-c', 'rules-list-c');
    const ids = (body: { approvals: { id: string }[] }) => body.approvals.map((a) => a.id);
    const mine = [first.id, second.id, third.id];

    const all = ids((await alice.get('/api/v1/approvals')).body).filter((id) => mine.includes(id));
    expect(all).toEqual([third.id, second.id, first.id]);
    const gateOnly = (await alice.get('/api/v1/gate/approvals')).body;
    expect(ids(gateOnly).filter((id) => mine.includes(id))).toEqual([third.id, first.id]);
    expect(gateOnly.approvals.every((a: { agent: string }) => a.agent === 'gate')).toBe(true);
    expect(gateOnly.approvals.find((a: { id: string }) => a.id === third.id).links).toMatchObject({
      approve: '/api/v1/gate/threads/rules-list-c/approve',
      reject: '/api/v1/gate/threads/rules-list-c/reject',
      pending: '/api/v1/gate/threads/rules-list-c/pending',
    });
    expect(ids((await bob.get('/api/v1/gate/approvals')).body)).toEqual([]);
  });

  it("are dropped with their thread, and only with theirs; a stateless run's approval makes its thread the owner's", async () => {
    const doomed = await suspend(alice, 'gate', 'p4-a', 'rules-delete-a');
    const kept = await suspend(alice, 'gate', 'p4-b', 'rules-delete-b');
    const sameId = await suspend(alice, 'other', 'p4-a', 'rules-delete-a');

    expect((await alice.delete('/api/v1/gate/threads/rules-delete-a')).status).toBe(200);
    expect(await pendingIds(alice, 'gate', 'rules-delete-a')).toEqual([]);
    expect((await alice.post('/api/v1/gate/threads/rules-delete-a/approve', { approval_id: doomed.id })).status).toBe(404);
    expect(acted('gate', 'p4-a')).toBe(false);
    expect(await pendingIds(alice, 'gate', 'rules-delete-b')).toEqual([kept.id]);
    expect(await pendingIds(alice, 'other', 'rules-delete-a')).toEqual([sameId.id]);

    // A stateless invoke keeps no checkpoints: its pending approval alone says whose thread it is.
    const stateless = await suspend(alice, 'gate', 'p4-stateless');
    const taken = await bob.post('/api/v1/gate/threads', { thread_id: stateless.thread });
    expect(taken.status).toBe(409);
    expect((await bob.delete(`/api/v1/gate/threads/${stateless.thread}`)).status).toBe(404);
    expect(await pendingIds(alice, 'gate', stateless.thread)).toEqual([stateless.id]);
  });
});
