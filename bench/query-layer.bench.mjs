// The store issue's query-layer question: "one query layer that also speaks PostgreSQL (Kysely or
// Drizzle; measure its cost on the hot paths)". Each layer is used compile-only — it builds the
// query and turns it into SQL text plus parameters; node:sqlite runs that synchronously through a
// statement cache keyed by the SQL text, as the store does — on the store's own tables (records as
// JSON with json_extract, keyed logs as rows) and its hot paths:
//   append   a message to a thread of 10,000 (read the key's head, insert the item, upsert the head)
//   history  the newest 100 messages of that thread (head, then one indexed range)
//   submit   a task (upsert the record, bump its group count), one transaction
//   claim    the next queued task (indexed oldest-first read, then its update)
//   page     20 of 100,000 tasks by status, newest first, and the total
// The baseline is today's hand-written SQL, measured in the same run; medians of ROUNDS rounds.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DatabaseSync } from 'node:sqlite';
import { and, asc, desc, sql as dsql, eq } from 'drizzle-orm';
import { integer, sqliteTable, text } from 'drizzle-orm/sqlite-core';
import { drizzle } from 'drizzle-orm/sqlite-proxy';
import { DummyDriver, Kysely, sql as ksql, SqliteAdapter, SqliteIntrospector, SqliteQueryCompiler } from 'kysely';
import { report } from './lib/figures.mjs';

const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const OPS = Number(process.env.BENCH_OPS ?? 2000);
const TASKS = Number(process.env.BENCH_TASKS ?? 100_000);
const THREAD = 10_000;

const SCHEMA = `
  PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;
  CREATE TABLE records (collection TEXT NOT NULL, id TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (collection, id)) WITHOUT ROWID;
  CREATE TABLE log_keys (log TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL, length INTEGER NOT NULL, PRIMARY KEY (log, key)) WITHOUT ROWID;
  CREATE TABLE log_items (log TEXT NOT NULL, key TEXT NOT NULL, position INTEGER NOT NULL, value TEXT NOT NULL, PRIMARY KEY (log, key, position)) WITHOUT ROWID;
  CREATE TABLE record_groups (collection TEXT NOT NULL, grp TEXT NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (collection, grp)) WITHOUT ROWID;
  CREATE INDEX ix_tasks_status_created ON records (json_extract(value, '$.status'), json_extract(value, '$.created_at')) WHERE collection = 'tasks';
`;

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const message = JSON.stringify({ role: 'user', content: 'x'.repeat(400), created_at: new Date(0).toISOString() });
const taskValue = (i, status) => JSON.stringify({ id: `t${i}`, status, kind: 'invoke', target: 'echo', created_at: 1e12 + i, input: {} });

/** The hand-written SQL of today's store. */
const HAND = {
  head: 'SELECT version, length FROM log_keys WHERE log = ? AND key = ?',
  insertItem: 'INSERT INTO log_items (log, key, position, value) VALUES (?, ?, ?, ?)',
  upsertHead:
    'INSERT INTO log_keys (log, key, version, length) VALUES (?, ?, ?, ?) ON CONFLICT (log, key) DO UPDATE SET version = excluded.version, length = excluded.length',
  range: 'SELECT value FROM log_items WHERE log = ? AND key = ? AND position >= ? AND position < ? ORDER BY position',
  upsertRecord:
    'INSERT INTO records (collection, id, value) VALUES (?, ?, ?) ON CONFLICT (collection, id) DO UPDATE SET value = excluded.value',
  bumpGroup: 'INSERT INTO record_groups (collection, grp, n) VALUES (?, ?, 1) ON CONFLICT (collection, grp) DO UPDATE SET n = n + 1',
  oldest:
    "SELECT id, value FROM records WHERE collection = 'tasks' AND json_extract(value, '$.status') IN (?) ORDER BY json_extract(value, '$.created_at') ASC, id ASC LIMIT ?",
  page: "SELECT value FROM records WHERE collection = 'tasks' AND json_extract(value, '$.status') IN (?) ORDER BY json_extract(value, '$.created_at') DESC, id DESC LIMIT ? OFFSET ?",
  groups: 'SELECT grp, n FROM record_groups WHERE collection = ?',
};

