/**
 * The plugin pool: one worker pool shared by every plugin, so CPU-heavy predictions never run on
 * the HTTP thread.
 */
import { WorkerDeadlineError, WorkerPool } from '../lib/worker-pool.js';
import type { EncodedChunk, ItemResult, LoadReport, PluginTask } from './worker.js';

export class PluginTimeoutError extends Error {
  constructor(ms: number) {
    super(`prediction did not finish within ${ms} ms; its worker was stopped`);
    this.name = 'PluginTimeoutError';
  }
}

export interface PluginPoolOptions {
  threads: number;
  /** Heap limit per worker in MB: a model that runs away with memory crashes its thread only. */
  maxHeapMb?: number;
}

export class PluginPool {
  private readonly pool: WorkerPool<PluginTask, LoadReport | ItemResult[] | EncodedChunk>;

  constructor(options: PluginPoolOptions) {
    this.pool = new WorkerPool({
      entry: 'core/predictors/worker.ts',
      maxThreads: options.threads,
      // Once a plugin has been used, one thread stays with its model loaded.
      minThreads: 1,
      idleTimeoutMs: 60_000,
      maxHeapMb: options.maxHeapMb,
    });
  }

  load(task: Extract<PluginTask, { op: 'load' }>, timeoutMs: number): Promise<LoadReport> {
    return this.run(task, timeoutMs) as Promise<LoadReport>;
  }

  predict(task: Extract<PluginTask, { op: 'predict' }>, timeoutMs: number): Promise<ItemResult[]> {
    return this.run(task, timeoutMs) as Promise<ItemResult[]>;
  }

  batch(task: Extract<PluginTask, { op: 'batch' }>, timeoutMs: number): Promise<EncodedChunk> {
    return this.run(task, timeoutMs) as Promise<EncodedChunk>;
  }

  /** A missed deadline stops the thread, the only way to stop a model stuck in a loop. */
  private async run(task: PluginTask, timeoutMs: number): Promise<LoadReport | ItemResult[] | EncodedChunk> {
    try {
      return await this.pool.run(task, { deadlineMs: timeoutMs });
    } catch (err) {
      throw err instanceof WorkerDeadlineError ? new PluginTimeoutError(timeoutMs) : err;
    }
  }

  /** Start the pool's first thread ahead of the first load; a failure is the first load's to report. */
  warm(): void {
    this.pool.warm().catch(() => undefined);
  }

  close(): Promise<void> {
    return this.pool.close();
  }
}
