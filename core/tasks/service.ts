/**
 * The task subsystem: a shared board of background work with a runner, cooperative cancellation,
 * and a persisted, replayable event log per task. Other subsystems submit work here through a small
 * internal API; `routes.ts` puts it on HTTP.
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
 */
import { timeOrderedId } from '../storage/ids.js';
import type { Replay, ReplayableSource, SequencedEvent } from '../http/event-log.js';
import { HttpError, errorMessage, notFound, notImplemented, unprocessable } from '../http/errors.js';
import type { Collection, Store } from '../storage/store.js';
import {
  type CancelOutcome,
  type ListTasksQuery,
  type Task,
  type TaskEvent,
  type TaskEventType,
  type TaskPage,
  type TaskProgress,
  type TaskResult,
  type TaskStatus,
  TASK_STATUSES,
  isSettled,
  isTerminal,
} from './schemas.js';

/** Consecutive sequences stored together in one event record. */
export const EVENT_CHUNK = 100;

/** What a running piece of work gets. */
export interface TaskContext {
  /** The task as it was when the work started. */
  readonly task: Readonly<Task>;
  /** Aborted when the task is cancelled or Hangar stops; pass it to fetch, model calls, loops. */
  readonly signal: AbortSignal;
  /** Report progress: percent 0–100 (clamped), optional message (kept when omitted). */
  progress(percent: number, message?: string): void;
  /** Append an event (any JSON value) to the task's stream, e.g. an agent's stream frame. */
  emit(data: unknown): void;
}

export type TaskWork = (ctx: TaskContext) => unknown;

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
   * Check and normalise a submission before anything is stored; throw an `HttpError` (422 naming
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

/**
 * Thrown by work to settle its task in a status other than `completed` / `failed`: to wait for
 * input (`input-required`, with a result saying what is asked) or to end `canceled` (work a
 * person told not to go on).
 */
export class SettleAs extends Error {
  constructor(
    readonly status: 'input-required' | 'canceled',
    readonly fields: { result?: unknown; error?: string },
  ) {
    super(`task settles as ${status}`);
    this.name = 'SettleAs';
  }
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

export interface TaskLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
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
}

interface StoredChunk {
  task_id: string;
  chunk: number;
  events: TaskEvent[];
}

type Listener = { onEvent: (event: SequencedEvent<TaskEvent>) => void; onEnd: () => void };

/** The in-memory side of a task that has not finished: the source of truth while it lives. */
interface LiveTask {
  task: Task;
  /** Newest events as frames (at least `eventsPerTask` once that many exist), oldest first, contiguous. */
  tail: SequencedEvent<TaskEvent>[];
  listeners: Set<Listener>;
  controller: AbortController;
  work?: TaskWork;
  /** Set when a terminal status was chosen; nothing more is appended after it. */
  finishing: boolean;
  /** Resolves once the terminal status and the whole log are on disk. */
  settled?: Promise<void>;
  /** Chunks below this index have been deleted from the store. */
  firstChunk: number;
  writes: Set<Promise<unknown>>;
  saveQueued: boolean;
  /** Events appended since the last store write; written together on the next turn of the loop. */
  unwritten: TaskEvent[];
  flushQueued: boolean;
}

/** What `untilEnded` answers for work whose task ended before it did. */
const ENDED = Symbol('ended');

const chunkOf = (sequence: number): number => Math.floor((sequence - 1) / EVENT_CHUNK);
const chunkKey = (taskId: string, chunk: number): string => `${taskId}.${chunk}`;
const nowIso = (): string => new Date().toISOString();

/** A deep copy that is plain JSON: what is stored and sent can't be mutated later by the work. */
function toJson(value: unknown, what: string): unknown {
  if (value === undefined) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new TypeError(`${what} is not JSON-serialisable: ${errorMessage(err)}`);
  }
  return text === undefined ? null : JSON.parse(text);
}

function copyTask(task: Task): Task {
  return { ...task, progress: { ...task.progress }, metadata: { ...task.metadata } };
}

export const tasksDisabled = (): HttpError =>
  notImplemented('the task subsystem is disabled (setting tasks.enabled); asynchronous work needs it');

