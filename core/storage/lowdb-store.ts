import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Low } from 'lowdb';
import { DataFile } from 'lowdb/node';
import type {
  Collection,
  CollectionOptions,
  CollectionStats,
  InvocationTable,
  RecordQuery,
  Store,
  StoreDescription,
  StoreStats,
} from '../kernel/store.js';
import { AppendLog } from './append-log.js';
import { CollectionInvocations } from './collection-invocations.js';
import { queryInMemory } from './query.js';

type ShardData<T> = { records: Record<string, T> };

const DEFAULT_SHARDS = 8;
const SAFE_NAME = /^[a-z0-9][a-z0-9_.-]*$/i;

/** FNV-1a: a stable, cheap hash so an id always lands in the same shard file. */
function shardOf(id: string, shards: number): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < id.length; i++) {
    h ^= id.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0) % shards;
}

/**
 * One collection = one folder of shard files `<n>.json`, each a lowdb database. lowdb's writer
 * (steno) writes a temp file and renames it, so a crash never leaves a half-written shard, and
 * coalesces bursts of writes to the same shard.
 */
class LowdbCollection<T> implements Collection<T> {
  readonly name: string;
  private readonly dir: string;
  private readonly shards: Low<ShardData<T>>[];
  private loaded: Promise<void> | undefined;

  constructor(root: string, name: string, shardCount: number) {
    this.name = name;
    this.dir = path.join(root, name);
    this.shards = Array.from(
      { length: shardCount },
      (_, i) =>
        new Low<ShardData<T>>(
          new DataFile<ShardData<T>>(path.join(this.dir, `${i}.json`), {
            parse: JSON.parse,
            stringify: (value) => JSON.stringify(value),
          }),
          { records: {} },
        ),
    );
  }

  private load(): Promise<void> {
    this.loaded ??= (async () => {
      await mkdir(this.dir, { recursive: true });
      const meta = path.join(this.dir, 'meta.json');
      if (!existsSync(meta)) await writeFile(meta, JSON.stringify({ shards: this.shards.length }));
      await Promise.all(this.shards.map((db) => db.read()));
    })();
    return this.loaded;
  }

  private shardFor(id: string): Low<ShardData<T>> {
    return this.shards[shardOf(id, this.shards.length)]!;
  }

  async get(id: string): Promise<T | undefined> {
    await this.load();
    return this.shardFor(id).data.records[id];
  }

  async has(id: string): Promise<boolean> {
    await this.load();
    return Object.hasOwn(this.shardFor(id).data.records, id);
  }

  async put(id: string, value: T): Promise<T> {
    await this.load();
    const db = this.shardFor(id);
    db.data.records[id] = value;
    await db.write();
    return value;
  }

  async update(id: string, fn: (current: T | undefined) => T | undefined): Promise<T | undefined> {
    await this.load();
    const db = this.shardFor(id);
    // Memory is the source of truth once loaded and JS runs `fn` to completion, so the
    // read-modify-write cannot interleave with another mutation.
    const next = fn(db.data.records[id]);
    if (next === undefined) delete db.data.records[id];
    else db.data.records[id] = next;
    await db.write();
    return next;
  }

  async delete(id: string): Promise<boolean> {
    await this.load();
    const db = this.shardFor(id);
    if (!Object.hasOwn(db.data.records, id)) return false;
    delete db.data.records[id];
    await db.write();
    return true;
  }

  async deleteWhere(predicate: (value: T, id: string) => boolean): Promise<number> {
    await this.load();
    let removed = 0;
    const writes: Promise<void>[] = [];
    for (const db of this.shards) {
      let touched = false;
      for (const [id, value] of Object.entries(db.data.records)) {
        if (predicate(value, id)) {
          delete db.data.records[id];
          removed++;
          touched = true;
        }
      }
      if (touched) writes.push(db.write());
    }
    await Promise.all(writes);
    return removed;
  }

  async entries(): Promise<Array<[string, T]>> {
    await this.load();
    return this.shards.flatMap((db) => Object.entries(db.data.records));
  }

  async list(): Promise<T[]> {
    return (await this.entries()).map(([, value]) => value);
  }

  async query(query: RecordQuery): Promise<{ items: T[]; total: number }> {
    return queryInMemory(await this.entries(), query);
  }

  async count(): Promise<number> {
    await this.load();
    return this.shards.reduce((n, db) => n + Object.keys(db.data.records).length, 0);
  }

