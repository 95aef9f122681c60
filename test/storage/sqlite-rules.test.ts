/**
 * The rules of the SQLite store at their edges (issue 30, the `storage` mutation group): data for
 * which a plausible wrong rule answers differently, limits just under and just over, and what the
 * file holds afterwards (read with a second connection, as another process would).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync, type DatabaseSyncOptions } from 'node:sqlite';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { HangarError } from '../../core/kernel/errors.js';
import type { InvocationRow } from '../../core/kernel/store.js';
import { LowdbStore } from '../../core/storage/lowdb-store.js';
import { queryInMemory } from '../../core/storage/query.js';
import { headOf, itemRows, itemText, KEY_SPAN, packItem } from '../../core/storage/sqlite-logs.js';
import { MIGRATIONS, MMAP_BYTES, SqliteStore } from '../../core/storage/sqlite-store.js';

const opened: Array<{ close(): void }> = [];
afterEach(() => {
  for (const one of opened.splice(0)) one.close();
});

async function open(): Promise<{ store: SqliteStore; raw: DatabaseSync }> {
  const file = path.join(await mkdtemp(path.join(tmpdir(), 'hangar-rules-')), 'hangar.db');
  const store = new SqliteStore(file);
  const raw = new DatabaseSync(file);
  opened.push(raw, store);
  return { store, raw };
}

/** What a write that could not happen answers: the coded 503 and its reason. */
async function writeFailure(write: Promise<unknown>): Promise<{ code: string; status: number; message: string }> {
  const err = await write.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(HangarError);
  const { code, status, message } = err as HangarError;
  return { code, status, message };
}

interface Job {
  status: string;
  kind: string;
  at: number;
}

describe('a collection counting groups', () => {
  const groups = (raw: DatabaseSync) =>
    Object.fromEntries(
      (
        raw.prepare("SELECT grp, n FROM record_groups WHERE collection = 'jobs' ORDER BY grp").all() as Array<{ grp: string; n: number }>
      ).map((r) => [r.grp, r.n]),
    );

  it('moves a record between groups on every write, keeps a group whose record stays, and drops a group that empties', async () => {
    const { store, raw } = await open();
    const jobs = store.collection<Job>('jobs', { countBy: ['status'] });
    await jobs.put('a', { status: 'queued', kind: 'x', at: 1 });
    await jobs.put('b', { status: 'queued', kind: 'y', at: 2 });
    await jobs.put('c', { status: 'done', kind: 'x', at: 3 });
    expect(groups(raw)).toEqual({ '["done"]': 1, '["queued"]': 2, '{"fields":["status"]}': 0 });
    // A write that leaves the record in its group changes no count.
    await jobs.put('a', { status: 'queued', kind: 'z', at: 4 });
    await jobs.update('b', (job) => ({ ...job!, at: 5 }));
    expect(groups(raw)).toEqual({ '["done"]': 1, '["queued"]': 2, '{"fields":["status"]}': 0 });
    // The last record of a group leaves it: the group's row goes.
    await jobs.update('c', (job) => ({ ...job!, status: 'queued' }));
    expect(groups(raw)).toEqual({ '["queued"]': 3, '{"fields":["status"]}': 0 });
    expect(await jobs.delete('a')).toBe(true);
    expect(await jobs.delete('a')).toBe(false);
    expect(await jobs.update('gone', () => undefined)).toBeUndefined();
    expect(await jobs.update('b', () => undefined)).toBeUndefined();
    expect(groups(raw)).toEqual({ '["queued"]': 1, '{"fields":["status"]}': 0 });
    expect(await jobs.deleteWhere((job, id) => id === 'c' && job.status === 'queued')).toBe(1);
    expect(groups(raw)).toEqual({ '{"fields":["status"]}': 0 });
    expect((await jobs.query({ where: { status: 'queued' } })).total).toBe(0);
  });

  it('reads the counted fields of the record a write replaces as the record holds them: several fields, true, objects, absent ones', async () => {
    const { store, raw } = await open();
    const items = store.collection<Record<string, unknown>>('jobs', { countBy: ['status', 'urgent', 'owner'] });
    await items.put('a', { status: 'queued', urgent: true, owner: { team: 'x', n: 1.5 }, input: 'x'.repeat(10_000) });
    await items.put('b', { status: 'queued' });
    expect(groups(raw)).toEqual({
      '["queued",null,null]': 1,
      '["queued",true,{"team":"x","n":1.5}]': 1,
      '{"fields":["status","urgent","owner"]}': 0,
    });
    // Each record leaves the group its stored fields name (true stays true, the object stays that object).
    await items.put('a', { status: 'done', urgent: false, owner: null });
    await items.put('b', { status: 'done', urgent: false, owner: null });
    expect(groups(raw)).toEqual({ '["done",false,null]': 2, '{"fields":["status","urgent","owner"]}': 0 });
    expect(await items.delete('a')).toBe(true);
    expect(groups(raw)).toEqual({ '["done",false,null]': 1, '{"fields":["status","urgent","owner"]}': 0 });
  });

  it('counts from the groups only when every filtered field is counted; a filter on another field counts the records', async () => {
    const { store, raw } = await open();
    const jobs = store.collection<Job>('jobs', { countBy: ['status'] });
    for (let i = 0; i < 6; i++) await jobs.put(`j${i}`, { status: i < 4 ? 'queued' : 'done', kind: i % 2 ? 'x' : 'y', at: i });
    // Counts that disagree with the records tell which of the two answered.
    raw.prepare(`UPDATE record_groups SET n = 40 WHERE collection = 'jobs' AND grp = '["queued"]'`).run();
    expect((await jobs.query({ where: { status: 'queued' } })).total).toBe(40);
    expect((await jobs.query({ where: { status: 'queued', kind: 'x' } })).total).toBe(2);
    expect((await jobs.query({ where: { kind: 'x' } })).total).toBe(3);
  });

  it('keeps counts it finds marked as its own, and rebuilds counts marked for other fields', async () => {
    const { store, raw } = await open();
    const file = store.file;
    await store.collection<Job>('jobs', { countBy: ['status'] }).put('a', { status: 'queued', kind: 'x', at: 1 });
    store.close();
    // Another field list's marker: the counts are not these fields', so the next open rebuilds them.
    raw.prepare(`UPDATE record_groups SET grp = '{"fields":["kind"]}' WHERE collection = 'jobs' AND grp LIKE '{%'`).run();
    raw.prepare(`UPDATE record_groups SET n = 9 WHERE collection = 'jobs' AND grp = '["queued"]'`).run();
    const again = new SqliteStore(file);
    opened.push(again);
    const jobs = again.collection<Job>('jobs', { countBy: ['status'] });
    expect((await jobs.query({ where: { status: 'queued' } })).total).toBe(1);
    expect(groups(raw)).toEqual({ '["queued"]': 1, '{"fields":["status"]}': 0 });
    // With its own marker in place, what is counted is taken as it is (no recount at each open).
    raw.prepare(`UPDATE record_groups SET n = 7 WHERE collection = 'jobs' AND grp = '["queued"]'`).run();
    const third = new SqliteStore(file);
    opened.push(third);
    expect((await third.collection<Job>('jobs', { countBy: ['status'] }).query({ where: { status: 'queued' } })).total).toBe(7);
  });

  it('refuses countBy fields that are no identifiers before anything is stored', async () => {
    const { store, raw } = await open();
    expect(() => store.collection('jobs', { countBy: ['status; DROP TABLE records'] })).toThrow('invalid field name');
    expect(raw.prepare('SELECT COUNT(*) AS n FROM record_groups').get()).toEqual({ n: 0 });
  });
});