/** Each layer answers the same calls with { sql, parameters }. */
const hand = {
  head: (log, key) => ({ sql: HAND.head, parameters: [log, key] }),
  insertItem: (log, key, position, value) => ({ sql: HAND.insertItem, parameters: [log, key, position, value] }),
  upsertHead: (log, key, version, length) => ({ sql: HAND.upsertHead, parameters: [log, key, version, length] }),
  range: (log, key, from, to) => ({ sql: HAND.range, parameters: [log, key, from, to] }),
  upsertRecord: (collection, id, value) => ({ sql: HAND.upsertRecord, parameters: [collection, id, value] }),
  bumpGroup: (collection, grp) => ({ sql: HAND.bumpGroup, parameters: [collection, grp] }),
  oldest: (status, limit) => ({ sql: HAND.oldest, parameters: [status, limit] }),
  page: (status, limit, offset) => ({ sql: HAND.page, parameters: [status, limit, offset] }),
  groups: (collection) => ({ sql: HAND.groups, parameters: [collection] }),
};

const k = new Kysely({
  dialect: {
    createAdapter: () => new SqliteAdapter(),
    createDriver: () => new DummyDriver(),
    createIntrospector: (db) => new SqliteIntrospector(db),
    createQueryCompiler: () => new SqliteQueryCompiler(),
  },
});
const kField = (field) => ksql`json_extract(value, ${ksql.lit(`$.${field}`)})`;
const kysely = {
  head: (log, key) => k.selectFrom('log_keys').select(['version', 'length']).where('log', '=', log).where('key', '=', key).compile(),
  insertItem: (log, key, position, value) => k.insertInto('log_items').values({ log, key, position, value }).compile(),
  upsertHead: (log, key, version, length) =>
    k
      .insertInto('log_keys')
      .values({ log, key, version, length })
      .onConflict((oc) =>
        oc.columns(['log', 'key']).doUpdateSet({ version: (eb) => eb.ref('excluded.version'), length: (eb) => eb.ref('excluded.length') }),
      )
      .compile(),
  range: (log, key, from, to) =>
    k
      .selectFrom('log_items')
      .select('value')
      .where('log', '=', log)
      .where('key', '=', key)
      .where('position', '>=', from)
      .where('position', '<', to)
      .orderBy('position')
      .compile(),
  upsertRecord: (collection, id, value) =>
    k
      .insertInto('records')
      .values({ collection, id, value })
      .onConflict((oc) => oc.columns(['collection', 'id']).doUpdateSet({ value: (eb) => eb.ref('excluded.value') }))
      .compile(),
  bumpGroup: (collection, grp) =>
    k
      .insertInto('record_groups')
      .values({ collection, grp, n: 1 })
      .onConflict((oc) => oc.columns(['collection', 'grp']).doUpdateSet({ n: (eb) => eb('record_groups.n', '+', 1) }))
      .compile(),
  oldest: (status, limit) =>
    k
      .selectFrom('records')
      .select(['id', 'value'])
      .where('collection', '=', ksql.lit('tasks'))
      .where(kField('status'), 'in', [status])
      .orderBy(kField('created_at'), 'asc')
      .orderBy('id', 'asc')
      .limit(limit)
      .compile(),
  page: (status, limit, offset) =>
    k
      .selectFrom('records')
      .select('value')
      .where('collection', '=', ksql.lit('tasks'))
      .where(kField('status'), 'in', [status])
      .orderBy(kField('created_at'), 'desc')
      .orderBy('id', 'desc')
      .limit(limit)
      .offset(offset)
      .compile(),
  groups: (collection) => k.selectFrom('record_groups').select(['grp', 'n']).where('collection', '=', collection).compile(),
};

/**
 * Kysely used the way a store adopts it: each statement is built once with a placeholder per
 * argument and compiled; a call maps its arguments onto that statement's parameters. The SQL text
 * still comes from Kysely's dialect compiler (SQLite here, PostgreSQL for team mode).
 */
function template(build) {
  let compiled;
  return (...args) => {
    if (!compiled) {
      const slots = args.map((_, i) => `\u0000arg${i}`);
      const query = build(...slots);
      compiled = {
        sql: query.sql,
        map: query.parameters.map((p) => (typeof p === 'string' && p.startsWith('\u0000arg') ? Number(p.slice(4)) : { constant: p })),
      };
    }
    return { sql: compiled.sql, parameters: compiled.map.map((m) => (typeof m === 'number' ? args[m] : m.constant)) };
  };
}
const kyselyOnce = Object.fromEntries(Object.entries(kysely).map(([op, build]) => [op, template(build)]));

