import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { StoreCheckpointer } from '../../core/agents/checkpointer.js';
import { MIGRATIONS, SqliteStore } from '../../core/storage/sqlite-store.js';

/**
 * A database made by the schema before the compact layouts (migrations 1–4: keyed-log rows keyed
 * by log name and key text, checkpoint steps keyed by (chain, seq) with an index of whole ids),
 * written row by row as that code wrote it, then opened by today's store: everything reads the same.
 */
const ID1 = '0b5d8f0e-1c2a-4e3b-9d4c-5a6b7c8d9e0f';
const ID2 = 'f1e2d3c4-b5a6-4978-8695-a4b3c2d1e0f9';
const hex = (id: string) => Buffer.from(id.replace(/-/g, ''), 'hex');

async function oldDatabase(): Promise<string> {
  const file = path.join(await mkdtemp(path.join(tmpdir(), 'hangar-upgrade-')), 'hangar.db');
  const db = new DatabaseSync(file);
  for (const sql of MIGRATIONS.slice(0, 4)) db.exec(sql);
  db.exec('PRAGMA user_version = 4');
  const item = db.prepare('INSERT INTO log_items (log, key, position, value) VALUES (?, ?, ?, ?)');
  const head = db.prepare('INSERT INTO log_keys (log, key, version, length) VALUES (?, ?, ?, ?)');
  const messages = [
    { role: 'user', content: 'hello', timestamp: '2026-01-01T00:00:00.000Z' },
    { role: 'assistant', content: 'echo: hello', timestamp: '2026-01-01T00:00:01.000Z' },
  ];
  messages.forEach((m, i) => item.run('thread_messages', 'chat/t1', i, JSON.stringify(m)));
  head.run('thread_messages', 'chat/t1', 3, 2);
  ['a', [1, 2], 'c'].forEach((v, i) => item.run('events', 'run-1', i, JSON.stringify(v)));
  head.run('events', 'run-1', 1, 3);
  db.prepare('INSERT INTO log_tombstones (log, key, version) VALUES (?, ?, ?)').run('events', 'gone', 4);
  db.prepare("INSERT INTO cp_chains (chain, principal, next, channels, messages) VALUES ('chat/t1', 'local', 2, ?, 0)").run(
    JSON.stringify(['messages', 'response']),
  );
  const step = db.prepare(
    'INSERT INTO cp_steps (chain, seq, id, parent, step, ts, source, node, next, extra, versions) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, NULL, ?)',
  );
  step.run(0, hex(ID1), null, 0, Date.parse('2026-01-01T00:00:00.000Z'), 'input', null, 'agent', JSON.stringify([[[['t', 0, 1]]], ['']]));
  step.run(
    1,
    hex(ID2),
    1,
    1,
    Date.parse('2026-01-01T00:00:01.000Z'),
    'loop',
    'agent',
    null,
    JSON.stringify([[[['t', 0, 1]]], ['echo: hello']]),
  );
  db.prepare("INSERT INTO imports (source, imported_at, counts) VALUES ('/old/data', '2026-01-01', '{}')").run();
  db.close();
  return file;
}

