import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HangarError } from '../../core/kernel/errors.js';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import { PROGRESS_SAVE_MS } from '../../core/tasks/lifecycle.js';
import type { Task } from '../../core/tasks/schemas.js';
import type { TaskService } from '../../core/tasks/service.js';
import { SettleAs, type TaskContext } from '../../core/tasks/types.js';
import { gate, openService, tempDir, waitForStatus } from './helpers.js';

/**
 * The runner's rules at their edges (#30): what a settled task records, which of its work's late
 * calls still count, how many run at once and in which order, and what stopping leaves behind. Each
 * test asserts the end state (status, result, error, progress, the event log) so a wrong rule that
 * still ends "somewhere" is told apart.
 */
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

const statusesOf = async (tasks: TaskService, id: string) => (await tasks.replay(id, 0)).events.map((e) => e.data.status);

describe('task runner: progress and output', () => {
  it("writes a running task's record for progress at most once a second, while its event log has every step", async () => {
    const { tasks, dir } = service();
    const step = gate();
    const finish = gate();
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: async (ctx) => {
        ctx.progress(10, 'one');
        await step.promise;
        ctx.progress(20, 'two');
        ctx.progress(30, 'three');
        await finish.promise;
        return 'done';
      },
    });
    // What is on disk, read through a connection of its own (the service answers live tasks from memory).
    const disk = new SqliteStore(path.join(dir, 'hangar.db'));
    cleanups.push(() => disk.close());
    const stored = async () => ((await disk.collection<Task>('tasks').get(task.id)) as Task).progress;
    await waitForStatus(() => tasks.get(task.id, { principal }), ['working']);
    await new Promise((r) => setTimeout(r, 50));
    expect(await stored()).toEqual({ percent: 10, message: 'one' });
    step.open();
    await new Promise((r) => setTimeout(r, 100));
    // Within the second: the record still says what its first write said; the log has all three.
    expect(await stored()).toEqual({ percent: 10, message: 'one' });
    const progress = (await tasks.replay(task.id, 0)).events.filter((e) => e.data.type === 'progress').map((e) => e.data.progress.percent);
    expect(progress).toEqual([10, 20, 30]);
    // Then one write brings it up to the last step.
    await new Promise((r) => setTimeout(r, PROGRESS_SAVE_MS));
    expect(await stored()).toEqual({ percent: 30, message: 'three' });
    finish.open();
    expect(await waitForStatus(() => tasks.get(task.id, { principal }), ['completed'])).toMatchObject({ result: 'done' });
    expect(await stored()).toEqual({ percent: 100, message: 'completed' });
  });

  it('clamps progress to 0-100, keeps the last message when none is given, and logs each step', async () => {
    const { tasks } = service();
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: (ctx) => {
        ctx.progress(150, 'over');
        ctx.progress(-20, 'under');
        ctx.progress(40);
        ctx.progress(60.5, 'on');
      },
    });
    const done = await waitForStatus(() => tasks.get(task.id), ['completed', 'failed']);
    expect(done.status).toBe('completed');
    const { events } = await tasks.replay(task.id, 0);
    expect(events.filter((e) => e.data.type === 'progress').map((e) => e.data.progress)).toEqual([
      { percent: 100, message: 'over' },
      { percent: 0, message: 'under' },
      { percent: 40, message: 'under' },
      { percent: 60.5, message: 'on' },
    ]);
  });

  it('a progress percent that is not a number fails the task with a TypeError, and nothing is logged for it', async () => {
    const { tasks } = service();
    for (const bad of [Number.NaN, '50']) {
      const task = await tasks.submit({
        kind: 'adhoc',
        target: 'x',
        principal,
        run: (ctx) => {
          ctx.progress(bad as number, 'bad');
          return 'not reached';
        },
      });
      const done = await waitForStatus(() => tasks.get(task.id), ['completed', 'failed']);
      expect(done).toMatchObject({ status: 'failed', error: 'progress percent must be a number', result: null });
      expect((await tasks.replay(task.id, 0)).events.map((e) => e.data.type)).toEqual(['status', 'status', 'status']);
    }
  });

  it('the working status starts at the progress it had, with the message "working"', async () => {
    const { tasks } = service();
    const hold = gate();
    const task = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => hold.promise });
    const working = await waitForStatus(() => tasks.get(task.id), ['working']);
    expect(working.progress).toEqual({ percent: 0, message: 'working' });
    expect(working.attempts).toBe(1);
    expect(working.started_at).not.toBeNull();
    expect(working.finished_at).toBeNull();
    hold.open();
    const done = await waitForStatus(() => tasks.get(task.id), ['completed']);
    expect(done.attempts).toBe(1);
    expect(done.started_at).toBe(working.started_at);
  });

  it('progress and output after a cancel are dropped: the log ends at canceled and the task keeps its state', async () => {
    const { tasks } = service();
    let context!: TaskContext;
    const started = gate();
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: (ctx) => {
        context = ctx;
        ctx.progress(30, 'a third');
        started.open();
        return new Promise(() => {});
      },
    });
    await started.promise;
    await tasks.cancel(task.id);
    context.progress(90, 'too late');
    context.emit({ late: true });
    // NaN would throw if the call still counted; a closed task ignores it before looking.
    expect(() => context.progress(Number.NaN)).not.toThrow();
    await new Promise((r) => setTimeout(r, 30));
    const after = await tasks.get(task.id);
    expect(after).toMatchObject({ status: 'canceled', error: 'canceled by request', progress: { percent: 30, message: 'canceled' } });
    const { events } = await tasks.replay(task.id, 0);
    expect(events.map((e) => [e.data.type, e.data.status])).toEqual([
      ['status', 'submitted'],
      ['status', 'working'],
      ['progress', 'working'],
      ['status', 'canceled'],
    ]);
    expect(events.at(-1)!.data.error).toBe('canceled by request');
    expect(events.at(-1)!.data.result).toBeUndefined();
  });

  it('the context a work function gets is a frozen copy of its task as it started', async () => {
    const { tasks } = service();
    let seen: TaskContext['task'] | undefined;
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      input: { n: 1 },
      principal,
      run: (ctx) => {
        seen = ctx.task;
        ctx.progress(50, 'half');
        return Object.isFrozen(ctx.task);
      },
    });
    const done = await waitForStatus(() => tasks.get(task.id), ['completed', 'failed']);
    expect(done.result).toBe(true);
    expect(seen).toMatchObject({ id: task.id, status: 'working', attempts: 1, progress: { percent: 0, message: 'working' } });
  });
});

