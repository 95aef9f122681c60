/**
 * A task's large input and result are stored beside its record (core/tasks/records.ts): the record
 * the store indexes stays small, and every way of reading the task sees it whole, across a restart.
 */
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Store } from '../../core/kernel/store.js';
import { JsonText } from '../../core/lib/json-text.js';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import { APART_FROM_BYTES, exceeds, TaskRecords } from '../../core/tasks/records.js';
import type { Task } from '../../core/tasks/schemas.js';
import { TaskService } from '../../core/tasks/service.js';
import { gate, tempDir, waitForStatus } from './helpers.js';

const principal = 'local';
const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

/** ~400 KB of JSON: 5,000 rows as a batch submits them. */
const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ row: i, sepal_length: 5.1 + i / 1e4, label: `flower ${i}` }));

function open(dir: string): { tasks: TaskService; store: Store } {
  const store = new SqliteStore(path.join(dir, 'hangar.db'));
  const tasks = new TaskService({ store });
  cleanups.push(() => tasks.stop());
  return { tasks, store };
}

async function bytesOf(store: Store, collection: string): Promise<number> {
  await store.flush();
  return (await store.stats()).collections[collection]?.bytes ?? 0;
}

describe('a task with a large input and result', () => {
  it('keeps its record small, and reads whole by get, list, result, events and after a restart', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const first = open(tmp.dir);
    const input = { inputs: rows(5_000) };
    const output = { total: 5_000, results: rows(5_000).map((r) => ({ ...r, species: 'setosa' })) };
    const hold = gate();
    const task = await first.tasks.submit({
      kind: 'adhoc',
      target: 'big',
      principal,
      input,
      run: async (ctx) => {
        // Progress writes the record again while it runs (paced): the input is not written again.
        ctx.progress(50, 'half');
        await hold.promise;
        return output;
      },
    });
    await waitForStatus(() => first.tasks.get(task.id), ['working']);
    hold.open();
    const done = await waitForStatus(() => first.tasks.get(task.id), ['completed']);
    expect(done.input).toEqual(input);
    expect(done.result).toEqual(output);

    // The record the store indexes is a few hundred bytes; input and result are beside it.
    expect(await bytesOf(first.store, 'tasks')).toBeLessThan(2_000);
    expect(await bytesOf(first.store, 'task_payloads')).toBeGreaterThan(2 * 300_000);

    const page = await first.tasks.list({ target: 'big' });
    expect(page.tasks.map((t) => [t.id, t.input, t.result])).toEqual([[task.id, input, output]]);
    await first.tasks.stop();

    const second = open(tmp.dir);
    expect(await second.tasks.get(task.id)).toMatchObject({ status: 'completed', input, result: output });
    expect(await second.tasks.result(task.id)).toMatchObject({ status: 'completed', result: output });
    // The stream of a settled task ends with the result, read from the stored log.
    const { events } = await second.tasks.replay(task.id, 0);
    expect(events.at(-1)!.data).toMatchObject({ status: 'completed', result: output });
  });

  it('a long string input stays in the record (only objects and arrays are stored apart)', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { tasks, store } = open(tmp.dir);
    const text = 'x'.repeat(2 * APART_FROM_BYTES);
    const task = await tasks.submit({ kind: 'adhoc', target: 'text', principal, input: text, run: async () => text.length });
    expect(await waitForStatus(() => tasks.get(task.id), ['completed'])).toMatchObject({ input: text, result: text.length });
    expect(await bytesOf(store, 'task_payloads')).toBe(0);
  });

  it('a small input and result stay in the record', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { tasks, store } = open(tmp.dir);
    const task = await tasks.submit({ kind: 'adhoc', target: 'small', principal, input: { q: 'hi' }, run: async () => ({ a: 1 }) });
    expect(await waitForStatus(() => tasks.get(task.id), ['completed'])).toMatchObject({ input: { q: 'hi' }, result: { a: 1 } });
    expect(await bytesOf(store, 'task_payloads')).toBe(0);
    expect(JSON.stringify(await store.collection<Task>('tasks').get(task.id))).toContain('"q":"hi"');
  });

  it('deleting the task deletes what was stored beside it', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { tasks, store } = open(tmp.dir);
    const task = await tasks.submit({ kind: 'adhoc', target: 'big', principal, input: rows(5_000), run: async () => rows(5_000) });
    await waitForStatus(() => tasks.get(task.id), ['completed']);
    expect(await bytesOf(store, 'task_payloads')).toBeGreaterThan(0);
    await tasks.delete(task.id);
    expect(await bytesOf(store, 'task_payloads')).toBe(0);
    expect(await bytesOf(store, 'tasks')).toBe(0);
  });

  it('a record stored whole by an earlier Hangar reads as it always did', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const { tasks, store } = open(tmp.dir);
    const made = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: async () => 'done' });
    const stored = await waitForStatus(() => tasks.get(made.id), ['completed']);
    const old = { ...stored, id: 'old-task', input: rows(5_000), result: rows(5_000) };
    await store.collection<Task>('tasks').put('old-task', old);
    expect(await tasks.get('old-task')).toEqual(old);
  });
});