describe('opening a database of the previous schema', () => {
  it('converts keyed logs, checkpoint steps and the import record; everything reads the same and grows on', async () => {
    const file = await oldDatabase();
    const store = new SqliteStore(file);
    const version = (store.statement('PRAGMA user_version').get() as { user_version: number }).user_version;
    expect(version).toBe(MIGRATIONS.length);

    const thread = store.appendLog('thread_messages');
    expect(await thread.get('chat/t1')).toEqual({
      items: [
        { role: 'user', content: 'hello', timestamp: '2026-01-01T00:00:00.000Z' },
        { role: 'assistant', content: 'echo: hello', timestamp: '2026-01-01T00:00:01.000Z' },
      ],
      version: 3,
    });
    const events = store.appendLog('events');
    expect(await events.range('run-1', -2, 2)).toEqual({ items: [[1, 2], 'c'], total: 3 });
    expect((await events.keys()).sort()).toEqual(['run-1']);
    // A deleted key's version survived: created again it counts on from there.
    expect(await events.append('gone', ['x'])).toEqual({ length: 1, version: 5 });
    // A head from before the store kept when a key changed has no time until its next change.
    expect(await thread.changedAt(['chat/t1'])).toEqual(new Map());
    expect(await thread.append('chat/t1', [{ role: 'user', content: 'again', timestamp: '2026-01-01T00:00:02.000Z' }])).toEqual({
      length: 3,
      version: 4,
    });
    expect([...(await thread.changedAt(['chat/t1'])).keys()]).toEqual(['chat/t1']);
    expect((await thread.range('chat/t1', 1, 5)).items.map((m) => (m as { content: string }).content)).toEqual(['echo: hello', 'again']);

    const checkpoints = new StoreCheckpointer(store, { threadMessages: thread });
    const history = await checkpoints.list('chat', 't1');
    expect(history.map((c) => [c.id, c.parent_id, c.step, c.timestamp])).toEqual([
      [ID2, ID1, 1, '2026-01-01T00:00:01.000Z'],
      [ID1, null, 0, '2026-01-01T00:00:00.000Z'],
    ]);
    expect(history[0]!.state).toEqual({
      messages: [{ role: 'user', content: 'hello', timestamp: '2026-01-01T00:00:00.000Z' }],
      response: 'echo: hello',
    });
    expect(history[0]!.metadata).toEqual({ source: 'loop', node: 'agent', next: null });
    expect(await checkpoints.get('chat', 't1', ID1)).toEqual(history[1]);
    expect(await checkpoints.owner('chat', 't1')).toBe('local');
    // The step after the converted ones follows them.
    await checkpoints.put('chat', { ...history[0]!, id: '11111111-2222-4333-8444-555555555555', parent_id: ID2, step: 2 });
    expect((await checkpoints.list('chat', 't1')).map((c) => [c.step, c.parent_id])).toEqual([
      [2, ID2],
      [1, ID1],
      [0, null],
    ]);
    expect(store.statement('SELECT source FROM imports').all()).toEqual([{ source: '/old/data' }]);
    store.close();
  });

  it('moves records out of the WITHOUT ROWID table into a rowid table; they read the same and their indexes are made again', async () => {
    // The schema as it was before the records moved (migrations 1-7): a record is kept inside its key's b-tree.
    const file = path.join(await mkdtemp(path.join(tmpdir(), 'hangar-upgrade-')), 'hangar.db');
    const before = MIGRATIONS.findIndex((sql) => sql.includes('CREATE TABLE records_rowid'));
    expect(before).toBeGreaterThan(0);
    const db = new DatabaseSync(file);
    for (const sql of MIGRATIONS.slice(0, before)) db.exec(sql);
    db.exec(`PRAGMA user_version = ${before}`);
    const put = db.prepare('INSERT INTO records (collection, id, value) VALUES (?, ?, ?)');
    put.run('jobs', 'b', JSON.stringify({ status: 'done', n: 2 }));
    put.run('jobs', 'a', JSON.stringify({ status: 'open', n: 1 }));
    db.exec(
      `CREATE INDEX "ix_jobs_status__ordered" ON records (collection, json_extract(value, '$.status'), id) WHERE collection = 'jobs'`,
    );
    expect((db.prepare("SELECT sql FROM sqlite_master WHERE name = 'records'").get() as { sql: string }).sql).toContain('WITHOUT ROWID');
    db.close();

    const store = new SqliteStore(file);
    const { sql } = store.statement("SELECT sql FROM sqlite_master WHERE name = 'records'").get() as { sql: string };
    expect(sql).not.toContain('WITHOUT ROWID');
    expect(
      store
        .statement('SELECT rowid, id FROM records ORDER BY rowid')
        .all()
        .map((row) => (row as { id: string }).id),
    ).toEqual(['a', 'b']);
    const jobs = store.collection<{ status: string; n: number }>('jobs', { indexes: [['status']] });
    expect(await jobs.get('b')).toEqual({ status: 'done', n: 2 });
    expect((await jobs.query({ where: { status: 'open' } })).items).toEqual([{ status: 'open', n: 1 }]);
    const plan = store
      .statement(
        "EXPLAIN QUERY PLAN SELECT id FROM records WHERE collection = 'jobs' AND json_extract(value, '$.status') = 'open' ORDER BY json_extract(value, '$.status'), id",
      )
      .all() as Array<{ detail: string }>;
    expect(plan.map((step) => step.detail).join(' ')).toContain('ix_jobs_status__ordered');
    store.close();
  });
});
