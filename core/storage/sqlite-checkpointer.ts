/**
 * WAL checkpoints in a thread of their own.
 *
 * SQLite copies the write-ahead log back into the database file (a checkpoint, with an fsync of
 * each) inside whichever commit takes the log past 1,000 pages, on the connection that commits:
 * here the server's thread, which then stood still for 20-30 ms while the disk synced (a plugin
 * batch's 1.5 MB result passed the threshold on most commits; bench/ml.bench.ts, #27).
 *
 * Once this thread runs, the server's connection stops checkpointing (`wal_autocheckpoint = 0`) and
 * the thread checkpoints instead: at most every `POLL_MS`, when the server has committed since
 * its last one. A PASSIVE checkpoint never blocks a writer; the log is still read and written by
 * the server's connection as before, and what is durable when is unchanged. Should the thread stop
 * or never start, the server's connection checkpoints for itself again.
 *
 * The thread starts with the first commit after the store opened, so a store that is only read
 * (or a start-up that writes nothing) never starts it. A flush (what a stop does) ends it, so no
 * thread outlives a stopped server; a commit after that starts one again.
 */
import { Worker } from 'node:worker_threads';

/** How often the thread looks for commits to checkpoint. */
export const CHECKPOINT_EVERY_MS = 200;

/** SQLite's own threshold, put back when the thread is gone. */
const AUTOCHECKPOINT_PAGES = 1000;

/** The thread: a connection of its own that checkpoints while the commit counter moves. */
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
// Node 22 warns that node:sqlite is experimental; the store has chosen it (sqlite-store.ts).
process.emitWarning = () => {};
const { DatabaseSync } = require('node:sqlite');
const db = new DatabaseSync(workerData.file, { timeout: workerData.busyTimeoutMs });
const commits = new Int32Array(workerData.commits);
const checkpoint = db.prepare('PRAGMA wal_checkpoint(PASSIVE)');
let seen = 0;
const timer = setInterval(() => {
  const now = Atomics.load(commits, 0);
  if (now === seen) return;
  seen = now;
  const { busy, log, checkpointed } = checkpoint.get();
  parentPort.postMessage({ busy, log, checkpointed });
}, workerData.everyMs);
parentPort.on('message', () => {
  clearInterval(timer);
  db.close();
  parentPort.close();
});
parentPort.postMessage('ready');
`;

/** What the thread reports after each checkpoint (SQLite's own three numbers). */
export interface CheckpointReport {
  /** 1 when another connection held a lock the checkpoint needed, so it stopped short. */
  busy: number;
  /** Frames in the log, and how many of them are now in the database file. */
  log: number;
  checkpointed: number;
}

export interface CheckpointerOptions {
  file: string;
  busyTimeoutMs: number;
  /** Runs SQL on the server's connection (to switch its own checkpoints off and on). */
  exec: (sql: string) => void;
  log: (level: 'warn' | 'error', line: string) => void;
  everyMs?: number;
}

export class Checkpointer {
  private readonly commits = new Int32Array(new SharedArrayBuffer(4));
  private worker: Worker | undefined;
  private closed = false;
  /** Checkpoints the thread has reported, and the last one's numbers. */
  checkpoints = 0;
  last: CheckpointReport | undefined;

  /** Whether the thread is running (it may still be starting). */
  get running(): boolean {
    return this.worker !== undefined;
  }

  constructor(private readonly options: CheckpointerOptions) {}

  /** After every commit on the server's connection: counted, and the first one starts the thread. */
  committed(): void {
    Atomics.add(this.commits, 0, 1);
    if (!this.worker && !this.closed) this.start();
  }

  private start(): void {
    const { file, busyTimeoutMs, everyMs = CHECKPOINT_EVERY_MS } = this.options;
    const worker = new Worker(SOURCE, { eval: true, workerData: { file, busyTimeoutMs, commits: this.commits.buffer, everyMs } });
    this.worker = worker;
    worker.on('message', (message: 'ready' | CheckpointReport) => {
      if (message === 'ready') {
        if (this.worker === worker) this.options.exec('PRAGMA wal_autocheckpoint = 0');
        return;
      }
      this.checkpoints++;
      this.last = message;
    });
    worker.on('error', (err) =>
      this.options.log('warn', `store: the checkpoint thread failed (${err.message}); checkpoints run on commits again`),
    );
    worker.on('exit', () => {
      // Ended by `stop`, or failed: either way commits checkpoint for themselves again.
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.options.exec(`PRAGMA wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
    });
    // A thread that only checkpoints never keeps the process alive (after the listeners: adding one refs it again).
    worker.unref();
  }

  /** Ends the thread (its connection closes first); the server's connection checkpoints again. */
  async stop(): Promise<void> {
    const worker = this.worker;
    if (!worker) return;
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    // Waited for, so the process stays up until the thread's connection has closed.
    worker.ref();
    worker.postMessage('stop');
    await exited;
  }

  /** For good (the store closes): no commit starts the thread again. */
  close(): void {
    this.closed = true;
    this.worker?.postMessage('stop');
  }
}
