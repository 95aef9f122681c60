/**
 * The plugin pool: one piscina pool shared by every plugin, so CPU-heavy predictions never run on
 * the HTTP thread. The worker is TypeScript; Node 20 worker threads cannot load that, so it is
 * bundled once with esbuild into `node_modules/.cache/hangar-ml/` under a hash of the bundle, the
 * way the notebook kernel's worker is.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildSync } from 'esbuild';
import { Piscina } from 'piscina';
import type { EncodedChunk, ItemResult, LoadReport, PluginTask } from './worker.js';

let workerFile: string | undefined;

/** The folder holding `core/ml/worker.ts`: this file's own folder, or (from dist/) the repository's. */
function sourceDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  if (existsSync(join(dir, 'worker.ts'))) return dir;
  for (let up = dir; ; up = dirname(up)) {
    if (existsSync(join(up, 'core', 'ml', 'worker.ts'))) return join(up, 'core', 'ml');
    if (dirname(up) === up) throw new Error(`cannot find core/ml/worker.ts above ${dir}`);
  }
}

/** Path of the runnable worker module, bundling it on first use. */
export function pluginWorkerFile(): string {
  if (workerFile) return workerFile;
  const dir = sourceDir();
  const result = buildSync({
    entryPoints: [join(dir, 'worker.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    write: false,
    outfile: 'worker.mjs',
    logLevel: 'silent',
  });
  const code = result.outputFiles[0]!.text;
  const hash = createHash('sha256').update(code).digest('hex').slice(0, 12);
  // node_modules of the repository, so the worker's bare imports (zod, esbuild) resolve.
  const cache = join(dir, '..', '..', 'node_modules', '.cache', 'hangar-ml');
  const target = join(cache, `worker.${hash}.mjs`);
  if (!existsSync(target)) {
    mkdirSync(cache, { recursive: true });
    // Write then rename: two processes starting at once never see half a file.
    const tmp = `${target}.${process.pid}.tmp`;
    writeFileSync(tmp, code);
    renameSync(tmp, target);
  }
  return (workerFile = target);
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
