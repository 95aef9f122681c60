/**
 * The live tasks and their status changes, with when each change is on disk: a status change is
 * written (its event first, then the record) before the caller goes on, progress is written behind
 * the work, and a settled task leaves memory only once its whole log is stored.
 */

import type { SequencedEvent } from '../lib/event-log.js';
import { chunkOf, type TaskEventStore } from './event-store.js';
import { copyTask, type LiveTask, nowIso, type TaskLogger, trackWrite } from './live-task.js';
import type { TaskRecordStore } from './records.js';
import type { Task, TaskEvent, TaskStatus } from './schemas.js';
import type { TaskWork } from './types.js';

/** How often a running task's record is rewritten for its progress (see saveSoon). */
export const PROGRESS_SAVE_MS = 1_000;

type SettleFields = Partial<Pick<Task, 'result' | 'error' | 'progress'>>;

export class TaskLifecycle {
  /** Tasks that have not settled yet, by id. */
  readonly live = new Map<string, LiveTask>();

  constructor(
    private readonly records: TaskRecordStore,
    readonly events: TaskEventStore,
    private readonly log: TaskLogger,
    /** Told once a settled task's record is on disk (team mode announces it to other instances). */
    private readonly onSettled?: (task: Task) => void,
  ) {}

  track(task: Task, tail: SequencedEvent<TaskEvent>[], work?: TaskWork): LiveTask {
    const live: LiveTask = {
      task,
      tail,
      listeners: new Set(),
      controller: new AbortController(),
      work,
      finishing: false,
      firstChunk: tail.length ? chunkOf(tail[0]!.seq) : 0,
      writes: new Set(),
      progressSavedAt: Number.NEGATIVE_INFINITY,
      unwritten: [],
      // Stryker disable next-line BooleanLiteral: every tracked task is written with persistNow before anything else appends to it, and its flush clears this
      flushQueued: false,
    };
    this.live.set(task.id, live);
    return live;
  }

  /** Rebuild the in-memory state of a stored unfinished task, its retained events included. */
  async adopt(stored: Task): Promise<LiveTask> {
    const last = await this.events.lastStoredSequence(stored);
    const { events } = await this.events.replayStored(stored.id, last, 0);
    return this.track({ ...stored, last_sequence: last }, events);
  }

  /** The move to `working` (not yet on disk: the caller persists it before the work runs). */
  begin(live: LiveTask): void {
    live.task.status = 'working';
    live.task.progress = { percent: live.task.progress.percent, message: 'working' };
    this.events.append(live, 'status');
  }

  /**
   * A status change: its event, then the record, on disk before the caller goes on. The log goes
   * first so a record never claims a sequence (or a terminal status) its log does not hold yet.
   */
  async persistNow(live: LiveTask): Promise<void> {
    this.events.flush(live);
    // Stryker disable next-line ArrayDeclaration: the order of the two writes, seen only by a crash between them (a SQLite write is done when it is called)
    await Promise.all([...live.writes]);
    await this.save(live);
  }

  /**
   * Persist the record after progress: on the next timer tick, then at most once every
   * PROGRESS_SAVE_MS while the task runs. A record is a whole document, its input with it (a
   * 10,000-row batch: ~1 MB), and each progress event rewrote it: the ML batch benchmark's 40
   * chunks spent ~2 s of the server's thread in those writes (2,261 → 573 ms in the service once
   * paced). Nothing is lost: every step is in the event log as it happens, a live task is read from
   * memory, a stopping Hangar writes the waiting one (abortAll), and settle writes the last.
   */
  saveSoon(live: LiveTask): void {
    // Stryker disable next-line ConditionalExpression: coalescing only (`if (false)`: the same record written once per call); `if (true)`, which never writes, is killed by runner-rules' stop test
    if (live.pendingSave) return;
    const save = () => {
      // Stryker disable next-line CallExpression: without it, a save that abortAll made early is made once more when its timer fires, writing the same record again
      clearTimeout(timer);
      live.pendingSave = undefined;
      // Stryker disable next-line LogicalOperator: a task is finishing while still live only inside settle, which writes that same terminal record; it leaves `live` only by settling (team-mode dispatch aside, which never reports progress)
      if (live.finishing || !this.live.has(live.task.id)) return;
      live.progressSavedAt = performance.now();
      trackWrite(live, this.save(live), this.log);
    };
    live.pendingSave = save;
    // Not holding the process open: a stopping Hangar writes it at once (abortAll).
    const timer = setTimeout(save, Math.max(0, live.progressSavedAt + PROGRESS_SAVE_MS - performance.now())).unref();
  }

  /**
   * Move to a terminal status: record it, wait until the log and the record are on disk, then end
   * every subscriber's stream (they send [DONE]) and drop the in-memory state.
   */
  finish(live: LiveTask, status: TaskStatus, fields: SettleFields): Promise<void> {
    // Stryker disable next-line ConditionalExpression,LogicalOperator: every caller checks `finishing` first, with no await between; `settled` is set in the same turn as `finishing`
    if (live.finishing) return live.settled ?? Promise.resolve();
    live.finishing = true;
    live.settled = this.settle(live, status, fields);
    return live.settled;
  }

  /** Abort every live task's work and wait for what is being written (Hangar is stopping). */
  async abortAll(reason: string): Promise<void> {
    // Stryker disable next-line ArrayDeclaration: allSettled of a string is settled at once, as of an empty list
    const writes: Promise<unknown>[] = [];
    for (const live of this.live.values()) {
      // Stryker disable next-line ConditionalExpression: aborting an aborted controller does nothing (`if (true)`); `if (false)` is killed by runner-rules' stop test
      if (!live.controller.signal.aborted) live.controller.abort(new Error(reason));
      this.events.flush(live);
      // Progress waiting for its paced write is written now, as the last thing the record says.
      live.pendingSave?.();
      // Stryker disable next-line CallExpression: stop() awaits store.flush() next, which waits for every write still pending
      writes.push(...live.writes);
      // A task settling now is writing its outcome: that is waited for too.
      if (live.settled) writes.push(live.settled);
    }
    await Promise.allSettled(writes);
  }

  private async save(live: LiveTask): Promise<void> {
    await this.records.put(live.task.id, copyTask(live.task));
  }

  private async settle(live: LiveTask, status: TaskStatus, fields: SettleFields): Promise<void> {
    const { task } = live;
    task.status = status;
    task.finished_at = nowIso();
    if (fields.result !== undefined) task.result = fields.result;
    if (fields.error !== undefined) task.error = fields.error;
    task.progress = fields.progress ?? {
      percent: task.progress.percent,
      // Stryker disable next-line StringLiteral: every finish as failed passes its error, so the fallback is never read (`status === ''` is killed by runner-rules)
      message: status === 'failed' ? (fields.error ?? 'failed') : status,
    };
    // input-required has a result too: what the task is waiting for.
    this.events.append(
      live,
      'status',
      status === 'completed' || status === 'input-required' ? { result: task.result } : { error: task.error },
    );
    try {
      await this.persistNow(live);
      this.onSettled?.(task);
    } finally {
      this.live.delete(task.id);
      for (const listener of live.listeners) listener.onEnd();
      // Stryker disable next-line CallExpression: the live task is dropped above, so nothing reads its listeners again
      live.listeners.clear();
    }
  }
}
