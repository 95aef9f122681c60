/**
 * The task subsystem: a shared board of background work with a runner, cooperative cancellation,
 * and a persisted, replayable event log per task. Other subsystems submit work here through a small
 * internal API; `routes.ts` puts it on HTTP. This module is that API; behind it are `runner.ts`
 * (running with bounded concurrency), `lifecycle.ts` (status changes and when they are on disk),
 * `event-store.ts` (the chunked event log), `records.ts` (the records, with large inputs and
 * results stored beside them) and `recovery.ts` (unfinished tasks at start). Work is written
 * against `types.ts`.
 *
 * @example
 * tasks.registerKind('plugin.batch', { idempotent: true, run: async (ctx) => predictAll(ctx.task.input, ctx) });
 * const task = await tasks.submit({ kind: 'plugin.batch', target: 'sentiment', input, principal });
 *
 * Decisions the spec leaves open, written down here so callers can rely on them:
 *
 * - Lifecycle: submitted → working → completed | failed | canceled. A queued task can also go
 *   submitted → canceled. The only backwards move is working → submitted, when a restart re-queues
 *   the work of an idempotent kind.
 * - `input-required` (A2A's interrupted state): work that stops for a person's answer throws
 *   `SettleAs('input-required', result)`; the task settles there with that result (what is asked,
 *   and how to answer) and nothing runs. `resume` continues it (→ working → any end again);
 *   `cancel` ends it `canceled` and lets its kind release what it waited on. It is settled like a
 *   terminal status — its result is readable, event streams end with [DONE], a restart leaves it
 *   waiting — but not terminal, since it can move on.
 * - Work comes either from a kind registered with `registerKind` (the board's HTTP submit and
 *   restart recovery can only use these) or from an ad-hoc `run` passed to `submit` for a kind
 *   nobody registered. A registered kind cannot be overridden per task, so recovery always knows
 *   which function a stored task belongs to.
 * - Cancel: the work's `signal` aborts and the task ends `canceled` at once; whatever the work
 *   returns or throws afterwards is discarded, never recorded. Its concurrency slot is free at once
 *   too, whether or not the function ever returns: a hung run must not starve the board (as a
 *   Jupyter kernel interrupt frees the kernel for the next cell). Work that ignores its signal goes
 *   on in the background until it returns — nothing here can stop a function on this thread — and
 *   is counted by `load().abandoned` meanwhile.
 *   Cancelling a finished task changes nothing and says so (`canceled: false`).
 * - Restart (`start()` on a store that holds unfinished tasks): a task still `submitted` never
 *   started, so it is queued again when its kind is registered. A task that was `working` is queued
 *   again only when its kind was registered with `idempotent: true`; otherwise it ends `failed` with
 *   an "interrupted" error. A task whose kind is not registered within `recoveryGraceMs` of start
 *   (ad-hoc work, or a subsystem that is gone) cannot be rebuilt and fails the same way.
 *   Event sequences continue where they stopped, so earlier events stay replayable.
 * - Visibility: a task belongs to the principal that submitted it; another principal gets the same
 *   404 as for an unknown id. The board is cross-agent within one principal.
 * - Event retention: a task keeps its newest `eventsPerTask` events. Eviction rule: when event N is
 *   appended, events with sequence ≤ N − eventsPerTask are no longer replayable; a reader resuming
 *   before that point gets the `truncated` marker and the current task, then what is left. On disk,
 *   events are stored in chunks of `EVENT_CHUNK` consecutive sequences, one record per chunk, and a
 *   chunk is deleted once every sequence in it has been evicted — so appending costs one small record
 *   update, whatever the log's length, and at most `eventsPerTask + EVENT_CHUNK − 1` events of a task
 *   are on disk. Events appended in one turn of the event loop are written together.
 * - Durability: a task record is on disk before `submit`, `cancel` and `delete` resolve and before a
 *   finished task's event stream ends with [DONE]. Progress and output events are written behind the
 *   work (coalesced by the store) so a chatty task is not throttled by the disk; a crash can lose the
 *   last few milliseconds of them, never a status change.
 *
 * Why one file past 600 lines: this is the board's whole public API (submit, get, list, result,
 * cancel, delete, events, replay, waitFor, resume) and the decisions above that bind it; the
 * machinery behind it is already in the five modules named at the top. Each method is short;
 * splitting the API itself would hide which calls share the ownership and visibility rules.
 */

