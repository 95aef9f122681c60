/**
 * The plugin pool: one piscina pool shared by every plugin, so CPU-heavy predictions never run on
 * the HTTP thread.
 */
import { Piscina } from 'piscina';
import { workerBundle } from '../workers/bundle.js';
import type { EncodedChunk, ItemResult, LoadReport, PluginTask } from './worker.js';

/** Path of the runnable worker module (a CommonJS bundle, see core/workers/bundle.ts). */
export function pluginWorkerFile(): string {
  return workerBundle('core/predictors/worker.ts');
}

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
  private readonly pool: Piscina<PluginTask, LoadReport | ItemResult[] | EncodedChunk>;

  constructor(options: PluginPoolOptions) {
    this.pool = new Piscina({
      filename: pluginWorkerFile(),
      minThreads: 1,
      maxThreads: options.threads,
      idleTimeout: 60_000,
      resourceLimits: options.maxHeapMb ? { maxOldGenerationSizeMb: options.maxHeapMb } : undefined,
    });
  }

  get threads(): number {
    return this.pool.threads.length;
  }

  get queued(): number {
    return this.pool.queueSize;
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

  /**
   * Run one task with a deadline. Aborting a running piscina task terminates its thread, which is
   * the only way to stop a model stuck in a loop; piscina replaces the thread.
   */
  private async run(task: PluginTask, timeoutMs: number): Promise<LoadReport | ItemResult[] | EncodedChunk> {
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new PluginTimeoutError(timeoutMs)), timeoutMs);
    try {
      return await this.pool.run(task, { signal: controller.signal });
    } catch (err) {
      if (controller.signal.aborted) throw controller.signal.reason;
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
