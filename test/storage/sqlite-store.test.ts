import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { mkdtemp, open, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import * as esbuild from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HangarError } from '../../core/kernel/errors.js';
import type { Store } from '../../core/kernel/store.js';
import { LowdbStore } from '../../core/storage/lowdb-store.js';
import { PostgresStore } from '../../core/storage/postgres-store.js';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';

const repo = path.resolve(import.meta.dirname, '..', '..');
const scratch = () => mkdtemp(path.join(tmpdir(), 'hangar-sqlite-'));

/** One real PostgreSQL for this file; each scratch folder maps to its own schema, so a reopen finds its data. */
let postgres: TestPostgres;
let postgresUrl: string;
const postgresStores: PostgresStore[] = [];
beforeAll(async () => {
  postgres = await startPostgres();
  postgresUrl = await postgres.database();
}, 60_000);
afterAll(async () => {
  await Promise.all(postgresStores.map((store) => store.close()));
  await postgres?.stop();
});
const openPostgres = (dir: string) => {
  const store = new PostgresStore(postgresUrl, { schema: `s_${createHash('sha1').update(dir).digest('hex').slice(0, 12)}` });
  postgresStores.push(store);
  return store;
};

/** The Store contract, the same for every implementation: what every subsystem relies on. */
const implementations: Array<[string, (dir: string) => Store]> = [
  ['lowdb', (dir) => new LowdbStore(dir)],
  ['sqlite', (dir) => new SqliteStore(path.join(dir, 'hangar.db'))],
  ['postgres', openPostgres],
];

