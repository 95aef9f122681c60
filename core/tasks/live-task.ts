/**
 * The in-memory side of a task that has not settled — the source of truth while it lives — and the
 * copying rules for what leaves it. Shared by the event store, the lifecycle, the runner and
 * recovery, so it depends on none of them.
 */

import { errorMessage } from '../kernel/errors.js';
import type { SequencedEvent } from '../lib/event-log.js';
import type { Task, TaskEvent } from './schemas.js';
import { isHandedOver, type TaskWork } from './types.js';

export interface TaskLogger {
  warn(message: string, fields?: Record<string, unknown>): void;
  error(message: string, fields?: Record<string, unknown>): void;
}

/** A subscriber of one task's event stream; `onEnd` is called once the task has settled on disk. */
export type TaskListener = { onEvent: (event: SequencedEvent<TaskEvent>) => void; onEnd: () => void };

export interface LiveTask {
  task: Task;
  /** Newest events as frames (at least `eventsPerTask` once that many exist), oldest first, contiguous. */
  tail: SequencedEvent<TaskEvent>[];
  listeners: Set<TaskListener>;
  controller: AbortController;
  work?: TaskWork;
  /** Set when a terminal status was chosen; nothing more is appended after it. */
  finishing: boolean;
  /** Resolves once the terminal status and the whole log are on disk. */
  settled?: Promise<void>;
  /** Chunks below this index have been deleted from the store. */
  firstChunk: number;
  writes: Set<Promise<unknown>>;
  /** The paced write of the record after progress, while one is waiting (TaskLifecycle.saveSoon). */
  pendingSave?: () => void;
  /** When progress last wrote the record (performance.now()); progress writes it at most once a second. */
  progressSavedAt: number;
  /** Events appended since the last store write; written together on the next turn of the loop. */
  unwritten: TaskEvent[];
  flushQueued: boolean;
}

export const nowIso = (): string => new Date().toISOString();

/** A deep copy that is plain JSON: what is stored and sent can't be mutated later by the work. */
export function toJson(value: unknown, what: string): unknown {
  if (value === undefined) return null;
  if (isHandedOver(value)) return value;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    throw new TypeError(`${what} is not JSON-serialisable: ${errorMessage(err)}`);
  }
  return text === undefined ? null : JSON.parse(text);
}

export function copyTask(task: Task): Task {
  return { ...task, progress: { ...task.progress }, metadata: { ...task.metadata } };
}

/** Keep a store write of a live task in its `writes` until it is done; a failure is logged, not thrown. */
export function trackWrite(live: LiveTask, promise: Promise<unknown>, log: TaskLogger): void {
  const tracked = promise.catch((err) => log.error('task event write failed', { task: live.task.id, error: errorMessage(err) }));
  live.writes.add(tracked);
  void tracked.finally(() => live.writes.delete(tracked));
}
