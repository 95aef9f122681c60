// The embedded-store question (the store issue): which SQLite driver, measured on Hangar's own
// workload rather than a generic one. Each driver gets the same schema and the same operations,
// WAL with synchronous=NORMAL, prepared statements, autocommit per write, as the store would run:
//   append   a chat message to a thread (one INSERT)
//   history  the newest 100 messages of a thread holding 10,000 (one indexed range read)
//   submit   a task and its first event (two INSERTs in one transaction)
//   claim    the next queued task (UPDATE … WHERE id = (SELECT … ORDER BY created LIMIT 1) RETURNING)
//   page     the newest 20 of 100,000 tasks by status (one indexed read)
// Figures are per-operation medians; the ratio is against node:sqlite (built into Node 22.13+ and
// 24, nothing to compile or download), measured in the same run. libsql and better-sqlite3 are not
// dependencies of Hangar: install them next to it (`npm install --no-save libsql better-sqlite3`;
// better-sqlite3 compiles, approve it in allowScripts) to include them, otherwise they are skipped.
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { record } from './lib/figures.mjs';

const require = createRequire(import.meta.url);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const OPS = Number(process.env.BENCH_OPS ?? 2000);
const TASKS = Number(process.env.BENCH_TASKS ?? 100_000);
const THREAD = 10_000;

/** Each driver behind the four calls the workload needs. */
const drivers = {
  'node:sqlite': () => {
    const { DatabaseSync } = require('node:sqlite');
    return (file) => {
      const db = new DatabaseSync(file);
      return { exec: (sql) => db.exec(sql), prepare: (sql) => db.prepare(sql), close: () => db.close() };
    };
  },
  libsql: () => {
    const Database = require('libsql');
    return (file) => {
      const db = new Database(file);
      return { exec: (sql) => db.exec(sql), prepare: (sql) => db.prepare(sql), close: () => db.close() };
    };
  },
  'better-sqlite3': () => {
    const Database = require('better-sqlite3');
    return (file) => {
      const db = new Database(file);
      return { exec: (sql) => db.exec(sql), prepare: (sql) => db.prepare(sql), close: () => db.close() };
    };
  },
};

const SCHEMA = `
  PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;
  CREATE TABLE messages (thread_id TEXT NOT NULL, position INTEGER NOT NULL, role TEXT NOT NULL, content TEXT NOT NULL, created_at TEXT NOT NULL, PRIMARY KEY (thread_id, position)) WITHOUT ROWID;
  CREATE TABLE tasks (id TEXT PRIMARY KEY, status TEXT NOT NULL, kind TEXT NOT NULL, target TEXT NOT NULL, created_at INTEGER NOT NULL, input TEXT NOT NULL);
  CREATE INDEX tasks_status_created ON tasks (status, created_at);
  CREATE INDEX tasks_created ON tasks (created_at);
  CREATE TABLE task_events (task_id TEXT NOT NULL, seq INTEGER NOT NULL, type TEXT NOT NULL, data TEXT NOT NULL, PRIMARY KEY (task_id, seq)) WITHOUT ROWID;
`;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const content = JSON.stringify({ text: 'x'.repeat(400) });

function timePerOp(n, fn) {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn(i);
  return ((performance.now() - t0) * 1000) / n; // µs per op
}

function measure(open) {
  const dir = mkdtempSync(path.join(tmpdir(), 'hangar-sqlite-'));
  const db = open(path.join(dir, 'store.db'));
  try {
    db.exec(SCHEMA);
    const append = db.prepare('INSERT INTO messages (thread_id, position, role, content, created_at) VALUES (?, ?, ?, ?, ?)');
    const history = db.prepare('SELECT position, role, content FROM messages WHERE thread_id = ? ORDER BY position DESC LIMIT 100');
    const insertTask = db.prepare('INSERT INTO tasks (id, status, kind, target, created_at, input) VALUES (?, ?, ?, ?, ?, ?)');
    const insertEvent = db.prepare('INSERT INTO task_events (task_id, seq, type, data) VALUES (?, ?, ?, ?)');
    const claim = db.prepare(
      "UPDATE tasks SET status = 'running' WHERE id = (SELECT id FROM tasks WHERE status = 'queued' ORDER BY created_at LIMIT 1) RETURNING id",
    );
    const page = db.prepare("SELECT id, status, created_at FROM tasks WHERE status = 'completed' ORDER BY created_at DESC LIMIT 20");

    // A long thread and a full board, in bulk (not measured).
    db.exec('BEGIN');
    for (let i = 0; i < THREAD; i++) append.run('long', i, i % 2 ? 'assistant' : 'user', content, new Date(0).toISOString());
    for (let i = 0; i < TASKS; i++) insertTask.run(`t${i}`, i % 10 ? 'completed' : 'queued', 'invoke', 'echo', i, '{}');
    db.exec('COMMIT');

    let next = THREAD;
    let taskNo = TASKS;
    const figures = { append: [], history: [], submit: [], claim: [], page: [] };
    for (let r = 0; r < ROUNDS; r++) {
      figures.append.push(timePerOp(OPS, () => append.run('long', next++, 'user', content, new Date().toISOString())));
      figures.history.push(timePerOp(OPS, () => history.all('long')));
      figures.submit.push(
        timePerOp(OPS, () => {
          const id = `t${taskNo}`;
          db.exec('BEGIN');
          insertTask.run(id, 'queued', 'invoke', 'echo', taskNo++, '{"input":{}}');
          insertEvent.run(id, 0, 'submitted', '{}');
          db.exec('COMMIT');
        }),
      );
      figures.claim.push(timePerOp(OPS, () => claim.get()));
      figures.page.push(timePerOp(OPS, () => page.all()));
    }
    return Object.fromEntries(Object.entries(figures).map(([k, v]) => [k, median(v)]));
  } finally {
    db.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const results = {};
for (const [name, load] of Object.entries(drivers)) {
  let open;
  try {
    open = load();
  } catch {
    console.log(`${name}: not installed, skipped`);
    continue;
  }
  results[name] = measure(open);
}
const base = results['node:sqlite'];
for (const [name, figures] of Object.entries(results)) {
  const parts = Object.entries(figures).map(
    ([op, us]) => `${op} ${us.toFixed(1)} µs${name === 'node:sqlite' ? '' : ` (${(us / base[op]).toFixed(2)}×)`}`,
  );
  // A comparison to choose a driver by, not a promise: recorded as context, no target.
  for (const [op, us] of Object.entries(figures)) {
    record({
      name: `${name}: ${op}`,
      value: us,
      unit: 'µs/op',
      baseline: name === 'node:sqlite' ? null : { label: 'node:sqlite', value: base[op] },
    });
  }
  console.log(`${name.padEnd(15)} ${parts.join(' | ')}`);
}
console.log(
  `(medians of ${ROUNDS} rounds × ${OPS} ops; thread of ${THREAD} messages, board of ${TASKS} tasks; ratio = time vs node:sqlite, lower is faster)`,
);
