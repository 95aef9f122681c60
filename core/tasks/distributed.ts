/**
 * The task board across instances (team mode, `storage.url` on PostgreSQL): what `TaskService`
 * does differently when several Hangar processes share one store and one job queue.
 *
 * - Submit stores the task and sends a job naming it; whichever instance has a free slot takes it
 *   (each runs `tasks.concurrency` at once, as one instance does alone).
 * - The taker claims the task with a compare-and-set on its record (`submitted`, or `working` left
 *   by an instance that died) and runs it; its status, events and attempts are written as always.
 * - An instance killed while running a task stops sending the job's heartbeat; after
 *   `team.heartbeatSeconds` the queue hands the job to another instance, which runs the task again
 *   (`attempts` shows it) — once; a task whose second instance dies too ends `failed`. Retried
 *   whether or not its kind is idempotent, as Temporal retries an activity whose worker vanished:
 *   work that must not run twice checks `ctx.task.attempts`.
 * - Cancel works from any instance: a task nobody took yet is canceled by the compare-and-set; a
 *   running one is announced, and the instance running it aborts it as a local cancel does.
 * - Events: every stored batch of a task's events is announced (ids and a sequence only), so a
 *   reader on another instance reads them from the store as they land and its stream ends when the
 *   task settles. Waiting for a task (A2A's blocking send) works the same way.
 * - Work submitted with its own `run` function (not a registered kind) cannot be rebuilt elsewhere,
 *   so it runs on the instance that submitted it, as on one machine.
 * - Restart recovery is off: the queue knows which tasks are orphaned, and recovery at start would
 *   take another live instance's running tasks for interrupted ones.
 * - Lost submissions: the record and the job are two writes (the store's, then the queue's). An
 *   instance that dies between them, or a send that fails, leaves a `submitted` task with no job.
 *   A job's id is derived from its task's, so sending again is harmless (the queue keeps one job
 *   per task), and a sweep re-sends every task still `submitted` a minute after it was stored —
 *   one instance at a time (a team lock), every `team.heartbeatSeconds`. A submit whose send
 *   failed still answers 202: the task is stored and the sweep sends it.
 */

import type { SequencedEvent } from '../lib/event-log.js';
import type { TaskEventStore } from './event-store.js';
import type { TaskLifecycle } from './lifecycle.js';
import { nowIso, type TaskLogger } from './live-task.js';
import type { TaskRecordStore } from './records.js';
import type { TaskRunner } from './runner.js';
import { isSettled, type Task, type TaskEvent } from './schemas.js';

/** What the board needs from the team's queue and announcements (core/storage/team.ts provides it). */
export interface TaskTeam {
  /** Hand a stored, submitted task to whichever instance takes it; sending one twice makes one job (then false). */
  dispatch(id: string): Promise<boolean>;
  /** Run `fn` unless another instance runs work of this name now (then false). */
  exclusively(name: string, fn: () => Promise<void>): Promise<boolean>;
  /** How often the sweep of lost submissions runs. */
  sweepEveryMs: number;
  /** Take dispatched tasks here (`attempt` counts from 1); `dead` gets those whose every attempt died. */
  serve(concurrency: number, run: (id: string, attempt: number) => Promise<void>, dead: (id: string) => Promise<void>): Promise<void>;
  /** Tell every instance about a task: new events stored (up to `seq`), or a cancel request. */
  announce(topic: 'task-event' | 'task-cancel', id: string, seq?: number): void;
  on(topic: 'task-event' | 'task-cancel', handler: (id: string, seq?: number) => void): () => void;
}

/** How long a cancel waits for the instance running the task to settle it. */
const CANCEL_WAIT_MS = 10_000;
/** A task still `submitted` this long after it was stored is taken for one whose job was never sent. */
export const LOST_AFTER_MS = 60_000;
/** Tasks one sweep re-sends at most (oldest first); the next sweep takes the rest. */
const SWEEP_BATCH = 500;

export class DistributedBoard {
  constructor(
    readonly team: TaskTeam,
    private readonly records: TaskRecordStore,
    private readonly events: TaskEventStore,
    private readonly lifecycle: TaskLifecycle,
    private readonly log: TaskLogger,
  ) {}

  /** Kinds a taken task waits for: subsystems register theirs after the board starts. */
  private readonly kindWaiters = new Map<string, Array<() => void>>();

  kindRegistered(kind: string): void {
    for (const wake of this.kindWaiters.get(kind) ?? []) wake();
    this.kindWaiters.delete(kind);
  }

  /** Take tasks from the shared queue, `concurrency` at once, and cancel here what is cancelled elsewhere. */
  async serve(
    concurrency: number,
    runner: TaskRunner,
    kinds: ReadonlyMap<string, unknown>,
    graceMs: number,
    cancelHere: (id: string) => void,
  ): Promise<void> {
    const kindReady = (kind: string) =>
      kinds.has(kind)
        ? Promise.resolve()
        : new Promise<void>((resolve) => {
            this.kindWaiters.set(kind, [...(this.kindWaiters.get(kind) ?? []), resolve]);
            // Past the grace the runner fails the task for an unknown kind, as recovery does.
            setTimeout(resolve, graceMs).unref();
          });
    this.team.on('task-cancel', cancelHere);
    await this.team.serve(
      concurrency,
      async (id, attempt) => {
        if (runner.stopped) throw new Error('Hangar is stopping');
        const claimed = await this.claim(id);
        if (!claimed) return;
        await kindReady(claimed.kind);
        const live = await this.lifecycle.adopt(claimed);
        if (attempt > 1) this.log.warn('running a task again: the instance that ran it stopped', { task: id, attempt });
        await runner.runTaken(live);
      },
      (id) => this.failAbandoned(id),
    );
  }