describe('TaskRecords', () => {
  it('a compare-and-set (team mode claims) keeps the payloads and answers the task whole', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const store = new SqliteStore(path.join(tmp.dir, 'hangar.db'));
    const records = new TaskRecords(store.collection<Task>('tasks'), store);
    const input = rows(5_000);
    const result = rows(4_000);
    const task = { id: 't1', status: 'submitted', input, result } as unknown as Task;
    await records.put('t1', task);
    const claimed = await records.update('t1', (current) => current && { ...current, status: 'working' });
    expect(claimed).toMatchObject({ status: 'working', input, result });
    expect(await records.get('t1')).toMatchObject({ status: 'working', input, result });
    expect((await records.query({ where: { status: 'working' } })).items).toMatchObject([{ id: 't1', input, result }]);
    // The head leaves the payloads on disk: what an event stream of a settled task reads.
    expect(await records.head('t1')).toMatchObject({ status: 'working', input: null, result: null });
    expect(await records.head('t1')).not.toHaveProperty('stored_apart');
    // A value a compare-and-set wrote in the record itself is the newer one.
    await records.update('t1', (current) => current && { ...current, result: 'settled elsewhere' });
    expect(await records.get('t1')).toMatchObject({ result: 'settled elsewhere', input });
  });

  it('estimates JSON size without making it, and stops at the limit', () => {
    expect(exceeds({ q: 'hi' }, APART_FROM_BYTES)).toBe(false);
    expect(exceeds(rows(5_000), APART_FROM_BYTES)).toBe(true);
    expect(exceeds(['x'.repeat(APART_FROM_BYTES)], APART_FROM_BYTES)).toBe(true);
    expect(exceeds({ a: { b: { c: 'x'.repeat(100) } } }, 100)).toBe(true);
    expect(exceeds({ a: { b: { c: 'x'.repeat(80) } } }, 100)).toBe(false);
    expect(exceeds([1, 2, 3], 10)).toBe(true);
    expect(exceeds(null, 10)).toBe(false);
    // At the limit is not past it; an array counts its commas, not its indexes as keys.
    expect(exceeds('', 2)).toBe(false);
    expect(exceeds([], 0)).toBe(true);
    expect(exceeds(new Array(30).fill(0), 300)).toBe(false);
    expect(exceeds([1], 2)).toBe(true);
    expect(exceeds(new Array(1_000_000).fill(0), APART_FROM_BYTES)).toBe(true);
    // Every element of every array is walked, after the arrays nested in it: 4 + (3 + 16) × 2 + 52 = 94.
    const nested = [[1, 2], [3, 4], 'x'.repeat(50)];
    expect(exceeds(nested, 94)).toBe(false);
    expect(exceeds(nested, 93)).toBe(true);
    expect(exceeds({ list: [[], [[]]], tail: 'abc' }, 28)).toBe(false);
    expect(exceeds({ list: [[], [[]]], tail: 'abc' }, 27)).toBe(true);
    // A plugin batch's results, kept as JSON text (core/lib/json-text.ts), count by their text.
    expect(exceeds(new JsonText(`[${'1,'.repeat(APART_FROM_BYTES)}1]`), APART_FROM_BYTES)).toBe(true);
    expect(exceeds(new JsonText('[1]'), APART_FROM_BYTES)).toBe(false);
  });
});