describe('task runner: how work settles', () => {
  it('SettleAs input-required stores the result it names, no error, and its status event carries that result', async () => {
    const { tasks } = service();
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: () => {
        throw new SettleAs('input-required', { result: { question: 'which one?' } });
      },
    });
    const waiting = await waitForStatus(() => tasks.get(task.id), ['input-required', 'failed', 'completed']);
    expect(waiting).toMatchObject({ status: 'input-required', result: { question: 'which one?' }, error: null });
    expect(waiting.progress).toEqual({ percent: 0, message: 'input-required' });
    expect(waiting.finished_at).not.toBeNull();
    const { events } = await tasks.replay(task.id, 0);
    expect(events.at(-1)!.data).toMatchObject({ status: 'input-required', result: { question: 'which one?' } });
    expect(events.at(-1)!.data.error).toBeUndefined();
    expect(await tasks.result(task.id)).toEqual({ id: task.id, status: 'input-required', result: { question: 'which one?' }, error: null });
  });

  it('SettleAs with a result that is not JSON fails the task saying so, as a completed result does, instead of leaving it working', async () => {
    const { tasks } = service();
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const settling = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: () => {
        throw new SettleAs('input-required', { result: cyclic });
      },
    });
    const completing = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => cyclic });
    for (const id of [settling.id, completing.id]) {
      const done = await waitForStatus(() => tasks.get(id), ['input-required', 'failed', 'completed']);
      expect(done).toMatchObject({
        status: 'failed',
        result: null,
        error: expect.stringMatching(/^task result is not JSON-serialisable: /),
      });
      expect((await tasks.replay(id, 0)).events.at(-1)!.data).toMatchObject({ status: 'failed' });
    }
  });

  it('SettleAs canceled ends canceled with its error and no result, the status event carrying the error', async () => {
    const { tasks } = service();
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: () => {
        throw new SettleAs('canceled', { error: 'the person said no' });
      },
    });
    const done = await waitForStatus(() => tasks.get(task.id), ['canceled', 'failed', 'completed']);
    expect(done).toMatchObject({ status: 'canceled', error: 'the person said no', result: null });
    expect(done.progress).toEqual({ percent: 0, message: 'canceled' });
    const last = (await tasks.replay(task.id, 0)).events.at(-1)!.data;
    expect(last).toMatchObject({ status: 'canceled', error: 'the person said no' });
    expect(last.result).toBeUndefined();
  });

  it('a failed task keeps the progress it reached and shows its error as the message; a completed one is at 100', async () => {
    const { tasks } = service();
    const bad = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: (ctx) => {
        ctx.progress(70, 'most of it');
        throw new Error('the disk is full');
      },
    });
    const failed = await waitForStatus(() => tasks.get(bad.id), ['failed', 'completed']);
    expect(failed).toMatchObject({
      status: 'failed',
      error: 'the disk is full',
      result: null,
      progress: { percent: 70, message: 'the disk is full' },
    });
    const last = (await tasks.replay(bad.id, 0)).events.at(-1)!.data;
    expect(last).toMatchObject({
      type: 'status',
      status: 'failed',
      error: 'the disk is full',
      progress: { percent: 70, message: 'the disk is full' },
    });
    expect(last.result).toBeUndefined();

    const good = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: (ctx) => {
        ctx.progress(10, 'started');
        return 'ok';
      },
    });
    const done = await waitForStatus(() => tasks.get(good.id), ['failed', 'completed']);
    expect(done).toMatchObject({ status: 'completed', result: 'ok', error: null, progress: { percent: 100, message: 'completed' } });
    expect((await tasks.replay(good.id, 0)).events.at(-1)!.data).toMatchObject({ status: 'completed', result: 'ok' });
  });

  it('work returning undefined completes with a null result', async () => {
    const { tasks } = service();
    const task = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => undefined });
    const done = await waitForStatus(() => tasks.get(task.id), ['failed', 'completed']);
    expect(done).toMatchObject({ status: 'completed', result: null, error: null });
  });

  it('a throw after a cancel is not recorded: no failed status, the error is the cancel reason', async () => {
    const { tasks } = service({ concurrency: 1 });
    const started = gate();
    let fail!: (err: Error) => void;
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: () =>
        new Promise((_, reject) => {
          fail = reject;
          started.open();
        }),
    });
    await started.promise;
    await tasks.cancel(task.id);
    fail(new Error('late failure'));
    fail = () => {};
    // The slot went free at the cancel, and the late throw does not take another one.
    const next = await tasks.submit({ kind: 'adhoc', target: 'y', principal, run: () => 'next' });
    await waitForStatus(() => tasks.get(next.id), ['completed']);
    expect(await tasks.get(task.id)).toMatchObject({ status: 'canceled', error: 'canceled by request', result: null });
    expect(await statusesOf(tasks, task.id)).toEqual(['submitted', 'working', 'canceled']);
    expect(tasks.load()).toEqual({ queued: 0, running: 0, concurrency: 1, abandoned: 0 });
  });
});

