import { existsSync, readdirSync, readFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import type { LogEntry } from '../kernel/store.js';
import { replayLog } from './append-log.js';
import { headOf, writeHead, writeItems } from './sqlite-logs.js';
import { encode, SAFE_NAME, type SqlAccess, type StoreLog } from './sqlite-sql.js';

/**
 * Upgrading loses nothing: a workspace's lowdb data (`.hangar/data/<collection>/<n>.json` shards and
 * `_logs/<name>.jsonl` append logs) is imported on the first open, one transaction per collection,
 * with a line of counts per collection. The old folder is then renamed `data.imported-<time>` and
 * kept. The import is recorded in the database, so running it again (or a copy of the folder put
 * back) changes nothing.
 */
export function importLowdbData(store: SqlAccess & { readonly file: string }, dataDir: string, log: StoreLog): void {
  if (!existsSync(dataDir)) return;
  const source = path.resolve(dataDir);
  if (store.statement('SELECT 1 FROM imports WHERE source = ?').get(source)) return;
  const entries = readdirSync(dataDir, { withFileTypes: true });
  const collections = entries.filter((e) => e.isDirectory() && e.name !== '_logs' && SAFE_NAME.test(e.name)).map((e) => e.name);
  const logsDir = path.join(dataDir, '_logs');
  const logs = existsSync(logsDir)
    ? readdirSync(logsDir)
        .filter((f) => f.endsWith('.jsonl'))
        .map((f) => f.slice(0, -'.jsonl'.length))
    : [];
  if (collections.length === 0 && logs.length === 0) return;
  log(
    'info',
    `store: importing ${collections.length + logs.length} collection(s) from ${path.basename(path.dirname(source))}/${path.basename(source)} into ${path.basename(store.file)}`,
  );
  const counts: Record<string, number> = {};
  for (const name of collections) {
    const records = readLowdbCollection(path.join(dataDir, name));
    store.transaction(() => {
      const upsert = store.statement(
        'INSERT INTO records (collection, id, value) VALUES (?, ?, ?) ON CONFLICT (collection, id) DO NOTHING',
      );
      for (const [id, value] of records) upsert.run(name, id, encode(value));
      // Rows written behind the collection's back: its counts are rebuilt when it is next opened.
      store.statement('DELETE FROM record_groups WHERE collection = ?').run(name);
    }, `${name} (import)`);
    counts[name] = records.length;
    log('info', `store: imported ${name}: ${records.length} record(s)`);
  }
  for (const name of logs) {
    const { entries: keys, changed } = readAppendLog(path.join(logsDir, `${name}.jsonl`));
    store.transaction(() => {
      for (const [key, entry] of keys) {
        // A key the store already holds is left as it is (running the import twice changes nothing).
        const head = headOf(store, name, key, `${name} (import)`);
        if (!head.created) continue;
        writeItems(store, head.id, 0, entry.items.map(encode), `${name} (import)`);
        writeHead(store, head.id, entry.version, entry.items.length, changed.get(key) ?? null);
      }
    }, `${name} (import)`);
    counts[name] = keys.size;
    log('info', `store: imported ${name}: ${keys.size} key(s)`);
  }
  store.transaction(() => {
    store
      .statement('INSERT INTO imports (source, imported_at, counts) VALUES (?, ?, ?)')
      .run(source, new Date().toISOString(), JSON.stringify(counts));
  }, 'the import record');
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  const keptAt = `${source}.imported-${stamp}`;
  renameSync(source, keptAt);
  log('info', `store: import done; the old files are kept in ${path.basename(keptAt)}`);
}

function readLowdbCollection(dir: string): Array<[string, unknown]> {
  const records: Array<[string, unknown]> = [];
  for (const file of readdirSync(dir)) {
    if (!/^\d+\.json$/.test(file)) continue;
    const text = readFileSync(path.join(dir, file), 'utf8');
    let shard: { records?: Record<string, unknown> };
    try {
      shard = JSON.parse(text) as typeof shard;
    } catch (err) {
      throw new Error(`cannot import ${path.basename(dir)}/${file}: ${(err as Error).message} (fix or remove the file, then start again)`);
    }
    records.push(...Object.entries(shard.records ?? {}));
  }
  return records;
}

/** An append log's keys, and when each last changed, as the old store read them (append-log.ts's own replay). */
function readAppendLog(file: string): { entries: Map<string, LogEntry<unknown>>; changed: Map<string, number> } {
  const entries = new Map<string, LogEntry<unknown>>();
  const changed = new Map<string, number>();
  replayLog(readFileSync(file, 'utf8'), entries, new Map(), changed);
  return { entries, changed };
}
