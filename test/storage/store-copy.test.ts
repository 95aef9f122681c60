import { existsSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeCli } from '../../core/app/cli/store.js';
import { PostgresStore } from '../../core/storage/postgres-store.js';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';

let postgres: TestPostgres;
beforeAll(async () => {
  postgres = await startPostgres();
}, 60_000);
afterAll(() => postgres?.stop());

const scratchFile = async () => path.join(await mkdtemp(path.join(tmpdir(), 'hangar-copy-')), 'hangar.db');

async function run(...args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const progress: string[] = [];
  const code = await storeCli(args, { out: (l) => out.push(l), err: (l) => err.push(l), progress: (l) => progress.push(l) });
  return { code, out, err, progress };
}

type Task = { status: string; created_at: string };

const invocation = (id: string, started: number, status: string) => ({
  id,
  started,
  resource: 'agent',
  name: 'echo',
  operation: 'invoke',
  principal: 'local',
  status,
  http_status: status === 'ok' ? 200 : 500,
  duration_ms: 1.5,
  error: status === 'ok' ? null : 'boom',
  value: { id, started, status, input: { query: `q ${id}` } },
});

async function seed(file: string) {
  const store = new SqliteStore(file);
  const tasks = store.collection<Task>('tasks', { indexes: [['status', 'created_at']], countBy: ['status'] });
  for (let i = 0; i < 2_500; i++)
    await tasks.put(`t${String(i).padStart(5, '0')}`, { status: i % 5 ? 'done' : 'queued', created_at: `c${i}` });
  await store.collection('threads').put('th', { title: 'Ünïcode ✓', nested: { a: [1, 2, { b: null }] } });
  const messages = store.appendLog<{ text: string }>('messages');
  await messages.append('th', [{ text: 'one' }, { text: 'two' }]);
  await messages.append('th', [{ text: 'three' }]);
  await messages.append('gone', [{ text: 'x' }]);
  await messages.delete('gone');
  // A chat message is kept in SQLite as its values and a shape; it arrives as it was written.
  await store.appendLog('chat').append('th', [{ role: 'user', content: 'hi', timestamp: '2026-01-02T03:04:05.678Z' }]);
  await store.invocations().insert([invocation('i1', 1_000, 'ok'), invocation('i2', 2_000, 'error'), invocation('i3', 2_000, 'ok')]);
  store.close();
}