describe('a page filtered by several values of a field', () => {
  async function seeded() {
    const { store } = await open();
    const jobs = store.collection<Job>('jobs', { indexes: [['status', 'at']] });
    // Interleaved times, so a page merged from the per-value reads differs from either read alone.
    const rows: Array<[string, Job]> = [];
    for (let i = 0; i < 12; i++)
      rows.push([`j${String(i).padStart(2, '0')}`, { status: ['queued', 'working', 'done'][i % 3]!, kind: 'k', at: i }]);
    for (const [id, job] of rows) await jobs.put(id, job);
    return { jobs, rows };
  }

  it('answers every offset and limit at the page boundaries as the reference semantics does', async () => {
    const { jobs, rows } = await seeded();
    for (const desc of [true, false])
      for (const [offset, limit] of [
        [0, 1],
        [0, 3],
        [2, 3],
        [3, 3],
        [6, 2],
        [7, 5],
        [8, 1],
        [8, 9],
      ] as const) {
        const query = { where: { status: ['queued', 'working'] }, orderBy: [{ field: 'at', desc }], offset, limit };
        const page = await jobs.query(query);
        expect([query, page.items.map((j) => j.at), page.total]).toEqual([
          query,
          queryInMemory(rows, query).items.map((j) => j.at),
          queryInMemory(rows, query).total,
        ]);
      }
  });

  it('takes a value named twice once, and without an offset starts at the first record', async () => {
    const { jobs } = await seeded();
    const page = await jobs.query({ where: { status: ['done', 'queued', 'done'] }, orderBy: [{ field: 'at', desc: true }], limit: 5 });
    expect(page.items.map((j) => j.at)).toEqual([11, 9, 8, 6, 5]);
    expect(page.total).toBe(8);
  });

  it('with no limit, or no order, answers every matching record', async () => {
    const { jobs } = await seeded();
    const all = await jobs.query({ where: { status: ['queued', 'done'] }, orderBy: [{ field: 'at' }] });
    expect(all.items.map((j) => j.at)).toEqual([0, 2, 3, 5, 6, 8, 9, 11]);
    const unordered = await jobs.query({ where: { status: ['queued', 'done'] }, limit: 3 });
    expect(unordered.items.map((j) => j.at).sort((a, b) => a - b)).toEqual([0, 2, 3]);
    expect(unordered.total).toBe(8);
  });

  it('a limit of 0 answers only the total', async () => {
    const { jobs } = await seeded();
    expect(await jobs.query({ where: { status: ['queued', 'done'] }, orderBy: [{ field: 'at' }], limit: 0 })).toEqual({
      items: [],
      total: 8,
    });
    expect(await jobs.query({ where: { status: 'queued' }, limit: 0 })).toEqual({ items: [], total: 4 });
  });

  it("explains a page with the collection's declared index, also while the collection is still empty", async () => {
    const { store } = await open();
    const jobs = store.collection<Job>('empty_jobs', { indexes: [['status', 'at']] }) as unknown as {
      explain(query: object): string[];
    };
    const plan = jobs.explain({ where: { status: 'queued' }, orderBy: [{ field: 'at', desc: true }], limit: 5 });
    expect(plan.join('\n')).toContain('ix_empty_jobs_status_at__ordered');
    expect(jobs.explain({ where: { status: [] } })).toEqual([]);
  });
});