const records = sqliteTable('records', { collection: text().notNull(), id: text().notNull(), value: text().notNull() });
const logKeys = sqliteTable('log_keys', {
  log: text().notNull(),
  key: text().notNull(),
  version: integer().notNull(),
  length: integer().notNull(),
});
const logItems = sqliteTable('log_items', {
  log: text().notNull(),
  key: text().notNull(),
  position: integer().notNull(),
  value: text().notNull(),
});
const groups = sqliteTable('record_groups', { collection: text().notNull(), grp: text().notNull(), n: integer().notNull() });
const d = drizzle(async () => ({ rows: [] }));
const dField = (field) => dsql`json_extract(${records.value}, ${dsql.raw(`'$.${field}'`)})`;
const drizzled = (query) => {
  const { sql, params } = query.toSQL();
  return { sql, parameters: params };
};
const drizzleLayer = {
  head: (log, key) =>
    drizzled(
      d
        .select({ version: logKeys.version, length: logKeys.length })
        .from(logKeys)
        .where(and(eq(logKeys.log, log), eq(logKeys.key, key))),
    ),
  insertItem: (log, key, position, value) => drizzled(d.insert(logItems).values({ log, key, position, value })),
  upsertHead: (log, key, version, length) =>
    drizzled(
      d
        .insert(logKeys)
        .values({ log, key, version, length })
        .onConflictDoUpdate({
          target: [logKeys.log, logKeys.key],
          set: { version: dsql`excluded.version`, length: dsql`excluded.length` },
        }),
    ),
  range: (log, key, from, to) =>
    drizzled(
      d
        .select({ value: logItems.value })
        .from(logItems)
        .where(and(eq(logItems.log, log), eq(logItems.key, key), dsql`${logItems.position} >= ${from}`, dsql`${logItems.position} < ${to}`))
        .orderBy(asc(logItems.position)),
    ),
  upsertRecord: (collection, id, value) =>
    drizzled(
      d
        .insert(records)
        .values({ collection, id, value })
        .onConflictDoUpdate({ target: [records.collection, records.id], set: { value: dsql`excluded.value` } }),
    ),
  bumpGroup: (collection, grp) =>
    drizzled(
      d
        .insert(groups)
        .values({ collection, grp, n: 1 })
        .onConflictDoUpdate({ target: [groups.collection, groups.grp], set: { n: dsql`${groups.n} + 1` } }),
    ),
  oldest: (status, limit) =>
    drizzled(
      d
        .select({ id: records.id, value: records.value })
        .from(records)
        .where(and(dsql`${records.collection} = 'tasks'`, dsql`${dField('status')} IN (${status})`))
        .orderBy(asc(dField('created_at')), asc(records.id))
        .limit(limit),
    ),
  page: (status, limit, offset) =>
    drizzled(
      d
        .select({ value: records.value })
        .from(records)
        .where(and(dsql`${records.collection} = 'tasks'`, dsql`${dField('status')} IN (${status})`))
        .orderBy(desc(dField('created_at')), desc(records.id))
        .limit(limit)
        .offset(offset),
    ),
  groups: (collection) => drizzled(d.select({ grp: groups.grp, n: groups.n }).from(groups).where(eq(groups.collection, collection))),
};

function timePerOp(n, fn) {
  const t0 = performance.now();
  for (let i = 0; i < n; i++) fn(i);
  return ((performance.now() - t0) * 1000) / n;
}

