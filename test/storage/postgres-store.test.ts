import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Checkpoint } from '../../core/agents/checkpointer.js';
import { RecordCheckpointer } from '../../core/agents/record-checkpointer.js';
import { HangarError as HttpError } from '../../core/kernel/errors.js';
import { PG_MIGRATIONS } from '../../core/storage/postgres-sql.js';
import { PostgresStore } from '../../core/storage/postgres-store.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';

let postgres: TestPostgres;
const opened: PostgresStore[] = [];
beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);
afterAll(async () => {
  await Promise.all(opened.map((store) => store.close()));
  await postgres?.stop();
});
const open = (url: string, schema?: string) => {
  const store = new PostgresStore(url, { schema });
  opened.push(store);
  return store;
};

describe('PostgreSQL store', () => {
  it('four instances opening a new database together apply each migration once', async () => {
    const url = await postgres.database();
    const stores = Array.from({ length: 4 }, () => open(url));
    await Promise.all(stores.map((store) => store.ready()));
    const { rows } = await stores[0]!.pool.query('SELECT version FROM hangar_schema');
    expect(rows).toEqual([{ version: PG_MIGRATIONS.length }]);
    // Each writes through its own pool; all see every write.
    await Promise.all(stores.map((store, i) => store.collection('things').put(`t${i}`, { i })));
    expect(await stores[3]!.collection('things').count()).toBe(4);
  });

  it('instances declaring the same index together create it once, and a page is read from it', async () => {
    const url = await postgres.database();
    const stores = Array.from({ length: 3 }, () => open(url));
    for (const store of stores) store.collection('tasks', { indexes: [['status', 'created_at']] });
    await Promise.all(stores.map((store) => store.ready()));
    const tasks = stores[0]!.collection<{ status: string; created_at: string }>('tasks');
    for (let i = 0; i < 200; i++)
      await tasks.put(`t${i}`, { status: i % 2 ? 'done' : 'queued', created_at: new Date(i * 1000).toISOString() });
    await stores[0]!.pool.query('ANALYZE records');
    const client = await stores[0]!.pool.connect();
    try {
      await client.query('SET enable_seqscan = off');
      const plan = await client.query(
        `EXPLAIN SELECT value FROM records WHERE collection = 'tasks' AND (value->'status') IN ('"done"'::jsonb) ORDER BY (value->'created_at') DESC NULLS LAST, id DESC LIMIT 20`,
      );
      const text = plan.rows.map((row) => row['QUERY PLAN']).join('\n');
      expect(text).toContain('ix_tasks_status_created_at');
      expect(text).not.toMatch(/\bSort\b/);
    } finally {
      client.release();
    }
    const page = await tasks.query({ where: { status: 'done' }, orderBy: [{ field: 'created_at', desc: true }], limit: 2 });
    expect(page.items.map((t) => t.created_at)).toEqual([new Date(199_000).toISOString(), new Date(197_000).toISOString()]);
    expect(page.total).toBe(100);
  });

  it('a database that cannot be reached is reported by name (password hidden) with its code', async () => {
    const store = open('postgres://hangar:secret@127.0.0.1:1/nowhere');
    const failure = await store.ready().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(HttpError);
    expect((failure as HttpError).code).toBe('HANGAR_STORAGE_UNREACHABLE');
    expect((failure as HttpError).detail).toMatch(/^the store at postgres:\/\/hangar:\*\*\*@127\.0\.0\.1:1\/nowhere cannot be reached: /);
    expect(store.describe()).toEqual({ backend: 'postgres', path: 'postgres://hangar:***@127.0.0.1:1/nowhere' });
    await expect(store.collection('x').get('a')).rejects.toThrow('cannot be reached');
  });

  it('a write PostgreSQL refuses answers 503 naming it, leaves nothing, reports unhealthy, then recovers', async () => {
    const store = open(await postgres.database());
    const notes = store.collection<{ text: string }>('notes', { countBy: ['text'] });
    // JSONB cannot hold a NUL character in a string.
    const failure = await notes.put('n1', { text: 'a\u0000b' }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(HttpError);
    expect((failure as HttpError).status).toBe(503);
    expect((failure as HttpError).code).toBe('HANGAR_STORAGE_WRITE_FAILED');
    expect((failure as HttpError).detail).toMatch(/^the store could not write notes\/n1: /);
    expect(await notes.has('n1')).toBe(false);
    expect(await notes.count()).toBe(0);
    // A read PostgreSQL refuses is a read failure, not an unreachable database.
    await expect(notes.query({ where: { text: 'a\u0000b' }, orderBy: [{ field: 'text' }] })).rejects.toMatchObject({
      code: 'HANGAR_STORAGE_READ_FAILED',
    });
    expect(store.health().ok).toBe(false);
    // The failed health check probed the database in the background; it can write, so the next check is healthy.
    await expect.poll(() => store.health()).toEqual({ ok: true });
    await notes.put('n1', { text: 'fine' });
    expect((await notes.query({ where: { text: 'fine' } })).total).toBe(1);
  });

  it("an update function's own error passes through unchanged and rolls back", async () => {
    const store = open(await postgres.database());
    const things = store.collection<number>('things');
    await things.put('a', 1);
    const own = new RangeError('mine');
    await expect(
      things.update('a', () => {
        throw own;
      }),
    ).rejects.toBe(own);
    await expect(
      things.deleteWhere(() => {
        throw own;
      }),
    ).rejects.toBe(own);
    expect(await things.get('a')).toBe(1);
    expect(store.health()).toEqual({ ok: true });
  });

  it('refuses a database written by a newer Hangar', async () => {
    const url = await postgres.database();
    const first = open(url);
    await first.ready();
    await first.pool.query('UPDATE hangar_schema SET version = 99');
    await expect(open(url).ready()).rejects.toThrow(`was written by a newer Hangar (schema 99, this one knows ${PG_MIGRATIONS.length})`);
  });

  it('two schemas on one database are separate stores', async () => {
    const url = await postgres.database();
    await open(url, 'team_a').collection('c').put('x', 'a');
    await open(url, 'team_b').collection('c').put('x', 'b');
    expect(await open(url, 'team_a').collection('c').get('x')).toBe('a');
    expect(await open(url, 'team_b').collection('c').get('x')).toBe('b');
    expect(() => new PostgresStore(url, { schema: 'bad; DROP' })).toThrow('invalid schema name');
  });

  it('stats: records and bytes per collection and log, and the size of the tables', async () => {
    const store = open(await postgres.database());
    await store.collection('notes').put('n', { text: 'hello' });
    await store.appendLog('messages').append('t', [{ text: 'hi' }, { text: 'there' }]);
    const stats = await store.stats();
    expect(stats.backend).toBe('postgres');
    expect(stats.collections.notes).toMatchObject({ records: 1 });
    expect(stats.collections.messages).toMatchObject({ records: 1 });
    expect(stats.collections.messages!.bytes).toBeGreaterThan(0);
    expect(stats.bytes).toBeGreaterThan(0);
    expect(await store.appendLog('messages').stats()).toMatchObject({ records: 1 });
  });

  it("checkpoints on PostgreSQL: a record per step, newest first, kept to checkpoints.keep, owned by the chain's first writer", async () => {
    const store = open(await postgres.database());
    const checkpoints = new RecordCheckpointer(store, 3);
    const step = (i: number): Checkpoint => ({
      id: `c${i}`,
      thread_id: 't',
      step: i,
      state: { messages: [{ role: 'user', content: `m${i}` }] } as never,
      metadata: { source: 'loop' } as never,
      parent_id: i ? `c${i - 1}` : null,
      timestamp: new Date(i * 1000).toISOString(),
    });
    for (let i = 0; i < 5; i++) await checkpoints.put('agent', step(i), i === 0 ? 'alice' : 'bob');
    expect((await checkpoints.list('agent', 't')).map((c) => c.id)).toEqual(['c4', 'c3', 'c2']);
    expect((await checkpoints.list('agent', 't', 2)).map((c) => c.id)).toEqual(['c4', 'c3']);
    expect((await checkpoints.latest('agent', 't'))?.state).toEqual(step(4).state);
    expect(await checkpoints.get('agent', 't', 'c0')).toBeUndefined();
    expect(await checkpoints.owner('agent', 't')).toBe('alice');
    await checkpoints.delete('agent', 't');
    expect(await checkpoints.latest('agent', 't')).toBeUndefined();
    expect(await checkpoints.owner('agent', 't')).toBeUndefined();
  });
});