  /**
   * Take a dispatched task: `submitted`, or `working` when an instance running it died. False when
   * it settled meanwhile (canceled before anyone took it, or finished by the instance that died).
   */
  async claim(id: string): Promise<Task | undefined> {
    let claimed = false;
    // Serialised with a cancel's compare-and-set by the store (one read-modify-write per record at a time).
    const task = await this.records.update(id, (current) => {
      if (!current || (current.status !== 'submitted' && current.status !== 'working')) return current;
      claimed = true;
      return { ...current, status: 'working', updated_at: nowIso() };
    });
    return claimed ? task : undefined;
  }

  /**
   * Cancel a task that does not run on this instance. One nobody took is canceled here (the
   * compare-and-set wins against a taker, which then skips it); a running one is announced to the
   * instance running it, and the answer waits until that instance has settled it.
   */
  async cancelElsewhere(task: Task, reason: string): Promise<{ canceled: boolean; task: Task; message: string }> {
    let mine = false;
    const now = nowIso();
    const canceled = await this.records.update(task.id, (current) => {
      if (current?.status !== 'submitted') return current;
      mine = true;
      return { ...current, status: 'canceled', error: reason, finished_at: now, updated_at: now };
    });
    if (mine && canceled) {
      // The record is canceled already; finishing the adopted copy writes its status event too.
      const live = await this.lifecycle.adopt(canceled);
      await this.lifecycle.finish(live, 'canceled', { error: reason });
      return { canceled: true, task: live.task, message: 'task canceled before it started' };
    }
    this.team.announce('task-cancel', task.id);
    const settled = await this.waitSettled(task.id, AbortSignal.timeout(CANCEL_WAIT_MS)).catch(() => undefined);
    if (settled?.status === 'canceled') {
      return { canceled: true, task: settled, message: 'task canceled; the instance running it was signalled to stop' };
    }
    const latest = settled ?? (await this.records.get(task.id)) ?? task;
    return isSettled(latest.status)
      ? { canceled: false, task: latest, message: `task already ${latest.status}; cancel changed nothing` }
      : { canceled: false, task: latest, message: 'cancel requested; the instance running the task has not confirmed it yet' };
  }

  /** Resolves with the task once its stored record is settled (another instance finished it). */
  waitSettled(id: string, signal?: AbortSignal): Promise<Task> {
    return new Promise<Task>((resolve, reject) => {
      let checking = Promise.resolve();
      const finish = (outcome: () => void) => {
        off();
        signal?.removeEventListener('abort', onAbort);
        outcome();
      };
      const check = () => {
        checking = checking.then(async () => {
          const task = await this.records.get(id).catch(() => undefined);
          if (task && isSettled(task.status)) finish(() => resolve(task));
          else if (!task) finish(() => reject(new Error(`task ${id} is gone`)));
        });
      };
      const onAbort = () => finish(() => reject(signal!.reason ?? new Error('waiting aborted')));
      const off = this.team.on('task-event', (taskId) => taskId === id && check());
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      check();
    });
  }

  /**
   * Follow a task another instance runs: each announcement of stored events is read from the
   * store (after what was delivered; the SSE layer drops duplicates) and the stream ends once the
   * record has settled and its last event was delivered.
   */
  follow(id: string, onEvent: (event: SequencedEvent<TaskEvent>) => void, onEnd: () => void): { stop: () => void; ended: () => boolean } {
    let delivered = 0;
    let done = false;
    let checking = Promise.resolve();
    const check = () => {
      checking = checking.then(async () => {
        if (done) return;
        try {
          const task = await this.records.get(id);
          if (!task) return end();
          const last = await this.events.lastStoredSequence(task);
          const { events } = await this.events.replayStored(id, last, delivered);
          for (const event of events) {
            if (done) return;
            delivered = event.seq;
            onEvent(event);
          }
          if (isSettled(task.status)) end();
        } catch (err) {
          this.log.warn('following a task on another instance failed', { task: id, error: String(err) });
        }
      });
    };
    const end = () => {
      if (done) return;
      done = true;
      off();
      onEnd();
    };
    const off = this.team.on('task-event', (taskId) => taskId === id && check());
    check();
    return {
      stop: () => {
        done = true;
        off();
      },
      ended: () => done,
    };
  }

  /**
   * Re-send the jobs of tasks still `submitted` a minute after they were stored (see the header),
   * oldest first. Only kinds registered here: a kind nobody registered is ad-hoc work held by the
   * instance that submitted it, which no other instance could run. Answers how many jobs were made
   * (a task whose job exists, still waiting behind a backlog, keeps that one and is not counted).
   */
  async sweepLost(kinds: ReadonlyMap<string, unknown>, now = Date.now()): Promise<number> {
    const cutoff = new Date(now - LOST_AFTER_MS).toISOString();
    let sent = 0;
    await this.team.exclusively('task-sweep', async () => {
      const { items } = await this.records.query({
        where: { status: 'submitted' },
        orderBy: [{ field: 'created_at' }],
        limit: SWEEP_BATCH,
      });
      for (const task of items) {
        if (task.created_at >= cutoff) break;
        if (!kinds.has(task.kind)) continue;
        if (await this.team.dispatch(task.id)) sent++;
      }
    });
    return sent;
  }

  /** A task whose every attempt's instance died: it ends failed, and says why. */
  async failAbandoned(id: string): Promise<void> {
    const stored = await this.records.get(id);
    if (!stored || isSettled(stored.status)) return;
    const live = await this.lifecycle.adopt(stored);
    await this.lifecycle.finish(live, 'failed', {
      error: `interrupted: the instance running it stopped (attempt ${stored.attempts}); not retried again`,
    });
    this.log.warn('a task was abandoned by every instance that took it', { task: id, at: nowIso() });
  }
}
