import { spawn } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Worker as NodeWorker, type Worker } from 'node:worker_threads';
import * as esbuild from 'esbuild';
import { describe, expect, it, vi } from 'vitest';
import { startServer } from '../../core/app/server.js';
import {
  BACKSTOP_AUTOCHECKPOINT_PAGES,
  CHECKPOINT_DELAY_MS,
  SQLITE_AUTOCHECKPOINT_PAGES,
  WalCheckpointer,
} from '../../core/storage/sqlite-checkpointer.js';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import { makeWorkspace } from '../support/server.js';

const repo = path.resolve(import.meta.dirname, '..', '..');
const scratch = () => mkdtemp(path.join(tmpdir(), 'hangar-wal-'));

/** A JSON document of about `mb` megabytes, as an ML batch's result is. */
const payload = (mb: number) => ({
  rows: Array.from({ length: Math.round((mb * 1e6) / 55) }, (_, i) => ({ i, label: 'versicolor', p: [0.011, 0.97, 0.019] })),
});

/** A store whose WAL holds ~16 MB: no checkpoint on commit, so the writes wait there for a checkpoint. */
async function storeWithLargeWal(options: { busyTimeoutMs?: number } = {}) {
  const file = path.join(await scratch(), 'hangar.db');
  const store = new SqliteStore(file, options);
  store.statement('PRAGMA wal_autocheckpoint = 0').get();
  const big = payload(4);
  for (let i = 0; i < 4; i++) await store.collection<unknown>('results').put(`batch-${i}`, big);
  expect(statSync(`${file}-wal`).size).toBeGreaterThan(10e6);
  return { file, store, big };
}

/**
 * Another connection (the checkpoint thread's, or a command's on the same workspace) copying the
 * WAL on a thread, resolved once it is under way: while it copies it holds SQLite's checkpoint
 * lock, and a TRUNCATE asked for meanwhile is answered "busy" at once, without waiting.
 */
async function checkpointingElsewhere(file: string) {
  const started = new Int32Array(new SharedArrayBuffer(4));
  const other = new NodeWorker(
    `const { DatabaseSync } = require('node:sqlite');
     const { workerData } = require('node:worker_threads');
     const db = new DatabaseSync(workerData.file, { timeout: 5000 });
     const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
     Atomics.store(new Int32Array(workerData.started), 0, 1);
     Atomics.notify(new Int32Array(workerData.started), 0);
     checkpoint.get();
     db.close();`,
    { eval: true, workerData: { file, started: started.buffer }, stderr: true },
  );
  const finished = new Promise((resolve) => other.once('exit', resolve));
  Atomics.wait(started, 0, 0, 5_000);
  // Into the copy, which takes ~45 ms for 16 MB here.
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 15);
  return { finished };
}

const running = (checkpointer: WalCheckpointer) =>
  vi.waitFor(() => expect(checkpointer.inBackground).toBe(true), { timeout: 5_000, interval: 10 });