  async stats(): Promise<CollectionStats> {
    const records = await this.count();
    let files = 0;
    let bytes = 0;
    for (const file of await readdir(this.dir)) {
      if (!/^\d+\.json$/.test(file)) continue;
      files++;
      bytes += (await stat(path.join(this.dir, file))).size;
    }
    return { records, files, bytes };
  }

  async flush(): Promise<void> {
    if (!this.loaded) return;
    await this.loaded;
    // steno resolves a write once the newest data is renamed into place; writing again is a no-op
    // semantically and waits for anything queued before it.
    await Promise.all(this.shards.map((db) => db.write()));
  }
}

/** The lowdb implementation of `Store`, rooted at `WORKSPACE/.hangar/data`. */
export class LowdbStore implements Store {
  private readonly collections = new Map<string, { shards: number; collection: LowdbCollection<unknown> }>();
  private readonly logs = new Map<string, AppendLog<unknown>>();
  private invocationTable: InvocationTable | undefined;

  appendLog<T>(name: string): AppendLog<T> {
    if (!SAFE_NAME.test(name)) throw new Error(`invalid log name "${name}"`);
    let log = this.logs.get(name);
    if (!log) this.logs.set(name, (log = new AppendLog<unknown>(path.join(this.root, '_logs'), name)));
    return log as AppendLog<T>;
  }

  constructor(readonly root: string) {}

  collection<T>(name: string, options: CollectionOptions = {}): Collection<T> {
    if (!SAFE_NAME.test(name)) throw new Error(`invalid collection name "${name}"`);
    const wanted = options.shards ?? DEFAULT_SHARDS;
    const open = this.collections.get(name);
    if (open) {
      if (open.shards !== wanted) {
        throw new Error(`collection "${name}" is already open with ${open.shards} shards, not ${wanted}`);
      }
      return open.collection as LowdbCollection<T>;
    }
    const onDisk = this.shardCountOnDisk(name);
    if (onDisk !== undefined && onDisk !== wanted) {
      throw new Error(`collection "${name}" has ${onDisk} shards on disk but was opened with ${wanted}`);
    }
    const collection = new LowdbCollection<T>(this.root, name, wanted);
    this.collections.set(name, { shards: wanted, collection: collection as LowdbCollection<unknown> });
    return collection;
  }

  /** The shard count recorded when the collection was first created, from `meta.json`. */
  private shardCountOnDisk(name: string): number | undefined {
    const meta = path.join(this.root, name, 'meta.json');
    if (!existsSync(meta)) return undefined;
    return (JSON.parse(readFileSync(meta, 'utf8')) as { shards: number }).shards;
  }

  async stats(): Promise<StoreStats> {
    const collections: Record<string, CollectionStats> = {};
    let names: string[] = [];
    try {
      names = (await readdir(this.root, { withFileTypes: true })).filter((d) => d.isDirectory()).map((d) => d.name);
    } catch {
      names = [];
    }
    for (const name of new Set([...names.filter((n) => n !== '_logs'), ...this.collections.keys()])) {
      const open = this.collections.get(name)?.collection;
      collections[name] = open ? await open.stats() : await statsFromDisk(path.join(this.root, name));
    }
    for (const [name, log] of this.logs) collections[name] = await log.stats();
    const values = Object.values(collections);
    return {
      backend: 'lowdb',
      path: this.root,
      files: values.reduce((n, c) => n + c.files, 0),
      bytes: values.reduce((n, c) => n + c.bytes, 0),
      collections,
    };
  }

  invocations(): InvocationTable {
    this.invocationTable ??= new CollectionInvocations(this.collection('invocations'));
    return this.invocationTable;
  }

  describe(): StoreDescription {
    return { backend: 'lowdb', path: this.root };
  }

  /** lowdb reports a failed write to its caller only; there is no state to probe. */
  health(): { ok: true } {
    return { ok: true };
  }

  async flush(): Promise<void> {
    await Promise.all([
      ...[...this.collections.values()].map(({ collection }) => collection.flush()),
      ...[...this.logs.values()].map((log) => log.flush()),
    ]);
  }
}

async function statsFromDisk(dir: string): Promise<CollectionStats> {
  let files = 0;
  let bytes = 0;
  let records = 0;
  for (const file of await readdir(dir)) {
    if (!/^\d+\.json$/.test(file)) continue;
    files++;
    const text = await readFile(path.join(dir, file), 'utf8');
    bytes += Buffer.byteLength(text);
    try {
      records += Object.keys((JSON.parse(text) as ShardData<unknown>).records ?? {}).length;
    } catch {
      // A foreign or corrupt file is counted by size only.
    }
  }
  return { records, files, bytes };
}
