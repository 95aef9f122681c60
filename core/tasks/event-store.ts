/**
 * A task's event log: the in-memory tail that live readers get, and the chunked records on disk that
 * replay comes from once the task has settled (retention and chunking are explained in `service.ts`).
 * Appending costs one small record update per turn of the event loop, whatever the log's length.
 */

import { errorMessage } from '../kernel/errors.js';
import type { Collection, Store } from '../kernel/store.js';
import type { Replay, SequencedEvent } from '../lib/event-log.js';
import { type LiveTask, nowIso, type TaskLogger, trackWrite } from './live-task.js';
import type { Task, TaskEvent, TaskEventType } from './schemas.js';

/** Consecutive sequences stored together in one event record. */
export const EVENT_CHUNK = 100;

interface StoredChunk {
  task_id: string;
  chunk: number;
  events: TaskEvent[];
}

export const chunkOf = (sequence: number): number => Math.floor((sequence - 1) / EVENT_CHUNK);
const chunkKey = (taskId: string, chunk: number): string => `${taskId}.${chunk}`;

export class TaskEventStore {
  private readonly chunks: Collection<StoredChunk>;

  constructor(
    store: Store,
    private readonly eventsPerTask: number,
    private readonly log: TaskLogger,
    /** Shard files of the event collection; fixed once the collection exists on disk. */
    shards = 32,
    /** Told when a batch of a task's events is on disk, up to which sequence (team mode announces it). */
    private readonly onStored?: (taskId: string, sequence: number) => void,
  ) {
    this.chunks = store.collection<StoredChunk>('task_events', { shards, indexes: [['task_id']] });
  }

  /** Append one event: memory tail, listeners, and a store write that is not awaited here. */
  append(live: LiveTask, type: TaskEventType, extra: Partial<TaskEvent> = {}): TaskEvent {
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
      setImmediate(() => this.flush(live));
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
  flush(live: LiveTask): void {
    live.flushQueued = false;
    const batch = live.unwritten;
    if (!batch.length) return;
    live.unwritten = [];
    const id = live.task.id;
    const written: Promise<unknown>[] = [];
    for (let start = 0; start < batch.length; ) {
      const chunk = chunkOf(batch[start]!.sequence);
      let end = start + 1;
      while (end < batch.length && chunkOf(batch[end]!.sequence) === chunk) end++;
      const group = batch.slice(start, end);
      const write = this.chunks.update(chunkKey(id, chunk), (current) => ({
        task_id: id,
        chunk,
        events: current ? current.events.concat(group) : group,
      }));
      written.push(write);
      trackWrite(live, write, this.log);
      start = end;
    }
    if (this.onStored) {
      const last = batch[batch.length - 1]!.sequence;
      void Promise.all(written).then(
        () => this.onStored?.(id, last),
        () => {},
      );
    }
    const floor = batch[batch.length - 1]!.sequence - this.eventsPerTask + 1;
    if (floor > 1) {
      const firstKept = chunkOf(floor);
      for (; live.firstChunk < firstKept; live.firstChunk++) trackWrite(live, this.chunks.delete(chunkKey(id, live.firstChunk)), this.log);
    }
  }

  /** Events after `since` from a live task's memory tail. */
  replayLive(live: LiveTask, since: number): Replay<TaskEvent> {
    const last = live.task.last_sequence;
    const floor = Math.max(1, last - this.eventsPerTask + 1);
    const first = live.tail[0]?.seq ?? last + 1;
    // The tail is contiguous, so the start index is arithmetic.
    const from = Math.max(since + 1, floor);
    const events = live.tail.slice(Math.max(0, from - first));
    return { events, truncated: since + 1 < floor && since < last };
  }

  /** Events after `since` up to `last`, read from the stored chunks. */
  async replayStored(id: string, last: number, since: number): Promise<Replay<TaskEvent>> {
    const floor = Math.max(1, last - this.eventsPerTask + 1);
    const from = Math.max(since + 1, floor);
    const events: SequencedEvent<TaskEvent>[] = [];
    if (from <= last) {
      for (let chunk = chunkOf(from); chunk <= chunkOf(last); chunk++) {
        const stored = await this.chunks.get(chunkKey(id, chunk));
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
  async lastStoredSequence(task: Task): Promise<number> {
    let last = task.last_sequence;
    for (let chunk = chunkOf(Math.max(1, last)); ; chunk++) {
      const stored = await this.chunks.get(chunkKey(task.id, chunk));
      const newest = stored?.events.at(-1)?.sequence;
      if (newest === undefined) break;
      last = Math.max(last, newest);
    }
    return last;
  }

  /** Every stored event chunk of one task, found through the task_id index. */
  async deleteAll(id: string): Promise<void> {
    const { items } = await this.chunks.query({ where: { task_id: id } });
    for (const chunk of items) await this.chunks.delete(chunkKey(id, chunk.chunk));
  }
}
