/**
 * The piscina pool agent loops run in, and the bridge serving their model calls on the server
 * thread. The worker is bundled by core/workers/bundle.ts (CommonJS, see why there).
 */
import { MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { workerBundle } from '../workers/bundle.js';
import type { AgentJob, AgentOutcome, MainToWorker, WorkerToMain } from './agent-worker.js';
import type { ModelGate } from './model.js';
import type { CommandWrites } from './tools.js';

/** Path of the runnable worker module (a CommonJS bundle, see core/workers/bundle.ts). */
export function agentWorkerFile(): string {
  return workerBundle('core/coderun/agent-worker.ts');
}

export type AgentJobInput = Omit<AgentJob, 'port'>;

/**
 * Piscina cannot change `maxThreads` of a live pool, so a pool belongs to one run and is sized by
 * that run's `max_parallel` (the wave width): a setting raised between runs takes effect at the
 * next run, and two runs on different repositories each get their own width.
 */
export class AgentPool {
  private readonly pool: Piscina<AgentJob, AgentOutcome>;
  private closing: Promise<void> | undefined;
  /** Most agent loops this pool runs at once. */
  readonly threads: number;

  constructor(threads: number) {
    this.threads = Math.max(1, threads);
    this.pool = new Piscina<AgentJob, AgentOutcome>({
      filename: agentWorkerFile(),
      minThreads: 0,
      maxThreads: this.threads,
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
  async run(
    job: AgentJobInput,
    gate: ModelGate,
    onTool: (e: Extract<WorkerToMain, { type: 'tool' }>) => void,
    signal: AbortSignal,
    /** Which of a command's foreign writes to revert (default: all of them). */
    judgeCommandWrites: (writes: CommandWrites) => string[] = (w) => w.changes.map((c) => c.path),
  ): Promise<AgentOutcome> {
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
      if (msg.type === 'command_writes') {
        let revert: string[];
        try {
          revert = judgeCommandWrites(msg.writes);
        } catch {
          // A judge that fails must not leave the worker waiting: the fence's default is to revert.
          revert = msg.writes.changes.map((c) => c.path);
        }
        return send({ type: 'command_verdict', id: msg.id, revert });
      }
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

  /** Stop the threads; safe to call again (the run's end and the server's close both call it). */
  close(): Promise<void> {
    this.closing ??= this.pool.destroy();
    return this.closing;
  }
}

