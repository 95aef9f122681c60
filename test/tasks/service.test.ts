import { afterEach, describe, expect, it } from 'vitest';
import { HangarError } from '../../core/kernel/errors.js';
import type { TaskService } from '../../core/tasks/service.js';
import { gate, openService, tempDir, waitForStatus } from './helpers.js';

const principal = 'local';
const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

function service(options: Parameters<typeof openService>[1] = {}, dir?: string): { tasks: TaskService; dir: string } {
  let where = dir;
  if (!where) {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    where = tmp.dir;
  }
  const tasks = openService(where, options);
  cleanups.push(() => tasks.stop());
  return { tasks, dir: where };
}

async function statusOf(promise: Promise<unknown>): Promise<number> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof HangarError) return err.status;
    throw err;
  }
  return 200;
}

describe('TaskService', () => {
  it('runs work to completed, with progress, output and a monotonic event log', async () => {
    const { tasks } = service();
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'demo',
      input: { n: 2 },
      principal,
      run: async (ctx) => {
        ctx.progress(50, 'half way');
        ctx.emit({ chunk: 'hello' });
        return { doubled: (ctx.task.input as { n: number }).n * 2 };
      },
    });
    expect(task.status).toBe('submitted');
    const done = await waitForStatus(() => tasks.get(task.id), ['completed']);
    expect(done.result).toEqual({ doubled: 4 });
    expect(done.progress).toEqual({ percent: 100, message: 'completed' });
    expect(done.started_at).not.toBeNull();
    expect(done.finished_at).not.toBeNull();

    const { events, truncated } = await tasks.replay(task.id, 0);
    expect(truncated).toBe(false);
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3, 4, 5]);
    expect(events.map((e) => [e.data.type, e.data.status])).toEqual([
      ['status', 'submitted'],
      ['status', 'working'],
      ['progress', 'working'],
      ['output', 'working'],
      ['status', 'completed'],
    ]);
    expect(events[2]!.data.progress).toEqual({ percent: 50, message: 'half way' });
    expect(events[3]!.data.data).toEqual({ chunk: 'hello' });
    expect(events[4]!.data.result).toEqual({ doubled: 4 });
    expect(await tasks.result(task.id)).toEqual({ id: task.id, status: 'completed', result: { doubled: 4 }, error: null });
  });

  it('a throwing task ends failed with the message and the runner keeps going', async () => {
    const { tasks } = service({ concurrency: 1 });
    const bad = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: () => {
        throw new Error('boom: disk on fire');
      },
    });
    const good = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: async () => 'fine' });
    const failed = await waitForStatus(() => tasks.get(bad.id), ['failed', 'completed']);
    expect(failed.status).toBe('failed');
    expect(failed.error).toBe('boom: disk on fire');
    expect((await waitForStatus(() => tasks.get(good.id), ['completed'])).result).toBe('fine');
  });

  it('a result that is not JSON fails the task instead of corrupting the store', async () => {
    const { tasks } = service();
    const circular: Record<string, unknown> = {};
    circular.self = circular;
    const task = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => circular });
    const done = await waitForStatus(() => tasks.get(task.id), ['failed', 'completed']);
    expect(done.status).toBe('failed');
    expect(done.error).toMatch(/task result is not JSON-serialisable/);
  });

  it('queues beyond the concurrency limit and runs in submission order', async () => {
    const { tasks } = service({ concurrency: 1 });
    const hold = gate();
    const order: string[] = [];
    const first = await tasks.submit({
      kind: 'adhoc',
      target: 'a',
      principal,
      run: async () => {
        order.push('a');
        await hold.promise;
      },
    });
    const second = await tasks.submit({
      kind: 'adhoc',
      target: 'b',
      principal,
      run: async () => {
        order.push('b');
      },
    });
    await waitForStatus(() => tasks.get(first.id), ['working']);
    await new Promise((r) => setTimeout(r, 30));
    expect((await tasks.get(second.id)).status).toBe('submitted');
    expect(tasks.load()).toEqual({ queued: 1, running: 1, concurrency: 1, abandoned: 0 });
    hold.open();
    await waitForStatus(() => tasks.get(second.id), ['completed']);
    expect(order).toEqual(['a', 'b']);
  });

  it('cancel reaches the running work through its signal and ends the task canceled', async () => {
    const { tasks } = service();
    let sawAbort = false;
    const started = gate();
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: (ctx) =>
        new Promise((_, reject) => {
          ctx.signal.addEventListener('abort', () => {
            sawAbort = true;
            reject(new Error('stopped'));
          });
          started.open();
        }),
    });
    await started.promise;
    const outcome = await tasks.cancel(task.id);
    expect(outcome.canceled).toBe(true);
    expect(outcome.task.status).toBe('canceled');
    expect(sawAbort).toBe(true);
    // The rejection that followed the abort does not turn it into `failed`.
    await new Promise((r) => setTimeout(r, 20));
    expect((await tasks.get(task.id)).status).toBe('canceled');

    const again = await tasks.cancel(task.id);
    expect(again.canceled).toBe(false);
    expect(again.message).toMatch(/already canceled/);
  });

  it('cancelling a queued task ends it without ever running it; cancelling a completed one is a no-op', async () => {
    const { tasks } = service({ concurrency: 1 });
    const hold = gate();
    let ran = false;
    const blocker = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => hold.promise });
    const queued = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: () => {
        ran = true;
      },
    });
    const outcome = await tasks.cancel(queued.id);
    expect(outcome).toMatchObject({ canceled: true, task: { status: 'canceled' } });
    hold.open();
    await waitForStatus(() => tasks.get(blocker.id), ['completed']);
    await new Promise((r) => setTimeout(r, 20));
    expect(ran).toBe(false);

    const noop = await tasks.cancel(blocker.id);
    expect(noop).toMatchObject({ canceled: false, task: { status: 'completed' } });
    expect(noop.message).toBe('task already completed; cancel changed nothing');
  });

  it('result answers 409 while the task is unfinished', async () => {
    const { tasks } = service();
    const hold = gate();
    const task = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => hold.promise });
    const err = await tasks.result(task.id).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(HangarError);
    expect((err as HangarError).status).toBe(409);
    expect((err as HangarError).headers['Retry-After']).toBe('1');
    hold.open();
  });

  it('keeps only the newest eventsPerTask events and reports truncation for an evicted resume point', async () => {
    const { tasks } = service({ eventsPerTask: 10 });
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: (ctx) => {
        for (let i = 0; i < 250; i++) ctx.emit({ i });
      },
    });
    const done = await waitForStatus(() => tasks.get(task.id), ['completed']);
    // 1 submitted + 1 working + 250 output + 1 completed
    expect(done.last_sequence).toBe(253);
    const all = await tasks.replay(task.id, 0);
    expect(all.truncated).toBe(true);
    expect(all.events.map((e) => e.seq)).toEqual([244, 245, 246, 247, 248, 249, 250, 251, 252, 253]);
    const inside = await tasks.replay(task.id, 248);
    expect(inside.truncated).toBe(false);
    expect(inside.events.map((e) => e.seq)).toEqual([249, 250, 251, 252, 253]);
    expect((await tasks.replay(task.id, 253)).events).toEqual([]);
    expect((await tasks.replay(task.id, 253)).truncated).toBe(false);
  });

  it('deletes evicted chunks from disk so a long log stays bounded', async () => {
    const { tasks, dir } = service({ eventsPerTask: 50 });
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: (ctx) => {
        for (let i = 0; i < 1000; i++) ctx.emit(i);
      },
    });
    await waitForStatus(() => tasks.get(task.id), ['completed']);
    await tasks.stop();
    const { SqliteStore } = await import('../../core/storage/sqlite-store.js');
    const { join } = await import('node:path');
    const stats = await new SqliteStore(join(dir, 'hangar.db')).stats();
    // ≤ eventsPerTask + EVENT_CHUNK − 1 events on disk means at most 2 chunk records.
    expect(stats.collections.task_events!.records).toBeLessThanOrEqual(2);
  });

  it('a task is invisible to another principal, exactly like an unknown id', async () => {
    const { tasks } = service();
    const task = await tasks.submit({ kind: 'adhoc', target: 'x', principal: 'alice', run: () => 1 });
    await expect(tasks.get(task.id, { principal: 'bob' })).rejects.toMatchObject({ status: 404, detail: `task ${task.id} not found` });
    await expect(tasks.get('nope', { principal: 'bob' })).rejects.toMatchObject({ status: 404, detail: 'task nope not found' });
    expect((await tasks.get(task.id, { principal: 'alice' })).id).toBe(task.id);
    expect((await tasks.list({}, { principal: 'bob' })).total).toBe(0);
  });

  it('lists newest first with filters and paging', async () => {
    const { tasks } = service();
    tasks.registerKind('echo', { run: (ctx) => ctx.task.input });
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await tasks.submit({ kind: 'echo', target: i % 2 ? 'odd' : 'even', input: i, principal }));
    await Promise.all(made.map((t) => waitForStatus(() => tasks.get(t.id), ['completed'])));
    await tasks.submit({ kind: 'adhoc', target: 'odd', principal, run: () => new Promise(() => {}) });

    const page = await tasks.list({ kind: 'echo', limit: 2, offset: 0 });
    expect(page.total).toBe(5);
    expect(page.tasks.map((t) => t.input)).toEqual([4, 3]);
    const next = await tasks.list({ kind: 'echo', limit: 2, offset: 2 });
    expect(next.tasks.map((t) => t.input)).toEqual([2, 1]);
    expect((await tasks.list({ target: 'odd', status: ['completed'] })).tasks.map((t) => t.input)).toEqual([3, 1]);
    expect((await tasks.list({ target: 'odd', status: ['submitted', 'working'] })).total).toBe(1);
  });

  it('a registered kind can refuse a submission before anything is stored', async () => {
    const { tasks } = service();
    tasks.registerKind('strict', {
      prepare: ({ input }) => {
        if (typeof input !== 'string') throw new HangarError(422, 'body.input: expected a string');
        return { input: input.trim() };
      },
      run: (ctx) => ctx.task.input,
    });
    await expect(tasks.submit({ kind: 'strict', target: 't', input: 5, principal })).rejects.toMatchObject({ status: 422 });
    expect((await tasks.list()).total).toBe(0);
    const ok = await tasks.submit({ kind: 'strict', target: 't', input: '  hi ', principal });
    expect((await waitForStatus(() => tasks.get(ok.id), ['completed'])).result).toBe('hi');
    await expect(tasks.submit({ kind: 'unknown', target: 't', principal })).rejects.toMatchObject({
      status: 422,
      detail: 'body.kind: no task handler is registered for kind "unknown"',
    });
  });

  it('delete cancels running work and removes the task and its events', async () => {
    const { tasks } = service();
    let aborted = false;
    const started = gate();
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: (ctx) =>
        new Promise<void>((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            aborted = true;
            resolve();
          });
          started.open();
        }),
    });
    await started.promise;
    await tasks.delete(task.id);
    expect(aborted).toBe(true);
    expect(await statusOf(tasks.get(task.id))).toBe(404);
    expect((await tasks.replay(task.id, 0)).events).toEqual([]);
  });

  it('a delete that lands while a finished task is still writing its status is not undone by that write', async () => {
    // lowdb's asynchronous writes hold the window open long enough to land a delete in it; on
    // SQLite it lasts a few microtasks. The rule is the service's (delete waits for the finish),
    // whatever the store.
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const { LowdbStore } = await import('../../core/storage/lowdb-store.js');
    const { TaskService } = await import('../../core/tasks/service.js');
    const tasks = new TaskService({ store: new LowdbStore(dir) });
    cleanups.push(() => tasks.stop());
    const task = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: async () => ({ ok: 1 }) });
    // The window: the task chose `completed` and its record is on its way to disk.
    const live = (tasks as unknown as { live: Map<string, { finishing: boolean }> }).live;
    while (live.get(task.id) && !live.get(task.id)!.finishing) await new Promise((r) => setImmediate(r));
    expect(live.get(task.id)?.finishing).toBe(true);
    await tasks.delete(task.id);
    await new Promise((r) => setTimeout(r, 50));
    expect(await statusOf(tasks.get(task.id))).toBe(404);
  });

  it('with tasks.enabled off every operation answers 501', async () => {
    const { tasks } = service({ enabled: false });
    expect(await statusOf(tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => 1 }))).toBe(501);
    expect(await statusOf(tasks.get('x'))).toBe(501);
    expect(await statusOf(tasks.list())).toBe(501);
    expect(await statusOf(tasks.cancel('x'))).toBe(501);
    expect(await statusOf(tasks.events('x'))).toBe(501);
  });

  it('a subscriber that throws is dropped without hurting the task or other subscribers', async () => {
    const { tasks } = service();
    const hold = gate();
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: async (ctx) => {
        await hold.promise;
        ctx.emit('a');
        ctx.emit('b');
      },
    });
    const source = await tasks.events(task.id);
    const seen: number[] = [];
    let ended = false;
    source.subscribe(
      () => {
        throw new Error('broken socket');
      },
      () => {},
    );
    source.subscribe(
      (e) => seen.push(e.seq),
      () => (ended = true),
    );
    hold.open();
    // waitFor resolves once the task is finished and on disk, after its subscribers were ended.
    const done = await tasks.waitFor(task.id);
    expect(done.status).toBe('completed');
    expect(seen.length).toBeGreaterThanOrEqual(3);
    expect(ended).toBe(true);
    expect(source.ended).toBe(true);
  });
});