describe('task runner: slots and order', () => {
  it('a board that has run nothing reports nothing queued or running', async () => {
    const { tasks } = service({ concurrency: 3 });
    await tasks.start();
    expect(tasks.load()).toEqual({ queued: 0, running: 0, concurrency: 3, abandoned: 0 });
  });

  it('runs at most `concurrency` at once, the rest in submission order, and counts each in load()', async () => {
    const { tasks } = service({ concurrency: 2 });
    const holds = [gate(), gate(), gate(), gate()];
    const started: number[] = [];
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const task = await tasks.submit({
        kind: 'adhoc',
        target: 'x',
        principal,
        run: () => {
          started.push(i);
          return holds[i]!.promise;
        },
      });
      ids.push(task.id);
    }
    await waitForStatus(() => tasks.get(ids[1]!), ['working']);
    await new Promise((r) => setTimeout(r, 20));
    expect(started).toEqual([0, 1]);
    expect(tasks.load()).toEqual({ queued: 2, running: 2, concurrency: 2, abandoned: 0 });
    expect((await tasks.get(ids[2]!)).status).toBe('submitted');

    holds[1]!.open();
    await waitForStatus(() => tasks.get(ids[2]!), ['working']);
    await new Promise((r) => setTimeout(r, 20));
    expect(started).toEqual([0, 1, 2]);
    expect(tasks.load()).toEqual({ queued: 1, running: 2, concurrency: 2, abandoned: 0 });

    for (const hold of holds) hold.open();
    for (const id of ids) await waitForStatus(() => tasks.get(id), ['completed']);
    for (let i = 0; i < 100 && tasks.load().running > 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(started).toEqual([0, 1, 2, 3]);
    expect(tasks.load()).toEqual({ queued: 0, running: 0, concurrency: 2, abandoned: 0 });
  });

  it('a cancelled queued task gives its place to the next one, which starts when a slot frees', async () => {
    const { tasks } = service({ concurrency: 1 });
    const hold = gate();
    const ran: string[] = [];
    const first = await tasks.submit({ kind: 'adhoc', target: 'a', principal, run: () => hold.promise });
    const second = await tasks.submit({ kind: 'adhoc', target: 'b', principal, run: () => void ran.push('b') });
    const third = await tasks.submit({ kind: 'adhoc', target: 'c', principal, run: () => void ran.push('c') });
    const outcome = await tasks.cancel(second.id);
    expect(outcome).toMatchObject({ canceled: true, message: 'task canceled before it started', task: { status: 'canceled' } });
    expect(tasks.load()).toMatchObject({ queued: 1, running: 1 });
    hold.open();
    await waitForStatus(() => tasks.get(third.id), ['completed']);
    expect(ran).toEqual(['c']);
    expect(await tasks.get(second.id)).toMatchObject({ status: 'canceled', attempts: 0, started_at: null });
    expect(await statusesOf(tasks, second.id)).toEqual(['submitted', 'canceled']);
    expect((await tasks.get(first.id)).status).toBe('completed');
  });

  it('work that ignores its cancel is counted as abandoned until it returns, and holds no slot', async () => {
    const { tasks } = service({ concurrency: 1 });
    const started = gate();
    const release = gate<string>();
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: () => {
        started.open();
        return release.promise;
      },
    });
    await started.promise;
    await tasks.cancel(task.id);
    expect(tasks.load()).toEqual({ queued: 0, running: 0, concurrency: 1, abandoned: 1 });
    release.open('late');
    await new Promise((r) => setTimeout(r, 20));
    expect(tasks.load().abandoned).toBe(0);
    expect(await tasks.get(task.id)).toMatchObject({ status: 'canceled', result: null });
  });
});