export class TaskService {
  readonly enabled: boolean;
  readonly concurrency: number;
  readonly eventsPerTask: number;

  private readonly tasks: Collection<Task>;
  private readonly eventStore: Collection<StoredChunk>;
  private readonly store: Store;
  private readonly log: TaskLogger;
  private readonly kinds = new Map<string, TaskKind>();
  private readonly live = new Map<string, LiveTask>();
  private readonly queue: string[] = [];
  private running = 0;
  private abandoned = 0;
  private started: Promise<void> | undefined;
  private stopped = false;
  private readonly retentionMs: number;
  private readonly pruneEveryMs: number;
  private pruneTimer: NodeJS.Timeout | undefined;
  /** Unfinished tasks found at start whose kind has not been registered yet. */
  private readonly awaitingKind = new Map<string, Task>();
  /** Tasks between `resume` being called and their in-memory state existing. */
  private readonly resuming = new Set<string>();
  private readonly recoveryGraceMs: number;
  /** Serialised frame payloads, shared by every subscriber of the same event. */
  private readonly wireCache = new WeakMap<TaskEvent, string>();

  constructor(options: TaskServiceOptions) {
    this.enabled = options.enabled ?? true;
    this.concurrency = options.concurrency ?? 4;
    this.eventsPerTask = options.eventsPerTask ?? 1000;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) throw new RangeError('tasks.concurrency must be a positive integer');
    if (!Number.isInteger(this.eventsPerTask) || this.eventsPerTask < 1) throw new RangeError('tasks.eventsPerTask must be a positive integer');
    this.recoveryGraceMs = options.recoveryGraceMs ?? 10_000;
    this.store = options.store;
    this.log = options.log ?? { warn: () => {}, error: () => {} };
    // The board's lists: by owner, by status, by what the task runs, each newest first.
    this.tasks = options.store.collection<Task>('tasks', {
      shards: 8,
      indexes: [['created_at'], ['principal', 'created_at'], ['status', 'created_at'], ['status', 'finished_at'], ['target', 'kind', 'created_at']],
      // The list's `total` over these filters is a sum over a few groups, not a count of 100,000 rows.
      countBy: ['principal', 'status', 'kind', 'target'],
    });
    this.eventStore = options.store.collection<StoredChunk>('task_events', { shards: options.eventShards ?? 32, indexes: [['task_id']] });
    this.retentionMs = options.retentionMs ?? 0;
    this.pruneEveryMs = options.pruneEveryMs ?? 3_600_000;
  }

  /**
   * Register the work function for a kind. Order against `start()` does not matter: stored tasks of
   * a kind registered later are recovered at registration (within `recoveryGraceMs`).
   */
  registerKind(kind: string, definition: TaskKind): void {
    if (this.kinds.has(kind)) throw new Error(`task kind "${kind}" is already registered`);
    this.kinds.set(kind, definition);
    const waiting = [...this.awaitingKind.values()].filter((t) => t.kind === kind);
    if (waiting.length) {
      void (async () => {
        for (const stored of waiting) if (this.awaitingKind.has(stored.id)) await this.recoverOne(stored);
        this.pump();
      })().catch((err) => this.log.error('task recovery failed', { kind, error: errorMessage(err) }));
    }
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
      this.started = this.recover();
      if (this.retentionMs > 0) this.schedulePrune(Math.min(10_000, this.pruneEveryMs));
    }
    return this.started;
  }

  /** Background pruning never holds up serving or stopping (unref'd, one pass at a time). */
  private schedulePrune(delayMs: number): void {
    this.pruneTimer = setTimeout(() => {
      void this.pruneFinished(new Date(Date.now() - this.retentionMs))
        .catch((err: unknown) => this.log.warn('pruning finished tasks failed', { error: errorMessage(err) }))
        .finally(() => {
          if (!this.stopped) this.schedulePrune(this.pruneEveryMs);
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
    const finished = TASK_STATUSES.filter((status) => isTerminal(status));
    let removed = 0;
    for (;;) {
      const { items } = await this.tasks.query({ where: { status: finished }, orderBy: [{ field: 'finished_at' }], limit: 200 });
      const old = items.filter((t) => t.finished_at !== null && t.finished_at < cutoff && !this.live.has(t.id));
      for (const task of old) {
        await this.tasks.delete(task.id);
        await this.deleteEvents(task.id);
      }
      removed += old.length;
      if (this.stopped || old.length < items.length || items.length === 0) return removed;
    }
  }

  /** Every stored event chunk of one task, found through the task_id index. */
  private async deleteEvents(id: string): Promise<void> {
    const { items } = await this.eventStore.query({ where: { task_id: id } });
    for (const chunk of items) await this.eventStore.delete(chunkKey(id, chunk.chunk));
  }

  /**
   * Stop taking and running work. Running work sees its signal abort; its outcome is not recorded,
   * so the next `start()` on this store treats it as interrupted. Resolves once writes are on disk.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.pruneTimer);
    this.queue.length = 0;
    const writes: Promise<unknown>[] = [];
    for (const live of this.live.values()) {
      if (!live.controller.signal.aborted) live.controller.abort(new Error('Hangar is stopping'));
      this.flushEvents(live);
      writes.push(...live.writes);
    }
    await Promise.allSettled(writes);
    await this.store.flush();
  }

  /** Store a task and queue it; resolves with the task (status `submitted`) once it is on disk. */
  async submit(options: SubmitOptions): Promise<Task> {
    this.assertEnabled();
    await this.start();
    if (this.stopped) throw new HttpError(503, 'Hangar is stopping; the task was not accepted');
    const kind = this.kinds.get(options.kind);
    if (kind && options.run) throw new Error(`task kind "${options.kind}" is registered; submit it without a run function`);
    if (!kind && !options.run) throw unprocessable(`body.kind: no task handler is registered for kind "${options.kind}"`);

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
    const live = this.track(task, [], options.run);
    this.append(live, 'status');
    await this.persistNow(live);
    // Copied before the runner may pick it up, so the caller sees what was stored: `submitted`.
    const submitted = copyTask(task);
    this.queue.push(task.id);
    this.pump();
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
    for (const [field, a, b] of [['principal', scope.principal, undefined], ['kind', scope.kind, query.kind], ['target', scope.target, query.target]] as const) {
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
    // A task that just chose its terminal status is still writing it; the answer waits for the disk.
    const settling = this.live.get(id)?.settled;
    if (settling) await settling.catch(() => {});
    if (!isSettled(task.status)) {
      throw new HttpError(409, `task ${id} is ${task.status}; its result is available once it finishes`, { 'Retry-After': '1' });
    }
    return { id: task.id, status: task.status, result: task.result, error: task.error };
  }

  async cancel(id: string, scope: TaskScope = {}, reason = 'canceled by request'): Promise<CancelOutcome> {
    this.assertEnabled();
    const task = await this.find(id, scope);
    const awaiting = this.awaitingKind.get(id);
    if (awaiting) {
      // Stored before a restart and not picked up again yet: nothing runs, so it just ends.
      this.awaitingKind.delete(id);
      const adopted = await this.adopt(awaiting);
      await this.finish(adopted, 'canceled', { error: reason });
      return { canceled: true, message: 'task canceled before it was resumed after a restart', task: copyTask(adopted.task) };
    }
    if (task.status === 'input-required' && !this.live.has(id) && !this.resuming.has(id)) {
      // Nothing runs; the task ends here and its kind lets go of what it waited on.
      const waiting = await this.adopt(task);
      await this.finish(waiting, 'canceled', { error: reason });
      try {
        await this.kinds.get(task.kind)?.release?.(waiting.task);
      } catch (err) {
        this.log.warn('releasing a canceled input-required task failed', { task: id, error: errorMessage(err) });
      }
      return { canceled: true, message: 'task canceled while it waited for input', task: copyTask(waiting.task) };
    }
    const live = this.live.get(id);
    if (!live || live.finishing) {
      // A task that just chose its terminal status is still writing it: answer once it is on disk,
      // or a delete that follows would be undone by that write.
      await live?.settled?.catch(() => {});
      const final = live?.task ?? task;
      return { canceled: false, message: `task already ${final.status}; cancel changed nothing`, task: copyTask(final) };
    }
    const wasWorking = live.task.status === 'working';
    const queued = this.queue.indexOf(id);
    if (queued >= 0) this.queue.splice(queued, 1);
    live.controller.abort(new Error(reason));
    await this.finish(live, 'canceled', { error: reason });
    return {
      canceled: true,
      message: wasWorking ? 'task canceled; the running work was signalled to stop' : 'task canceled before it started',
      task: copyTask(live.task),
    };
  }

  /** Cancel if needed, then remove the task and every stored event of it. */
  async delete(id: string, scope: TaskScope = {}): Promise<void> {
    this.assertEnabled();
    await this.find(id, scope);
    if (this.live.has(id) || this.awaitingKind.has(id)) await this.cancel(id, scope, 'task deleted');
    await this.tasks.delete(id);
    await this.deleteEvents(id);
  }

  /**
   * The task's event log as a `ReplayableSource`, for `serveSse`. Use `wire` as its `toWire` so a
   * frame is serialised once however many subscribers it goes to.
   */
  async events(id: string, scope: TaskScope = {}): Promise<ReplayableSource<TaskEvent>> {
    this.assertEnabled();
    await this.find(id, scope);
    const liveTasks = this.live;
    return {
      replay: (since) => this.replay(id, since),
      subscribe: (onEvent, onEnd) => {
        const live = this.live.get(id);
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
        return !liveTasks.has(id);
      },
    };
  }

  /** The JSON text of an event on the wire (cached per event). */
  readonly wire = (event: SequencedEvent<TaskEvent>): string => {
    let json = this.wireCache.get(event.data);
    if (json === undefined) {
      json = JSON.stringify(event.data);
      this.wireCache.set(event.data, json);
    }
    return json;
  };

  /** Events after `since`, oldest first, with `truncated` when the resume point was evicted. */
  async replay(id: string, since: number): Promise<Replay<TaskEvent>> {
    const live = this.live.get(id);
    if (live) return this.replayFromTail(live, since);
    const task = await this.tasks.get(id);
    if (!task) return { events: [], truncated: false };
    return this.replayFromStore(id, task.last_sequence, since);
  }

  /**
   * Resolve with the task once it is finished (completed, failed or canceled) and on disk — the
   * way a caller that wants a synchronous answer uses the board. `signal` stops the waiting only.
   */
  async waitFor(id: string, scope: TaskScope = {}, signal?: AbortSignal): Promise<Task> {
    this.assertEnabled();
    const task = await this.find(id, scope);
    const live = this.live.get(id);
    if (!live) return copyTask(task);
    await new Promise<void>((resolve, reject) => {
      const onAbort = () => {
        live.listeners.delete(listener);
        reject(signal!.reason ?? new Error('waiting aborted'));
      };
      const listener: Listener = {
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
      throw new HttpError(409, `task ${id} is ${this.live.get(id)?.task.status ?? stored.status}, not waiting for input`);
    }
    this.resuming.add(id);
    let live: LiveTask;
    try {
      live = await this.adopt(stored);
      live.work = run;
      this.begin(live);
      await this.persistNow(live);
    } finally {
      this.resuming.delete(id);
    }
    const task = copyTask(live.task);
    this.running++;
    const done = this.perform(live, run)
      .finally(() => {
        this.running--;
        this.pump();
      })
      .then(() => this.get(id));
    return { task, done };
  }

  /**
   * Tasks waiting for a runner slot, tasks running now, and work of cancelled tasks that ignored
   * its signal and has not returned yet (it holds no slot).
   */
  load(): { queued: number; running: number; concurrency: number; abandoned: number } {
    return { queued: this.queue.length, running: this.running, concurrency: this.concurrency, abandoned: this.abandoned };
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

  private async find(id: string, scope: TaskScope): Promise<Task> {
    await this.start();
    const task = this.live.get(id)?.task ?? (await this.tasks.get(id));
    // Someone else's task answers exactly like a missing one: its existence is not revealed.
    if (!task || !this.visible(task, scope)) throw notFound(`task ${id} not found`);
    return task;
  }

  private track(task: Task, tail: SequencedEvent<TaskEvent>[], work?: TaskWork): LiveTask {
    const live: LiveTask = {
      task,
      tail,
      listeners: new Set(),
      controller: new AbortController(),
      work,
      finishing: false,
      firstChunk: tail.length ? chunkOf(tail[0]!.seq) : 0,
      writes: new Set(),
      saveQueued: false,
      unwritten: [],
      flushQueued: false,
    };
    this.live.set(task.id, live);
    return live;
  }

  private pump(): void {
    while (!this.stopped && this.running < this.concurrency && this.queue.length) {
      const live = this.live.get(this.queue.shift()!);
      if (!live || live.finishing || live.task.status !== 'submitted') continue;
      this.running++;
      void this.execute(live).finally(() => {
        this.running--;
        this.pump();
      });
    }
  }

  /** Runs one task to its end. Never rejects: whatever the work does ends in a status. */
  private async execute(live: LiveTask): Promise<void> {
    const { task } = live;
    const work = live.work ?? this.kinds.get(task.kind)?.run;
    try {
      if (!work) {
        await this.finish(live, 'failed', { error: `no task handler is registered for kind "${task.kind}"` });
        return;
      }
      task.started_at = nowIso();
      task.attempts += 1;
      this.begin(live);
      // `working` is on disk before the work runs: after a crash, recovery must not mistake work
      // that may have had effects for work that never started.
      await this.persistNow(live);
      await this.perform(live, work);
    } catch (err) {
      // Only the store can land here (a failed write); the runner must survive it.
      this.log.error('task runner could not record a task outcome', { task: task.id, error: errorMessage(err) });
    }
  }

  private begin(live: LiveTask): void {
    live.task.status = 'working';
    live.task.progress = { percent: live.task.progress.percent, message: 'working' };
    this.append(live, 'status');
  }

  /** Run the work of a `working` task and settle it by the outcome. Never rejects. */
  private async perform(live: LiveTask, work: TaskWork): Promise<void> {
    try {
      if (live.finishing || this.stopped) return;
      let result: unknown;
      try {
        const outcome = await this.untilEnded(live, work);
        if (outcome === ENDED) return;
        result = toJson(outcome.value, 'task result');
      } catch (err) {
        if (live.finishing || this.stopped) return;
        if (err instanceof SettleAs) {
          await this.finish(live, err.status, { result: toJson(err.fields.result, 'task result'), error: err.fields.error ?? null });
          return;
        }
        await this.finish(live, 'failed', { error: errorMessage(err) });
        return;
      }
      if (live.finishing || this.stopped) return;
      // A resumed task's earlier result (what it waited for) is replaced, and no error lingers.
      await this.finish(live, 'completed', { result, error: null, progress: { percent: 100, message: 'completed' } });
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
      signal.addEventListener('abort', onAbort, { once: true });
      running.then(
        (outcome) => {
          signal.removeEventListener('abort', onAbort);
          resolve(outcome);
        },
        (err: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(err);
        },
      );
    });
  }

  private contextFor(live: LiveTask): TaskContext {
    const closed = () => live.finishing || this.stopped;
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
        this.append(live, 'progress');
        this.saveSoon(live);
      },
      emit: (data) => {
        if (closed()) return;
        this.append(live, 'output', { data: toJson(data, 'task event') });
      },
    };
  }

  /** Append one event: memory tail, listeners, and a store write that is not awaited here. */
  private append(live: LiveTask, type: TaskEventType, extra: Partial<TaskEvent> = {}): TaskEvent {
    const { task } = live;
    const sequence = task.last_sequence + 1;
    task.last_sequence = sequence;
    task.updated_at = nowIso();
    const event: TaskEvent = {
      task_id: task.id,
      sequence,
      type,
      status: task.status,
      progress: { ...task.progress },
      timestamp: task.updated_at,
      ...extra,
    };

    const frame = { seq: sequence, data: event };
    live.tail.push(frame);
    // Trim in batches: one splice per many appends instead of shifting the array every time.
    const slack = Math.max(16, this.eventsPerTask >> 3);
    if (live.tail.length > this.eventsPerTask + slack) live.tail.splice(0, live.tail.length - this.eventsPerTask);

    live.unwritten.push(event);
    if (!live.flushQueued) {
      live.flushQueued = true;
      setImmediate(() => this.flushEvents(live));
    }

    for (const listener of live.listeners) {
      try {
        listener.onEvent(frame);
      } catch (err) {
        // A broken subscriber loses its stream, never the task or the other subscribers.
        live.listeners.delete(listener);
        this.log.warn('task event subscriber failed', { task: task.id, error: errorMessage(err) });
      }
    }
    return event;
  }

  /**
   * Write the events appended since the last flush: one record update per touched chunk, however
   * many events a burst held, then delete the chunks that fell out of retention.
   */
  private flushEvents(live: LiveTask): void {
    live.flushQueued = false;
    const batch = live.unwritten;
    if (!batch.length) return;
    live.unwritten = [];
    const id = live.task.id;
    for (let start = 0; start < batch.length; ) {
      const chunk = chunkOf(batch[start]!.sequence);
      let end = start + 1;
      while (end < batch.length && chunkOf(batch[end]!.sequence) === chunk) end++;
      const group = batch.slice(start, end);
      this.write(
        live,
        this.eventStore.update(chunkKey(id, chunk), (current) => ({
          task_id: id,
          chunk,
          events: current ? current.events.concat(group) : group,
        })),
      );
      start = end;
    }
    const floor = batch[batch.length - 1]!.sequence - this.eventsPerTask + 1;
    if (floor > 1) {
      const firstKept = chunkOf(floor);
      for (; live.firstChunk < firstKept; live.firstChunk++) this.write(live, this.eventStore.delete(chunkKey(id, live.firstChunk)));
    }
  }

  private write(live: LiveTask, promise: Promise<unknown>): void {
    const tracked = promise.catch((err) => this.log.error('task event write failed', { task: live.task.id, error: errorMessage(err) }));
    live.writes.add(tracked);
    void tracked.finally(() => live.writes.delete(tracked));
  }

  private async save(live: LiveTask): Promise<void> {
    await this.tasks.put(live.task.id, copyTask(live.task));
  }

  /**
   * A status change: its event, then the record, on disk before the caller goes on. The log goes
   * first so a record never claims a sequence (or a terminal status) its log does not hold yet.
   */
  private async persistNow(live: LiveTask): Promise<void> {
    this.flushEvents(live);
    await Promise.all([...live.writes]);
    await this.save(live);
  }

  /** Persist the record after a burst of progress events, once, on the next turn of the loop. */
  private saveSoon(live: LiveTask): void {
    if (live.saveQueued) return;
    live.saveQueued = true;
    setImmediate(() => {
      live.saveQueued = false;
      if (live.finishing || !this.live.has(live.task.id)) return;
      this.write(live, this.save(live));
    });
  }

  /**
   * Move to a terminal status: record it, wait until the log and the record are on disk, then end
   * every subscriber's stream (they send [DONE]) and drop the in-memory state.
   */
  private finish(live: LiveTask, status: TaskStatus, fields: Partial<Pick<Task, 'result' | 'error' | 'progress'>>): Promise<void> {
    if (live.finishing) return live.settled ?? Promise.resolve();
    live.finishing = true;
    live.settled = this.settle(live, status, fields);
    return live.settled;
  }

  private async settle(live: LiveTask, status: TaskStatus, fields: Partial<Pick<Task, 'result' | 'error' | 'progress'>>): Promise<void> {
    const { task } = live;
    task.status = status;
    task.finished_at = nowIso();
    if (fields.result !== undefined) task.result = fields.result;
    if (fields.error !== undefined) task.error = fields.error;
    task.progress = fields.progress ?? { percent: task.progress.percent, message: status === 'failed' ? (fields.error ?? 'failed') : status };
    // input-required has a result too: what the task is waiting for.
    this.append(live, 'status', status === 'completed' || status === 'input-required' ? { result: task.result } : { error: task.error });
    try {
      await this.persistNow(live);
    } finally {
      this.live.delete(task.id);
      for (const listener of live.listeners) listener.onEnd();
      live.listeners.clear();
    }
  }

  private replayFromTail(live: LiveTask, since: number): Replay<TaskEvent> {
    const last = live.task.last_sequence;
    const floor = Math.max(1, last - this.eventsPerTask + 1);
    const first = live.tail[0]?.seq ?? last + 1;
    // The tail is contiguous, so the start index is arithmetic.
    const from = Math.max(since + 1, floor);
    const events = live.tail.slice(Math.max(0, from - first));
    return { events, truncated: since + 1 < floor && since < last };
  }

  private async replayFromStore(id: string, last: number, since: number): Promise<Replay<TaskEvent>> {
    const floor = Math.max(1, last - this.eventsPerTask + 1);
    const from = Math.max(since + 1, floor);
    const events: SequencedEvent<TaskEvent>[] = [];
    if (from <= last) {
      for (let chunk = chunkOf(from); chunk <= chunkOf(last); chunk++) {
        const stored = await this.eventStore.get(chunkKey(id, chunk));
        for (const event of stored?.events ?? []) {
          if (event.sequence >= from && event.sequence <= last) events.push({ seq: event.sequence, data: event });
        }
      }
    }
    // Judge truncation by what is really there: retention may have been lower when it was written.
    const firstHeld = events[0]?.seq ?? last + 1;
    return { events, truncated: since < last && firstHeld > since + 1 };
  }

  /** The newest stored sequence of a task: its record can lag behind its events after a crash. */
  private async lastStoredSequence(task: Task): Promise<number> {
    let last = task.last_sequence;
    for (let chunk = chunkOf(Math.max(1, last)); ; chunk++) {
      const stored = await this.eventStore.get(chunkKey(task.id, chunk));
      const newest = stored?.events.at(-1)?.sequence;
      if (newest === undefined) break;
      last = Math.max(last, newest);
    }
    return last;
  }

  private async recover(): Promise<void> {
    const open = TASK_STATUSES.filter((status) => !isSettled(status));
    const unfinished = (await this.tasks.query({ where: { status: open }, orderBy: [{ field: 'created_at' }] })).items.filter((t) => !this.live.has(t.id));
    for (const stored of unfinished) {
      if (this.kinds.has(stored.kind)) await this.recoverOne(stored);
      else this.awaitingKind.set(stored.id, stored);
    }
    if (this.awaitingKind.size) {
      // Kinds register in their subsystems' setup, in any order; whatever has no handler by the
      // end of the grace period never will, so its tasks are settled as interrupted.
      setTimeout(() => void this.settleAwaiting(), this.recoveryGraceMs).unref();
    }
    this.pump();
  }

  /** Re-queue or fail one stored unfinished task according to its kind (see the header). */
  private async recoverOne(stored: Task): Promise<void> {
    this.awaitingKind.delete(stored.id);
    const live = await this.adopt(stored);
    const kind = this.kinds.get(live.task.kind);
    const { task } = live;
    if (kind !== undefined && (task.status === 'submitted' || kind.idempotent === true)) {
      if (task.status === 'working') {
        task.status = 'submitted';
        task.progress = { percent: 0, message: 're-queued after a restart' };
        this.append(live, 'status');
      }
      await this.persistNow(live);
      this.queue.push(task.id);
      return;
    }
    const why = !kind
      ? `no handler for kind "${task.kind}" is registered, so its work could not be restarted`
      : 'its work is not idempotent, so it was not restarted';
    await this.finish(live, 'failed', { error: `interrupted: Hangar stopped while the task was ${task.status}; ${why}` });
  }

  /** Rebuild the in-memory state of a stored unfinished task, its retained events included. */
  private async adopt(stored: Task): Promise<LiveTask> {
    const last = await this.lastStoredSequence(stored);
    const { events } = await this.replayFromStore(stored.id, last, 0);
    return this.track({ ...stored, last_sequence: last }, events);
  }

  private async settleAwaiting(): Promise<void> {
    for (const stored of [...this.awaitingKind.values()]) {
      try {
        // Skip what a late `registerKind` recovered meanwhile.
        if (this.awaitingKind.has(stored.id)) await this.recoverOne(stored);
      } catch (err) {
        this.log.error('could not settle an interrupted task', { task: stored.id, error: errorMessage(err) });
      }
    }
    this.pump();
  }

}
