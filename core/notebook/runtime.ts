/**
 * A notebook's kernel as seen from the server thread: a piscina pool of exactly one worker thread
 * (see `kernel-worker.ts`), so cells run in order, off the main thread, against state that lives as
 * long as the thread.
 *
 * Interrupting a cell stuck in a loop cannot be done politely from outside a thread, so interrupt
 * = terminate the thread and start a fresh one (piscina `destroy()` + a new pool). Every value is
 * lost; the caller marks cells stale. The same happens on a per-cell timeout and when the thread
 * dies on its own (`process.exit()` in a cell, out of memory): the run reports the crash and the
 * next run gets a fresh kernel. `generation` counts kernels so callers can tell.
 *
 * The worker is TypeScript, bundled to CommonJS by core/workers/bundle.ts into node_modules/.cache,
 * where bare imports in cells still resolve to Hangar's own dependencies.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { workerBundle } from '../workers/bundle.js';
import { moduleDir, packageRoot } from './assets.js';
import type { CallResult, KernelTask, RunResult, StreamedOutput } from './kernel-worker.js';
import type { Output } from './schemas.js';

export type { CallResult, RunResult } from './kernel-worker.js';

let workerFile: string | undefined;

/**
 * Path of the runnable worker module: the one a Docker export ships next to its runner, else a
 * CommonJS bundle built on first use (core/workers/bundle.ts).
 */
export function kernelWorkerFile(): string {
  if (workerFile) return workerFile;
  const prebuilt = join(moduleDir, 'kernel-worker.cjs');
  return (workerFile = existsSync(prebuilt) ? prebuilt : workerBundle('core/notebook/kernel-worker.ts'));
}

export interface KernelOptions {
  /** Folder relative imports in cells resolve against (the notebook's folder). */
  baseDir: string;
  /** Heap limit for the worker, in MB; exceeding it crashes the kernel, not the server. */
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
  /** 0 or undefined = no limit. */
  timeoutMs?: number;
  /** Called for each output as it is produced (may be called before run() resolves). */
  onOutput?: (output: Output) => void;
}

export type KernelEndReason = 'interrupted' | 'timeout' | 'crashed';

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

export class Kernel {
  #pool: Piscina<KernelTask, RunResult | CallResult | null> | undefined;
  #port: MessagePort | undefined;
  #starting: Promise<void> | undefined;
  #generation = 0;
  #runId = 0;
  #listeners = new Map<number, (streamed: StreamedOutput) => void>();
  /** Why a pool was torn down on purpose, so a run it rejected can say why. */
  #endReasons = new WeakMap<object, KernelEndReason>();
  readonly #options: KernelOptions;

