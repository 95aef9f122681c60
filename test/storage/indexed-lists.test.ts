import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApprovalStore } from '../../core/agents/approvals.js';
import { UnconfiguredProvider } from '../../core/agents/model.js';
import { FeedbackRequest } from '../../core/feedback/schemas.js';
import { FeedbackService } from '../../core/feedback/service.js';
import { queryInMemory } from '../../core/storage/query.js';
import type { SqliteCollection } from '../../core/storage/sqlite-records.js';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import { RunStore } from '../../core/studio/run-store.js';
import { ThreadService } from '../../core/threads/service.js';
import { agentSource, startTestServer, type TestServer } from '../support/server.js';

/**
 * The lists the API serves at scale: a page comes from the collection's index (SQLite's plan
 * says so), never from loading the collection and sorting it. Asserted on the plan, not on time.
 */
describe('indexed lists at scale', () => {
  const THREADS = 10_000;
  let store: SqliteStore;
  let threads: ThreadService;

  beforeAll(async () => {
    store = new SqliteStore(path.join(await mkdtemp(path.join(tmpdir(), 'hangar-lists-')), 'hangar.db'));
    threads = new ThreadService(store, new UnconfiguredProvider());
    // Two agents, two principals, three users: every filter the route takes has something to skip.
    for (let i = 0; i < THREADS; i++) {
      await threads.create(
        i % 2 ? 'echo' : 'other',
        { thread_id: `t${String(i).padStart(5, '0')}`, user_id: `u${i % 3}`, title: null, metadata: {} },
        i % 4 < 2 ? 'ada' : 'bob',
      );
    }
  }, 60_000);
  afterAll(() => store.close());

  const plan = (collection: string, query: Parameters<SqliteCollection<unknown>['explain']>[0]) =>
    (store.collection(collection) as SqliteCollection<unknown>).explain(query).join('\n');

  it('serves a page of 20 of 10,000 threads newest first, filtered by agent, user and principal', async () => {
    const page = await threads.list('echo', undefined, 'ada', { limit: 20 });
    expect(page.total).toBe(THREADS / 4);
    expect(page.threads).toHaveLength(20);
    expect(page.threads.every((t) => t.agent_name === 'echo' && t.principal === 'ada')).toBe(true);
    const created = page.threads.map((t) => t.created_at);
    expect(created).toEqual([...created].sort().reverse());

    const next = await threads.list('echo', undefined, 'ada', { limit: 20, offset: 20 });
    expect(next.threads[0]!.created_at <= page.threads[19]!.created_at).toBe(true);
    expect(new Set([...page.threads, ...next.threads].map((t) => t.id)).size).toBe(40);

    const ofUser = await threads.list('echo', 'u1', undefined, { limit: 5 });
    expect(ofUser.threads.every((t) => t.user_id === 'u1')).toBe(true);
    expect(ofUser.total).toBe(Array.from({ length: THREADS }, (_, i) => i).filter((i) => i % 2 && i % 3 === 1).length);
  });

  it('plans each thread list on its index, with no scan of the table and no sort', () => {
    const lists: Array<{ where: Record<string, string> }> = [
      { where: { agent_name: 'echo' } },
      { where: { agent_name: 'echo', user_id: 'u1' } },
      { where: { agent_name: 'echo', principal: 'ada' } },
    ];
    for (const { where } of lists) {
      const text = plan('threads', { where, orderBy: [{ field: 'created_at', desc: true }], limit: 20 });
      expect(text).toMatch(/USING INDEX ix_threads_agent_name/);
      expect(text).not.toMatch(/TEMP B-TREE/);
      expect(text).not.toMatch(/^SCAN records$/m);
    }
  });

  it('plans the feedback and studio-run lists on their indexes', async () => {
    const feedback = new FeedbackService(store);
    await feedback.record('echo', FeedbackRequest.parse({ rating: 5 }), 'ada');
    expect((await feedback.list('echo', 10, 'ada')).map((r) => r.rating)).toEqual([5]);
    expect(await feedback.list('echo', 10, 'bob')).toEqual([]);
    const newestFirst = [{ field: 'created_at', desc: true }];
    expect(plan('feedback', { where: { agent: 'echo', principal: 'ada' }, orderBy: newestFirst })).toMatch(/USING INDEX ix_feedback_agent/);

    new RunStore(store);
    const byOrder = [{ field: 'order', desc: true }];
    const filters: Array<Record<string, string>> = [
      { agent_name: 'echo' },
      { agent_name: 'echo', thread_id: 't1' },
      { agent_name: 'echo', principal: 'ada' },
    ];
    for (const where of filters) {
      const text = plan('studio_runs', { where, orderBy: byOrder, limit: 20 });
      expect(text).toMatch(/USING INDEX ix_studio_runs_agent_name/);
      expect(text).not.toMatch(/TEMP B-TREE/);
    }
    // Nothing filtered but the order: the index still beats the primary key and a sort.
    const newest = plan('studio_runs', { orderBy: byOrder, limit: 1 });
    expect(newest).toMatch(/USING INDEX ix_studio_runs_order/);
    expect(newest).not.toMatch(/TEMP B-TREE/);
  });
});

