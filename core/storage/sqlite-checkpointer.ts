import { Worker } from 'node:worker_threads';

/**
 * SQLite's WAL checkpoints, run on a thread of their own instead of inside a commit on the
 * server's thread.
 *
 * By default the connection that commits the frame taking the WAL past 1,000 pages (~4 MB) copies
 * the whole WAL into the database file and syncs it, inside that COMMIT. On the server's thread
 * that was one block of the event loop: an ML batch's 3 MB result passed the threshold at nearly
 * every settle, and its COMMIT took 22-24 ms instead of ~1.6 ms (an insert of 1.1 MB, measured with
 * node:sqlite alone) — the largest single block in bench/ml.bench.ts's event-loop delay.
 *
 * Here a second connection, on a worker thread, does it: after a commit the store asks for a
 * checkpoint (one message; a commit made while one is asked for asks again once it is answered, so
 * every commit has a checkpoint begun after it), and the worker runs PASSIVE checkpoints —
 * they never wait for or block a writer or a reader — a moment later, so a burst of commits is
 * checkpointed once. The next write after a complete checkpoint starts the WAL over, as before.
 * The store's own threshold becomes a backstop (`BACKSTOP_AUTOCHECKPOINT_PAGES`).
 *
 * The thread starts with the first commit after the store asks for it (`checkpointInBackground`, a
 * server once it is ready) and sleeps on its port between requests. Until it is open, and if it
 * ever fails, the connection checkpoints as SQLite does by default. Closing waits (briefly, at most
 * `CLOSE_WAIT_MS`) for the thread to close its connection, so the store's own close is the last
 * and removes the WAL, as it did.
 */

/** How long after a request the worker checkpoints: one checkpoint for a burst of commits. */
export const CHECKPOINT_DELAY_MS = 100;

/** SQLite's own threshold, restored when the thread cannot do the work. */
export const SQLITE_AUTOCHECKPOINT_PAGES = 1000;

/**
 * The store's own threshold while the thread works: a backstop, not 0. A PASSIVE checkpoint beside
 * a steady stream of writes copies what was there when it began, and the WAL starts over only at a
 * write that finds every frame copied; should the thread never catch up, the store checkpoints at
 * 16 MB of WAL (copying only what the thread has not) instead of letting it grow. An earlier
 * attempt with no backstop and one pass let the WAL grow, and reads from it slowed appends.
 */
export const BACKSTOP_AUTOCHECKPOINT_PAGES = 4 * SQLITE_AUTOCHECKPOINT_PAGES;

/** PASSIVE passes per request, each copying what the store wrote during the one before. */
const PASSES = 4;

/** The longest a closing store waits for the worker's connection to close. */
const CLOSE_WAIT_MS = 2_000;

/**
 * The worker, evaluated as CommonJS: a dozen lines need no bundle of their own. It answers each
 * `checkpoint` with `done` (or `failed`, and exits), and `close` by closing its connection and
 * setting the shared flag the closing store waits on. `node:sqlite`'s ExperimentalWarning (Node 22)
 * is not printed again for this thread.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
process.removeAllListeners('warning');
const { DatabaseSync } = require('node:sqlite');
const closed = new Int32Array(workerData.closed);
let db;
const finish = () => { try { db?.close(); } catch {} Atomics.store(closed, 0, 1); Atomics.notify(closed, 0); };
const fail = (err) => {
  finish();
  parentPort.postMessage({ type: 'failed', message: String(err && err.message || err) });
  process.exit(0);
};
try {
  db = new DatabaseSync(workerData.file, { timeout: workerData.busyTimeoutMs });
  parentPort.postMessage({ type: 'ready' });
} catch (err) {
  fail(err);
}
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
let timer;
parentPort.on('message', (message) => {
  if (message === 'close') { clearTimeout(timer); finish(); parentPort.close(); return; }
  timer = setTimeout(() => {
    try {
      // Again while the store wrote frames during the last pass (at most a few times): the WAL
      // starts over only at a write that finds every frame copied.
      for (let pass = 0; pass < workerData.passes; pass++) {
        const { busy, log, checkpointed } = checkpoint.get();
        if (busy || checkpointed >= log) break;
      }
      parentPort.postMessage({ type: 'done' });
    } catch (err) {
      // SQLITE_BUSY: another connection is checkpointing (a stopping store's flush); the next request checkpoints.
      if (((err && err.errcode) & 0xff) === 5) parentPort.postMessage({ type: 'done' });
      else fail(err);
    }
  }, workerData.delayMs);
});
`;

type FromWorker = { type: 'ready' } | { type: 'done' } | { type: 'failed'; message: string };

export interface CheckpointerOptions {
  file: string;
  busyTimeoutMs: number;
  /** Sets the store connection's `wal_autocheckpoint` (the backstop while the thread does the work). */
  setAutocheckpoint(pages: number): void;
  /** Why the thread stopped, when it did on its own. */
  warn(message: string): void;
}

