/**
 * A notebook's runtime (what Jupyter calls its kernel) as seen from the server thread: a worker
 * pool of exactly one thread (see `runtime-worker.ts`), so cells run in order, off the main
 * thread, against state that lives as long as the thread.
 *
 * Interrupting a cell stuck in a loop cannot be done politely from outside a thread, so interrupt
 * = terminate the thread and start a fresh one (close the pool, make a new one). Every value is
 * lost; the caller marks cells stale. The same happens on a per-cell timeout and when the thread
 * dies on its own (`process.exit()` in a cell, out of memory): the run reports the crash and the
 * next run gets a fresh runtime. `generation` counts runtimes so callers can tell.
 *
 * The worker is bundled by the pool into node_modules/.cache, where bare imports in cells still
 * resolve to Hangar's own dependencies.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { TaskChannel, WorkerDeadlineError, WorkerPool } from '../lib/worker-pool.js';
import { moduleDir, packageRoot } from './assets.js';
import type { CallResult, RunResult, RuntimeTask } from './runtime-worker.js';
import type { Output } from './schemas.js';

export type { CallResult, RunResult } from './runtime-worker.js';

/** The worker module: the bundle a Docker export ships next to its runner, else the source. */
function runtimeWorkerEntry(): string {
  const prebuilt = join(moduleDir, 'runtime-worker.cjs');
  return existsSync(prebuilt) ? prebuilt : 'core/notebook/runtime-worker.ts';
}

export interface NotebookRuntimeOptions {
  /** Folder relative imports in cells resolve against (the notebook's folder). */
  baseDir: string;
  /** Heap limit for the worker, in MB; exceeding it crashes the runtime, not the server. */
  maxHeapMb?: number;
}

export interface CellRun {
  cellId: string;
  program: string;
  reads: string[];
  writes: string[];
  lineMap: number[];
  segmentMap?: Array<Array<[number, number]>>;
  executionCount: number;
  /** Saved values of the cell's interactive elements (ui-elements.ts). */
  uiValues?: Record<string, unknown>;
  /** 0 or undefined = no limit. */
  timeoutMs?: number;
  /** Called for each output as it is produced; every call comes before run() resolves. */
  onOutput?: (output: Output) => void;
}

export type RuntimeEndReason = 'interrupted' | 'timeout' | 'crashed';

/** Adjacent chunks of the same stream become one output, as Jupyter front-ends show them. */
export function mergeStreams(outputs: Output[]): Output[] {
  const merged: Output[] = [];
  for (const output of outputs) {
    const last = merged[merged.length - 1];
    if (output.output_type === 'stream' && last?.output_type === 'stream' && last.name === output.name) {
      merged[merged.length - 1] = { ...last, text: last.text + output.text };
    } else merged.push(output);
  }
  return merged;
}

export class NotebookRuntime {
  #pool: WorkerPool<RuntimeTask, RunResult | CallResult | null> | undefined;
  #starting: Promise<void> | undefined;
  #generation = 0;
  /** Why a pool was closed on purpose, so a run it rejected can say why. */
  #endReasons = new WeakMap<object, RuntimeEndReason>();
  readonly #options: NotebookRuntimeOptions;

  constructor(options: NotebookRuntimeOptions) {
    this.#options = options;
  }

  /** Increases every time the worker (and so every value) is replaced. */
  get generation(): number {
    return this.#generation;
  }

  get running(): boolean {
    return this.#pool !== undefined;
  }

  /** Start the worker and wait until it answers. Idempotent. */
  start(): Promise<void> {
    this.#starting ??= this.#boot();
    return this.#starting;
  }

