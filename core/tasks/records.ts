/**
 * The board's task records, with a large input or result stored beside its record rather than in it.
 *
 * A record is one row the store indexes five ways, and SQLite computes an expression index from
 * the row's JSON text: writing a record parses the old and the new text whole, once per write. A
 * plugin batch of 10,000 rows has a 1 MB input and a 3 MB result, so settling it parsed ~8 MB of
 * JSON on the server's thread (~60 ms on this machine, a single block of the event loop), and each
 * paced progress write parsed the input twice more. Stored apart, in `task_payloads` (no indexes),
 * a payload is written once, and the record the indexes read stays a few hundred bytes.
 *
 * Only objects and arrays are stored apart (a long string stays inline). On disk the record holds
 * `null` in the field and names it in `stored_apart`; every read here puts the payload back, so
 * what callers and the API see is unchanged. A record written before this (its input inline)
 * reads as it always did.
 */
import type { Collection, RecordQuery, Store } from '../kernel/store.js';
import type { Task } from './schemas.js';

/** The fields that may be stored apart. */
const PARTS = ['input', 'result'] as const;
type Part = (typeof PARTS)[number];

/** A value estimated past this many bytes of JSON is stored apart from its record. */
export const APART_FROM_BYTES = 64 * 1024;

type StoredTask = Task & { stored_apart?: Part[] };

/** What the board does with its records: the part of a collection it uses. */
export type TaskRecordStore = Pick<Collection<Task>, 'get' | 'put' | 'update' | 'delete' | 'query'>;

export class TaskRecords implements TaskRecordStore {
  private readonly payloads: Collection<unknown>;
  /**
   * Payload values this process wrote, and under which key: a running task's record is written
   * again for progress and at settling with the same input object, which is not written again.
   */
  private readonly written = new WeakMap<object, string>();

  constructor(
    private readonly records: Collection<Task>,
    store: Store,
  ) {
    this.payloads = store.collection<unknown>('task_payloads');
  }

  get(id: string): Promise<Task | undefined> {
    return this.records.get(id).then((stored: StoredTask | undefined) => (stored?.stored_apart ? this.withPayloads(id, stored) : stored));
  }

  /**
   * The record without what is stored apart (those fields read null): for a caller that needs only
   * the status, the owner or the sequence, such as an event stream of a settled task.
   */
  head(id: string): Promise<Task | undefined> {
    return this.records.get(id).then((stored: StoredTask | undefined) => {
      if (!stored?.stored_apart) return stored;
      const { stored_apart: _apart, ...task } = stored;
      return task;
    });
  }

  /**
   * The payloads first, so a record never names one that is not on disk. A record with nothing to
   * store apart is the collection's own write, in as many turns as before (the board's callers wait
   * on these promises between a status change and the work).
   */
  put(id: string, task: Task): Promise<Task> {
    const apart = PARTS.filter((part) => {
      const value = task[part];
      // `null` never exceeds: it is the field's own empty value.
      return typeof value === 'object' && exceeds(value, APART_FROM_BYTES);
    });
    return apart.length ? this.putApart(id, task, apart) : this.records.put(id, task);
  }

  private async putApart(id: string, task: Task, apart: Part[]): Promise<Task> {
    const stored: StoredTask = { ...task, stored_apart: apart };
    for (const part of apart) {
      const value = task[part] as object;
      const key = payloadKey(id, part);
      // Stryker disable next-line ConditionalExpression: writing the same payload again changes nothing seen, only the time a write takes
      if (this.written.get(value) !== key) {
        await this.payloads.put(key, value);
        // Stryker disable next-line CallExpression: as above, the payload would be written again at the next write of the record
        this.written.set(value, key);
      }
      stored[part] = null;
    }
    await this.records.put(id, stored);
    return task;
  }

  /** A compare-and-set on the record (team mode's claims and cancels): payloads are kept as they are. */
  async update(id: string, fn: (current: Task | undefined) => Task | undefined): Promise<Task | undefined> {
    const next = await this.records.update(id, fn);
    return next && this.withPayloads(id, next);
  }

  async delete(id: string): Promise<boolean> {
    const deleted = await this.records.delete(id);
    for (const part of PARTS) await this.payloads.delete(payloadKey(id, part));
    return deleted;
  }

  async query(query: RecordQuery): Promise<{ items: Task[]; total: number }> {
    const page = await this.records.query(query);
    const items = await Promise.all(page.items.map((task) => this.withPayloads(task.id, task)));
    return { items, total: page.total };
  }

  private async withPayloads(id: string, stored: StoredTask): Promise<Task> {
    if (!stored.stored_apart) return stored;
    const { stored_apart: apart, ...task } = stored;
    for (const part of apart) {
      // A field a compare-and-set filled in since is the newer value.
      if (task[part] !== null) continue;
      task[part] = (await this.payloads.get(payloadKey(id, part))) ?? null;
    }
    return task;
  }
}

const payloadKey = (id: string, part: Part) => `${id}.${part}`;

/**
 * Whether `value`'s JSON would be longer than `limit` bytes, estimated without making it: a walk
 * that stops as soon as the estimate passes the limit, so a 3 MB result costs a few thousand steps,
 * not a serialisation. Strings count their length, numbers and literals a typical width.
 */
export function exceeds(value: unknown, limit: number): boolean {
  let size = 0;
  // Values still to walk: an array's elements are taken from it one at a time (its cursor is
  // the index next to it), never copied onto the stack, so a 10,000-row input stops after the
  // few hundred rows that pass the limit (this runs cold, a few times per task: ~5 ms before).
  const stack: unknown[] = [value];
  const cursors: number[] = [-1];
  while (stack.length) {
    const top = stack.length - 1;
    const at = cursors[top]!;
    const item = stack[top];
    if (at >= 0) {
      const array = item as unknown[];
      if (at === array.length) {
        stack.pop();
        cursors.pop();
      } else {
        cursors[top] = at + 1;
        stack.push(array[at]);
        cursors.push(-1);
      }
      continue;
    }
    stack.pop();
    cursors.pop();
    if (typeof item === 'string') size += item.length + 2;
    else if (Array.isArray(item)) {
      // Its commas are counted first, so an array too long to fit is never walked element by element.
      size += item.length + 1;
      stack.push(item);
      cursors.push(0);
    } else if (typeof item === 'object' && item !== null) {
      for (const key in item) {
        size += key.length + 4;
        stack.push((item as Record<string, unknown>)[key]);
        cursors.push(-1);
      }
    } else size += 8;
    if (size > limit) return true;
  }
  return false;
}
