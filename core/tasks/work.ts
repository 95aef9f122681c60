/**
 * The contract between the task board and the work it runs: what a piece of work is given, and how
 * it settles its task in a status other than `completed` / `failed`. Subsystems that register task
 * kinds implement against this module; how work is scheduled lives in `runner.ts`.
 */
import type { Task } from './schemas.js';

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