describe('keyed logs', () => {
  it('keeps an object item exactly as written: key order, times that are not canonical ISO, and keys it cannot store by shape', async () => {
    const { store } = await open();
    const log = store.appendLog<unknown>('messages');
    const proto = JSON.parse('{"__proto__":{"polluted":true},"a":1}') as unknown;
    const wide = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i]));
    const atLimit = Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, i]));
    const items = [
      { z: 1, a: '2026-01-02T03:04:05.678Z', m: '2026-02-30T00:00:00.000Z', n: '2026-01-02T03:04:05Z', s: 'text' },
      proto,
      wide,
      atLimit,
      {},
      [1, { a: 2 }],
      'plain',
      7,
      null,
    ];
    await log.append('k', items);
    const read = (await log.get('k'))!.items;
    expect(read.map((item) => JSON.stringify(item))).toEqual(items.map((item) => JSON.stringify(item)));
    expect(Object.keys(read[0] as object)).toEqual(['z', 'a', 'm', 'n', 's']);
    expect(Object.getPrototypeOf(read[1])).toBe(Object.prototype);
    expect(Object.keys(read[1] as object)).toEqual(['__proto__', 'a']);
  });

  it('stores an object item as its values under a shape, with canonical ISO times as milliseconds', () => {
    expect(packItem('{"role":"user","at":"2026-01-02T03:04:05.678Z","n":1}')).toEqual({
      shape: '[["role","at","n"],[1]]',
      value: `["user",${Date.UTC(2026, 0, 2, 3, 4, 5, 678)},1]`,
    });
    expect(packItem('{"role":"user","n":1}')).toEqual({ shape: '[["role","n"]]', value: '["user",1]' });
    // A time the calendar does not have, or one without milliseconds, stays text.
    expect(packItem('{"at":"2026-02-30T00:00:00.000Z"}')).toEqual({ shape: '[["at"]]', value: '["2026-02-30T00:00:00.000Z"]' });
    expect(packItem('{"at":"2026-01-02T03:04:05Z"}')).toEqual({ shape: '[["at"]]', value: '["2026-01-02T03:04:05Z"]' });
    expect(packItem('{}')).toEqual({ value: '{}' });
    expect(packItem('[{"a":1}]')).toEqual({ value: '[{"a":1}]' });
    expect(packItem(JSON.stringify(Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i]))))).not.toHaveProperty('shape');
    expect(packItem(JSON.stringify(Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`k${i}`, i]))))).toHaveProperty('shape');
  });

  it('writes one shape row per distinct shape, shared by every item and key of that shape', async () => {
    const { store, raw } = await open();
    const log = store.appendLog<unknown>('chat');
    await log.append('a', [
      { role: 'user', text: 'hi' },
      { role: 'bot', text: 'yo' },
    ]);
    await log.append('b', [
      { role: 'user', text: 'again' },
      { text: 'other order', role: 'user' },
    ]);
    expect(raw.prepare('SELECT shape FROM log_shapes ORDER BY id').all()).toEqual([
      { shape: '[["role","text"]]' },
      { shape: '[["text","role"]]' },
    ]);
  });

  it('reads a page at every edge: a negative offset from the end, a negative or zero limit, past the end', async () => {
    const { store } = await open();
    const log = store.appendLog<number>('numbers');
    await log.append('k', [0, 1, 2, 3, 4]);
    expect(await log.range('k', -1, 1)).toEqual({ items: [4], total: 5 });
    expect(await log.range('k', -5, 2)).toEqual({ items: [0, 1], total: 5 });
    expect(await log.range('k', -6, 2)).toEqual({ items: [0, 1], total: 5 });
    expect(await log.range('k', 4, 1)).toEqual({ items: [4], total: 5 });
    expect(await log.range('k', 3, 5)).toEqual({ items: [3, 4], total: 5 });
    expect(await log.range('k', 5, 1)).toEqual({ items: [], total: 5 });
    expect(await log.range('k', 1, -1)).toEqual({ items: [], total: 5 });
    expect(await log.range('k', 0, 1)).toEqual({ items: [0], total: 5 });
    expect(await log.range('none', 0, 3)).toEqual({ items: [], total: 0 });
    expect(await log.get('none')).toBeUndefined();
  });

  it('a key holds 2^28 items: the write that would pass that is refused with 503 and leaves the key as it was', async () => {
    const { store, raw } = await open();
    const log = store.appendLog<number>('numbers');
    await log.append('k', [1]);
    // The key as if it held all but one of its positions (its items are not needed to see the limit).
    raw.prepare("UPDATE log_keys SET length = ? WHERE log = 'numbers' AND key = 'k'").run(KEY_SPAN - 1);
    expect(await log.append('k', [2])).toEqual({ length: KEY_SPAN, version: 2 });
    const refused = await writeFailure(log.append('k', [3]));
    expect(refused).toMatchObject({ code: 'HANGAR_STORAGE_WRITE_FAILED', status: 503 });
    expect(refused.message).toContain('numbers/k');
    expect(refused.message).toContain('a key holds at most 268,435,456 items');
    expect(raw.prepare("SELECT version, length FROM log_keys WHERE log = 'numbers' AND key = 'k'").get()).toEqual({
      version: 2,
      length: KEY_SPAN,
    });
    expect(await log.range('k', -1, 1)).toEqual({ items: [2], total: KEY_SPAN });
    // The last position is the key's: the next key's first row is untouched.
    const other = store.appendLog<number>('numbers');
    await other.append('next', [9]);
    expect(await other.get('next')).toEqual({ items: [9], version: 1 });
    // A replacement writes from the first position: only its own length counts, not what the key held.
    expect(await log.set('k', [7])).toEqual({ items: [7], version: 3 });
    expect(await log.get('k')).toEqual({ items: [7], version: 3 });
  });

  it('the store holds 2^25 keyed lists: the key past the last number is refused, the one before it is made', async () => {
    const { store, raw } = await open();
    const log = store.appendLog<number>('numbers');
    await log.append('first', [1]);
    raw.prepare("INSERT INTO log_keys (id, log, key, version, length) VALUES (?, 'numbers', 'filler', 1, 0)").run(2 ** 25 - 2);
    expect(await log.append('last', [5])).toEqual({ length: 1, version: 1 });
    expect(await log.get('last')).toEqual({ items: [5], version: 1 });
    const refused = await writeFailure(log.append('beyond', [6]));
    expect(refused).toMatchObject({ code: 'HANGAR_STORAGE_WRITE_FAILED', status: 503 });
    expect(refused.message).toContain(`the store holds at most ${2 ** 25} keyed lists`);
    expect(await log.get('beyond')).toBeUndefined();
    expect((await log.keys()).sort()).toEqual(['filler', 'first', 'last']);
  });

  it('a delete takes only its own key: items, head, and the next key number’s items stay', async () => {
    const { store, raw } = await open();
    const log = store.appendLog<number>('numbers');
    await log.append('a', [1, 2]);
    await log.append('b', [3]);
    await log.append('c', [4, 5]);
    expect(await log.delete('b')).toBe(true);
    expect(await log.get('a')).toEqual({ items: [1, 2], version: 1 });
    expect(await log.get('c')).toEqual({ items: [4, 5], version: 1 });
    expect(raw.prepare('SELECT COUNT(*) AS n FROM log_items').get()).toEqual({ n: 4 });
    expect(raw.prepare("SELECT version FROM log_tombstones WHERE log = 'numbers' AND key = 'b'").get()).toEqual({ version: 2 });
    // Made again, the key counts on from its tombstone, through set() as through append().
    expect((await log.set('b', [8, 9])).version).toBe(3);
    expect(await log.get('b')).toEqual({ items: [8, 9], version: 3 });
    expect(await log.set('b', [])).toEqual({ items: [], version: 4 });
    expect(await log.range('b', 0, 5)).toEqual({ items: [], total: 0 });
  });

  it('counts keys and the bytes of their items per log, without the other logs', async () => {
    const { store } = await open();
    const mine = store.appendLog<string>('mine');
    const theirs = store.appendLog<string>('theirs');
    await mine.append('a', ['xx', 'yyy']);
    await mine.append('b', ['z']);
    await theirs.append('a', ['long item text']);
    // JSON text of each item: "xx" is 4 bytes, "yyy" 5, "z" 3.
    expect(await mine.stats()).toEqual({ records: 2, files: 1, bytes: 12 });
    expect(await store.appendLog('empty').stats()).toEqual({ records: 0, files: 1, bytes: 0 });
  });

  it('an item whose shape row is missing is reported, not read as something else', async () => {
    const { store, raw } = await open();
    await store.appendLog('chat').append('a', [{ role: 'user' }]);
    const file = store.file;
    raw.prepare('DELETE FROM log_shapes').run();
    // A fresh process: no shape is cached yet.
    const again = new SqliteStore(file);
    opened.push(again);
    await expect(again.appendLog('chat').get('a')).rejects.toThrow(/log item shape \d+ is missing from the store/);
  });
});

