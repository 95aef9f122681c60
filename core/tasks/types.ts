/**
 * The contract between the task board and the work it runs — what a piece of work is given, how it
 * settles its task in a status other than `completed` / `failed`, and how a batch runs its items —
 * the public module subsystems that register task kinds implement against. How work is scheduled
 * lives in `runner.ts`.
 *
 * A batch is one task on the board: many inputs run through the same work a few at a time, each
 * item ending in a result of its own, so one bad input does not sink the rest. The endpoints',
 * pipelines' and ingestors' batch kinds all run this way; what an item is and how it reports its
 * failure stays with them.
 */
import { fail } from '../kernel/errors.js';
import type { Task } from './schemas.js';

/** Values handed over as plain JSON that nothing else holds (`handOverJson`). */
const handedOver = new WeakSet<object>();

/**
 * Give the board a value made just now by `JSON.parse` (or zod's parse of one) to which the caller
 * keeps no reference, as a task's input (from `prepare`) or its result: the board stores and sends
 * it as it is, without the deep copy it makes of anything else. A plugin batch's 10,000 results
 * (3 MB of JSON) took 20-37 ms of the server's thread to copy, a thread the ML benchmark holds to
 * 20 ms at p99 while a batch runs.
 */
export function handOverJson<T>(value: T): T {
  if (typeof value === 'object' && value !== null) handedOver.add(value);
  return value;
}

/** Whether `value` was handed over with `handOverJson` (the board's copy is skipped). */
export function isHandedOver(value: unknown): boolean {
  return typeof value === 'object' && value !== null && handedOver.has(value);
}

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

/** Inputs one batch may hold: past that, a caller should split its work into several tasks. */
export const MAX_BATCH_ITEMS = 1_000;

/** The task result of a batch: the counts, then every item's own result in input order. */
export interface BatchOutcome<Result> {
  total: number;
  succeeded: number;
  failed: number;
  results: Result[];
}

export interface BatchWork<Input, Result> {
  /** Items in flight at once; they start in input order. */
  concurrency: number;
  /** What progress messages count (`3/10 inputs`). */
  unit: string;
  /** Run one item. It should not throw: a failed item is a result too (`succeeded` says which). */
  item(input: Input, index: number): Promise<Result>;
  succeeded(result: Result): boolean;
}

/**
 * The `inputs` array of a batch submission, refused with a 422 naming the field (`where` is the
 * path of the object holding it, `body` or `body.input`) unless it holds 1 to `MAX_BATCH_ITEMS` items.
 */
export function batchInputs(body: unknown, where: string): unknown[] {
  const inputs = (body as { inputs?: unknown } | null | undefined)?.inputs;
  if (!Array.isArray(inputs)) throw fail('HANGAR_TASK_BATCH_NOT_ARRAY', { where });
  if (inputs.length === 0) throw fail('HANGAR_TASK_BATCH_EMPTY', { where });
  if (inputs.length > MAX_BATCH_ITEMS) throw fail('HANGAR_TASK_BATCH_TOO_LARGE', { where, max: MAX_BATCH_ITEMS, count: inputs.length });
  return inputs;
}

/**
 * Run every input through `work.item`, reporting progress after each item. A cancelled task starts
 * no further item, waits for those in flight (they got the task's signal) and then fails, since the
 * board discards a cancelled task's outcome anyway.
 */
export async function runBatch<Input, Result>(
  ctx: Pick<TaskContext, 'signal' | 'progress'>,
  inputs: readonly Input[],
  work: BatchWork<Input, Result>,
): Promise<BatchOutcome<Result>> {
  const results: Result[] = new Array(inputs.length);
  let next = 0;
  let done = 0;
  const lane = async () => {
    while (next < inputs.length && !ctx.signal.aborted) {
      const index = next++;
      results[index] = await work.item(inputs[index], index);
      done++;
      ctx.progress((done / inputs.length) * 100, `${done}/${inputs.length} ${work.unit}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(work.concurrency, inputs.length) }, lane));
  if (ctx.signal.aborted) throw new Error('batch cancelled');
  const succeeded = results.filter((r) => work.succeeded(r)).length;
  return { total: inputs.length, succeeded, failed: inputs.length - succeeded, results };
}