import { errorMessage, fail, type HangarError } from '../kernel/errors.js';
import type { Store } from '../kernel/store.js';
import type { Replay, ReplayableSource, SequencedEvent } from '../lib/event-log.js';
import { stringifyJson } from '../lib/json-text.js';
import { timeOrderedId } from '../storage/ids.js';
import { DistributedBoard, type TaskTeam } from './distributed.js';
import { TaskEventStore } from './event-store.js';
import { TaskLifecycle } from './lifecycle.js';
import { copyTask, type LiveTask, nowIso, type TaskListener, type TaskLogger, toJson } from './live-task.js';
import { TaskRecords } from './records.js';
import { TaskRecovery } from './recovery.js';
import { type RunnerLoad, TaskRunner } from './runner.js';
import {
  type CancelOutcome,
  isSettled,
  isTerminal,
  type ListTasksQuery,
  TASK_STATUSES,
  type Task,
  type TaskEvent,
  type TaskPage,
  type TaskResult,
} from './schemas.js';
import type { TaskWork } from './types.js';

export interface Submission {
  target: string;
  input: unknown;
  principal: string;
  metadata: Record<string, unknown>;
}

export interface TaskKind {
  /**
   * Running the work twice has the same effect as once, so a task interrupted by a restart may be
   * started again rather than failed.
   */
  idempotent?: boolean;
  /**
   * Check and normalise a submission before anything is stored; throw a `HangarError` (422 naming
   * the field, 404 for an unknown target) to refuse it.
   */
  prepare?(submission: Submission): Promise<{ target?: string; input: unknown }> | { target?: string; input: unknown };
  run: TaskWork;
  /**
   * A task of this kind waiting in `input-required` was cancelled: release what it waited on
   * (an agent task's pending approval). Errors are logged; the task is canceled regardless.
   */
  release?(task: Readonly<Task>): Promise<void> | void;
}

export interface SubmitOptions {
  kind: string;
  target: string;
  input?: unknown;
  principal: string;
  metadata?: Record<string, unknown>;
  /** Work for a kind that is not registered (not recoverable after a restart). */
  run?: TaskWork;
}

/** Limits who can see a task; internal callers that act for the system pass nothing. */
export interface TaskScope {
  principal?: string;
  /** Only tasks of this kind and target (an agent's A2A routes see only that agent's tasks). */
  kind?: string;
  target?: string;
}

export interface TaskServiceOptions {
  store: Store;
  /** The `tasks.enabled` setting; when false every operation answers 501. */
  enabled?: boolean;
  /** How many tasks run at once; the rest wait in a FIFO queue. */
  concurrency?: number;
  /** Events retained per task (see the eviction rule above). */
  eventsPerTask?: number;
  /** Shard files of the event collection; fixed once the collection exists on disk. */
  eventShards?: number;
  /**
   * How long after `start()` a stored unfinished task waits for its kind to be registered before it
   * is failed as interrupted.
   */
  recoveryGraceMs?: number;
  /**
   * `tasks.retention`: finished tasks older than this (by `finished_at`) are deleted with their
   * events, in the background, once shortly after start and then every `pruneEveryMs`. 0: never.
   */
  retentionMs?: number;
  pruneEveryMs?: number;
  log?: TaskLogger;
  /** Team mode: the queue and announcements shared with other instances (see `distributed.ts`). */
  team?: TaskTeam;
}

export const tasksDisabled = (): HangarError => fail('HANGAR_TASK_DISABLED', {});

export class TaskService {
  readonly enabled: boolean;
  readonly concurrency: number;
  readonly eventsPerTask: number;