describe('WAL checkpoints off the server thread', () => {
  it("turn off the store connection's own checkpoints once the thread is open, and keep the WAL as small as one burst", async () => {
    const file = path.join(await scratch(), 'hangar.db');
    const store = new SqliteStore(file);
    const results = store.collection<unknown>('results');
    const autocheckpoint = () => (store.statement('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint;
    expect(autocheckpoint()).toBe(SQLITE_AUTOCHECKPOINT_PAGES);
    const checkpointer = store.checkpointInBackground();
    await results.put('first', { small: true });
    await running(checkpointer);
    // SQLite's default would checkpoint inside the COMMIT that passes 1,000 pages, on this thread.
    expect(autocheckpoint()).toBe(BACKSTOP_AUTOCHECKPOINT_PAGES);
    // Six 1.5 MB writes, each checkpointed behind it: the next write starts the WAL over, so the
    // file never holds more than about one of them (SQLite's own threshold lets it reach ~4 MB + one).
    const big = payload(1.5);
    for (let i = 0; i < 6; i++) {
      await results.put(`batch-${i}`, big);
      await checkpointer.whenIdle();
    }
    expect(statSync(`${file}-wal`).size).toBeLessThan(3e6);
    expect(((await results.get('batch-5')) as typeof big).rows.length).toBe(big.rows.length);
    store.close();
    // The thread closed its connection first, so the store's close was the last: one file is left.
    expect(existsSync(`${file}-wal`)).toBe(false);
    expect(existsSync(`${file}-shm`)).toBe(false);
    const reopened = new SqliteStore(file);
    expect(((await reopened.collection<unknown>('results').get('batch-3')) as typeof big).rows.length).toBe(big.rows.length);
    reopened.close();
  });

  it('checkpoint a commit made while the checkpoint asked for was already being made', async () => {
    const file = path.join(await scratch(), 'hangar.db');
    const store = new SqliteStore(file);
    const checkpointer = store.checkpointInBackground();
    const results = store.collection<unknown>('results');
    await results.put('first', { small: true });
    await running(checkpointer);
    await checkpointer.whenIdle();
    const big = payload(1.5);
    await results.put('a', big);
    // This thread blocks well past the checkpoint asked for after 'a': the worker makes it, and its
    // answer waits in the queue while 'b' is committed (a put commits before it returns).
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, CHECKPOINT_DELAY_MS * 10);
    await results.put('b', big);
    // Idle only once 'b' is checkpointed too, so 'c' starts the WAL over rather than following 'b'
    // in it (two bursts, ~3.2 MB, before: the checkpoint made before 'b' counted for it).
    await checkpointer.whenIdle();
    await results.put('c', big);
    await checkpointer.whenIdle();
    expect(statSync(`${file}-wal`).size).toBeLessThan(2.5e6);
    store.close();
  });

  it('keep the WAL bounded under a steady stream of writes: the store checkpoints at the backstop', async () => {
    const file = path.join(await scratch(), 'hangar.db');
    const store = new SqliteStore(file);
    const checkpointer = store.checkpointInBackground();
    const results = store.collection<unknown>('results');
    await results.put('first', { small: true });
    await running(checkpointer);
    // ~36 MB of pages in 8 KB writes about a millisecond apart, never waiting for the thread: a
    // PASSIVE checkpoint (and its fsync) outlasts the gap between writes, so a write seldom finds
    // every frame copied, and without the backstop the WAL would only grow.
    const row = { text: 'x'.repeat(8_000) };
    let largest = 0;
    for (let i = 0; i < 3_000; i++) {
      await results.put(`row-${i % 500}`, row);
      await new Promise((resolve) => setTimeout(resolve, 1));
      if (i % 100 === 0) largest = Math.max(largest, statSync(`${file}-wal`).size);
    }
    // The backstop is 4,000 pages (16 MB) of WAL, plus the write that passes it.
    expect(largest).toBeGreaterThan(0);
    expect(largest).toBeLessThan(BACKSTOP_AUTOCHECKPOINT_PAGES * 4096 + 1e6);
    store.close();
  }, 60_000);

  it('a flush (a stop) empties the WAL even when another connection is checkpointing as it begins', async () => {
    const { file, store, big } = await storeWithLargeWal();
    const other = await checkpointingElsewhere(file);
    await store.flush();
    expect(statSync(`${file}-wal`).size).toBe(0);
    await other.finished;
    expect(((await store.collection<unknown>('results').get('batch-3')) as typeof big).rows.length).toBe(big.rows.length);
    store.close();
  }, 30_000);

  it('a flush waits for the checkpoint lock no longer than a writer would (busyTimeoutMs), so a stop cannot hang on it', async () => {
    const { file, store } = await storeWithLargeWal({ busyTimeoutMs: 0 });
    const other = await checkpointingElsewhere(file);
    await store.flush();
    // Answered "busy" once, it gave up at once: the WAL is the other connection's to copy still.
    expect(statSync(`${file}-wal`).size).toBeGreaterThan(10e6);
    await other.finished;
    store.close();
  }, 30_000);

  it('a store nobody closed does not keep its process running', async () => {
    const dir = await scratch();
    const entry = path.join(dir, 'entry.ts');
    await writeFile(
      entry,
      `import { SqliteStore } from ${JSON.stringify(path.join(repo, 'core', 'storage', 'sqlite-store.ts'))};
const store = new SqliteStore(process.argv[2]);
const checkpointer = store.checkpointInBackground();
await store.collection('results').put('a', { n: 1 });
while (!checkpointer.inBackground) await new Promise((r) => setTimeout(r, 10));
await store.collection('results').put('b', { n: 2 });
console.log('running');
`,
    );
    const script = path.join(dir, 'script.mjs');
    await esbuild.build({
      entryPoints: [entry],
      outfile: script,
      bundle: true,
      platform: 'node',
      format: 'esm',
      target: 'node22',
      logLevel: 'silent',
    });
    const child = spawn(process.execPath, [script, path.join(dir, 'hangar.db')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    const exited = await new Promise<number | null>((resolve) => {
      const timer = setTimeout(() => (child.kill(), resolve(null)), 10_000);
      child.on('exit', (code) => (clearTimeout(timer), resolve(code)));
    });
    expect(out).toBe('running\n');
    // null: still running ten seconds after its last line, held open by the checkpoint thread.
    expect(exited).toBe(0);
  }, 30_000);

  it('start with the first commit after they are asked for, and stop with the server, leaving the store checkpointing on commit', async () => {
    const root = await makeWorkspace({});
    const threads: Worker[] = [];
    const onWorker = (worker: Worker) => threads.push(worker);
    process.on('worker', onWorker);
    try {
      const server = await startServer({ root, port: 0, logLevel: 'silent', watch: false });
      await server.discovered;
      const store = server.ctx.store as SqliteStore;
      const autocheckpoint = () =>
        (store.statement('PRAGMA wal_autocheckpoint').get() as { wal_autocheckpoint: number }).wal_autocheckpoint;
      // Ready, nothing written since: no thread yet.
      expect(threads).toHaveLength(0);
      await store.collection('probe').put('a', { n: 1 });
      const checkpointer = store.checkpointInBackground();
      await running(checkpointer);
      expect(threads).toHaveLength(1);
      expect(autocheckpoint()).toBe(BACKSTOP_AUTOCHECKPOINT_PAGES);
      const exited = new Promise((resolve) => threads[0]!.once('exit', resolve));
      await server.close();
      await exited;
      expect(checkpointer.inBackground).toBe(false);
      expect(autocheckpoint()).toBe(SQLITE_AUTOCHECKPOINT_PAGES);
    } finally {
      process.off('worker', onWorker);
    }
  });

  it('when the thread cannot open the database, checkpoints stay on commit and the store says why', async () => {
    const settings: number[] = [];
    const warnings: string[] = [];
    const checkpointer = new WalCheckpointer({
      file: path.join(await scratch(), 'no-such-folder', 'hangar.db'),
      busyTimeoutMs: 100,
      setAutocheckpoint: (pages) => settings.push(pages),
      warn: (message) => warnings.push(message),
    });
    checkpointer.committed();
    await vi.waitFor(() => expect(warnings).toHaveLength(1), { timeout: 5_000, interval: 10 });
    expect(warnings).toEqual([
      expect.stringMatching(/^the WAL checkpoint thread stopped \(.*unable to open.*\); checkpoints run on commit again$/),
    ]);
    // It never took the work over, so the connection was never told to stop checkpointing.
    expect(settings).toEqual([]);
    expect(checkpointer.inBackground).toBe(false);
    checkpointer.committed();
    checkpointer.close();
    await checkpointer.whenIdle();
  });

  /** A checkpointer whose thread has taken the work over, the thread, and what it told the store. */
  async function runningThread() {
    const file = path.join(await scratch(), 'hangar.db');
    const store = new SqliteStore(file);
    await store.collection('results').put('a', { n: 1 });
    const settings: number[] = [];
    const warnings: string[] = [];
    const threads: Worker[] = [];
    const onWorker = (worker: Worker) => threads.push(worker);
    process.on('worker', onWorker);
    const checkpointer = new WalCheckpointer({
      file,
      busyTimeoutMs: 100,
      setAutocheckpoint: (pages) => settings.push(pages),
      warn: (message) => warnings.push(message),
    });
    try {
      checkpointer.committed();
      await running(checkpointer);
    } finally {
      process.off('worker', onWorker);
    }
    expect(threads).toHaveLength(1);
    expect(settings).toEqual([BACKSTOP_AUTOCHECKPOINT_PAGES]);
    return { store, checkpointer, thread: threads[0]!, settings, warnings };
  }

  it('when the running thread exits, checkpoints go back to the commit and the store says why', async () => {
    const { store, checkpointer, thread, settings, warnings } = await runningThread();
    // Asked for a checkpoint the thread will never answer: whoever waits for idle is let go too.
    checkpointer.committed();
    const idle = checkpointer.whenIdle();
    await thread.terminate();
    await vi.waitFor(() => expect(warnings).toHaveLength(1), { timeout: 5_000, interval: 10 });
    await idle;
    expect(warnings).toEqual(['the WAL checkpoint thread exited; checkpoints run on commit again']);
    expect(settings).toEqual([BACKSTOP_AUTOCHECKPOINT_PAGES, SQLITE_AUTOCHECKPOINT_PAGES]);
    expect(checkpointer.inBackground).toBe(false);
    // For good: a later commit starts no thread.
    checkpointer.committed();
    expect(checkpointer.inBackground).toBe(false);
    checkpointer.close();
    store.close();
  });

  it("when the running thread fails, it is stopped, checkpoints go back to the commit and the store gives the thread's error", async () => {
    const { store, checkpointer, thread, settings, warnings } = await runningThread();
    const exited = new Promise((resolve) => thread.once('exit', resolve));
    // What Node reports for an exception thrown on the thread.
    thread.emit('error', new Error('disk I/O error'));
    await exited;
    expect(warnings).toEqual(['the WAL checkpoint thread failed (disk I/O error); checkpoints run on commit again']);
    expect(settings).toEqual([BACKSTOP_AUTOCHECKPOINT_PAGES, SQLITE_AUTOCHECKPOINT_PAGES]);
    expect(checkpointer.inBackground).toBe(false);
    checkpointer.close();
    store.close();
  });
});