describe('pending approvals at scale', () => {
  it("lists a thread's, an agent's and a principal's approvals from their indexes, in order, only what the viewer may see", async () => {
    const store = new SqliteStore(path.join(await mkdtemp(path.join(tmpdir(), 'hangar-lists-')), 'hangar.db'));
    const approvals = new ApprovalStore(store);
    // 600 waiting across 3 agents, 20 threads each, 2 principals.
    for (let i = 0; i < 600; i++) {
      await approvals.create({
        agent: `a${i % 3}`,
        thread_id: `t${i % 20}`,
        principal: i % 2 ? 'ada' : 'bob',
        node_name: 'review',
        message: `approve ${i}`,
        payload: { i },
      } as unknown as Parameters<ApprovalStore['create']>[0]);
    }
    const inThread = await approvals.list('a1', 't1');
    expect(inThread.map((r) => r.message)).toEqual(
      Array.from({ length: 600 }, (_, i) => i)
        .filter((i) => i % 3 === 1 && i % 20 === 1)
        .map((i) => `approve ${i}`),
    );
    expect(await approvals.list('a1', 't1', 'bob')).toEqual([]);
    const ofAda = await approvals.listAll('ada', 'a2');
    expect(ofAda).toHaveLength(100);
    expect(ofAda.every((r) => r.agent === 'a2' && r.principal === 'ada')).toBe(true);
    const ids = ofAda.map((r) => r.id);
    expect(ids).toEqual([...ids].sort().reverse());
    expect(await approvals.listAll(undefined)).toHaveLength(600);
    expect(await approvals.owner('a1', 't1')).toBe('ada');
    expect(await approvals.deleteThread('a1', 't1')).toBe(inThread.length);
    expect(await approvals.list('a1', 't1')).toEqual([]);

    const plan = (query: Parameters<SqliteCollection<unknown>['explain']>[0]) =>
      (store.collection('approvals') as SqliteCollection<unknown>).explain(query).join('\n');
    const oldest = [{ field: 'created_at' }];
    const newest = [{ field: 'created_at', desc: true }];
    for (const [query, index] of [
      [{ where: { agent: 'a1', thread_id: 't1' }, orderBy: oldest }, 'ix_approvals_agent_thread_id_created_at'],
      [{ where: { agent: 'a1', thread_id: 't1', principal: 'ada' }, orderBy: oldest }, 'ix_approvals_agent_thread_id_created_at'],
      [{ where: { agent: 'a2', principal: 'ada' }, orderBy: newest }, 'ix_approvals_'],
      [{ where: { principal: 'ada' }, orderBy: newest }, 'ix_approvals_principal_created_at'],
      [{ orderBy: newest }, 'ix_approvals_created_at'],
    ] as const) {
      const text = plan(query);
      expect(text).toContain(`USING INDEX ${index}`);
      expect(text).not.toMatch(/TEMP B-TREE/);
      expect(text).not.toMatch(/^SCAN records$/m);
    }
    store.close();
  });
});

describe('a page filtered by several values of a field', () => {
  it('answers exactly as the reference semantics, from one ordered read per value', async () => {
    const store = new SqliteStore(path.join(await mkdtemp(path.join(tmpdir(), 'hangar-lists-')), 'hangar.db'));
    const items = store.collection<{ kind: string; n: number | null }>('items', { indexes: [['kind', 'n']] }) as SqliteCollection<{
      kind: string;
      n: number | null;
    }>;
    for (let i = 0; i < 300; i++)
      await items.put(`r${String(i).padStart(3, '0')}`, { kind: 'abc'[i % 3]!, n: i % 7 === 0 ? null : i % 11 });
    const entries = await items.entries();
    for (const desc of [true, false]) {
      for (const [limit, offset] of [
        [15, 0],
        [15, 7],
        [50, 180],
      ] as const) {
        const query = { where: { kind: ['a', 'c'] }, orderBy: [{ field: 'n', desc }], limit, offset };
        expect(await items.query(query)).toEqual(queryInMemory(entries, query));
      }
    }
    expect(items.explain({ where: { kind: 'a' }, orderBy: [{ field: 'n', desc: true }], limit: 20 }).join('\n')).not.toMatch(/TEMP B-TREE/);
    store.close();
  });
});

describe('GET /threads pages', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ files: { 'agents/echo.ts': agentSource(`{ run: async () => 'ok' }`) }, settings: { watch: false } });
    for (const id of ['a', 'b', 'c', 'd', 'e']) await server.request('/api/v1/echo/threads', { method: 'POST', json: { thread_id: id } });
  });
  afterAll(() => server?.stop());

  it('answers a page with its total, and every thread without a limit as before', async () => {
    const all = await server.request('/api/v1/echo/threads');
    expect(all.body.count).toBe(5);
    expect(all.body.total).toBeUndefined();
    const page = await server.request('/api/v1/echo/threads?limit=2&offset=1');
    expect(page.body).toMatchObject({ count: 2, total: 5 });
    expect(page.body.threads.map((t: { id: string }) => t.id)).toEqual(all.body.threads.slice(1, 3).map((t: { id: string }) => t.id));
  });

  it('refuses a limit that is no positive integer with a coded 422, as every invalid query answers', async () => {
    for (const bad of ['0', '-1', 'x', '10001']) {
      const answer = await server.request(`/api/v1/echo/threads?limit=${bad}`);
      expect(answer.status).toBe(422);
      expect(answer.body).toMatchObject({ code: expect.stringMatching(/^HANGAR_/), detail: expect.stringContaining('limit') });
    }
  });
});