describe.each(implementations)('store contract: %s', (_name, openStore) => {
  it('keeps records across a reopen: put, update, delete, deleteWhere, count, entries', async () => {
    const dir = await scratch();
    const store = openStore(dir);
    const things = store.collection<{ n: number }>('things');
    await things.put('a', { n: 1 });
    await things.put('b', { n: 2 });
    await things.put('c', { n: 3 });
    expect(await things.update('a', (v) => ({ n: (v?.n ?? 0) + 10 }))).toEqual({ n: 11 });
    expect(await things.update('missing', () => undefined)).toBeUndefined();
    expect(await things.delete('b')).toBe(true);
    expect(await things.delete('b')).toBe(false);
    await store.flush();
    const again = openStore(dir).collection<{ n: number }>('things');
    expect(await again.get('a')).toEqual({ n: 11 });
    expect(await again.has('b')).toBe(false);
    expect(await again.count()).toBe(2);
    expect(await again.deleteWhere((v) => v.n > 5)).toBe(1);
    expect((await again.entries()).sort()).toEqual([['c', { n: 3 }]]);
  });

  it('loses no update when 100 run at once', async () => {
    const dir = await scratch();
    const col = openStore(dir).collection<number>('counter');
    await Promise.all(Array.from({ length: 100 }, () => col.update('n', (v) => (v ?? 0) + 1)));
    expect(await openStore(dir).collection<number>('counter').get('n')).toBe(100);
  });

  it('keyed logs: append, set, delete, and versions that keep rising after a delete', async () => {
    const dir = await scratch();
    const log = openStore(dir).appendLog<{ i: number }>('messages');
    await log.append('t1', [{ i: 0 }, { i: 1 }]);
    expect(await log.append('t1', [{ i: 2 }])).toEqual({ length: 3, version: 2 });
    expect((await log.get('t1'))?.items).toEqual([{ i: 0 }, { i: 1 }, { i: 2 }]);
    await log.append('t2', [{ i: 9 }]);
    expect((await log.set('t2', [{ i: 7 }])).version).toBe(2);
    expect(await log.delete('t2')).toBe(true);
    expect(await log.delete('t2')).toBe(false);
    expect((await log.append('t2', [{ i: 1 }])).version).toBe(4);
    await log.flush();
    const reopened = openStore(dir).appendLog<{ i: number }>('messages');
    expect((await reopened.get('t1'))?.items.map((m) => m.i)).toEqual([0, 1, 2]);
    expect(await reopened.get('t2')).toEqual({ items: [{ i: 1 }], version: 4 });
    expect((await reopened.keys()).sort()).toEqual(['t1', 't2']);
  });

  it('keyed logs: when each key last changed, by append or set, for many keys in one call; a delete forgets it', async () => {
    const dir = await scratch();
    const log = openStore(dir).appendLog<number>('messages');
    const wait = () => new Promise((resolve) => setTimeout(resolve, 3));
    const t0 = Date.now();
    await log.append('a', [1]);
    await log.append('b', [1]);
    await wait();
    const t1 = Date.now();
    await log.append('a', [2]);
    const first = await log.changedAt(['a', 'b', 'never']);
    expect([...first.keys()].sort()).toEqual(['a', 'b']);
    expect(first.get('a')).toBeGreaterThanOrEqual(t1);
    expect(first.get('b')).toBeGreaterThanOrEqual(t0);
    expect(first.get('b')).toBeLessThan(first.get('a')!);
    await wait();
    await log.set('b', []);
    const cleared = (await log.changedAt(['b'])).get('b')!;
    expect(cleared).toBeGreaterThan(first.get('a')!);
    expect(await log.changedAt([])).toEqual(new Map());
    await log.delete('a');
    await log.flush();
    // Kept in the store, not in memory: a reopen reads the same times.
    expect(await openStore(dir).appendLog<number>('messages').changedAt(['a', 'b'])).toEqual(new Map([['b', cleared]]));
  });

  it('query: equality and any-of filters, ordering with ties by id, pages and the total', async () => {
    const store = openStore(await scratch());
    const tasks = store.collection<{ status: string; kind: string; created_at: string; urgent: boolean }>('tasks', {
      indexes: [['status', 'created_at'], ['created_at']],
      countBy: ['status', 'kind'],
    });
    const statuses = ['queued', 'working', 'done'];
    for (let i = 0; i < 30; i++) {
      // Three records share each timestamp, so the order of ties is visible.
      await tasks.put(`t${String(i).padStart(2, '0')}`, {
        status: statuses[i % 3]!,
        kind: i < 15 ? 'a' : 'b',
        created_at: `2026-01-01T00:00:${String(Math.floor(i / 3)).padStart(2, '0')}Z`,
        urgent: i % 5 === 0,
      });
    }
    const ids = async (q: Parameters<typeof tasks.query>[0]) => {
      const page = await tasks.query(q);
      return { ids: page.items.map((t) => `${t.status}@${t.created_at.slice(17, 19)}`), total: page.total };
    };
    const newestDone = await tasks.query({ where: { status: 'done' }, orderBy: [{ field: 'created_at', desc: true }], limit: 3 });
    expect(newestDone.total).toBe(10);
    expect(newestDone.items.map((t) => t.created_at.slice(17, 19))).toEqual(['09', '08', '07']);
    expect(
      await ids({
        where: { status: ['queued', 'working'], kind: 'b' },
        orderBy: [{ field: 'created_at', desc: true }],
        limit: 4,
        offset: 1,
      }),
    ).toEqual({
      ids: ['queued@09', 'working@08', 'queued@08', 'working@07'],
      total: 10,
    });
    expect((await tasks.query({ where: { urgent: true } })).total).toBe(6);
    expect(await tasks.query({ where: { status: [] } })).toEqual({ items: [], total: 0 });
    // Ascending with ties by id ascending: the oldest first.
    expect((await tasks.query({ orderBy: [{ field: 'created_at' }], limit: 2 })).items.map((t) => t.status)).toEqual(['queued', 'working']);
    await expect(tasks.query({ where: { 'x; DROP TABLE records': 1 } })).rejects.toThrow('invalid field name');

    // Totals stay right through every kind of write (the SQLite store keeps them per group).
    await tasks.update('t00', (t) => ({ ...t!, status: 'done' }));
    await tasks.update('t01', () => undefined);
    await tasks.delete('t02');
    await tasks.put('t03', { status: 'done', kind: 'b', created_at: '2026-01-02T00:00:00Z', urgent: false });
    expect(await tasks.deleteWhere((t) => t.kind === 'b' && t.status === 'working')).toBe(5);
    const all = await tasks.list();
    const filters: Array<Record<string, string | string[]>> = [
      { status: 'done' },
      { status: ['queued', 'working'] },
      { kind: 'b' },
      { status: 'done', kind: 'a' },
      {},
    ];
    for (const where of filters) {
      const expected = all.filter((t) =>
        Object.entries(where).every(([f, v]) => (Array.isArray(v) ? v : [v]).includes((t as unknown as Record<string, string>)[f]!)),
      ).length;
      expect((await tasks.query({ where, limit: 1 })).total, JSON.stringify(where)).toBe(expected);
    }
  });

  it('keyed logs: a range reads a page or the newest items without the rest, with the total', async () => {
    const log = openStore(await scratch()).appendLog<number>('messages');
    await log.append(
      't',
      Array.from({ length: 50 }, (_, i) => i),
    );
    expect(await log.range('t', 10, 3)).toEqual({ items: [10, 11, 12], total: 50 });
    expect(await log.range('t', -3, 3)).toEqual({ items: [47, 48, 49], total: 50 });
    expect(await log.range('t', -80, 2)).toEqual({ items: [0, 1], total: 50 });
    expect(await log.range('t', 49, 10)).toEqual({ items: [49], total: 50 });
    expect(await log.range('t', 50, 10)).toEqual({ items: [], total: 50 });
    expect(await log.range('t', 0, 0)).toEqual({ items: [], total: 50 });
    expect(await log.range('missing', -5, 5)).toEqual({ items: [], total: 0 });
  });
});

