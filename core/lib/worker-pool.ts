/**
 * The one wrapper around piscina that every worker-thread pool stands on. It owns what each pool
 * used to repeat: bundling the entry, a deadline and an AbortSignal per task, a message channel
 * per task, a heap cap per thread, and clear errors for the three ways a task is cut short.
 *
 * Nothing starts before the first task (or a warm()), not even the bundling: a server sets up its
 * pools at start-up and most of them may never be used in a session. The bundling never blocks the
 * calling thread (esbuild's service process builds while it goes on).
 */
import { existsSync } from 'node:fs';
import module from 'node:module';
import { dirname, isAbsolute } from 'node:path';
import { MessageChannel, type MessagePort, receiveMessageOnPort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { InFlight } from './in-flight.js';
import { reusableWorkerBundle, workerBundleAsync } from './worker-bundle.js';

export interface WorkerPoolOptions {
  /**
   * The worker module, whose default export runs one task: a path relative to the package root
   * (e.g. 'core/predictors/worker.ts'), bundled on the first task (see worker-bundle.ts), or an
   * absolute path of a runnable CommonJS file, used as it is.
   */
  entry: string;
  /** Most threads at once (default 1). */
  maxThreads?: number;
  /**
   * Tasks one thread runs at once (default 1). More suits tasks that mostly wait (an agent on its
   * model); a task that ends its thread (abort, heap cap) then fails the others on it too.
   */
  concurrentTasksPerWorker?: number;
  /**
   * Threads kept once the pool has started (default 0). Nothing starts before the first task
   * whatever this says; past it, this many stay warm (a model loaded in a thread stays loaded),
   * and one that dies is replaced.
   */
  minThreads?: number;
  /** How long a thread beyond `minThreads` may sit idle before it is stopped (default 30 s; Infinity: never). */
  idleTimeoutMs?: number;
  /**
   * Heap cap per thread in MB (V8's old generation): a task that passes it fails with
   * WorkerOutOfMemoryError, and only its thread dies.
   */
  maxHeapMb?: number;
  /**
   * 'disabled' keeps a thread's event loop turning between tasks (timers and promises a task left
   * behind), which piscina's default Atomics-based wait for the next task would freeze.
   */
  atomics?: 'sync' | 'async' | 'disabled';
  /**
   * A thread failed while no task ran on it (a timer a task left behind threw). A task's own
   * failure rejects its run() instead. Without this, such failures are dropped: the thread is
   * replaced when needed.
   */
  onIdleError?: (error: Error) => void;
}

export interface RunOptions {
  /**
   * Fail with WorkerDeadlineError when the task has not finished this many ms after run() was
   * called (queueing included). 0 or undefined: no deadline.
   */
  deadlineMs?: number;
  /**
   * Aborting rejects run() with the signal's reason. A queued task is dropped; a running one has
   * its thread terminated, the only way to stop code stuck in a loop.
   */
  signal?: AbortSignal;
  /** Messages between the caller and the task while it runs; the task gets its worker end as `port`. */
  channel?: TaskChannel<never, never>;
  /** Moved to the worker with the task rather than copied (a MessagePort the worker keeps past the task). */
  transfer?: readonly MessagePort[];
}

/** The task did not finish by its deadline; its thread (if it had started) was terminated. */
export class WorkerDeadlineError extends Error {
  constructor(readonly deadlineMs: number) {
    super(`the task did not finish within its ${deadlineMs} ms deadline; its worker thread was stopped`);
    this.name = 'WorkerDeadlineError';
  }
}

/** The task's thread passed its heap cap and was terminated by V8. */
export class WorkerOutOfMemoryError extends Error {
  constructor(
    readonly maxHeapMb: number | undefined,
    options?: ErrorOptions,
  ) {
    super(`out of memory: the worker thread passed its ${maxHeapMb ? `${maxHeapMb} MB ` : ''}heap cap and was stopped`, options);
    this.name = 'WorkerOutOfMemoryError';
  }
}

/**
 * The pool's entry module threw while it loaded: no thread of this pool can run anything until the
 * pool is made again. Its code and message are the catalogue's `HANGAR_WORKER_ENTRY_FAILED`
 * (core/kernel/error-catalogue.ts), spelled here because core/lib imports nothing of Hangar's.
 */
export class WorkerEntryFailedError extends Error {
  readonly code = 'HANGAR_WORKER_ENTRY_FAILED';
  constructor(
    readonly file: string,
    cause: Error,
  ) {
    super(`worker thread entry ${file} failed to load, so the pool cannot run anything until restarted: ${cause.message || cause.name}`, {
      cause,
    });
    this.name = 'WorkerEntryFailedError';
  }
}

/**
 * Messages to and from one running task, over a MessageChannel whose worker end reaches the task
 * as its `port` (transferred, not copied). Every message the worker posted before its task
 * returned is delivered, in order, before run() settles; none is delivered after. The two ends
 * are separate from the one piscina returns results on, so without that drain a result could
 * overtake the last messages.
 */
export class TaskChannel<FromWorker = unknown, ToWorker = unknown> {
  readonly #ports = new MessageChannel();
  readonly #onMessage: (message: FromWorker) => void;
  #handedOver = false;
  #open = true;

  constructor(onMessage: (message: FromWorker) => void) {
    this.#onMessage = onMessage;
    this.#ports.port1.on('message', (message: FromWorker) => {
      if (this.#open) onMessage(message);
    });
    // The running task keeps the process alive; this end must not, should the channel never be used.
    this.#ports.port1.unref();
  }

  /** Post to the worker (also before the task starts: it waits on the port). Dropped once the task ended. */
  send(message: ToWorker): void {
    if (!this.#open) return;
    try {
      this.#ports.port1.postMessage(message);
    } catch {
      // The worker's end is gone (its thread died); nothing is waiting for the message.
    }
  }

  /** The worker's end, for the one run() that carries it. */
  handOver(): MessagePort {
    if (this.#handedOver) throw new Error('a TaskChannel serves one task; make a new one per run()');
    this.#handedOver = true;
    return this.#ports.port2;
  }

  /** Deliver what is still queued, then close: the task has settled. */
  close(): void {
    if (!this.#open) return;
    for (let queued = receiveMessageOnPort(this.#ports.port1); queued; queued = receiveMessageOnPort(this.#ports.port1)) {
      this.#onMessage(queued.message as FromWorker);
    }
    this.#open = false;
    this.#ports.port1.close();
  }
}

export class WorkerPool<Task extends object, Result> {
  readonly #options: WorkerPoolOptions;
  #pool: Piscina<Task, Result> | undefined;
  /** The file #pool's threads start from when it is a bundle of ours (worker-bundle.ts), not the caller's own file. */
  #bundle: string | undefined;
  #starting: Promise<Piscina<Task, Result>> | undefined;
  /** A fresh bundle and pool replacing #pool, whose bundle file is gone; shared by the run()s that found it so. */
  #rebundling: Promise<Piscina<Task, Result>> | undefined;
  #closing: Promise<void> | undefined;
  /** Set once the entry failed to load: every run() then fails with it rather than queue for a thread that never comes. */
  #broken: Error | undefined;
  /** Stops for the run()s in flight, so a failed entry fails each of them at once (not a Set: see in-flight.ts). */
  readonly #inFlight = new InFlight<AbortController>();

  constructor(options: WorkerPoolOptions) {
    this.#options = options;
  }

  /** Threads alive now (0 until the first task). */
  get threads(): number {
    return this.#pool?.threads.length ?? 0;
  }

  /**
   * Run one task on a free thread (queued until one is free). Rejects with WorkerDeadlineError,
   * the abort signal's reason, WorkerOutOfMemoryError, or whatever the task threw or its thread
   * died of; the pool keeps serving the next task either way.
   */
  async run(task: Task, options: RunOptions = {}): Promise<Result> {
    if (this.#closing) throw new Error('the worker pool is closed');
    if (this.#broken) throw this.#broken;
    let pool = this.#pool ?? (await this.#started());
    // Only a pool with no thread starts one from the file: a live thread has its code loaded already.
    if (this.#bundle && pool.threads.length === 0 && !existsSync(this.#bundle)) pool = await this.#rebundled(pool);
    if (this.#closing) throw new Error('the worker pool is closed');
    if (this.#broken) throw this.#broken;
    const stop = new AbortController();
    const ticket = this.#inFlight.add(stop);
    const forwardAbort = () => stop.abort(options.signal!.reason);
    if (options.signal?.aborted) forwardAbort();
    options.signal?.addEventListener('abort', forwardAbort, { once: true });
    const deadlineMs = options.deadlineMs;
    const timer = deadlineMs ? setTimeout(() => stop.abort(new WorkerDeadlineError(deadlineMs)), deadlineMs) : undefined;
    try {
      const port = options.channel?.handOver();
      const withPort = port ? ({ ...task, port } as Task) : task;
      const transfer = port ? [port, ...(options.transfer ?? [])] : options.transfer;
      return await pool.run(withPort, { signal: stop.signal, ...(transfer ? { transferList: transfer as never } : {}) });
    } catch (err) {
      if (stop.signal.aborted) throw stop.signal.reason;
      if ((err as { code?: string }).code === 'ERR_WORKER_OUT_OF_MEMORY')
        throw new WorkerOutOfMemoryError(this.#options.maxHeapMb, { cause: err });
      throw err;
    } finally {
      this.#inFlight.delete(ticket);
      clearTimeout(timer);
      options.signal?.removeEventListener('abort', forwardAbort);
      options.channel?.close();
    }
  }

  /**
   * Get ready for the first task ahead of it: bundle the entry (off this thread) and, given a task,
   * run it, which starts a thread. For a caller whose first real task has a short deadline.
   */
  async warm(task?: Task): Promise<void> {
    if (this.#closing) return;
    await this.#started(true);
    if (task) await this.run(task);
  }

  /** Terminate every thread (running and queued tasks reject); safe to call again. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      const pool = this.#pool ?? (await this.#starting?.catch(() => undefined));
      await pool?.destroy();
    })();
    return this.#closing;
  }

  /**
   * The pool, started once; the entry's bundle is built without blocking this thread. `now`: a
   * bundle that needs no build starts the pool before this returns, not a turn later, so a warm()
   * inside a long synchronous stretch of this thread (discovery's scan of 1,000 drop-ins) starts a
   * thread that boots on another core meanwhile. Only for warm(): a task given to piscina in the
   * same turn as its first thread went to that thread, and failed with the thread's own error if
   * the entry could not load, instead of the pool's WorkerEntryFailedError (#fail).
   */
  #started(now = false): Promise<Piscina<Task, Result>> {
    if (this.#pool) return Promise.resolve(this.#pool);
    if (this.#starting) return this.#starting;
    const { entry } = this.#options;
    const bundled = !isAbsolute(entry);
    const ready = now ? (bundled ? reusableWorkerBundle(entry) : entry) : undefined;
    if (ready) {
      this.#pool = this.#start(ready, bundled);
      return Promise.resolve(this.#pool);
    }
    this.#starting = (async () => {
      const filename = bundled ? await workerBundleAsync(entry) : entry;
      this.#pool ??= this.#start(filename, bundled);
      return this.#pool;
    })();
    // A failed build is tried again by the next task.
    this.#starting.catch(() => {
      this.#starting = undefined;
    });
    return this.#starting;
  }

  /**
   * A new pool on a fresh bundle, in place of `stale`, which has no thread and whose bundle file
   * is gone. Bundles are shared by every process using this node_modules, and a process that
   * builds a newer one of the same worker (a second checkout, a test run during an edit, a server
   * after `git pull`) deletes those untouched for an hour — including the one a long-running
   * server started from. Its live threads have the code loaded and do not mind; but a pool whose
   * threads stopped while idle would start the next from the missing file, and a thread that cannot
   * load its entry breaks the pool for good (#fail, meant for an entry that is itself broken): every
   * call failed until the server was restarted. Piscina's filename is fixed at construction, so the
   * threadless pool is dropped for a new one. The check is one existsSync, made only when the pool
   * has no thread (run() is on the path of every agent call); a file deleted in the moment between
   * that check and a thread loading it fails the calls waiting for that thread, not the pool (the
   * 'error' handler in #start). The fresh bundle is of the sources as they are now: after a
   * `git pull`, new worker code under the running main thread — this keeps the pool serving; a
   * restart is still how a server takes up an update.
   */
  #rebundled(stale: Piscina<Task, Result>): Promise<Piscina<Task, Result>> {
    this.#rebundling ??= (async () => {
      const filename = await workerBundleAsync(this.#options.entry);
      if (this.#closing) throw new Error('the worker pool is closed');
      if (this.#pool === stale) {
        this.#pool = this.#start(filename, true);
        // Threadless, so nothing runs or waits on it.
        stale.destroy().catch(() => {});
      }
      return this.#pool!;
    })().finally(() => {
      this.#rebundling = undefined;
    });
    return this.#rebundling;
  }

  #fail(filename: string, err: Error): void {
    // The entry as the pool was given it (a bundled one's source path), and what actually ran.
    const { entry } = this.#options;
    const file = entry === filename ? entry : `${entry} (bundled as ${filename})`;
    this.#broken = new WorkerEntryFailedError(file, err);
    for (const stop of this.#inFlight.values()) stop.abort(this.#broken);
  }

  #start(filename: string, bundled: boolean): Piscina<Task, Result> {
    const {
      maxThreads = 1,
      concurrentTasksPerWorker = 1,
      minThreads = 0,
      idleTimeoutMs = 30_000,
      maxHeapMb,
      atomics,
      onIdleError,
    } = this.#options;
    const pool = new Piscina<Task, Result>({
      filename,
      maxThreads,
      concurrentTasksPerWorker,
      minThreads: Math.min(minThreads, maxThreads),
      idleTimeout: idleTimeoutMs,
      env: threadEnv(),
      ...(maxHeapMb ? { resourceLimits: { maxOldGenerationSizeMb: maxHeapMb } } : {}),
      ...(atomics ? { atomics } : {}),
      ...(concurrentTasksPerWorker > 1 ? { loadBalancer: sharedThreads(concurrentTasksPerWorker) } : {}),
    });
    this.#bundle = bundled ? filename : undefined;
    // Piscina emits 'error' for a thread that fails between tasks; unheard, it would crash the process.
    // It is also all a thread whose entry threw while loading leaves: piscina gives such a thread no
    // task and starts no other, so with tasks waiting and no thread left nothing would ever run them
    // (a call pending for good). Only an entry that never loaded leaves that state — a thread failing
    // between tasks has none waiting on it — so the waiting run()s fail with the entry's error, and
    // the pool is closed to further tasks rather than start a thread to fail again on each.
    // Except when the entry is our bundle and its file is gone (deleted between run()'s check and
    // the thread loading it; see #rebundled): the entry is not at fault, so the waiting run()s fail
    // with the error but the pool stays open, and the next run() starts from a fresh bundle.
    pool.on('error', (err: Error) => {
      if (pool.threads.length === 0 && this.#inFlight.size > 0) {
        if (bundled && !existsSync(filename)) for (const stop of this.#inFlight.values()) stop.abort(err);
        else this.#fail(filename, err);
      } else onIdleError?.(err);
    });
    return pool;
  }
}

type LoadBalancer = NonNullable<NonNullable<ConstructorParameters<typeof Piscina>[0]>['loadBalancer']>;

/**
 * piscina's own balancer runs a task that can be aborted alone on its thread (aborting it
 * terminates the thread), and every task here can be (run() always passes a signal), so a pool
 * asking for several tasks per thread got one: a supervised agent's calls ran one after another
 * (#27). This one fills the least busy thread up to `limit`, and aborting a task ends the others
 * on its thread, as `concurrentTasksPerWorker` says.
 */
function sharedThreads(limit: number): LoadBalancer {
  return (_task, workers) => {
    let candidate: Parameters<LoadBalancer>[1][number] | null = null;
    let least = limit;
    for (const worker of workers) {
      // piscina reports a thread running one abortable task as full (Infinity).
      const usage = worker.isRunningAbortableTask ? 1 : worker.currentUsage;
      if (usage < least) {
        candidate = worker;
        least = usage;
      }
    }
    return candidate;
  };
}

/**
 * The environment of a pool's threads: the process's, with Node's compile cache turned on when the
 * process has it (bin/hangar.mjs turns it on with `module.enableCompileCache`, which a thread does
 * not inherit; a thread reads `NODE_COMPILE_CACHE` as it starts). Compiling a ~1 MB worker bundle
 * took ~34 ms of each thread's start on this machine; from the cache, ~10 ms less per thread
 * (medians of 12), and a start of the example workspace starts four.
 */
function threadEnv(): NodeJS.ProcessEnv {
  const dir = process.env.NODE_COMPILE_CACHE ? undefined : module.getCompileCacheDir?.();
  // The directory holds one folder per Node version and user (`v24.…-x64-…-0`); the thread picks its own.
  return dir ? { ...process.env, NODE_COMPILE_CACHE: dirname(dir) } : process.env;
}