  private readonly tasks: TaskRecords;
  private readonly eventLog: TaskEventStore;
  private readonly store: Store;
  private readonly log: TaskLogger;
  private readonly kinds = new Map<string, TaskKind>();
  private readonly lifecycle: TaskLifecycle;
  private readonly runner: TaskRunner;
  private readonly recovery: TaskRecovery;
  private started: Promise<void> | undefined;
  private readonly retentionMs: number;
  private readonly pruneEveryMs: number;
  private pruneTimer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  /** Tasks between `resume` being called and their in-memory state existing. */
  private readonly resuming = new Set<string>();
  /** Serialised frame payloads, shared by every subscriber of the same event. */
  private readonly wireCache = new WeakMap<TaskEvent, string>();
  /** Team mode: the board across instances. */
  private readonly distributed: DistributedBoard | undefined;
  private readonly recoveryGraceMs: number;

  constructor(options: TaskServiceOptions) {
    this.enabled = options.enabled ?? true;
    this.concurrency = options.concurrency ?? 4;
    this.eventsPerTask = options.eventsPerTask ?? 1000;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) throw new RangeError('tasks.concurrency must be a positive integer');
    if (!Number.isInteger(this.eventsPerTask) || this.eventsPerTask < 1)
      throw new RangeError('tasks.eventsPerTask must be a positive integer');
    this.store = options.store;
    this.log = options.log ?? { warn: () => {}, error: () => {} };
    // The board's lists: by owner, by status, by what the task runs, each newest first.
    const records = options.store.collection<Task>('tasks', {
      shards: 8,
      indexes: [
        ['created_at'],
        ['principal', 'created_at'],
        ['status', 'created_at'],
        ['status', 'finished_at'],
        ['target', 'kind', 'created_at'],
      ],
      // The list's `total` over these filters is a sum over a few groups, not a count of 100,000 rows.
      countBy: ['principal', 'status', 'kind', 'target'],
    });
    this.tasks = new TaskRecords(records, options.store);
    const team = options.team;
    this.eventLog = new TaskEventStore(
      options.store,
      this.eventsPerTask,
      this.log,
      options.eventShards,
      team && ((id, sequence) => team.announce('task-event', id, sequence)),
    );
    this.lifecycle = new TaskLifecycle(this.tasks, this.eventLog, this.log, team && ((task) => team.announce('task-event', task.id)));
    this.distributed = team && new DistributedBoard(team, this.tasks, this.eventLog, this.lifecycle, this.log);
    this.runner = new TaskRunner(this.concurrency, this.lifecycle, (kind) => this.kinds.get(kind)?.run, this.log);
    this.recovery = new TaskRecovery({
      records: this.tasks,
      lifecycle: this.lifecycle,
      runner: this.runner,
      kinds: this.kinds,
      graceMs: (this.recoveryGraceMs = options.recoveryGraceMs ?? 10_000),
      log: this.log,
    });
    this.retentionMs = options.retentionMs ?? 0;
    this.pruneEveryMs = options.pruneEveryMs ?? 3_600_000;
  }

  /** Tasks that have not settled yet, by id. */
  private get live(): ReadonlyMap<string, LiveTask> {
    return this.lifecycle.live;
  }

  /**
   * Register the work function for a kind. Order against `start()` does not matter: stored tasks of
   * a kind registered later are recovered at registration (within `recoveryGraceMs`).
   */
  registerKind(kind: string, definition: TaskKind): void {
    if (this.kinds.has(kind)) throw new Error(`task kind "${kind}" is already registered`);
    this.kinds.set(kind, definition);
    this.distributed?.kindRegistered(kind);
    if (!this.distributed) this.recovery.kindRegistered(kind);
  }

  hasKind(kind: string): boolean {
    return this.kinds.has(kind);
  }

  /**
   * Recover unfinished tasks from the store and start the runner. Idempotent; `submit` calls it
   * too, so a forgotten `start()` can't leave the queue still.
   */
  start(): Promise<void> {
    if (!this.enabled) return Promise.resolve();
    if (!this.started) {
      this.started = this.distributed ? this.serveTeam(this.distributed) : this.recovery.recover();
      if (this.retentionMs > 0) this.schedulePrune(Math.min(10_000, this.pruneEveryMs));
    }
    return this.started;
  }

  /**
   * Team mode: take tasks from the shared queue; cancel here what is cancelled elsewhere. Subsystems
   * register their kinds after the board starts, so a task taken first waits for its kind (up to the grace).
   */
  private async serveTeam(board: DistributedBoard): Promise<void> {
    await board.serve(this.concurrency, this.runner, this.kinds, this.recoveryGraceMs, (id) => {
      if (this.live.has(id)) void this.cancel(id).catch(() => {});
    });
    this.scheduleSweep(board, Math.min(5_000, board.team.sweepEveryMs));
  }

  /** Team mode: re-send lost submissions now and then (unref'd, one pass at a time; see distributed.ts). */
  private scheduleSweep(board: DistributedBoard, delayMs: number): void {
    this.sweepTimer = setTimeout(() => {
      void board
        .sweepLost(this.kinds)
        .then((sent) => {
          if (sent) this.log.warn('re-sent the jobs of tasks left submitted for over a minute', { tasks: sent });
        })
        .catch((err: unknown) => this.log.warn('sweeping lost submissions failed', { error: errorMessage(err) }))
        .finally(() => {
          if (!this.runner.stopped) this.scheduleSweep(board, board.team.sweepEveryMs);
        });
    }, delayMs);
    this.sweepTimer.unref();
  }

  /** Background pruning never holds up serving or stopping (unref'd, one pass at a time). */
  private schedulePrune(delayMs: number): void {
    this.pruneTimer = setTimeout(() => {
      void this.pruneFinished(new Date(Date.now() - this.retentionMs))
        .catch((err: unknown) => this.log.warn('pruning finished tasks failed', { error: errorMessage(err) }))
        .finally(() => {
          if (!this.runner.stopped) this.schedulePrune(this.pruneEveryMs);
        });
    }, delayMs);
    this.pruneTimer.unref();
  }

  /**
   * Deletes finished tasks that finished before `before`, with their events, oldest first, in pages
   * from the (status, finished_at) index; answers how many went.
   */
  async pruneFinished(before: Date): Promise<number> {
    const cutoff = before.toISOString();
    let removed = 0;
    // One status at a time: the index then yields the oldest in order, where a list of statuses
    // with an ORDER BY made SQLite sort every finished task (260 ms at 20,000, on the event loop).
    for (const status of TASK_STATUSES.filter((s) => isTerminal(s))) {
      for (;;) {
        const { items } = await this.tasks.query({ where: { status }, orderBy: [{ field: 'finished_at' }], limit: 200 });
        const old = items.filter((t) => t.finished_at !== null && t.finished_at < cutoff && !this.live.has(t.id));
        for (const task of old) {
          await this.tasks.delete(task.id);
          await this.eventLog.deleteAll(task.id);
        }
        removed += old.length;
        if (this.runner.stopped) return removed;
        if (old.length < items.length || items.length === 0) break;
      }
    }
    return removed;
  }

  /**
   * Stop taking and running work. Running work sees its signal abort; its outcome is not recorded,
   * so the next `start()` on this store treats it as interrupted. Resolves once writes are on disk.
   */
  async stop(): Promise<void> {
    this.runner.stop();
    clearTimeout(this.pruneTimer);
    clearTimeout(this.sweepTimer);
    await this.lifecycle.abortAll('Hangar is stopping');
    await this.store.flush();
  }

  /** Store a task and queue it; resolves with the task (status `submitted`) once it is on disk. */
  async submit(options: SubmitOptions): Promise<Task> {
    this.assertEnabled();
    await this.start();
    if (this.runner.stopped) throw fail('HANGAR_TASK_STOPPING', {});
    const kind = this.kinds.get(options.kind);
    if (kind && options.run) throw new Error(`task kind "${options.kind}" is registered; submit it without a run function`);
    if (!kind && !options.run) throw fail('HANGAR_TASK_KIND_UNKNOWN', { kind: options.kind });

    const metadata = (toJson(options.metadata ?? {}, 'task metadata') ?? {}) as Record<string, unknown>;
    let target = options.target;
    let input: unknown = options.input ?? {};
    if (kind?.prepare) {
      const prepared = await kind.prepare({ target, input, principal: options.principal, metadata });
      target = prepared.target ?? target;
      input = prepared.input;
    }
    const now = nowIso();
    const task: Task = {
      id: timeOrderedId(),
      kind: options.kind,
      target,
      input: toJson(input, 'task input'),
      principal: options.principal,
      status: 'submitted',
      progress: { percent: 0, message: 'queued' },
      result: null,
      error: null,
      metadata,
      created_at: now,
      updated_at: now,
      started_at: null,
      finished_at: null,
      last_sequence: 0,
      attempts: 0,
    };
    const live = this.lifecycle.track(task, [], options.run);
    this.eventLog.append(live, 'status');
    await this.lifecycle.persistNow(live);
    // Copied before the runner may pick it up, so the caller sees what was stored: `submitted`.
    const submitted = copyTask(task);
    if (this.distributed && !options.run) {
      this.lifecycle.live.delete(task.id);
      // Stored is accepted: a send that fails is the sweep's to redo, as an instance dying here would be.
      await this.distributed.team.dispatch(task.id).catch((err: unknown) => {
        this.log.warn('the queue refused a task; it is sent again by the sweep of lost submissions', {
          task: task.id,
          error: errorMessage(err),
        });
      });
      return submitted;
    }
    this.runner.enqueue(task.id);
    this.runner.pump();
    return submitted;
  }

  async get(id: string, scope: TaskScope = {}): Promise<Task> {
    this.assertEnabled();
    return copyTask(await this.find(id, scope));
  }

  /** Newest first; filter by status, kind and target. */
  async list(query: Partial<ListTasksQuery> = {}, scope: TaskScope = {}): Promise<TaskPage> {
    this.assertEnabled();
    await this.start();
    const limit = query.limit ?? 50;
    const offset = query.offset ?? 0;
    // A page comes from the store's index: every status change is on disk before it is announced
    // (persistNow), so the stored status is the one to filter on; the live copy of a task that is
    // running has the newest progress.
    const where: Record<string, string | string[]> = {};
    for (const [field, a, b] of [
      ['principal', scope.principal, undefined],
      ['kind', scope.kind, query.kind],
      ['target', scope.target, query.target],
    ] as const) {
      if (a !== undefined && b !== undefined && a !== b) return { tasks: [], count: 0, total: 0, limit, offset };
      const value = a ?? b;
      if (value !== undefined) where[field] = value;
    }
    if (query.status?.length) where.status = [...query.status];
    const page = await this.tasks.query({ where, orderBy: [{ field: 'created_at', desc: true }], limit, offset });
    const tasks = page.items.map((stored) => copyTask(this.live.get(stored.id)?.task ?? stored));
    return { tasks, count: tasks.length, total: page.total, limit, offset };
  }

  /** The outcome of a finished task; 409 (with Retry-After) while it is still queued or working. */
  async result(id: string, scope: TaskScope = {}): Promise<TaskResult> {
    this.assertEnabled();
    const task = await this.find(id, scope);
    if (!isSettled(task.status)) {
      throw fail('HANGAR_TASK_NOT_FINISHED', { task: id, status: task.status }, { headers: { 'Retry-After': '1' } });
    }
    return { id: task.id, status: task.status, result: task.result, error: task.error };
  }

  async cancel(id: string, scope: TaskScope = {}, reason = 'canceled by request'): Promise<CancelOutcome> {
    this.assertEnabled();
    const task = await this.find(id, scope);
    const awaiting = this.recovery.takeAwaiting(id);
    if (awaiting) {
      // Stored before a restart and not picked up again yet: nothing runs, so it just ends.
      const adopted = await this.lifecycle.adopt(awaiting);
      await this.lifecycle.finish(adopted, 'canceled', { error: reason });
      return { canceled: true, message: 'task canceled before it was resumed after a restart', task: copyTask(adopted.task) };
    }
    if (task.status === 'input-required' && !this.live.has(id) && !this.resuming.has(id)) {
      // Nothing runs; the task ends here and its kind lets go of what it waited on.
      const waiting = await this.lifecycle.adopt(task);
      await this.lifecycle.finish(waiting, 'canceled', { error: reason });
      try {
        await this.kinds.get(task.kind)?.release?.(waiting.task);
      } catch (err) {
        this.log.warn('releasing a canceled input-required task failed', { task: id, error: errorMessage(err) });
      }
      return { canceled: true, message: 'task canceled while it waited for input', task: copyTask(waiting.task) };
    }
    const live = this.live.get(id);
    if (!live && this.distributed && (task.status === 'submitted' || task.status === 'working')) {
      return this.distributed.cancelElsewhere(task, reason);
    }
    if (!live || live.finishing) {
      // A task that just chose its terminal status is still writing it: answer once it is on disk,
      // or a delete that follows would be undone by that write.
      await live?.settled?.catch(() => {});
      const final = live?.task ?? task;
      return { canceled: false, message: `task already ${final.status}; cancel changed nothing`, task: copyTask(final) };
    }
    const wasWorking = live.task.status === 'working';
    this.runner.dequeue(id);
    live.controller.abort(new Error(reason));
    await this.lifecycle.finish(live, 'canceled', { error: reason });
    return {
      canceled: true,
      message: wasWorking ? 'task canceled; the running work was signalled to stop' : 'task canceled before it started',
      task: copyTask(live.task),
    };
  }

  /** Cancel if needed, then remove the task and every stored event of it. */
  async delete(id: string, scope: TaskScope = {}): Promise<void> {
    this.assertEnabled();
    await this.find(id, scope, 'head');
    if (this.live.has(id) || this.recovery.isAwaiting(id)) await this.cancel(id, scope, 'task deleted');
    await this.tasks.delete(id);
    await this.eventLog.deleteAll(id);
  }

  /**
   * The task's event log as a `ReplayableSource`, for `serveSse`. Use `wire` as its `toWire` so a
   * frame is serialised once however many subscribers it goes to.
   */
  async events(id: string, scope: TaskScope = {}): Promise<ReplayableSource<TaskEvent>> {
    this.assertEnabled();
    // Its status and owner only: a settled batch's payloads (megabytes) are not read to stream its events.
    const found = await this.find(id, scope, 'head');
    const liveTasks = this.live;
    // Team mode: a task that runs (or waits to run) on another instance is followed through the store.
    const elsewhere = this.distributed && !this.live.has(id) && !isSettled(found.status) ? this.distributed : undefined;
    let followed: { ended: () => boolean } | undefined;
    return {
      replay: (since) => this.replay(id, since),
      subscribe: (onEvent, onEnd) => {
        const live = this.live.get(id);
        if (!live && elsewhere) {
          const follow = elsewhere.follow(id, onEvent, onEnd);
          followed = follow;
          return follow.stop;
        }
        if (!live) {
          onEnd();
          return () => {};
        }
        const listener = { onEvent, onEnd };
        live.listeners.add(listener);
        return () => live.listeners.delete(listener);
      },
      // A task has no live state once it reached a terminal status and its log is on disk.
      get ended() {
        return elsewhere ? (followed?.ended() ?? false) : !liveTasks.has(id);
      },
    };
  }

  /** The JSON text of an event on the wire (cached per event). */
  readonly wire = (event: SequencedEvent<TaskEvent>): string => {
    let json = this.wireCache.get(event.data);
    if (json === undefined) {
      json = stringifyJson(event.data)!;
      this.wireCache.set(event.data, json);
    }
    return json;
  };

  /** Events after `since`, oldest first, with `truncated` when the resume point was evicted. */
  async replay(id: string, since: number): Promise<Replay<TaskEvent>> {
    const live = this.live.get(id);
    if (live) return this.eventLog.replayLive(live, since);
    const task = await this.tasks.head(id);
    if (!task) return { events: [], truncated: false };
    return this.eventLog.replayStored(id, task.last_sequence, since);
  }

  /**
   * Resolve with the task once it is finished (completed, failed or canceled) and on disk — the
   * way a caller that wants a synchronous answer uses the board. `signal` stops the waiting only.
   */
  async waitFor(id: string, scope: TaskScope = {}, signal?: AbortSignal): Promise<Task> {
    this.assertEnabled();
    const task = await this.find(id, scope);
    const live = this.live.get(id);
    if (!live && this.distributed && !isSettled(task.status)) return copyTask(await this.distributed.waitSettled(id, signal));
    if (!live) return copyTask(task);
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        live.listeners.delete(listener);
        reject(signal!.reason ?? new Error('waiting aborted'));
      };
      const listener: TaskListener = {
        onEvent: () => {},
        onEnd: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve();
        },
      };
      if (signal?.aborted) return onAbort();
      signal?.addEventListener('abort', onAbort, { once: true });
      live.listeners.add(listener);
    });
    return this.get(id, scope);
  }

  /**
   * Continue a task waiting in `input-required` with `run` (the answer's work). Resolves once the
   * task is `working` again and on disk, with `done`: the task once `run` has settled it again.
   * The work starts at once rather than queueing — the person who answered is waiting for it —
   * and counts as running load. 409 for a task in any other status (or already being resumed).
   */
  async resume(id: string, scope: TaskScope, run: TaskWork): Promise<{ task: Task; done: Promise<Task> }> {
    this.assertEnabled();
    const stored = await this.find(id, scope);
    if (stored.status !== 'input-required' || this.live.has(id) || this.resuming.has(id)) {
      throw fail('HANGAR_TASK_NOT_WAITING', { task: id, status: this.live.get(id)?.task.status ?? stored.status });
    }
    this.resuming.add(id);
    let live: LiveTask;
    try {
      live = await this.lifecycle.adopt(stored);
      live.work = run;
      this.lifecycle.begin(live);
      await this.lifecycle.persistNow(live);
    } finally {
      this.resuming.delete(id);
    }
    const task = copyTask(live.task);
    const done = this.runner.runNow(live, run).then(() => this.get(id));
    return { task, done };
  }

  /**
   * Tasks waiting for a runner slot, tasks running now, and work of cancelled tasks that ignored
   * its signal and has not returned yet (it holds no slot).
   */
  load(): RunnerLoad {
    return this.runner.load();
  }

  // ---- internals -------------------------------------------------------------------------------

  private assertEnabled(): void {
    if (!this.enabled) throw tasksDisabled();
  }

  private visible(task: Task, scope: TaskScope): boolean {
    return (
      (scope.principal === undefined || task.principal === scope.principal) &&
      (scope.kind === undefined || task.kind === scope.kind) &&
      (scope.target === undefined || task.target === scope.target)
    );
  }

  /** A visible task, whole, or as its `head` (what is stored apart reads null; see records.ts). */
  private async find(id: string, scope: TaskScope, read: 'get' | 'head' = 'get'): Promise<Task> {
    await this.start();
    // A task that chose its terminal status is answered once that is on disk, so no reader sees a
    // status a crash could undo.
    const settling = this.live.get(id)?.settled;
    if (settling) await settling.catch(() => {});
    const task = this.live.get(id)?.task ?? (await this.tasks[read](id));
    // Someone else's task answers exactly like a missing one: its existence is not revealed.
    if (!task || !this.visible(task, scope)) throw fail('HANGAR_TASK_NOT_FOUND', { task: id });
    return task;
  }
}
