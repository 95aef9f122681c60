/**
 * Which store a server opens: the embedded SQLite file in the workspace by default, PostgreSQL when
 * `storage.url` names one (`postgres://…`, or a `${ENV}` reference to it), so a desktop user's
 * setup never changes and a team points every instance at one database.
 */
import path from 'node:path';
import type { Store } from '../kernel/store.js';
import type { PgAccess } from './postgres-sql.js';
import type { StoreLog } from './sqlite-sql.js';
import { DATABASE_FILE, type Durability, SqliteStore } from './sqlite-store.js';

export interface StoreSettings {
  durability: Durability;
  /** A PostgreSQL URL (already resolved from `${ENV}`), or nothing for the workspace's SQLite file. */
  url?: string;
}

export interface OpenedStore {
  store: Store;
  /** The PostgreSQL URL in team mode (the queue and announcements use the same database). */
  url?: string;
  /** Team mode: the store's connections, for team-mode tables beside its own (core/storage/team-streams.ts). */
  pg?: PgAccess;
  /** The server is ready: SQLite's WAL checkpoints move to a thread of their own (sqlite-checkpointer.ts). */
  serving(): void;
  close(): Promise<void>;
}

/** Opens the store, migrated and ready; a PostgreSQL that cannot be reached fails here, before anything serves. */
export async function openStore(settings: StoreSettings, paths: { state: string; data: string }, log: StoreLog): Promise<OpenedStore> {
  if (settings.url !== undefined) {
    // Imported in team mode only: pg is not loaded by a desktop user's start.
    const { isPostgresUrl, PostgresStore } = await import('./postgres-store.js');
    if (!isPostgresUrl(settings.url)) throw new Error('storage.url must be a postgres:// or postgresql:// URL');
    const store = new PostgresStore(settings.url, { log });
    try {
      await store.ready();
    } catch (err) {
      await store.close();
      throw err;
    }
    return { store, url: settings.url, pg: store, serving: () => {}, close: () => store.close() };
  }
  // A lowdb data folder from before the move to SQLite is imported on first open.
  const store = new SqliteStore(path.join(paths.state, DATABASE_FILE), { durability: settings.durability, importFrom: paths.data, log });
  // Left open at a stop (what still holds the store may read it); its checkpoint thread is not.
  return { store, serving: () => void store.checkpointInBackground(), close: async () => store.stopBackgroundCheckpoints() };
}
