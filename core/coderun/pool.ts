/**
 * The piscina pool agent loops run in, and the bridge serving their model calls on the server
 * thread. The worker module is bundled on first use when only the TypeScript source exists (tests,
 * `tsx`), into node_modules/.cache keyed by a hash of the sources, like the notebook kernel.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel } from 'node:worker_threads';
import { buildSync } from 'esbuild';
import { Piscina } from 'piscina';
import type { AgentJob, AgentOutcome, MainToWorker, WorkerToMain } from './agent-worker.js';
import type { ModelGate } from './model.js';

const here = dirname(fileURLToPath(import.meta.url));
const SOURCES = ['agent-worker.ts', 'tools.ts', 'fence.ts', 'command.ts', 'ownership.ts'];
let workerFile: string | undefined;

/**
 * Where agent-worker.ts is: next to this module when run from source, else in core/coderun of an
 * enclosing folder (this module bundled into dist/ or a benchmark's build folder).
 */
function sourceDir(): string {
  if (existsSync(join(here, 'agent-worker.ts'))) return here;
  for (let dir = here, i = 0; i < 5; i++, dir = dirname(dir)) {
    const candidate = join(dir, 'core', 'coderun');
    if (existsSync(join(candidate, 'agent-worker.ts'))) return candidate;
  }
  throw new Error(`coding-run agent worker source not found near ${here}`);
}

export function agentWorkerFile(): string {
  if (workerFile) return workerFile;
  if (existsSync(join(here, 'agent-worker.mjs'))) return (workerFile = join(here, 'agent-worker.mjs'));
  const dir = sourceDir();
  const hash = createHash('sha256')
    .update(SOURCES.map((f) => readFileSync(join(dir, f), 'utf8')).join('\0'))
    .digest('hex')
    .slice(0, 12);
  const cache = join(dir, '..', '..', 'node_modules', '.cache', 'hangar-coderun');
  const target = join(cache, `agent-worker.${hash}.mjs`);
  if (!existsSync(target)) {
    mkdirSync(cache, { recursive: true });
    // A temporary name and a rename: two processes building at once never load half a file.
    const tmp = `${target}.${process.pid}.tmp`;
    buildSync({ entryPoints: [join(dir, 'agent-worker.ts')], bundle: true, platform: 'node', format: 'esm', target: 'node20', packages: 'external', outfile: tmp, logLevel: 'silent' });
    renameSync(tmp, target);
  }
  return (workerFile = target);
}

export type AgentJobInput = Omit<AgentJob, 'port'>;

export class AgentPool {
  private readonly pool: Piscina<AgentJob, AgentOutcome>;

  constructor(threads: number) {
    this.pool = new Piscina<AgentJob, AgentOutcome>({
      filename: agentWorkerFile(),
      minThreads: 0,
      maxThreads: Math.max(1, threads),
      idleTimeout: 30_000,
      // An agent loop mostly waits on the model: one loop per thread at a time keeps cancellation
      // and crash isolation per task simple.
      concurrentTasksPerWorker: 1,
    });
  }

  /**
   * Run one agent loop. Model calls from the worker go through `gate` (the run-wide bound);
   * tool events are passed to `onTool`. Cancelling `signal` tells the worker to stop (it kills
   * its command) and, if it does not stop within a second, terminates the thread.
   */
  async run(job: AgentJobInput, gate: ModelGate, onTool: (e: Extract<WorkerToMain, { type: 'tool' }>) => void, signal: AbortSignal): Promise<AgentOutcome> {
    const { port1, port2 } = new MessageChannel();
    const calls = new AbortController();
    const send = (msg: MainToWorker) => {
      try {
        port1.postMessage(msg);
      } catch {
        // The worker is gone; nothing is waiting for the answer.
      }
    };
    port1.on('message', (msg: WorkerToMain) => {
      if (msg.type === 'tool') return onTool(msg);
      gate.chat({ ...msg.call, signal: calls.signal }).then(
        (reply) => send({ type: 'model_result', id: msg.id, reply }),
        (err: unknown) => send({ type: 'model_result', id: msg.id, error: err instanceof Error ? err.message : String(err), cancelled: calls.signal.aborted }),
      );
    });
    const hardStop = new AbortController();
    let killTimer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      calls.abort();
      send({ type: 'cancel' });
      killTimer = setTimeout(() => hardStop.abort(), 1000);
    };
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await this.pool.run({ ...job, port: port2 } as AgentJob, { transferList: [port2] as never, signal: hardStop.signal });
    } catch (err) {
      if (signal.aborted) return { status: 'cancelled', summary: '', written: [], steps: 0, refused_writes: 0, error: 'cancelled' };
      throw err;
    } finally {
      clearTimeout(killTimer);
      signal.removeEventListener('abort', onAbort);
      calls.abort();
      port1.close();
    }
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}