  constructor(options: KernelOptions) {
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
    const pool = new Piscina<KernelTask, RunResult | CallResult | null>({
      filename: kernelWorkerFile(),
      minThreads: 1,
      maxThreads: 1,
      idleTimeout: Infinity,
      // The worker's event loop must keep turning between tasks (timers, pending promises a cell
      // left behind), which Atomics-based waiting would freeze.
      atomics: 'disabled',
      ...(this.#options.maxHeapMb ? { resourceLimits: { maxOldGenerationSizeMb: this.#options.maxHeapMb } } : {}),
    });
    // A dying worker also emits 'error' on the pool; the failing run() reports it, so just swallow.
    pool.on('error', () => {});
    const { port1, port2 } = new MessageChannel();
    port1.on('message', (streamed: StreamedOutput) => this.#listeners.get(streamed.runId)?.(streamed));
    port1.unref();
    this.#pool = pool;
    this.#port = port1;
    this.#generation++;
    await pool.run(
      { op: 'init', port: port2, baseDir: this.#options.baseDir, fallbackDir: packageRoot() },
      { transferList: [port2] },
    );
  }

  /**
   * Run one cell. Resolves with the outputs and status; never rejects for user-code failures.
   * A timeout, interrupt or crash resolves with an error output explaining what happened.
   */
  async run(cell: CellRun): Promise<RunResult & { ended?: KernelEndReason }> {
    await this.start();
    const pool = this.#pool!;
    const runId = ++this.#runId;
    const seen = new Set<number>();
    if (cell.onOutput) {
      const onOutput = cell.onOutput;
      this.#listeners.set(runId, (streamed) => {
        seen.add(streamed.seq);
        onOutput(streamed.output);
      });
    }
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    if (cell.timeoutMs) {
      timer = setTimeout(() => void this.#end('timeout'), cell.timeoutMs);
    }
    try {
      const result = (await pool.run({
        op: 'run',
        runId,
        cellId: cell.cellId,
        program: cell.program,
        reads: cell.reads,
        writes: cell.writes,
        lineMap: cell.lineMap,
        ...(cell.segmentMap ? { segmentMap: cell.segmentMap } : {}),
        executionCount: cell.executionCount,
      })) as RunResult;
      // The port and the task result are separate channels: outputs still in flight on the port are
      // delivered from the result instead, and late port messages are ignored (listener removed).
      this.#listeners.delete(runId);
      result.outputs.forEach((output, seq) => {
        if (!seen.has(seq)) cell.onOutput?.(output);
      });
      return { ...result, outputs: mergeStreams(result.outputs) };
    } catch (err) {
      const reason = this.#endReasons.get(pool) ?? 'crashed';
      if (reason === 'crashed' && this.#pool === pool) await this.#end('crashed');
      const message =
        reason === 'timeout' ? `cell timed out after ${cell.timeoutMs} ms; the kernel was restarted and all values were lost`
        : reason === 'interrupted' ? 'interrupted; the kernel was restarted and all values were lost'
        : `the kernel crashed (${(err as Error).message}); it was restarted and all values were lost`;
      const output: Output = {
        output_type: 'error',
        ename: reason === 'timeout' ? 'TimeoutError' : reason === 'interrupted' ? 'InterruptError' : 'KernelCrash',
        evalue: message,
        traceback: [message],
      };
      cell.onOutput?.(output);
      return { status: 'error', outputs: [output], durationMs: performance.now() - started, ended: reason };
    } finally {
      if (timer) clearTimeout(timer);
      this.#listeners.delete(runId);
    }
  }

  /**
   * Call `fn` of the ES module `module` inside the kernel's thread on the value named `name` (or
   * on nothing when `name` is undefined). Queued behind running cells like any kernel task.
   * Rejects when the function throws; the kernel keeps running.
   */
  async call(task: { module: string; fn: string; name?: string; args?: unknown }): Promise<CallResult> {
    await this.start();
    return (await this.#pool!.run({ op: 'call', module: task.module, fn: task.fn, ...(task.name !== undefined ? { name: task.name } : {}), args: task.args ?? null })) as CallResult;
  }

  /** Remove names from the kernel's globals (a deleted cell's definitions). */
  async deleteNames(names: string[]): Promise<void> {
    if (!this.#pool || names.length === 0) return;
    await this.#pool.run({ op: 'delete', names });
  }

  /** Stop whatever runs and start a fresh worker. Resolves when the new kernel is ready. */
  interrupt(): Promise<void> {
    return this.#end('interrupted');
  }

  restart(): Promise<void> {
    return this.#end('interrupted');
  }

  async #end(reason: KernelEndReason): Promise<void> {
    const pool = this.#pool;
    if (!pool) return;
    this.#endReasons.set(pool, reason);
    this.#pool = undefined;
    this.#starting = undefined;
    this.#port?.close();
    await pool.destroy();
    // Boot the replacement now so the next run does not pay for it.
    await this.start();
  }

  /** Terminate for good (closing the notebook). */
  async close(): Promise<void> {
    const pool = this.#pool;
    this.#pool = undefined;
    this.#starting = undefined;
    this.#port?.close();
    if (pool) await pool.destroy();
  }
}