describe('task runner: stopping', () => {
  it('after stop nothing starts, submit answers 503, and running work that then returns is not recorded', async () => {
    const { tasks, dir } = service({ concurrency: 1 });
    const started = gate();
    const release = gate<string>();
    let queuedRan = false;
    let signal!: AbortSignal;
    const running = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: async (ctx) => {
        signal = ctx.signal;
        ctx.progress(10, 'first step');
        // A second step a turn later is written too, not only the first of the task's life.
        await new Promise((r) => setTimeout(r, 20));
        ctx.progress(20, 'begun');
        started.open();
        return release.promise.then((v) => {
          ctx.progress(80, 'after stop');
          ctx.emit('after stop');
          return v;
        });
      },
    });
    const queued = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: () => {
        queuedRan = true;
      },
    });
    await started.promise;
    // Progress is written behind the work, on the next turn of the loop: let it land first.
    await new Promise((r) => setTimeout(r, 30));
    expect(signal.aborted).toBe(false);
    await tasks.stop();
    // The work is told Hangar is stopping.
    expect(signal.aborted).toBe(true);
    expect((signal.reason as Error).message).toBe('Hangar is stopping');
    const refused = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => 1 }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(HangarError);
    expect((refused as HangarError).status).toBe(503);
    release.open('done after stop');
    await new Promise((r) => setTimeout(r, 50));
    expect(queuedRan).toBe(false);

    // What is on disk: the running task still `working` (a restart calls it interrupted), the
    // queued one still `submitted`, and no event after the stop.
    const reader = openService(dir);
    cleanups.push(() => reader.stop());
    expect(await reader.get(running.id)).toMatchObject({ status: 'working', result: null, progress: { percent: 20, message: 'begun' } });
    expect(await reader.get(queued.id)).toMatchObject({ status: 'submitted', attempts: 0 });
    const { events } = await reader.replay(running.id, 0);
    expect(events.map((e) => [e.data.type, e.data.status])).toEqual([
      ['status', 'submitted'],
      ['status', 'working'],
      ['progress', 'working'],
      ['progress', 'working'],
    ]);
  });

  it('a task deleted by its own work right after a progress call stays deleted (the queued progress write is dropped)', async () => {
    const { tasks } = service();
    let deleting: Promise<void> | undefined;
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: (ctx) => {
        ctx.progress(10, 'going');
        deleting = tasks.delete(ctx.task.id);
        return new Promise(() => {});
      },
    });
    while (!deleting) await new Promise((r) => setTimeout(r, 5));
    await deleting;
    await new Promise((r) => setTimeout(r, 30));
    await expect(tasks.get(task.id)).rejects.toMatchObject({ status: 404 });
    expect((await tasks.list()).total).toBe(0);
  });
});