describe('hangar store copy', () => {
  it('copies SQLite into PostgreSQL and back with counts and progress; a second run changes nothing', async () => {
    const file = await scratchFile();
    await seed(file);
    const url = await postgres.database();
    const source = new SqliteStore(file);
    const changed = await source.appendLog('messages').changedAt(['th']);
    source.close();
    expect(changed.get('th')).toEqual(expect.any(Number));

    const first = await run('copy', '--from', file, '--to', url);
    expect(first.err).toEqual([]);
    expect(first.code).toBe(0);
    expect(first.out[0]).toMatch(/^copying .*hangar\.db → postgres:\/\/postgres:\*\*\*@/);
    expect(first.out).toContain('  collection tasks: 2,500 records');
    expect(first.out).toContain('  log messages: 1 keys');
    expect(first.out).toContain('  table invocations: 3 records');
    expect(first.out.at(-1)).toBe('copied 2,501 records in 2 collections, 2 keys in 2 logs and 3 invocation records');
    expect(first.progress.some((line) => /tasks \[#+\.*\] 1000\/2500/.test(line))).toBe(true);

    const second = await run('copy', '--from', file, '--to', url);
    expect(second.code).toBe(0);
    expect(second.out.slice(1)).toEqual(first.out.slice(1));

    const pg = new PostgresStore(url);
    try {
      // The counts per group are rebuilt from the copied records when the collection is opened.
      const tasks = pg.collection<Task>('tasks', { indexes: [['status', 'created_at']], countBy: ['status'] });
      expect((await tasks.query({ where: { status: 'queued' }, limit: 1 })).total).toBe(500);
      expect(await tasks.count()).toBe(2_500);
      expect(await pg.collection('threads').get('th')).toEqual({ title: 'Ünïcode ✓', nested: { a: [1, 2, { b: null }] } });
      const messages = pg.appendLog<{ text: string }>('messages');
      expect(await messages.get('th')).toEqual({ items: [{ text: 'one' }, { text: 'two' }, { text: 'three' }], version: 2 });
      // When the key last changed came along too (a thread's updated_at is read from it).
      expect(await messages.changedAt(['th'])).toEqual(changed);
      // A deleted key's version came along: created again, it keeps counting upwards.
      expect((await messages.append('gone', [{ text: 'y' }])).version).toBe(3);
      await tasks.put('t-new', { status: 'queued', created_at: 'z' });
      expect(await pg.appendLog('chat').get('th')).toEqual({
        items: [{ role: 'user', content: 'hi', timestamp: '2026-01-02T03:04:05.678Z' }],
        version: 1,
      });
      // Copied once (the second run added nothing), newest first with ties in their order.
      const calls = pg.invocations();
      expect(await calls.count()).toBe(3);
      expect((await calls.page({}, 10, 0)).items.map((v) => (v as { id: string }).id)).toEqual(['i3', 'i2', 'i1']);
      expect(await calls.get('i2')).toEqual(invocation('i2', 2_000, 'error').value);
      expect(await calls.summaries({ status: 'error' })).toEqual([
        {
          id: 'i2',
          started: 2_000,
          resource: 'agent',
          name: 'echo',
          operation: 'invoke',
          principal: 'local',
          status: 'error',
          http_status: 500,
          duration_ms: 1.5,
          error: 'boom',
        },
      ]);
      await calls.insert([invocation('i4', 3_000, 'ok')]);
    } finally {
      await pg.close();
    }

    const back = await scratchFile();
    const returned = await run('copy', '--from', url, '--to', back);
    expect(returned.code).toBe(0);
    expect(returned.out).toContain('  collection tasks: 2,501 records');
    expect(returned.out).toContain('  table invocations: 4 records');
    const sqlite = new SqliteStore(back);
    const tasks = sqlite.collection<Task>('tasks', { countBy: ['status'] });
    expect((await tasks.query({ where: { status: 'queued' }, limit: 1 })).total).toBe(501);
    expect(await sqlite.appendLog('messages').get('th')).toMatchObject({ version: 2 });
    expect(await sqlite.appendLog('messages').changedAt(['th'])).toEqual(changed);
    expect(await sqlite.appendLog('messages').get('gone')).toMatchObject({ version: 3, items: [{ text: 'y' }] });
    expect((await sqlite.appendLog('chat').get('th'))?.items).toEqual([
      { role: 'user', content: 'hi', timestamp: '2026-01-02T03:04:05.678Z' },
    ]);
    expect((await sqlite.invocations().page({}, 10, 0)).items.map((v) => (v as { id: string }).id)).toEqual(['i4', 'i3', 'i2', 'i1']);
    expect(await sqlite.invocations().get('i1')).toEqual(invocation('i1', 1_000, 'ok').value);
    sqlite.close();
    // Copying back again changes nothing.
    expect((await run('copy', '--from', url, '--to', back)).out).toContain('  table invocations: 4 records');
    const again = new SqliteStore(back);
    expect(await again.invocations().count()).toBe(4);
    again.close();
  });

  it('explains what is wrong with how it was called (exit 2) and what failed (exit 1)', async () => {
    const file = await scratchFile();
    await seed(file);
    expect((await run('--help')).out[0]).toMatch(/^Usage: hangar store copy --from SOURCE --to TARGET/);
    expect(await run('copy', '--to', file)).toMatchObject({
      code: 2,
      err: ['hangar: store copy needs --from and --to (see hangar store --help)'],
    });
    expect((await run('move', '--from', file, '--to', file)).err[0]).toMatch(/^hangar: unknown store command 'move'/);
    expect(await run('copy', '--from', file, '--to', file)).toMatchObject({
      code: 2,
      err: ['hangar: --from and --to name the same store (copy into another store)'],
    });
    const missing = path.join(path.dirname(file), 'none.db');
    expect(await run('copy', '--from', missing, '--to', file)).toMatchObject({
      code: 2,
      err: [`hangar: --from ${missing}: no such file (a workspace keeps its store in .hangar/hangar.db)`],
    });
    expect(existsSync(missing)).toBe(false);
    expect((await run('copy', '--from', file, '--to', 'mysql://db/x')).err).toEqual([
      'hangar: --to mysql://db/x is neither a postgres:// URL nor a file (see hangar store --help)',
    ]);
    expect((await run('copy', '--from', '${HANGAR_TEST_NOT_SET}', '--to', file)).err).toEqual([
      'hangar: environment variable HANGAR_TEST_NOT_SET is not set (set it, or give --from a URL or a file)',
    ]);
    const unreachable = await run('copy', '--from', file, '--to', 'postgres://x:secret@127.0.0.1:1/db');
    expect(unreachable.code).toBe(1);
    expect(unreachable.err[0]).toMatch(/^hangar: the store at postgres:\/\/x:\*\*\*@127\.0\.0\.1:1\/db cannot be reached: /);
    expect((await run('copy', '--from', file, '--to', file, '--bogus')).code).toBe(2);
  });
});