describe('the invocation table', () => {
  const T0 = Date.UTC(2026, 0, 1);
  const row = (i: number): InvocationRow => ({
    id: `call-${i}`,
    started: T0 + i * 1000,
    resource: 'agent',
    name: 'echo',
    operation: 'invoke',
    principal: 'local',
    status: 'ok',
    http_status: 200,
    duration_ms: 1,
    error: null,
    value: { id: `call-${i}`, n: i },
  });
  const ids = (page: { items: unknown[] }) => page.items.map((v) => (v as { id: string }).id);

  it('pages up to the last record and no further', async () => {
    const { store } = await open();
    const table = store.invocations();
    await table.insert([row(1), row(2), row(3)]);
    expect(ids(await table.page({}, 2, 2))).toEqual(['call-1']);
    expect(await table.page({}, 2, 3)).toEqual({ items: [], total: 3 });
    expect(await table.page({}, 2, 4)).toEqual({ items: [], total: 3 });
  });

  it('pruning keeps exactly the newest `keep`, nothing when asked for 0, and leaves a table within the number alone', async () => {
    const { store } = await open();
    const table = store.invocations();
    await table.insert([1, 2, 3, 4, 5].map(row));
    expect(await table.prune(5)).toBe(0);
    expect(await table.prune(6)).toBe(0);
    expect(await table.prune(4)).toBe(1);
    expect(ids(await table.page({}, 10, 0))).toEqual(['call-5', 'call-4', 'call-3', 'call-2']);
    expect(await table.prune(1)).toBe(3);
    expect(ids(await table.page({}, 10, 0))).toEqual(['call-5']);
    expect(await table.prune(0)).toBe(1);
    expect(await table.count()).toBe(0);
    expect(await table.prune(0)).toBe(0);
  });

  it('is made on first use with an index per list, each ending in the start time', async () => {
    const { store, raw } = await open();
    const names = () =>
      (
        raw.prepare("SELECT name FROM sqlite_master WHERE tbl_name = 'invocations' AND sql IS NOT NULL ORDER BY name").all() as Array<{
          name: string;
        }>
      ).map((r) => r.name);
    expect(names()).toEqual([]);
    await store.invocations().insert([]);
    expect(await store.invocations().count()).toBe(0);
    expect(names()).toEqual([
      'invocations',
      'invocations_name',
      'invocations_principal',
      'invocations_resource',
      'invocations_started',
      'invocations_status',
    ]);
  });
});