describe('TaskService restart', () => {
  it('fails work that was running at stop as interrupted, and its events stay replayable', async () => {
    const first = service();
    const started = gate();
    const kinds = (tasks: TaskService) =>
      tasks.registerKind('slow', {
        run: (ctx) => {
          ctx.emit('started');
          started.open();
          return new Promise(() => {});
        },
      });
    kinds(first.tasks);
    const task = await first.tasks.submit({ kind: 'slow', target: 'x', principal });
    await started.promise;
    await first.tasks.stop();

    const second = service({}, first.dir);
    kinds(second.tasks);
    const after = await waitForStatus(() => second.tasks.get(task.id), ['failed']);
    expect(after.error).toMatch(/^interrupted: Hangar stopped while the task was working; its work is not idempotent/);
    const { events } = await second.tasks.replay(task.id, 0);
    expect(events.map((e) => [e.seq, e.data.type, e.data.status])).toEqual([
      [1, 'status', 'submitted'],
      [2, 'status', 'working'],
      [3, 'output', 'working'],
      [4, 'status', 'failed'],
    ]);
  });

  it('re-queues working tasks of an idempotent kind and queued tasks of any registered kind', async () => {
    const first = service({ concurrency: 1 });
    first.tasks.registerKind('sum', { idempotent: true, run: (ctx) => new Promise(() => void ctx) });
    const running = await first.tasks.submit({ kind: 'sum', target: 'x', input: [1, 2], principal });
    const queued = await first.tasks.submit({ kind: 'sum', target: 'x', input: [3, 4], principal });
    await waitForStatus(() => first.tasks.get(running.id), ['working']);
    await first.tasks.stop();

    const second = service({ concurrency: 2 }, first.dir);
    // Registered after start: recovery waits for the kind.
    await second.tasks.start();
    second.tasks.registerKind('sum', { idempotent: true, run: (ctx) => (ctx.task.input as number[]).reduce((a, b) => a + b, 0) });
    const a = await waitForStatus(() => second.tasks.get(running.id), ['completed', 'failed']);
    const b = await waitForStatus(() => second.tasks.get(queued.id), ['completed', 'failed']);
    expect([a.status, a.result, a.attempts]).toEqual(['completed', 3, 2]);
    expect([b.status, b.result, b.attempts]).toEqual(['completed', 7, 1]);
    const statuses = (await second.tasks.replay(running.id, 0)).events.map((e) => e.data.status);
    expect(statuses).toEqual(['submitted', 'working', 'submitted', 'working', 'completed']);
  });

  it('fails stored work whose kind never registers once the grace period ends', async () => {
    const first = service();
    const task = await first.tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => new Promise(() => {}) });
    await waitForStatus(() => first.tasks.get(task.id), ['working']);
    await first.tasks.stop();

    const second = service({ recoveryGraceMs: 50 }, first.dir);
    await second.tasks.start();
    const after = await waitForStatus(() => second.tasks.get(task.id), ['failed']);
    expect(after.error).toMatch(/no handler for kind "adhoc" is registered/);
  });

  it('a finished task and its whole log survive a restart', async () => {
    const first = service();
    const task = await first.tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: (ctx) => {
        for (let i = 0; i < 150; i++) ctx.emit(i);
        return 'ok';
      },
    });
    await waitForStatus(() => first.tasks.get(task.id), ['completed']);
    await first.tasks.stop();
    const second = service({}, first.dir);
    expect(await second.tasks.result(task.id)).toMatchObject({ status: 'completed', result: 'ok' });
    const { events } = await second.tasks.replay(task.id, 140);
    expect(events.map((e) => e.seq)).toEqual([141, 142, 143, 144, 145, 146, 147, 148, 149, 150, 151, 152, 153]);
    expect(events.at(-1)!.data.status).toBe('completed');
  });
});