export class WalCheckpointer {
  #worker: Worker | undefined;
  /** The worker has its connection open and the store's own threshold is the backstop. */
  #running = false;
  /** A request is with the worker and not yet answered. */
  #requested = false;
  /** A commit came after the request with the worker was made: its checkpoint may have begun before it. */
  #committedSince = false;
  /** Set by the worker when its connection is closed. */
  readonly #closed = new Int32Array(new SharedArrayBuffer(4));
  #stopped = false;
  #idle: Array<() => void> = [];

  constructor(private readonly options: CheckpointerOptions) {}

  /** Whether checkpoints are running on the worker now (not on the store's connection). */
  get inBackground(): boolean {
    return this.#running;
  }

  /**
   * Resolves once no checkpoint is asked for or being made (a test's or a benchmark's moment to
   * look at the WAL); at once when none is (a stopped thread has none: #stop settles).
   */
  whenIdle(): Promise<void> {
    if (!this.#requested) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  #settle(): void {
    this.#requested = false;
    this.#committedSince = false;
    for (const resolve of this.#idle.splice(0)) resolve();
  }

  /** After every commit: start the thread the first time, else ask for a checkpoint (or again, once the one asked for is made). */
  committed(): void {
    if (this.#stopped) return;
    if (!this.#worker) this.#start();
    // While the thread starts, the request it is sent once ready covers this commit.
    else if (this.#running) {
      if (this.#requested) this.#committedSince = true;
      else this.#request();
    }
  }

  #request(): void {
    this.#requested = true;
    this.#committedSince = false;
    this.#worker!.postMessage('checkpoint');
  }

  #start(): void {
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        file: this.options.file,
        busyTimeoutMs: this.options.busyTimeoutMs,
        delayMs: CHECKPOINT_DELAY_MS,
        passes: PASSES,
        closed: this.#closed.buffer,
      },
      stdout: false,
      stderr: false,
    });
    this.#worker = worker;
    worker.on('message', (message: FromWorker) => {
      if (message.type === 'ready') {
        if (this.#stopped) return;
        this.options.setAutocheckpoint(BACKSTOP_AUTOCHECKPOINT_PAGES);
        this.#running = true;
        // Commits made while it started are checkpointed too.
        this.#request();
      } else if (message.type === 'done') {
        if (this.#committedSince) this.#request();
        else this.#settle();
      } else this.#fallBack(`the WAL checkpoint thread stopped (${message.message}); checkpoints run on commit again`);
    });
    worker.on('error', (err) => this.#fallBack(`the WAL checkpoint thread failed (${err.message}); checkpoints run on commit again`));
    // After a stop this does nothing (#fallBack), so only an exit of its own is reported.
    worker.on('exit', () => this.#fallBack('the WAL checkpoint thread exited; checkpoints run on commit again'));
    // After the listeners: adding a 'message' listener refs the worker again, and a store nobody
    // closed then kept its process from exiting.
    worker.unref();
  }

  /** The thread failed: the store's connection checkpoints on commit again, for good. */
  #fallBack(why: string): void {
    if (!this.#stop()) return;
    this.options.warn(why);
    void this.#worker?.terminate();
  }

  /**
   * No more requests, SQLite's own threshold back on the store's connection (which may stay open:
   * a stopped server's), anyone waiting for idle let go. False when it had stopped already.
   */
  #stop(): boolean {
    if (this.#stopped) return false;
    this.#stopped = true;
    if (this.#running) this.options.setAutocheckpoint(SQLITE_AUTOCHECKPOINT_PAGES);
    this.#running = false;
    this.#settle();
    return true;
  }

  /**
   * Before the store closes its connection (or goes on checkpointing on commit): the worker closes
   * its own first (a checkpoint in progress finishes), so the store's close is the last one and
   * removes the WAL and its index.
   */
  close(): void {
    if (!this.#stop()) return;
    const worker = this.#worker;
    if (!worker) return;
    worker.postMessage('close');
    Atomics.wait(this.#closed, 0, 0, CLOSE_WAIT_MS);
    void worker.terminate();
  }
}