describe('opening and writing the store', () => {
  const scratchFile = async () => path.join(await mkdtemp(path.join(tmpdir(), 'hangar-rules-')), 'hangar.db');

  it('a database another process has locked is not damage: the open fails and the file stays where it is', async () => {
    const file = await scratchFile();
    const holder = new DatabaseSync(file);
    opened.push(holder);
    holder.exec('PRAGMA journal_mode = DELETE; CREATE TABLE t (x); INSERT INTO t VALUES (1); BEGIN EXCLUSIVE; INSERT INTO t VALUES (2);');
    const lines: string[] = [];
    expect(() => new SqliteStore(file, { busyTimeoutMs: 20, log: (_level, line) => lines.push(line) })).toThrow(/locked|busy/i);
    holder.exec('ROLLBACK');
    expect(readdirSync(path.dirname(file)).filter((f) => f.includes('damaged'))).toEqual([]);
    expect(lines.filter((l) => l.includes('damaged'))).toEqual([]);
    expect(holder.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 1 });
  });

  it('a path that cannot be opened as a file fails with SQLite’s own reason, moving nothing', async () => {
    const dir = path.dirname(await scratchFile());
    mkdirSync(path.join(dir, 'hangar.db'));
    expect(() => new SqliteStore(path.join(dir, 'hangar.db'))).toThrow(/unable to open database file/);
    expect(readdirSync(dir)).toEqual(['hangar.db']);
  });

  it('opens a file another connection is writing before it is in WAL mode, once that write ends (SQLite answers busy at once there)', async () => {
    const file = await scratchFile();
    const setup = new DatabaseSync(file);
    setup.exec('PRAGMA journal_mode = DELETE; CREATE TABLE t (x)');
    setup.close();
    // Another opener mid-write on the new file, in a thread of its own: it holds the write lock 300 ms.
    const writer = new Worker(
      `const { DatabaseSync } = require('node:sqlite');
const { parentPort, workerData } = require('node:worker_threads');
const db = new DatabaseSync(workerData);
db.exec('BEGIN IMMEDIATE; INSERT INTO t VALUES (1)');
parentPort.postMessage('writing');
setTimeout(() => { db.exec('COMMIT'); db.close(); }, 300);`,
      { eval: true, workerData: file },
    );
    await once(writer, 'message');
    const started = Date.now();
    const store = new SqliteStore(file, { busyTimeoutMs: 5_000 });
    opened.push(store);
    expect(Date.now() - started).toBeGreaterThanOrEqual(250);
    await once(writer, 'exit');
    const raw = new DatabaseSync(file);
    opened.push(raw);
    expect(raw.prepare('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    expect(raw.prepare('SELECT COUNT(*) AS n FROM t').get()).toEqual({ n: 1 });
    // Past the busy timeout it still fails, as a lock held by another process should.
    const other = await scratchFile();
    const holder = new DatabaseSync(other);
    opened.push(holder);
    holder.exec('PRAGMA journal_mode = DELETE; CREATE TABLE t (x); BEGIN IMMEDIATE; INSERT INTO t VALUES (2)');
    const again = Date.now();
    expect(() => new SqliteStore(other, { busyTimeoutMs: 200 })).toThrow(/locked/);
    expect(Date.now() - again).toBeGreaterThanOrEqual(190);
    holder.exec('ROLLBACK');
  });

  it('a file of a newer schema is refused at open, naming both versions; one of this schema opens as it is', async () => {
    const file = await scratchFile();
    const store = new SqliteStore(file);
    await store.collection('notes').put('n', { text: 'kept' });
    store.close();
    const raw = new DatabaseSync(file);
    opened.push(raw);
    expect(raw.prepare('PRAGMA user_version').get()).toEqual({ user_version: MIGRATIONS.length });
    const again = new SqliteStore(file);
    opened.push(again);
    expect(await again.collection('notes').get('n')).toEqual({ text: 'kept' });
    again.close();
    raw.exec(`PRAGMA user_version = ${MIGRATIONS.length + 1}`);
    expect(() => new SqliteStore(file)).toThrow(
      `${file} was written by a newer Hangar (schema ${MIGRATIONS.length + 1}, this one knows ${MIGRATIONS.length})`,
    );
    expect(raw.prepare("SELECT value FROM records WHERE id = 'n'").get()).toEqual({ value: '{"text":"kept"}' });
  });

  it('a write whose own code throws rolls back with that error, not a 503, and leaves the store healthy', async () => {
    const { store } = await open();
    const notes = store.collection<{ n: number }>('notes');
    await notes.put('a', { n: 1 });
    const mistake = new RangeError('the caller’s own mistake');
    await expect(
      notes.update('a', () => {
        throw mistake;
      }),
    ).rejects.toBe(mistake);
    expect(store.health()).toEqual({ ok: true });
    expect(await notes.get('a')).toEqual({ n: 1 });
    await notes.put('b', { n: 2 });
    expect(await notes.count()).toBe(2);
  });

  it('counts records and bytes per collection and per log; a collection opened but empty counts zero', async () => {
    const { store } = await open();
    await store.collection('notes').put('a', { t: 'xx' });
    await store.collection('notes').put('b', { t: 'y' });
    store.collection('empty');
    await store.appendLog<string>('chat').append('k', ['hello']);
    const stats = await store.stats();
    expect(stats.collections).toEqual({
      notes: { records: 2, files: 1, bytes: '{"t":"xx"}'.length + '{"t":"y"}'.length },
      empty: { records: 0, files: 1, bytes: 0 },
      chat: { records: 1, files: 1, bytes: '"hello"'.length },
    });
    expect(stats).toMatchObject({ backend: 'sqlite', path: store.file, files: 1 });
    expect(stats.bytes % 4096).toBe(0);
    expect(stats.bytes).toBeGreaterThan(0);
  });

  it('a flush moves the WAL into the database file and empties it', async () => {
    const { store } = await open();
    for (let i = 0; i < 20; i++) await store.collection('notes').put(`n${i}`, { text: 'z'.repeat(200) });
    expect(statSync(`${store.file}-wal`).size).toBeGreaterThan(0);
    await store.flush();
    expect(statSync(`${store.file}-wal`).size).toBe(0);
    store.close();
    await store.flush();
    store.close();
  });

  it('refuses collection and log names that could not be put in SQL text or a file name', async () => {
    const { store } = await open();
    for (const name of ['', '_leading', 'has space', "quote'", 'semi;colon', 'a/b'])
      expect(() => store.collection(name), name).toThrow(`invalid collection name "${name}"`);
    expect(() => store.appendLog('x y')).toThrow('invalid log name "x y"');
    for (const name of ['a', 'A.b-c_d', '9lives']) expect(() => store.collection(name)).not.toThrow();
  });

  it('indexes declared by every opener of an empty collection are made with its first write, each once, and older spellings go', async () => {
    const { store, raw } = await open();
    const indexes = () =>
      (
        raw
          .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' AND sql IS NOT NULL ORDER BY name")
          .all() as Array<{
          name: string;
        }>
      ).map((r) => r.name);
    raw.exec("CREATE INDEX ix_jobs_status ON records (collection, json_extract(value, '$.status'))");
    raw.exec("CREATE INDEX ix_jobs_status__id ON records (collection, json_extract(value, '$.status'), id)");
    store.collection('jobs', { indexes: [['status']] });
    store.collection('jobs', { indexes: [['status'], ['at']] });
    // Waiting for the first write: the older spellings are still there, the new ones not yet.
    expect(indexes()).toEqual(['ix_jobs_status', 'ix_jobs_status__id']);
    await store.collection('jobs').put('j', { status: 'queued', at: 1 });
    expect(indexes()).toEqual(['ix_jobs_at__ordered', 'ix_jobs_status__ordered']);
    // A collection that holds records gets a newly declared index at once.
    store.collection('jobs', { indexes: [['kind']] });
    expect(indexes()).toEqual(['ix_jobs_at__ordered', 'ix_jobs_kind__ordered', 'ix_jobs_status__ordered']);
    expect((raw.prepare("SELECT sql FROM sqlite_master WHERE name = 'ix_jobs_kind__ordered'").get() as { sql: string }).sql).toBe(
      `CREATE INDEX "ix_jobs_kind__ordered" ON records (collection, json_extract(value, '$.kind'), id) WHERE collection = 'jobs'`,
    );
  });
});

/**
 * The Store contract's SQLite half (sqlite-store.test.ts, invocation-table.test.ts and
 * group-counts.test.ts hold every backend to it), here so the storage mutation group runs it
 * without starting PostgreSQL for each mutant.
 */
describe('the Store contract on SQLite', () => {
  it('keeps records across a reopen: put, update, delete, deleteWhere, has, count, entries, list', async () => {
    const { store } = await open();
    const things = store.collection<{ n: number }>('things');
    await things.put('a', { n: 1 });
    await things.put('b', { n: 2 });
    await things.put('c', { n: 3 });
    expect(await things.update('a', (v) => ({ n: (v?.n ?? 0) + 10 }))).toEqual({ n: 11 });
    expect(await things.update('new', (v) => ({ n: v === undefined ? -1 : 0 }))).toEqual({ n: -1 });
    expect(await things.delete('new')).toBe(true);
    expect(await things.delete('b')).toBe(true);
    expect(await things.has('b')).toBe(false);
    expect(await things.has('c')).toBe(true);
    expect(await things.get('b')).toBeUndefined();
    store.close();
    const again = new SqliteStore(store.file);
    opened.push(again);
    const reopened = again.collection<{ n: number }>('things');
    expect(await reopened.get('a')).toEqual({ n: 11 });
    expect(await reopened.count()).toBe(2);
    expect(await reopened.entries()).toEqual([
      ['a', { n: 11 }],
      ['c', { n: 3 }],
    ]);
    expect(await reopened.list()).toEqual([{ n: 11 }, { n: 3 }]);
    expect(await reopened.deleteWhere((v) => v.n > 5)).toBe(1);
    expect(await reopened.entries()).toEqual([['c', { n: 3 }]]);
  });

  it('loses no update when 100 run at once', async () => {
    const { store } = await open();
    const counter = store.collection<number>('counter');
    await Promise.all(Array.from({ length: 100 }, () => counter.update('n', (v) => (v ?? 0) + 1)));
    expect(await counter.get('n')).toBe(100);
  });

  it('query: equality and any-of filters, ordering with ties by id both ways, pages and the total', async () => {
    const { store } = await open();
    const tasks = store.collection<{ status: string; at: number }>('tasks', { indexes: [['status', 'at']] });
    for (let i = 0; i < 9; i++) await tasks.put(`t${i}`, { status: ['queued', 'done'][i % 2]!, at: Math.floor(i / 3) });
    const page = async (q: Parameters<typeof tasks.query>[0]) => {
      const { items, total } = await tasks.query(q);
      return { items: items.map((t) => `${t.status}@${t.at}`), total };
    };
    expect(await page({ where: { status: 'done' }, orderBy: [{ field: 'at', desc: true }], limit: 2 })).toEqual({
      items: ['done@2', 'done@1'],
      total: 4,
    });
    expect(await page({ orderBy: [{ field: 'at' }], limit: 3, offset: 2 })).toEqual({
      items: ['queued@0', 'done@1', 'queued@1'],
      total: 9,
    });
    expect(await page({ where: { status: ['done'] }, orderBy: [{ field: 'at' }] })).toEqual({
      items: ['done@0', 'done@1', 'done@1', 'done@2'],
      total: 4,
    });
    expect(await tasks.query({ where: { status: [] } })).toEqual({ items: [], total: 0 });
    expect((await tasks.query({ where: { status: 'none' } })).total).toBe(0);
    await expect(tasks.query({ where: { 'x; DROP TABLE records': 1 } })).rejects.toThrow('invalid field name');
  });

  it('keyed logs: append, set, delete, keys, and versions that keep rising after a delete, across a reopen', async () => {
    const { store } = await open();
    const log = store.appendLog<{ i: number }>('messages');
    expect(await log.append('t1', [{ i: 0 }, { i: 1 }])).toEqual({ length: 2, version: 1 });
    expect(await log.append('t1', [{ i: 2 }])).toEqual({ length: 3, version: 2 });
    await log.append('t2', [{ i: 9 }]);
    expect(await log.set('t2', [{ i: 7 }, { i: 8 }])).toEqual({ items: [{ i: 7 }, { i: 8 }], version: 2 });
    expect(await log.get('t2')).toEqual({ items: [{ i: 7 }, { i: 8 }], version: 2 });
    expect(await log.delete('t2')).toBe(true);
    expect(await log.delete('t2')).toBe(false);
    expect(await log.get('t2')).toBeUndefined();
    expect(await log.append('t2', [{ i: 1 }])).toEqual({ length: 1, version: 4 });
    await log.flush();
    store.close();
    const again = new SqliteStore(store.file);
    opened.push(again);
    const reopened = again.appendLog<{ i: number }>('messages');
    expect(await reopened.get('t1')).toEqual({ items: [{ i: 0 }, { i: 1 }, { i: 2 }], version: 2 });
    expect(await reopened.get('t2')).toEqual({ items: [{ i: 1 }], version: 4 });
    expect((await reopened.keys()).sort()).toEqual(['t1', 't2']);
    expect(await again.appendLog('other').keys()).toEqual([]);
    expect(again.appendLog('messages')).toBe(again.appendLog('messages'));
  });

  it('invocations: newest first with ties in insertion order, filters, get, summaries, a batch skipping ids it holds', async () => {
    const { store } = await open();
    const T0 = Date.UTC(2026, 0, 1);
    const call = (i: number, over: Partial<InvocationRow> = {}): InvocationRow => ({
      id: `c${i}`,
      started: T0 + i * 1000,
      resource: i % 2 ? 'agent' : 'endpoint',
      name: 'echo',
      operation: 'invoke',
      principal: 'local',
      status: i === 3 ? 'error' : 'ok',
      http_status: i === 3 ? 503 : 200,
      duration_ms: 1,
      error: i === 3 ? 'boom' : null,
      value: { id: `c${i}`, n: i },
      ...over,
    });
    const table = store.invocations();
    await table.insert([call(2), call(1), call(3)]);
    await table.insert([call(3, { name: 'changed' }), call(4, { started: T0 + 3000 }), call(5, { started: T0 + 3000 })]);
    const ids = (page: { items: unknown[] }) => page.items.map((v) => (v as { id: string }).id);
    expect(await table.count()).toBe(5);
    expect(ids(await table.page({}, 10, 0))).toEqual(['c5', 'c4', 'c3', 'c2', 'c1']);
    expect(ids(await table.page({ resource: 'agent' }, 10, 0))).toEqual(['c5', 'c3', 'c1']);
    expect(await table.page({ name: 'changed' }, 10, 0)).toEqual({ items: [], total: 0 });
    expect(ids(await table.page({ status: 'error', since: T0 + 3000 }, 10, 0))).toEqual(['c3']);
    expect(await table.get('c2')).toEqual({ id: 'c2', n: 2 });
    expect(await table.get('c9')).toBeUndefined();
    expect((await table.summaries({ until: T0 + 2000 })).map((s) => s.id)).toEqual(['c1', 'c2']);
    expect(store.invocations()).toBe(table);
  });
});

describe('the store file', () => {
  const scratchDir = () => mkdtemp(path.join(tmpdir(), 'hangar-rules-'));

  it('a write that cannot take the lock answers 503 with Retry-After, naming what was not written; health probes and recovers', async () => {
    const { store, raw } = await open();
    const lines: string[] = [];
    const file = store.file;
    store.close();
    const waiting = new SqliteStore(file, { busyTimeoutMs: 20, log: (level, line) => lines.push(`${level} ${line}`) });
    opened.push(waiting);
    const tasks = waiting.collection<{ n: number }>('tasks');
    await tasks.put('t1', { n: 1 });
    expect(waiting.health()).toEqual({ ok: true });
    raw.exec('BEGIN EXCLUSIVE');
    const err = await tasks.put('t2', { n: 2 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HangarError);
    const failure = err as HangarError;
    expect(failure).toMatchObject({ status: 503, code: 'HANGAR_STORAGE_WRITE_FAILED', headers: { 'Retry-After': '1' } });
    expect(failure.message).toMatch(/^the store could not write tasks\/t2: database is locked/);
    expect(lines).toEqual([`error store: ${failure.message}`]);
    // Still locked: the probe (a write) fails too, and says so.
    const health = waiting.health();
    expect(health).toEqual({ ok: false, detail: expect.stringMatching(/^the store could not write a health probe: database is locked/) });
    raw.exec('ROLLBACK');
    expect(waiting.health()).toEqual({ ok: true });
    expect(waiting.health()).toEqual({ ok: true });
    expect(await tasks.has('t2')).toBe(false);
    await tasks.put('t2', { n: 2 });
    expect(await tasks.count()).toBe(2);
  });

  it('makes its folder, runs in WAL mode, reads through a memory map, and syncs each commit only when durability is full', async () => {
    const dir = await scratchDir();
    const normal = new SqliteStore(path.join(dir, 'a', 'b', 'hangar.db'));
    opened.push(normal);
    expect(normal.statement('PRAGMA journal_mode').get()).toEqual({ journal_mode: 'wal' });
    expect(normal.statement('PRAGMA synchronous').get()).toEqual({ synchronous: 1 });
    expect(normal.statement('PRAGMA mmap_size').get()).toEqual({ mmap_size: MMAP_BYTES });
    expect(normal.describe()).toEqual({ backend: 'sqlite', path: path.join(dir, 'a', 'b', 'hangar.db') });
    const full = new SqliteStore(path.join(dir, 'full.db'), { durability: 'full' });
    opened.push(full);
    expect(full.statement('PRAGMA synchronous').get()).toEqual({ synchronous: 2 });
    expect(normal.collection('x')).toBe(normal.collection('x'));
  });

  it('a file whose pages were scribbled over is moved aside, named in the log and by describe(), never emptied in place', async () => {
    const dir = await scratchDir();
    const file = path.join(dir, 'hangar.db');
    const first = new SqliteStore(file);
    for (let i = 0; i < 200; i++) await first.collection('notes').put(`n${i}`, { text: 'y'.repeat(500) });
    first.close();
    const bytes = readFileSync(file);
    bytes.fill(0xab, 8192, 16384);
    writeFileSync(file, bytes);
    const lines: string[] = [];
    const reopened = new SqliteStore(file, { log: (level, line) => lines.push(`${level} ${line}`) });
    opened.push(reopened);
    const { movedTo, problem } = reopened.recovered!;
    expect(path.basename(movedTo)).toMatch(/^hangar\.db\.damaged-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$/);
    expect(readFileSync(movedTo)).toEqual(bytes);
    // At most three of the problems quick_check lists.
    expect(problem.split('; ').length).toBeGreaterThan(0);
    expect(problem.split('; ').length).toBeLessThanOrEqual(3);
    expect(problem).not.toContain('ok');
    expect(lines).toEqual([
      `error store: hangar.db is damaged (${problem}); moved it to ${path.basename(movedTo)} and started an empty store`,
    ]);
    expect(reopened.describe()).toEqual({ backend: 'sqlite', path: file, recovered: { moved_to: movedTo, problem } });
    expect(await reopened.collection('notes').count()).toBe(0);
  });

  it('a file that is no database at all is moved aside too; a sound one is not', async () => {
    const dir = await scratchDir();
    const file = path.join(dir, 'hangar.db');
    writeFileSync(file, 'x'.repeat(4096));
    const store = new SqliteStore(file);
    opened.push(store);
    expect(store.recovered?.problem).toMatch(/not a database/);
    expect(readFileSync(store.recovered!.movedTo, 'utf8')).toBe('x'.repeat(4096));
    store.close();
    const sound = new SqliteStore(file);
    opened.push(sound);
    expect(sound.recovered).toBeUndefined();
    expect(readdirSync(dir).filter((f) => f.includes('damaged'))).toHaveLength(1);
  });

  it('names each index after its collection and fields in identifier characters, and refuses a field that is no identifier', async () => {
    const { store, raw } = await open();
    await store.collection('my.jobs-v2').put('a', { status: 'x' });
    store.collection('my.jobs-v2', { indexes: [['status']] });
    expect(raw.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' AND sql IS NOT NULL").all()).toEqual([
      { name: 'ix_my_jobs_v2_status__ordered' },
    ]);
    expect(() => store.collection('my.jobs-v2', { indexes: [['bad field']] })).toThrow('invalid field name');
  });

  it('counts the bytes of a log whose keys hold no items as zero', async () => {
    const { store } = await open();
    await store.appendLog('chat').set('empty', []);
    expect((await store.stats()).collections).toEqual({ chat: { records: 1, files: 1, bytes: 0 } });
  });
});

describe('what a failed write names', () => {
  it('every kind of write that cannot take the lock answers 503 naming what it was writing', async () => {
    const { store, raw } = await open();
    const file = store.file;
    const jobs0 = store.collection<{ status?: string }>('jobs');
    await jobs0.put('a', { status: 'queued' });
    await store.collection('plain').put('p', { x: 1 });
    await store.appendLog('numbers').append('k', [1]);
    await store.invocations().insert([]);
    store.close();
    const locked = new SqliteStore(file, { busyTimeoutMs: 5 });
    opened.push(locked);
    const jobs = locked.collection<{ status?: string }>('jobs');
    const log = locked.appendLog<number>('numbers');
    const table = locked.invocations();
    raw.exec('BEGIN EXCLUSIVE');
    const named = async (write: () => unknown) => {
      const err = await Promise.resolve()
        .then(write)
        .then(
          () => undefined,
          (e: unknown) => e,
        );
      expect(err).toBeInstanceOf(HangarError);
      return /^the store could not write (.*): database is locked/.exec((err as HangarError).message)?.[1];
    };
    expect(await named(() => jobs.update('a', () => ({ status: 'done' })))).toBe('jobs/a');
    expect(await named(() => jobs.delete('a'))).toBe('jobs/a');
    expect(await named(() => jobs.deleteWhere(() => true))).toBe('jobs (deleting matching records)');
    expect(await named(() => locked.collection('plain', { countBy: ['x'] }))).toBe('the counts of plain');
    expect(await named(() => locked.collection('jobs', { indexes: [['status']] }))).toBe('the index ix_jobs_status__ordered');
    expect(await named(() => log.append('k', [2]))).toBe('numbers/k');
    expect(await named(() => log.set('k', [2]))).toBe('numbers/k');
    expect(await named(() => log.delete('k'))).toBe('numbers/k');
    expect(await named(() => table.insert([{ ...invocation(1) }, invocation(2)]))).toBe('2 invocation record(s)');
    expect(await named(() => table.prune(0))).toBe('the invocation log (pruning)');
    expect(await named(() => new SqliteStore(file, { busyTimeoutMs: 5 }))).toBe('the schema');
    raw.exec('ROLLBACK');
    // A store opened on a file without the invocation table makes it on first use, in its own write.
    const fresh = path.join(await mkdtemp(path.join(tmpdir(), 'hangar-rules-')), 'hangar.db');
    const other = new SqliteStore(fresh, { busyTimeoutMs: 5 });
    opened.push(other);
    const otherRaw = new DatabaseSync(fresh);
    opened.push(otherRaw);
    otherRaw.exec('BEGIN EXCLUSIVE');
    expect(await named(() => other.invocations())).toBe('the invocation table');
    otherRaw.exec('ROLLBACK');
    expect(await jobs.get('a')).toEqual({ status: 'queued' });
  });
});

const invocation = (i: number): InvocationRow => ({
  id: `x${i}`,
  started: i,
  resource: 'agent',
  name: 'echo',
  operation: 'invoke',
  principal: 'local',
  status: 'ok',
  http_status: 200,
  duration_ms: 1,
  error: null,
  value: { id: `x${i}` },
});

describe('more edges of records and logs', () => {
  it('a record without a counted field is in the group of null, which a new record does not touch', async () => {
    const { store } = await open();
    const jobs = store.collection<{ status?: string }>('jobs', { countBy: ['status'] });
    await jobs.put('none', {});
    await jobs.put('a', { status: 'queued' });
    await jobs.put('b', { status: 'queued' });
    expect((await jobs.query({ where: { status: 'queued' } })).total).toBe(2);
    const raw = new DatabaseSync(store.file);
    opened.push(raw);
    expect(raw.prepare("SELECT grp, n FROM record_groups WHERE collection = 'jobs' AND grp LIKE '[%' ORDER BY grp").all()).toEqual([
      { grp: '["queued"]', n: 2 },
      { grp: '[null]', n: 1 },
    ]);
    // A collection that counts nothing keeps no counts.
    await store.collection('plain').put('p', { status: 'x' });
    expect(raw.prepare("SELECT COUNT(*) AS n FROM record_groups WHERE collection = 'plain'").get()).toEqual({ n: 0 });
  });

  it('the first record written by update() also makes the indexes the collection waited with', async () => {
    const { store, raw } = await open();
    const jobs = store.collection<{ status: string }>('jobs', { indexes: [['status']] });
    await jobs.update('a', () => ({ status: 'queued' }));
    expect(raw.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' AND sql IS NOT NULL").all()).toEqual([
      { name: 'ix_jobs_status__ordered' },
    ]);
  });

  it('a page without an order, filtered by several values, lists by id as the reference does', async () => {
    const { store } = await open();
    const jobs = store.collection<{ status: string }>('jobs');
    const rows: Array<[string, { status: string }]> = ['d', 'a', 'e', 'b', 'f', 'c'].map((id, i) => [id, { status: i % 2 ? 'x' : 'y' }]);
    for (const [id, value] of rows) await jobs.put(id, value);
    const query = { where: { status: ['y', 'x'] }, limit: 4, offset: 1 };
    expect((await jobs.query(query)).items).toEqual(queryInMemory(rows, query).items);
  });

  it("a key's head says whether it was made just now; its items read back as the JSON text they were written as", async () => {
    const { store } = await open();
    await store.appendLog('chat').append('k', [{ role: 'user', at: '2026-01-02T03:04:05.678Z' }, [1, 2], 'text']);
    const made = store.transaction(() => headOf(store, 'chat', 'new', 'chat/new'));
    expect(made).toMatchObject({ version: 0, length: 0, created: true });
    const found = store.transaction(() => headOf(store, 'chat', 'k', 'chat/k'));
    expect(found).toMatchObject({ version: 1, length: 3, created: false });
    expect(itemRows(store, found.id).map((row) => itemText(store, row))).toEqual([
      '{"role":"user","at":"2026-01-02T03:04:05.678Z"}',
      '[1,2]',
      '"text"',
    ]);
  });

  it('reads a shape once per store: ids are never reused, so what it read stays right', async () => {
    const { store, raw } = await open();
    const log = store.appendLog('chat');
    await log.append('k', [{ role: 'user' }]);
    expect((await log.get('k'))?.items).toEqual([{ role: 'user' }]);
    raw.prepare('DELETE FROM log_shapes').run();
    expect((await log.get('k'))?.items).toEqual([{ role: 'user' }]);
  });

  it('a path that is a folder is no database and no damage: the open fails and the folder stays', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'hangar-rules-'));
    mkdirSync(path.join(dir, 'hangar.db'));
    expect(() => new SqliteStore(path.join(dir, 'hangar.db'))).toThrow();
    expect(readdirSync(dir)).toEqual(['hangar.db']);
  });
});