/** A filled database for one layer; `round()` times each operation once over OPS calls. */
function prepare(layer, tasks = TASKS, ops = OPS) {
  const dir = mkdtempSync(path.join(tmpdir(), 'hangar-query-layer-'));
  const db = new DatabaseSync(path.join(dir, 'store.db'));
  const statements = new Map();
  const prepared = ({ sql }) => {
    let statement = statements.get(sql);
    if (!statement) statements.set(sql, (statement = db.prepare(sql)));
    return statement;
  };
  const run = (q) => prepared(q).run(...q.parameters);
  const get = (q) => prepared(q).get(...q.parameters);
  const all = (q) => prepared(q).all(...q.parameters);
  {
    db.exec(SCHEMA);
    db.exec('BEGIN');
    for (let i = 0; i < THREAD; i++) run(hand.insertItem('thread_messages', 'echo/long', i, message));
    run(hand.upsertHead('thread_messages', 'echo/long', THREAD, THREAD));
    for (let i = 0; i < tasks; i++) run(hand.upsertRecord('tasks', `t${i}`, taskValue(i, i % 10 ? 'completed' : 'queued')));
    db.exec('COMMIT');
    db.exec('ANALYZE');

    let taskNo = tasks;
    const figures = { append: [], history: [], submit: [], claim: [], page: [] };
    const transaction = (fn) => {
      db.exec('BEGIN IMMEDIATE');
      try {
        fn();
        db.exec('COMMIT');
      } catch (err) {
        db.exec('ROLLBACK');
        throw err;
      }
    };
    const round = () => {
      figures.append.push(
        timePerOp(ops, () =>
          transaction(() => {
            const head = get(layer.head('thread_messages', 'echo/long'));
            run(layer.insertItem('thread_messages', 'echo/long', head.length, message));
            run(layer.upsertHead('thread_messages', 'echo/long', head.version + 1, head.length + 1));
          }),
        ),
      );
      figures.history.push(
        timePerOp(ops, () => {
          const head = get(layer.head('thread_messages', 'echo/long'));
          return all(layer.range('thread_messages', 'echo/long', head.length - 100, head.length)).map((row) => JSON.parse(row.value));
        }),
      );
      figures.submit.push(
        timePerOp(ops, () => {
          const i = taskNo++;
          transaction(() => {
            run(layer.upsertRecord('tasks', `t${i}`, taskValue(i, 'queued')));
            run(layer.bumpGroup('tasks', '["queued"]'));
          });
        }),
      );
      figures.claim.push(
        timePerOp(ops, () =>
          transaction(() => {
            const row = get(layer.oldest('queued', 1));
            const task = JSON.parse(row.value);
            run(layer.upsertRecord('tasks', row.id, JSON.stringify({ ...task, status: 'running' })));
            run(layer.bumpGroup('tasks', '["running"]'));
          }),
        ),
      );
      figures.page.push(
        timePerOp(ops, () => {
          all(layer.groups('tasks'));
          return all(layer.page('completed', 20, 0)).map((row) => JSON.parse(row.value));
        }),
      );
    };
    return {
      round,
      reset: () => {
        for (const values of Object.values(figures)) values.length = 0;
      },
      medians: () => Object.fromEntries(Object.entries(figures).map(([op, values]) => [op, median(values)])),
      close: () => {
        db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  }
}

const layers = {
  'hand-written SQL': hand,
  'Kysely (compile only)': kysely,
  'Kysely (compiled once per statement)': kyselyOnce,
  'Drizzle (toSQL)': drizzleLayer,
};
// The same SQL semantics from every layer, checked before anything is timed.
for (const [name, layer] of Object.entries(layers)) {
  if (layer === hand) continue;
  const q = layer.page('completed', 20, 0);
  if (!/json_extract/.test(q.sql) || q.parameters.length < 2) throw new Error(`${name} built an unexpected page query: ${q.sql}`);
}
// Rounds alternate between the layers (warm-up round discarded), so none is measured alone on a
// quieter or busier moment of the machine.
const benches = Object.fromEntries(Object.entries(layers).map(([name, layer]) => [name, prepare(layer)]));
for (const bench of Object.values(benches)) {
  bench.round();
  bench.reset();
}
for (let r = 0; r < ROUNDS; r++) for (const bench of Object.values(benches)) bench.round();
const results = Object.fromEntries(Object.entries(benches).map(([name, bench]) => [name, bench.medians()]));
for (const bench of Object.values(benches)) bench.close();
const base = results['hand-written SQL'];
const LABELS = {
  append: 'append a message to a thread of 10,000',
  history: 'newest 100 messages of a thread of 10,000',
  submit: 'submit a task',
  claim: 'claim the next queued task',
  page: `a page of 20 of ${TASKS.toLocaleString('en')} tasks`,
};
for (const [name, figures] of Object.entries(results)) {
  for (const [op, us] of Object.entries(figures)) {
    // A comparison to choose a layer by: context, no target.
    report({
      name: `${name}: ${LABELS[op]}`,
      value: us,
      unit: 'µs/op',
      baseline: name === 'hand-written SQL' ? null : { label: 'hand-written SQL', value: base[op] },
    });
  }
}
console.log(`(medians of ${ROUNDS} rounds × ${OPS} ops on node:sqlite; ratio = time vs hand-written SQL, lower is faster)`);
