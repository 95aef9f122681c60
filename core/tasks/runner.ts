/**
 * The runner: runs queued tasks, at most `concurrency` at once, in FIFO order, and settles each by
 * what its work did. A cancelled task's slot is free at once, whether or not its work ever returns
 * (see "Cancel" in `service.ts`).
 */
import { errorMessage } from '../kernel/errors.js';
import type { TaskLifecycle } from './lifecycle.js';
import { copyTask, type LiveTask, nowIso, type TaskLogger, toJson } from './live-task.js';
import { SettleAs, type TaskContext, type TaskWork } from './types.js';

/** What `untilEnded` answers for work whose task ended before it did. */
const ENDED = Symbol('ended');

export interface RunnerLoad {
  queued: number;
  running: number;
  concurrency: number;
  abandoned: number;
}

export class TaskRunner {
  // Stryker disable next-line ArrayDeclaration: start() pumps before anything is queued, which drops an id no task has
  private readonly queue: string[] = [];
  private running = 0;
  private abandoned = 0;
  private halted = false;

  constructor(
    readonly concurrency: number,
    private readonly lifecycle: TaskLifecycle,
    /** The registered work of a kind; a task's own ad-hoc work comes first. */
    private readonly workOf: (kind: string) => TaskWork | undefined,
    private readonly log: TaskLogger,
  ) {}

  /** Once stopped, nothing more starts and running work's outcome is not recorded. */
  get stopped(): boolean {
    return this.halted;
  }

  /** Queue a live `submitted` task; it starts on the next `pump`. */
  enqueue(id: string): void {
    this.queue.push(id);
  }

  /** Take a task out of the queue (it was cancelled before it started). */
  dequeue(id: string): void {
    const queued = this.queue.indexOf(id);
    if (queued >= 0) this.queue.splice(queued, 1);
  }

  stop(): void {
    this.halted = true;
    this.queue.length = 0;
  }

  /** Start queued tasks while slots are free. */
  pump(): void {
    while (!this.halted && this.running < this.concurrency && this.queue.length) {
      const live = this.lifecycle.live.get(this.queue.shift()!);
      // Stryker disable next-line ConditionalExpression,LogicalOperator: cancel and delete take a task out of the queue (dequeue), so every queued id is a live, submitted task
      if (!live || live.finishing || live.task.status !== 'submitted') continue;
      this.running++;
      void this.execute(live).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  /**
   * Run a task this instance took from the team's queue (team mode) as a queued task runs — status,
   * attempts, outcome — holding a slot until it settles. Never rejects.
   */
  runTaken(live: LiveTask): Promise<void> {
    this.running++;
    return this.execute(live).finally(() => {
      this.running--;
    });
  }

  /**
   * Run `work` for a task that is `working` already (a resumed one) without queueing; it holds a
   * slot until it settles. Never rejects.
   */
  runNow(live: LiveTask, work: TaskWork): Promise<void> {
    this.running++;
    return this.perform(live, work).finally(() => {
      this.running--;
      this.pump();
    });
  }

  /**
   * Tasks waiting for a runner slot, tasks running now, and work of cancelled tasks that ignored
   * its signal and has not returned yet (it holds no slot).
   */
  load(): RunnerLoad {
    return { queued: this.queue.length, running: this.running, concurrency: this.concurrency, abandoned: this.abandoned };
  }

  /** Runs one task to its end. Never rejects: whatever the work does ends in a status. */
  private async execute(live: LiveTask): Promise<void> {
    const { task } = live;
    const work = live.work ?? this.workOf(task.kind);
    try {
      if (!work) {
        await this.lifecycle.finish(live, 'failed', { error: `no task handler is registered for kind "${task.kind}"` });
        return;
      }
      task.started_at = nowIso();
      task.attempts += 1;
      this.lifecycle.begin(live);
      // `working` is on disk before the work runs: after a crash, recovery must not mistake work
      // that may have had effects for work that never started.
      await this.lifecycle.persistNow(live);
      await this.perform(live, work);
    } catch (err) {
      // Only the store can land here (a failed write); the runner must survive it.
      this.log.error('task runner could not record a task outcome', { task: task.id, error: errorMessage(err) });
    }
  }

  /** Run the work of a `working` task and settle it by the outcome. Never rejects. */
  private async perform(live: LiveTask, work: TaskWork): Promise<void> {
    try {
      if (live.finishing || this.halted) return;
      let result: unknown;
      try {
        const outcome = await this.untilEnded(live, work);
        if (outcome === ENDED) return;
        result = toJson(outcome.value, 'task result');
      } catch (err) {
        if (live.finishing || this.halted) return;
        if (err instanceof SettleAs) {
          // A result that cannot be stored fails the task, as a completed one's does; thrown from
          // here it would have left the task `working` for good, its slot already free.
          let settled: unknown;
          try {
            settled = toJson(err.fields.result, 'task result');
          } catch (bad) {
            await this.lifecycle.finish(live, 'failed', { error: errorMessage(bad) });
            return;
          }
          await this.lifecycle.finish(live, err.status, { result: settled, error: err.fields.error ?? null });
          return;
        }
        await this.lifecycle.finish(live, 'failed', { error: errorMessage(err) });
        return;
      }
      if (live.finishing || this.halted) return;
      // A resumed task's earlier result (what it waited for) is replaced, and no error lingers.
      await this.lifecycle.finish(live, 'completed', { result, error: null, progress: { percent: 100, message: 'completed' } });
    } catch (err) {
      this.log.error('task runner could not record a task outcome', { task: live.task.id, error: errorMessage(err) });
    }
  }

  /**
   * The work's outcome, or `ENDED` as soon as the task is cancelled or Hangar stops (its signal
   * aborts), so the caller frees the slot without waiting for work that may never return.
   */
  private untilEnded(live: LiveTask, work: TaskWork): Promise<{ value: unknown } | typeof ENDED> {
    const signal = live.controller.signal;
    const running = (async () => ({ value: await work(this.contextFor(live)) }))();
    if (signal.aborted) return Promise.resolve(ENDED);
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        resolve(ENDED);
        this.abandoned++;
        void running.catch(() => {}).finally(() => this.abandoned--);
      };
      // Stryker disable next-line ObjectLiteral,BooleanLiteral: a signal aborts once, so the listener runs once either way
      signal.addEventListener('abort', onAbort, { once: true });
      running.then(
        (outcome) => {
          // Stryker disable next-line StringLiteral,CallExpression: cancel and stop abort only live tasks, so a settled task's signal never aborts after this
          signal.removeEventListener('abort', onAbort);
          resolve(outcome);
        },
        (err: unknown) => {
          // Stryker disable next-line StringLiteral,CallExpression: as above
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      );
    });
  }

  private contextFor(live: LiveTask): TaskContext {
    const closed = () => live.finishing || this.halted;
    return {
      task: Object.freeze(copyTask(live.task)),
      signal: live.controller.signal,
      progress: (percent, message) => {
        if (closed()) return;
        if (typeof percent !== 'number' || Number.isNaN(percent)) throw new TypeError('progress percent must be a number');
        live.task.progress = {
          percent: Math.min(100, Math.max(0, percent)),
          message: message ?? live.task.progress.message,
        };
        this.lifecycle.events.append(live, 'progress');
        this.lifecycle.saveSoon(live);
      },
      emit: (data) => {
        if (closed()) return;
        this.lifecycle.events.append(live, 'output', { data: toJson(data, 'task event') });
      },
    };
  }
}