describe('waiting for another process', () => {
  it('a writer waits for another process’s transaction (five seconds by default) instead of failing at once', async () => {
    const { store } = await open();
    await store.collection('notes').put('a', { n: 1 });
    // Another process holds the write lock for 300 ms.
    const holder = spawn(
      process.execPath,
      [
        '-e',
        `const { DatabaseSync } = require('node:sqlite');
         const db = new DatabaseSync(process.argv[1]);
         db.exec('BEGIN EXCLUSIVE');
         process.stdout.write('locked\\n');
         setTimeout(() => { db.exec('ROLLBACK'); db.close(); }, 300);`,
        store.file,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    await new Promise<void>((resolve) => holder.stdout.once('data', () => resolve()));
    await store.collection('notes').put('b', { n: 2 });
    expect(await store.collection('notes').count()).toBe(2);
    await new Promise((resolve) => holder.once('exit', resolve));
  });
});

/** node:sqlite's `defensive` option (newer than the @types/node here) off, so writable_schema can edit the schema. */
const NOT_DEFENSIVE = { defensive: false } as unknown as DatabaseSyncOptions;

describe('what the store finds at open', () => {
  it('imports a lowdb data folder named by importFrom, and nothing without one', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'hangar-rules-'));
    const data = path.join(dir, 'data');
    const old = new LowdbStore(data);
    await old.collection('notes').put('n1', { text: 'from lowdb' });
    await old.flush();
    const plain = new SqliteStore(path.join(dir, 'plain.db'));
    opened.push(plain);
    expect(await plain.collection('notes').count()).toBe(0);
    expect(existsSync(data)).toBe(true);
    const lines: string[] = [];
    const store = new SqliteStore(path.join(dir, 'hangar.db'), { importFrom: data, log: (_level, line) => lines.push(line) });
    opened.push(store);
    expect(await store.collection('notes').get('n1')).toEqual({ text: 'from lowdb' });
    expect(lines).toContain('store: imported notes: 1 record(s)');
  });

  it('a file that is no database is moved aside with the WAL beside it', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'hangar-rules-'));
    const file = path.join(dir, 'hangar.db');
    writeFileSync(file, 'x'.repeat(4096));
    writeFileSync(`${file}-wal`, 'old wal');
    writeFileSync(`${file}-shm`, 'old shm');
    const store = new SqliteStore(file);
    opened.push(store);
    const { movedTo } = store.recovered!;
    expect(readFileSync(`${movedTo}-wal`, 'utf8')).toBe('old wal');
  });

  it('a sound file whose rows break a constraint is damage quick_check reports: moved aside, the first problems named', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'hangar-rules-'));
    const file = path.join(dir, 'hangar.db');
    const store = new SqliteStore(file);
    for (let i = 0; i < 5; i++) await store.collection('notes').put(`n${i}`, { i });
    store.close();
    // NULL values where the schema says NOT NULL: the pages are sound, the rows are not.
    // Not defensive: writable_schema is how the rows get past their own constraint.
    const raw = new DatabaseSync(file, NOT_DEFENSIVE);
    const { sql } = raw.prepare("SELECT sql FROM sqlite_master WHERE name = 'records'").get() as { sql: string };
    raw.exec('PRAGMA writable_schema = ON');
    raw.prepare("UPDATE sqlite_master SET sql = ? WHERE name = 'records'").run(sql.replace('value TEXT NOT NULL', 'value TEXT'));
    raw.close();
    const loose = new DatabaseSync(file, NOT_DEFENSIVE);
    loose.exec('UPDATE records SET value = NULL');
    loose.exec('PRAGMA writable_schema = ON');
    loose.prepare("UPDATE sqlite_master SET sql = ? WHERE name = 'records'").run(sql);
    loose.close();
    const reopened = new SqliteStore(file);
    opened.push(reopened);
    const problem = reopened.recovered?.problem ?? '';
    const problems = problem.split('; ');
    expect(problems).toHaveLength(3);
    for (const one of problems) expect(one).toMatch(/NULL value in records\.value/);
    expect(await reopened.collection('notes').count()).toBe(0);
  });
});
