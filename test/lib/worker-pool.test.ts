/**
 * The shared worker pool against a real worker thread (test/fixtures/worker-pool/worker.ts, bundled
 * by the pool like every production entry): results, streamed messages, deadlines, aborts, heap
 * caps, lazy start, close, the compile cache its threads start from, and a bundle deleted under a
 * pool that outlived it.
 */
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp } from 'node:fs/promises';
import module from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { workerBundle, workerBundleAsync } from '../../core/lib/worker-bundle.js';
import { TaskChannel, WorkerDeadlineError, WorkerOutOfMemoryError, WorkerPool } from '../../core/lib/worker-pool.js';
import type { FixtureTask } from '../fixtures/worker-pool/worker.js';

const ENTRY = 'test/fixtures/worker-pool/worker.ts';
const pools: Array<WorkerPool<FixtureTask, unknown>> = [];

function makePool(options: { maxHeapMb?: number } = {}): WorkerPool<FixtureTask, unknown> {
  const pool = new WorkerPool<FixtureTask, unknown>({ entry: ENTRY, ...options });
  pools.push(pool);
  return pool;
}

afterEach(async () => {
  await Promise.all(pools.splice(0).map((pool) => pool.close()));
});

describe('worker pool', () => {
  it('creates no thread before the first task, then runs it and returns its result', async () => {
    // Node announces a new thread on the next tick; a turn of the event loop lets any show up.
    const aTurn = () => new Promise((resolve) => setImmediate(resolve));
    // Bundled first: esbuild's synchronous API runs in a worker thread of its own, not the pool's.
    workerBundle(ENTRY);
    await aTurn();
    const created: Worker[] = [];
    const onWorker = (worker: Worker) => created.push(worker);
    process.on('worker', onWorker);
    try {
      const pool = makePool();
      await aTurn();
      expect(created).toHaveLength(0);
      expect(pool.threads).toBe(0);
      expect(await pool.run({ op: 'echo', value: [1, 'two'] })).toEqual({ echoed: [1, 'two'] });
      expect(created).toHaveLength(1);
      expect(pool.threads).toBe(1);
    } finally {
      process.off('worker', onWorker);
    }
  });

  it('starts its thread before warm() returns when the bundle needs no build, so a warm inside a synchronous stretch boots meanwhile', async () => {
    workerBundle(ENTRY);
    const pool = new WorkerPool<FixtureTask, unknown>({ entry: ENTRY, minThreads: 1 });
    pools.push(pool);
    const warmed = pool.warm();
    // No await in between: the thread exists while this thread is still busy (discovery's scan).
    expect(pool.threads).toBe(1);
    await warmed;
    expect(await pool.run({ op: 'echo', value: 'warm' })).toEqual({ echoed: 'warm' });
  });

  it("starts its threads with the process's compile cache, which a thread does not inherit", async () => {
    // Turned on the way bin/hangar.mjs does, by the API rather than NODE_COMPILE_CACHE: only the
    // variable reaches a thread, so the pool must pass it on (threadEnv) for the thread to use it.
    const inherited = process.env.NODE_COMPILE_CACHE;
    delete process.env.NODE_COMPILE_CACHE;
    try {
      module.enableCompileCache(await mkdtemp(path.join(os.tmpdir(), 'hangar-compile-cache-')));
      const own = module.getCompileCacheDir();
      expect(own).toBeTruthy();
      expect(await makePool().run({ op: 'compileCache' })).toEqual({ dir: own });
    } finally {
      if (inherited !== undefined) process.env.NODE_COMPILE_CACHE = inherited;
    }
  });

  it('delivers every message the task streamed, in order, before its result', async () => {
    const pool = makePool();
    const received: number[] = [];
    // Enough messages that the result, on a channel of its own, would overtake about half of them.
    const result = await pool.run({ op: 'stream', count: 20000 }, { channel: new TaskChannel<number>((n) => received.push(n)) });
    expect(result).toBe('streamed');
    expect(received).toEqual(Array.from({ length: 20000 }, (_, i) => i));
  });

  it('stops a task past its deadline with an error naming the deadline, and serves the next task', async () => {
    const pool = makePool();
    const late = pool.run({ op: 'spin' }, { deadlineMs: 300 });
    await expect(late).rejects.toBeInstanceOf(WorkerDeadlineError);
    await expect(late).rejects.toThrow(/300 ms deadline/);
    expect(await pool.run({ op: 'echo', value: 'after' })).toEqual({ echoed: 'after' });
  });

  it('rejects an aborted running task with the abort reason, and serves the next task', async () => {
    const pool = makePool();
    const controller = new AbortController();
    const reason = new Error('the caller gave up');
    const channel = new TaskChannel<string>((message) => {
      if (message === 'started') controller.abort(reason);
    });
    await expect(pool.run({ op: 'spin' }, { signal: controller.signal, channel })).rejects.toBe(reason);
    expect(await pool.run({ op: 'echo', value: 'after' })).toEqual({ echoed: 'after' });
  });

  it('rejects a task whose signal is already aborted without running it', async () => {
    const pool = makePool();
    await expect(pool.run({ op: 'echo', value: 1 }, { signal: AbortSignal.abort(new Error('too late')) })).rejects.toThrow('too late');
  });

  it('reports a thread killed by its heap cap as out of memory, and serves the next task', async () => {
    const pool = makePool({ maxHeapMb: 32 });
    const hoard = pool.run({ op: 'hoard' });
    await expect(hoard).rejects.toBeInstanceOf(WorkerOutOfMemoryError);
    await expect(hoard).rejects.toThrow(/out of memory.*32 MB heap cap/);
    expect(await pool.run({ op: 'echo', value: 'after' })).toEqual({ echoed: 'after' });
  });

  it('closes idempotently, ending its threads, and refuses tasks afterwards', async () => {
    const pool = makePool();
    await pool.run({ op: 'echo', value: 1 });
    await Promise.all([pool.close(), pool.close()]);
    expect(pool.threads).toBe(0);
    await expect(pool.run({ op: 'echo', value: 2 })).rejects.toThrow(/closed/);
    // A pool that never ran closes without starting anything.
    await makePool().close();
  });

  it('fails every call at once, naming the entry, when the entry throws while it loads', async () => {
    for (const minThreads of [0, 1]) {
      const pool = new WorkerPool<FixtureTask, unknown>({ entry: 'test/fixtures/worker-pool/broken-entry.ts', minThreads });
      pools.push(pool);
      // Two calls waiting for a thread that never loads: each fails rather than wait for good.
      const calls = [pool.run({ op: 'echo', value: 1 }), pool.run({ op: 'echo', value: 2 })];
      for (const call of calls) await expect(call, `minThreads ${minThreads}`).rejects.toThrow(/broken-entry fails at load/);
      const later = pool.run({ op: 'echo', value: 3 });
      await expect(later).rejects.toMatchObject({ code: 'HANGAR_WORKER_ENTRY_FAILED' });
      await expect(later).rejects.toThrow(/test\/fixtures\/worker-pool\/broken-entry\.ts.*broken-entry fails at load/);
      // No thread is left retrying the entry.
      expect(pool.threads).toBe(0);
    }
  });

  it('starts again from a fresh bundle when its bundle file was deleted while it had no thread', async () => {
    // A long-running server: its only thread stopped while idle, and meanwhile another process
    // (a second checkout sharing node_modules, a test run during an edit) built a newer bundle of
    // the worker and pruned this one, an hour old. The next task must not start from the deleted file.
    const pool = new WorkerPool<FixtureTask, unknown>({ entry: ENTRY, idleTimeoutMs: 50 });
    pools.push(pool);
    expect(await pool.run({ op: 'echo', value: 'before' })).toEqual({ echoed: 'before' });
    await vi.waitFor(() => expect(pool.threads).toBe(0), { timeout: 10_000, interval: 20 });
    // This process's bundle of the entry: the file the pool's threads start from.
    rmSync(workerBundle(ENTRY));
    expect(await pool.run({ op: 'echo', value: 'after' })).toEqual({ echoed: 'after' });
    expect(await pool.run({ op: 'echo', value: 'again' })).toEqual({ echoed: 'again' });
  });

  it('fails only the call waiting on a thread whose bundle was deleted as it started, then starts from a fresh bundle', async () => {
    const pool = new WorkerPool<FixtureTask, unknown>({ entry: ENTRY });
    pools.push(pool);
    await pool.warm();
    const bundle = workerBundle(ENTRY);
    // run() checks the file and hands the task to piscina, which starts a thread, all before it
    // returns; the thread loads the file tens of ms later, and by then it is gone.
    const caught = pool.run({ op: 'echo', value: 'caught' });
    rmSync(bundle);
    await expect(caught).rejects.toThrow(/Cannot find module/);
    expect(await pool.run({ op: 'echo', value: 'after' })).toEqual({ echoed: 'after' });
  });

  it('starts from a fresh bundle when the thread it keeps (minThreads) died after the bundle was deleted', async () => {
    const idleErrors: Error[] = [];
    const pool = new WorkerPool<FixtureTask, unknown>({ entry: ENTRY, minThreads: 1, onIdleError: (error) => idleErrors.push(error) });
    pools.push(pool);
    expect(await pool.run({ op: 'echo', value: 'before' })).toEqual({ echoed: 'before' });
    rmSync(workerBundle(ENTRY));
    // The live thread has its code: it still serves.
    expect(await pool.run({ op: 'echo', value: 'live' })).toEqual({ echoed: 'live' });
    // Stopped at its deadline, it is replaced by a thread that cannot load the deleted file.
    await expect(pool.run({ op: 'spin' }, { deadlineMs: 200 })).rejects.toBeInstanceOf(WorkerDeadlineError);
    await vi.waitFor(() => expect(pool.threads).toBe(0), { timeout: 10_000, interval: 20 });
    expect(await pool.run({ op: 'echo', value: 'after' })).toEqual({ echoed: 'after' });
    expect(idleErrors.map((error) => error.message)).toEqual([expect.stringMatching(/Cannot find module/)]);
  });
});

describe('worker bundle', () => {
  it('builds the bundle again when the file it returned before was deleted', async () => {
    const first = workerBundle(ENTRY);
    expect(existsSync(first)).toBe(true);
    rmSync(first);
    const rebuilt = workerBundle(ENTRY);
    expect(existsSync(rebuilt)).toBe(true);
    rmSync(rebuilt);
    expect(existsSync(await workerBundleAsync(ENTRY))).toBe(true);
  });
});