describe('task runner: resumed work', () => {
  it('resumed work runs at once in a slot of its own, settles the task again, and frees the slot for the queue', async () => {
    const { tasks } = service({ concurrency: 1 });
    const asked = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: () => {
        throw new SettleAs('input-required', { result: { question: 'go on?' } });
      },
    });
    await waitForStatus(() => tasks.get(asked.id), ['input-required']);
    const hold = gate();
    const resumed = await tasks.resume(asked.id, {}, async (ctx) => {
      ctx.progress(50, 'answering');
      await hold.promise;
      return { answer: 'yes' };
    });
    expect(resumed.task).toMatchObject({ status: 'working', attempts: 1, result: { question: 'go on?' } });
    // The resumed work holds the one slot: a new task waits behind it.
    const next = await tasks.submit({ kind: 'adhoc', target: 'y', principal, run: () => 'next' });
    await new Promise((r) => setTimeout(r, 30));
    expect(tasks.load()).toEqual({ queued: 1, running: 1, concurrency: 1, abandoned: 0 });
    expect((await tasks.get(next.id)).status).toBe('submitted');
    hold.open();
    const done = await resumed.done;
    expect(done).toMatchObject({
      status: 'completed',
      result: { answer: 'yes' },
      error: null,
      progress: { percent: 100, message: 'completed' },
    });
    expect(await waitForStatus(() => tasks.get(next.id), ['completed', 'failed'])).toMatchObject({ status: 'completed', result: 'next' });
    // The slot is given back once the settle is written, a moment after the status is readable.
    for (let i = 0; i < 100 && tasks.load().running > 0; i++) await new Promise((r) => setTimeout(r, 5));
    expect(tasks.load()).toEqual({ queued: 0, running: 0, concurrency: 1, abandoned: 0 });
    expect(await statusesOf(tasks, asked.id)).toEqual(['submitted', 'working', 'input-required', 'working', 'working', 'completed']);
  });
});

describe('task runner: output after a stop', () => {
  it('output a stopped task emits is not written, so the next start does not find it in the log', async () => {
    const { tasks, dir } = service();
    const started = gate();
    const release = gate();
    tasks.registerKind('steps', {
      run: async (ctx) => {
        started.open();
        await release.promise;
        ctx.emit('after stop');
      },
    });
    const task = await tasks.submit({ kind: 'steps', target: 'x', principal });
    await started.promise;
    await tasks.stop();
    release.open();
    await new Promise((r) => setTimeout(r, 50));

    const next = openService(dir);
    cleanups.push(() => next.stop());
    next.registerKind('steps', { run: () => undefined });
    const after = await waitForStatus(() => next.get(task.id), ['failed']);
    expect(after.error).toMatch(/^interrupted: Hangar stopped while the task was working/);
    expect(await statusesOf(next, task.id)).toEqual(['submitted', 'working', 'failed']);
  });
});

describe('task runner: a store that fails', () => {
  it('a finish and a start that cannot be written are logged with the task, and the runner goes on', async () => {
    const { dir, cleanup } = tempDir();
    cleanups.push(cleanup);
    const { SqliteStore } = await import('../../core/storage/sqlite-store.js');
    const { TaskService } = await import('../../core/tasks/service.js');
    const store = new SqliteStore(path.join(dir, 'hangar.db'));
    const logged: Array<[string, Record<string, unknown> | undefined]> = [];
    const tasks = new TaskService({
      store,
      concurrency: 1,
      log: { warn: () => {}, error: (message, fields) => logged.push([message, fields]) },
    });
    const hold = gate();
    const first = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => hold.promise });
    const second = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => 'never stored' });
    await waitForStatus(() => tasks.get(first.id), ['working']);
    store.close();
    hold.open();
    const deadline = Date.now() + 10_000;
    while (logged.filter(([m]) => m === 'task runner could not record a task outcome').length < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 10));
    const outcomes = logged.filter(([m]) => m === 'task runner could not record a task outcome');
    expect(outcomes.map(([, f]) => f?.task)).toEqual([first.id, second.id]);
    expect(outcomes.every(([, f]) => typeof f?.error === 'string' && (f.error as string).length > 0)).toBe(true);
    expect(tasks.load()).toMatchObject({ running: 0, queued: 0 });
    await tasks.stop().catch(() => {});
  });
});
