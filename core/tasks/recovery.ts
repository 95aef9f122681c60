/**
 * What happens at start to tasks a previous run left unfinished (the rule is "Restart" in
 * `service.ts`): a task that never started is queued again, a `working` one only when its kind is
 * idempotent, and everything else ends `failed` as interrupted. Kinds register in their subsystems'
 * setup, in any order, so a task whose kind is not registered yet waits for it — up to a grace period.
 */
import { errorMessage } from '../kernel/errors.js';
import type { TaskLifecycle } from './lifecycle.js';
import type { TaskLogger } from './live-task.js';
import type { TaskRecordStore } from './records.js';
import type { TaskRunner } from './runner.js';
import { isSettled, TASK_STATUSES, type Task } from './schemas.js';

/** What recovery needs to know of a registered kind. */
export interface RestartableKind {
  /** Running the work twice has the same effect as once (see `TaskKind`). */
  idempotent?: boolean;
}

export interface TaskRecoveryOptions {
  records: TaskRecordStore;
  lifecycle: TaskLifecycle;
  runner: TaskRunner;
  kinds: ReadonlyMap<string, RestartableKind>;
  /** How long after `recover()` a stored task waits for its kind before it is failed as interrupted. */
  graceMs: number;
  log: TaskLogger;
}

export class TaskRecovery {
  /** Unfinished tasks found at start whose kind has not been registered yet. */
  private readonly awaitingKind = new Map<string, Task>();

  constructor(private readonly options: TaskRecoveryOptions) {}

  /** Re-queue or settle every stored unfinished task, then start the runner. */
  async recover(): Promise<void> {
    const { records, lifecycle, kinds, runner } = this.options;
    const open = TASK_STATUSES.filter((status) => !isSettled(status));
    // No ORDER BY in SQL: with several statuses SQLite would walk the created_at index over every
    // finished task (600 ms at 100,000) rather than look each status up; the unfinished are few.
    // Stryker disable next-line MethodExpression: recover() runs once, from start(), before anything is submitted, so nothing is live yet (the filter)
    const unfinished = (await records.query({ where: { status: open } })).items
      .filter((t) => !lifecycle.live.has(t.id))
      .sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
    for (const stored of unfinished) {
      if (kinds.has(stored.kind)) await this.recoverOne(stored);
      else this.awaitingKind.set(stored.id, stored);
    }
    // Stryker disable next-line ConditionalExpression: with nothing waiting, settling what waits does nothing but pump an idle runner
    if (this.awaitingKind.size) {
      // Kinds register in their subsystems' setup, in any order; whatever has no handler by the
      // end of the grace period never will, so its tasks are settled as interrupted.
      setTimeout(() => void this.settleAwaiting(), this.options.graceMs).unref();
    }
    runner.pump();
  }

  /** A kind was registered: recover the stored tasks that waited for it, in the background. */
  kindRegistered(kind: string): void {
    const waiting = [...this.awaitingKind.values()].filter((t) => t.kind === kind);
    // Stryker disable next-line ConditionalExpression: an empty list recovers nothing and pumps an idle runner
    if (!waiting.length) return;
    void (async () => {
      for (const stored of waiting) if (this.awaitingKind.has(stored.id)) await this.recoverOne(stored);
      this.options.runner.pump();
    })().catch((err) => this.options.log.error('task recovery failed', { kind, error: errorMessage(err) }));
  }

  isAwaiting(id: string): boolean {
    return this.awaitingKind.has(id);
  }

  /** Take a stored task out of waiting for its kind (it is being cancelled); undefined if it was not waiting. */
  takeAwaiting(id: string): Task | undefined {
    const stored = this.awaitingKind.get(id);
    this.awaitingKind.delete(id);
    return stored;
  }

  /** Re-queue or fail one stored unfinished task according to its kind (see the header). */
  private async recoverOne(stored: Task): Promise<void> {
    const { lifecycle, kinds, runner } = this.options;
    this.awaitingKind.delete(stored.id);
    const live = await lifecycle.adopt(stored);
    const kind = kinds.get(live.task.kind);
    const { task } = live;
    if (kind !== undefined && (task.status === 'submitted' || kind.idempotent === true)) {
      if (task.status === 'working') {
        task.status = 'submitted';
        task.progress = { percent: 0, message: 're-queued after a restart' };
        lifecycle.events.append(live, 'status');
      }
      await lifecycle.persistNow(live);
      runner.enqueue(task.id);
      return;
    }
    const why = !kind
      ? `no handler for kind "${task.kind}" is registered, so its work could not be restarted`
      : 'its work is not idempotent, so it was not restarted';
    await lifecycle.finish(live, 'failed', { error: `interrupted: Hangar stopped while the task was ${task.status}; ${why}` });
  }

  private async settleAwaiting(): Promise<void> {
    for (const stored of [...this.awaitingKind.values()]) {
      try {
        // Skip what a late `registerKind` recovered meanwhile.
        if (this.awaitingKind.has(stored.id)) await this.recoverOne(stored);
      } catch (err) {
        this.options.log.error('could not settle an interrupted task', { task: stored.id, error: errorMessage(err) });
      }
    }
    this.options.runner.pump();
  }
}
