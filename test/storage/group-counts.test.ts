/**
 * Counts per group (`countBy`): one implementation through the query layer (store-sql.ts) for the
 * SQLite and PostgreSQL stores, so a filtered list's total is the same on both and equals a count
 * of the matching records (the reference: query.ts's queryInMemory), through every kind of write.
 */
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Collection, RecordQuery, Store } from '../../core/kernel/store.js';
import { PostgresStore } from '../../core/storage/postgres-store.js';
import { queryInMemory } from '../../core/storage/query.js';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';

let postgres: TestPostgres;
const opened: Array<{ close(): unknown }> = [];
beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);
afterAll(async () => {
  for (const store of opened) await store.close();
  await postgres?.stop();
});

interface Job {
  status: string;
  urgent?: boolean;
  tries?: number;
}

const scratch = async () => path.join(await mkdtemp(path.join(tmpdir(), 'hangar-groups-')), 'hangar.db');

const backends: Array<[string, () => Promise<Store & { close(): unknown }>]> = [
  ['SQLite', async () => new SqliteStore(await scratch())],
  [
    'PostgreSQL',
    async () => {
      const store = new PostgresStore(await postgres.database());
      await store.ready();
      return store;
    },
  ],
];

const filters: RecordQuery['where'][] = [
  { status: 'queued' },
  { status: ['queued', 'done'] },
  { urgent: true },
  { urgent: false },
  { tries: 2 },
  { status: 'done', urgent: true },
  { status: 'nothing' },
  {},
];

async function expectTotals(jobs: Collection<Job>) {
  const entries = await jobs.entries();
  for (const where of filters)
    expect([where, (await jobs.query({ where, limit: 0 })).total]).toEqual([where, queryInMemory(entries, { where }).total]);
}

describe.each(backends)('counts per group on %s', (_, open) => {
  it('a total from the groups equals a count of the records, through put, update, delete and deleteWhere', async () => {
    const store = await open();
    opened.push(store);
    const jobs = store.collection<Job>('jobs', { countBy: ['status', 'urgent', 'tries'] });
    for (let i = 0; i < 40; i++) {
      await jobs.put(`j${i}`, {
        status: ['queued', 'working', 'done'][i % 3]!,
        ...(i % 4 ? { urgent: i % 4 === 1 } : {}),
        ...(i % 5 ? { tries: i % 5 } : {}),
      });
    }
    await expectTotals(jobs);
    await jobs.put('j1', { status: 'done', urgent: true, tries: 2 });
    await jobs.update('j2', (job) => ({ ...job!, status: 'queued' }));
    await jobs.update('j3', () => undefined);
    await jobs.update('missing', () => undefined);
    await jobs.delete('j4');
    await jobs.delete('j4');
    expect(await jobs.deleteWhere((job) => job.status === 'working')).toBeGreaterThan(0);
    await expectTotals(jobs);
  });
});

describe('counts per group kept in the older SQLite spelling', () => {
  it('are rebuilt from the records when the collection is opened', async () => {
    const file = await scratch();
    const first = new SqliteStore(file);
    const jobs = first.collection<Job>('jobs');
    for (let i = 0; i < 12; i++) await jobs.put(`j${i}`, { status: i % 3 ? 'queued' : 'done', urgent: i % 2 === 0 });
    // What the store wrote before its groups went through the query layer: a SQL-built array (true as 1) and a '#fields' marker.
    first
      .statement(
        "INSERT INTO record_groups (collection, grp, n) VALUES ('jobs', '[\"done\",1]', 99), ('jobs', '#fields[\"status\",\"urgent\"]', 0)",
      )
      .run();
    first.close();
    const reopened = new SqliteStore(file);
    opened.push(reopened);
    await expectTotals(reopened.collection<Job>('jobs', { countBy: ['status', 'urgent'] }));
  });
});