describe('SQLite store', () => {
  it("an append to a key of 10,000 items writes one row and the key's head, nothing else", async () => {
    const store = new SqliteStore(path.join(await scratch(), 'hangar.db'));
    const log = store.appendLog<{ text: string }>('messages');
    await log.set(
      'long',
      Array.from({ length: 10_000 }, (_, i) => ({ text: `message ${i} ${'x'.repeat(200)}` })),
    );
    const changes = () => (store.statement('SELECT total_changes() AS n').get() as { n: number }).n;
    const before = changes();
    const after = await log.append('long', [{ text: 'one more' }]);
    // Two rows written, and nothing of the 10,000 read back to answer.
    expect(changes() - before).toBe(2);
    expect(after).toEqual({ length: 10_001, version: 2 });
    expect((await log.range('long', -1, 1)).items).toEqual([{ text: 'one more' }]);
  });

  it('a failed commit answers 503 naming what was not written, rolls back, reports unhealthy, then recovers', async () => {
    const file = path.join(await scratch(), 'hangar.db');
    const store = new SqliteStore(file, { busyTimeoutMs: 50 });
    const tasks = store.collection<{ status: string }>('tasks');
    await tasks.put('t1', { status: 'queued' });
    // Another process holds the write lock past our busy timeout.
    const other = new DatabaseSync(file);
    other.exec('BEGIN EXCLUSIVE');
    const failure = await tasks.put('t2', { status: 'queued' }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(HangarError);
    expect((failure as HangarError).status).toBe(503);
    expect((failure as HangarError).detail).toMatch(/^the store could not write tasks\/t2: database is locked/);
    const health = store.health();
    expect(health.ok).toBe(false);
    other.exec('ROLLBACK');
    other.close();
    expect(await tasks.has('t2')).toBe(false);
    expect(store.health()).toEqual({ ok: true });
    await tasks.put('t2', { status: 'queued' });
    expect(await tasks.count()).toBe(2);
  });

  it('a query with declared indexes is answered from an index, made with the first record (an empty collection keeps no index page)', async () => {
    const store = new SqliteStore(path.join(await scratch(), 'hangar.db'));
    const tasks = store.collection('tasks', { indexes: [['status', 'created_at']] });
    const indexes = () =>
      store.statement("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records' AND sql IS NOT NULL").all();
    expect(indexes()).toEqual([]);
    await tasks.put('t1', { status: 'done', created_at: '2026-01-01T00:00:00Z' });
    expect(indexes()).toHaveLength(1);
    const plan = store
      .statement(
        "EXPLAIN QUERY PLAN SELECT value FROM records WHERE collection = 'tasks' AND json_extract(value, '$.status') IN (?) ORDER BY json_extract(value, '$.created_at') DESC, id DESC LIMIT 20",
      )
      .all('done') as Array<{ detail: string }>;
    expect(plan.map((row) => row.detail).join(' | ')).toMatch(/USING INDEX ix_tasks_status_created_at/);
  });

  it('a value JSON cannot hold is refused before anything is written', async () => {
    const store = new SqliteStore(path.join(await scratch(), 'hangar.db'));
    await expect(store.collection('c').put('x', undefined as never)).rejects.toThrow('JSON values only');
    expect(await store.collection('c').count()).toBe(0);
  });

  it('a damaged database file is moved aside with a timestamp, named in the log, and never silently emptied', async () => {
    const dir = await scratch();
    const file = path.join(dir, 'hangar.db');
    const first = new SqliteStore(file);
    for (let i = 0; i < 200; i++) await first.collection('notes').put(`n${i}`, { text: 'y'.repeat(500) });
    first.close();
    // Scribble over the middle of the file (past the header, into the b-tree pages).
    const handle = await open(file, 'r+');
    await handle.write(Buffer.alloc(8192, 0xab), 0, 8192, 8192);
    await handle.close();
    const lines: string[] = [];
    const reopened = new SqliteStore(file, { log: (_level, line) => lines.push(line) });
    expect(reopened.recovered?.movedTo).toMatch(/hangar\.db\.damaged-\d{4}-\d\d-\d\dT/);
    expect(existsSync(reopened.recovered!.movedTo)).toBe(true);
    expect(lines.join('\n')).toMatch(/store: hangar\.db is damaged \(.+\); moved it to hangar\.db\.damaged-.+ and started an empty store/);
    expect(await reopened.collection('notes').count()).toBe(0);
    await reopened.collection('notes').put('fresh', { text: 'ok' });
  });

  it('imports a workspace lowdb data folder once, in one transaction per collection, keeping the old files', async () => {
    const dir = await scratch();
    const data = path.join(dir, 'data');
    const old = new LowdbStore(data);
    for (let i = 0; i < 50; i++) await old.collection('threads', { shards: 4 }).put(`t${i}`, { id: `t${i}`, title: `thread ${i}` });
    await old.collection('tasks').put('task-1', { status: 'completed' });
    await old.appendLog('thread_messages').append('t1', [{ role: 'user', content: 'hi' }]);
    await old.appendLog('thread_messages').append('t1', [{ role: 'assistant', content: 'hello' }]);
    await old.flush();
    // A torn last line, as a crash mid-append leaves one: skipped, as the old log skipped it.
    await writeFile(path.join(data, '_logs', 'thread_messages.jsonl'), '{"k":"t1","v":3,"op":"ad', { flag: 'a' });

    const lines: string[] = [];
    const store = new SqliteStore(path.join(dir, 'hangar.db'), { importFrom: data, log: (_l, line) => lines.push(line) });
    expect(await store.collection('threads').count()).toBe(50);
    expect(await store.collection('tasks').get('task-1')).toEqual({ status: 'completed' });
    // Counts the import did not keep are built when a collection that counts is first opened.
    expect((await store.collection('counted', { countBy: ['title'] }).query({ where: { title: 'x' } })).total).toBe(0);
    expect((await store.collection('threads', { countBy: ['title'] }).query({ where: { title: ['thread 1', 'thread 2'] } })).total).toBe(2);
    expect(await store.appendLog('thread_messages').get('t1')).toEqual({
      items: [
        { role: 'user', content: 'hi' },
        { role: 'assistant', content: 'hello' },
      ],
      version: 2,
    });
    expect(lines).toContain('store: imported threads: 50 record(s)');
    expect(lines).toContain('store: imported thread_messages: 1 key(s)');
    expect(existsSync(data)).toBe(false);
    const kept = readdirSync(dir).find((f) => f.startsWith('data.imported-'));
    expect(kept).toBeDefined();
    expect(existsSync(path.join(dir, kept!, 'threads', 'meta.json'))).toBe(true);

    // Running it again — even with the old folder put back — changes nothing.
    await store.collection('threads').delete('t0');
    store.close();
    const { rename } = await import('node:fs/promises');
    await rename(path.join(dir, kept!), data);
    const twice = new SqliteStore(path.join(dir, 'hangar.db'), { importFrom: data });
    expect(await twice.collection('threads').count()).toBe(49);
    expect(existsSync(data)).toBe(true);
  });
});

/**
 * Other processes on the same database file, running the real store bundled once with esbuild.
 * Each writer prints `ack <n>` only after its write returned; the parent checks what the file holds.
 */
describe('SQLite store across processes', () => {
  let writer = '';
  beforeAll(async () => {
    const dir = await scratch();
    writer = path.join(dir, 'writer.mjs');
    const entry = path.join(dir, 'writer-entry.ts');
    await writeFile(
      entry,
      `import { SqliteStore } from ${JSON.stringify(path.join(repo, 'core', 'storage', 'sqlite-store.ts'))};
const [file, name, count, mode] = process.argv.slice(2);
const store = new SqliteStore(file, { busyTimeoutMs: 10_000, durability: 'normal' });
for (let i = 0; i < Number(count); i++) {
  if (mode === 'counter') await store.collection('counters').update('n', (v) => (v ?? 0) + 1);
  else await store.appendLog('acks').append(name, [i]);
  process.stdout.write('ack ' + i + '\\n');
}
`,
    );
    await esbuild.build({
      entryPoints: [entry],
      outfile: writer,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node22',
      logLevel: 'silent',
    });
  }, 60_000);

  function run(file: string, name: string, count: number, mode: 'counter' | 'log') {
    const child = spawn(process.execPath, [writer, file, name, String(count), mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let acked = -1;
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      for (const match of chunk.matchAll(/ack (\d+)/g)) acked = Math.max(acked, Number(match[1]));
    });
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    return { child, exited, acked: () => acked, stderr: () => stderr };
  }

  it('two processes updating one record lose nothing (SQLite locking, no second copy in memory)', async () => {
    const file = path.join(await scratch(), 'hangar.db');
    const a = run(file, 'a', 300, 'counter');
    const b = run(file, 'b', 300, 'counter');
    expect([await a.exited, await b.exited]).toEqual([0, 0]);
    expect(await new SqliteStore(file).collection<number>('counters').get('n')).toBe(600);
  }, 60_000);

  it('kill -9 in the middle of writing, five rounds with two writers: every acknowledged write survives', async () => {
    const file = path.join(await scratch(), 'hangar.db');
    for (let round = 0; round < 5; round++) {
      const writers = [run(file, `r${round}a`, 100_000, 'log'), run(file, `r${round}b`, 100_000, 'log')];
      // Once both are writing (however slow the machine is to start them), let them go on for a
      // while that differs per round, then kill both without warning.
      while (writers.some((w) => w.acked() < 20)) {
        if (writers.some((w) => w.child.exitCode !== null))
          throw new Error(`a writer exited early: ${writers.map((w) => w.stderr()).join('')}`);
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      await new Promise((resolve) => setTimeout(resolve, 50 + round * 40));
      for (const w of writers) w.child.kill('SIGKILL');
      await Promise.all(writers.map((w) => w.exited));
      const store = new SqliteStore(file);
      for (const [i, w] of writers.entries()) {
        const acked = w.acked();
        expect(acked, `writer ${i} of round ${round} wrote something (${w.stderr()})`).toBeGreaterThan(0);
        const items = (await store.appendLog<number>('acks').get(`r${round}${i ? 'b' : 'a'}`))?.items ?? [];
        // Every acknowledged append is there, in order; at most the one in flight beyond it.
        expect(items.length).toBeGreaterThanOrEqual(acked + 1);
        expect(items.slice(0, acked + 1)).toEqual(Array.from({ length: acked + 1 }, (_, n) => n));
      }
      store.close();
    }
    // And the file is sound afterwards.
    const check = new DatabaseSync(file, { readOnly: true });
    expect(check.prepare('PRAGMA quick_check').get()).toEqual({ quick_check: 'ok' });
    check.close();
    expect((await readFile(file)).length).toBeGreaterThan(0);
  }, 120_000);
});