  async #boot(): Promise<void> {
    const pool = new WorkerPool<RuntimeTask, RunResult | CallResult | null>({
      entry: runtimeWorkerEntry(),
      maxThreads: 1,
      // The thread is the notebook's memory: it must never be stopped for being idle.
      idleTimeoutMs: Infinity,
      // The worker's event loop must keep turning between tasks (timers, pending promises a cell
      // left behind).
      atomics: 'disabled',
      maxHeapMb: this.#options.maxHeapMb,
    });
    this.#pool = pool;
    this.#generation++;
    await pool.run({ op: 'init', baseDir: this.#options.baseDir, fallbackDir: packageRoot() });
  }

  /**
   * Run one cell. Resolves with the outputs and status; never rejects for user-code failures.
   * A timeout, interrupt or crash resolves with an error output explaining what happened.
   */
  async run(cell: CellRun): Promise<RunResult & { ended?: RuntimeEndReason }> {
    await this.start();
    const pool = this.#pool!;
    const started = performance.now();
    // Every output the worker streamed is delivered before the result arrives (see TaskChannel),
    // so the result's outputs need not be delivered again.
    const channel = cell.onOutput ? new TaskChannel<Output>(cell.onOutput) : undefined;
    try {
      const result = (await pool.run(
        {
          op: 'run',
          cellId: cell.cellId,
          program: cell.program,
          reads: cell.reads,
          writes: cell.writes,
          lineMap: cell.lineMap,
          ...(cell.segmentMap ? { segmentMap: cell.segmentMap } : {}),
          executionCount: cell.executionCount,
          ...(cell.uiValues ? { uiValues: cell.uiValues } : {}),
        },
        { deadlineMs: cell.timeoutMs, channel },
      )) as RunResult;
      return { ...result, outputs: mergeStreams(result.outputs) };
    } catch (err) {
      const reason = this.#endReasons.get(pool) ?? (err instanceof WorkerDeadlineError ? 'timeout' : 'crashed');
      if (reason !== 'interrupted' && this.#pool === pool) await this.#end(reason);
      const message =
        reason === 'timeout'
          ? `cell timed out after ${cell.timeoutMs} ms; the kernel was restarted and all values were lost`
          : reason === 'interrupted'
            ? 'interrupted; the kernel was restarted and all values were lost'
            : `the kernel crashed (${(err as Error).message}); it was restarted and all values were lost`;
      const output: Output = {
        output_type: 'error',
        ename: reason === 'timeout' ? 'TimeoutError' : reason === 'interrupted' ? 'InterruptError' : 'KernelCrash',
        evalue: message,
        traceback: [message],
      };
      cell.onOutput?.(output);
      return { status: 'error', outputs: [output], durationMs: performance.now() - started, ended: reason };
    }
  }

  /**
   * Call `fn` of the ES module `module` inside the runtime's thread on the value named `name` (or
   * on nothing when `name` is undefined). Queued behind running cells like any runtime task.
   * Rejects when the function throws; the runtime keeps running.
   */
  async call(task: { module: string; fn: string; name?: string; args?: unknown }): Promise<CallResult> {
    await this.start();
    return (await this.#pool!.run({
      op: 'call',
      module: task.module,
      fn: task.fn,
      ...(task.name !== undefined ? { name: task.name } : {}),
      args: task.args ?? null,
    })) as CallResult;
  }

  /** Set an interactive element's value in the kernel (when it runs; a new kernel restores it on the cell's run). */
  async setUiValue(id: string, value: unknown): Promise<void> {
    if (!this.#pool) return;
    await this.#pool.run({ op: 'ui-set', id, value });
  }

  /** Remove names from the runtime's globals (a deleted cell's definitions). */
  async deleteNames(names: string[]): Promise<void> {
    if (!this.#pool || names.length === 0) return;
    await this.#pool.run({ op: 'delete', names });
  }

  /** Stop whatever runs and start a fresh worker. Resolves when the new runtime is ready. */
  interrupt(): Promise<void> {
    return this.#end('interrupted');
  }

  restart(): Promise<void> {
    return this.#end('interrupted');
  }

  async #end(reason: RuntimeEndReason): Promise<void> {
    const pool = this.#pool;
    if (!pool) return;
    this.#endReasons.set(pool, reason);
    this.#pool = undefined;
    this.#starting = undefined;
    await pool.close();
    // Boot the replacement now so the next run does not pay for it.
    await this.start();
  }

  /** Terminate for good (closing the notebook). */
  async close(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    this.#starting = undefined;
    if (pool) await pool.close();
  }
}
