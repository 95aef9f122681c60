/**
 * The worker pool agent loops run in, and the bridge serving their model calls on the server
 * thread.
 */
import { TaskChannel, WorkerPool } from '../lib/worker-pool.js';
import type { AgentJob, AgentOutcome, MainToWorker, WorkerToMain } from './agent-worker.js';
import type { ModelGate } from './model.js';
import type { CommandWrites } from './tools.js';

export type AgentJobInput = Omit<AgentJob, 'port'>;

/**
 * Piscina cannot change `maxThreads` of a live pool, so a pool belongs to one run and is sized by
 * that run's `max_parallel` (the wave width): a setting raised between runs takes effect at the
 * next run, and two runs on different repositories each get their own width.
 */
export class AgentPool {
  private readonly pool: WorkerPool<AgentJobInput, AgentOutcome>;
  /** Most agent loops this pool runs at once. */
  readonly threads: number;

  constructor(threads: number) {
    this.threads = Math.max(1, threads);
    // An agent loop mostly waits on the model: one loop per thread at a time (the pool's rule)
    // keeps cancellation and crash isolation per task simple.
    this.pool = new WorkerPool({ entry: 'core/coderun/agent-worker.ts', maxThreads: this.threads, idleTimeoutMs: 30_000 });
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
    const calls = new AbortController();
    const channel: TaskChannel<WorkerToMain, MainToWorker> = new TaskChannel((msg: WorkerToMain) => {
      if (msg.type === 'tool') return onTool(msg);
      if (msg.type === 'command_writes') {
        let revert: string[];
        try {
          revert = judgeCommandWrites(msg.writes);
        } catch {
          // A judge that fails must not leave the worker waiting: the fence's default is to revert.
          revert = msg.writes.changes.map((c) => c.path);
        }
        return channel.send({ type: 'command_verdict', id: msg.id, revert });
      }
      gate.chat({ ...msg.call, signal: calls.signal }).then(
        (reply) => channel.send({ type: 'model_result', id: msg.id, reply }),
        (err: unknown) =>
          channel.send({
            type: 'model_result',
            id: msg.id,
            error: err instanceof Error ? err.message : String(err),
            cancelled: calls.signal.aborted,
          }),
      );
    });
    const hardStop = new AbortController();
    let killTimer: NodeJS.Timeout | undefined;
    const onAbort = () => {
      calls.abort();
      channel.send({ type: 'cancel' });
      killTimer = setTimeout(() => hardStop.abort(), 1000);
    };
    if (signal.aborted) onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    try {
      return await this.pool.run(job, { channel, signal: hardStop.signal });
    } catch (err) {
      if (signal.aborted) return { status: 'cancelled', summary: '', written: [], steps: 0, refused_writes: 0, error: 'cancelled' };
      throw err;
    } finally {
      clearTimeout(killTimer);
      signal.removeEventListener('abort', onAbort);
      calls.abort();
    }
  }

  /** Stop the threads; safe to call again (the run's end and the server's close both call it). */
  close(): Promise<void> {
    return this.pool.close();
  }
}
