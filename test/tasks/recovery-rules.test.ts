import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import type { Task, TaskStatus } from '../../core/tasks/schemas.js';
import type { TaskService } from '../../core/tasks/service.js';
import { gate, openService, tempDir, waitForStatus } from './helpers.js';

/**
 * Restart recovery at its edges (#30): which stored tasks run again and in which order, the exact
 * end state of those that cannot, and what waiting for a kind that registers late (or never) does.
 * Stored tasks are written straight into the store, so their order, statuses and creation times are
 * the test's choice: the store answers in id order, and the rule (creation time, then id) must not.
 */
const principal = 'local';
const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

function dataDir(): string {
  const tmp = tempDir();
  cleanups.push(tmp.cleanup);
  return tmp.dir;
}

function service(dir: string, options: Parameters<typeof openService>[1] = {}): TaskService {
  const tasks = openService(dir, options);
  cleanups.push(() => tasks.stop());
  return tasks;
}

/** Tasks as a previous run left them on disk (no events: that run's log is not what is tested). */
function storeTasks(dir: string, tasks: Array<{ id: string; kind: string; status: TaskStatus; created_at: string; attempts?: number }>) {
  const store = new SqliteStore(path.join(dir, 'hangar.db'));
  const records = store.collection<Task>('tasks', { shards: 8 });
  return (async () => {
    for (const t of tasks) {
      await records.put(t.id, {
        id: t.id,
        kind: t.kind,
        target: 'x',
        input: { id: t.id },
        principal,
        status: t.status,
        progress: t.status === 'working' ? { percent: 40, message: 'working' } : { percent: 0, message: 'queued' },
        result: null,
        error: null,
        metadata: {},
        created_at: t.created_at,
        updated_at: t.created_at,
        started_at: t.status === 'working' ? t.created_at : null,
        finished_at: null,
        last_sequence: 0,
        attempts: t.attempts ?? (t.status === 'working' ? 1 : 0),
      });
    }
    await store.flush();
    store.close();
  })();
}

const T0 = '2025-01-01T00:00:00.000Z';
const T1 = '2025-01-01T00:00:01.000Z';

describe('task recovery: what runs again', () => {
  it('re-queues by creation time, then id, not in the order the store answers', async () => {
    const dir = dataDir();
    await storeTasks(dir, [
      { id: 'task-a', kind: 'job', status: 'submitted', created_at: T1 },
      { id: 'task-b', kind: 'job', status: 'submitted', created_at: T1 },
      { id: 'task-c', kind: 'job', status: 'working', created_at: T0 },
    ]);
    const tasks = service(dir, { concurrency: 1 });
    const ran: string[] = [];
    tasks.registerKind('job', { idempotent: true, run: (ctx) => void ran.push(ctx.task.id) });
    await tasks.start();
    for (const id of ['task-a', 'task-b', 'task-c']) await waitForStatus(() => tasks.get(id), ['completed', 'failed']);
    expect(ran).toEqual(['task-c', 'task-a', 'task-b']);
  });

  it('a working task of an idempotent kind goes back to submitted (re-queued after a restart) and runs again', async () => {
    const dir = dataDir();
    await storeTasks(dir, [{ id: 'task-w', kind: 'job', status: 'working', created_at: T0 }]);
    const tasks = service(dir);
    const hold = gate();
    tasks.registerKind('job', { idempotent: true, run: () => hold.promise.then(() => 'again') });
    await tasks.start();
    const working = await waitForStatus(() => tasks.get('task-w'), ['working', 'completed', 'failed']);
    expect(working).toMatchObject({ status: 'working', attempts: 2 });
    hold.open();
    const done = await waitForStatus(() => tasks.get('task-w'), ['completed', 'failed']);
    expect(done).toMatchObject({ status: 'completed', result: 'again', attempts: 2, error: null });
    const { events } = await tasks.replay('task-w', 0);
    expect(events.map((e) => [e.seq, e.data.status])).toEqual([
      [1, 'submitted'],
      [2, 'working'],
      [3, 'completed'],
    ]);
    expect(events[0]!.data).toMatchObject({
      type: 'status',
      status: 'submitted',
      progress: { percent: 0, message: 're-queued after a restart' },
    });
  });

  it('a submitted task runs again whatever its kind says of idempotence; a working one of a kind that is not fails as interrupted', async () => {
    const dir = dataDir();
    await storeTasks(dir, [
      { id: 'task-q', kind: 'once', status: 'submitted', created_at: T0 },
      { id: 'task-w', kind: 'once', status: 'working', created_at: T1 },
    ]);
    const tasks = service(dir);
    const ran: string[] = [];
    tasks.registerKind('once', { idempotent: false, run: (ctx) => void ran.push(ctx.task.id) });
    await tasks.start();
    const queued = await waitForStatus(() => tasks.get('task-q'), ['completed', 'failed']);
    expect(queued).toMatchObject({ status: 'completed', attempts: 1 });
    // Its log starts where the stored one ended: no re-queue event for a task that never started.
    expect((await tasks.replay('task-q', 0)).events.map((e) => e.data.status)).toEqual(['working', 'completed']);

    const failed = await waitForStatus(() => tasks.get('task-w'), ['completed', 'failed']);
    expect(failed).toMatchObject({
      status: 'failed',
      attempts: 1,
      result: null,
      error: 'interrupted: Hangar stopped while the task was working; its work is not idempotent, so it was not restarted',
      progress: { percent: 40 },
    });
    expect(failed.finished_at).not.toBeNull();
    expect(ran).toEqual(['task-q']);
    expect((await tasks.replay('task-w', 0)).events.map((e) => e.data.status)).toEqual(['failed']);
  });
});

describe('task recovery: what is left alone', () => {
  it('settled tasks of a registered kind are not touched at start: completed, failed, canceled and input-required stay', async () => {
    const dir = dataDir();
    const settled: TaskStatus[] = ['completed', 'failed', 'canceled', 'input-required'];
    await storeTasks(
      dir,
      settled.map((status, i) => ({ id: `task-${status}`, kind: 'job', status, created_at: T0, attempts: i + 1 })),
    );
    const tasks = service(dir);
    const ran: string[] = [];
    tasks.registerKind('job', { run: (ctx) => void ran.push(ctx.task.id) });
    await tasks.start();
    await new Promise((r) => setTimeout(r, 100));
    for (const [i, status] of settled.entries()) {
      expect(await tasks.get(`task-${status}`)).toMatchObject({ status, attempts: i + 1, error: null });
      expect((await tasks.replay(`task-${status}`, 0)).events).toEqual([]);
    }
    expect(ran).toEqual([]);
  });
});

describe('task recovery: kinds that register late, or never', () => {
  it('a task waits for its own kind: another kind registering does not recover it, its own does', async () => {
    const dir = dataDir();
    await storeTasks(dir, [{ id: 'task-l', kind: 'late', status: 'submitted', created_at: T0 }]);
    const tasks = service(dir, { recoveryGraceMs: 60_000 });
    await tasks.start();
    const ran: string[] = [];
    tasks.registerKind('other', { run: () => void ran.push('other') });
    await new Promise((r) => setTimeout(r, 50));
    expect(await tasks.get('task-l')).toMatchObject({ status: 'submitted', attempts: 0 });
    expect(ran).toEqual([]);

    tasks.registerKind('late', { run: (ctx) => void ran.push(ctx.task.id) });
    const done = await waitForStatus(() => tasks.get('task-l'), ['completed', 'failed']);
    expect(done).toMatchObject({ status: 'completed', attempts: 1 });
    expect(ran).toEqual(['task-l']);
  });

  it('at the end of the grace period only what still waits fails, naming the status it had and why', async () => {
    const dir = dataDir();
    await storeTasks(dir, [
      { id: 'task-n', kind: 'never', status: 'submitted', created_at: T0 },
      { id: 'task-r', kind: 'ready', status: 'submitted', created_at: T1 },
    ]);
    const tasks = service(dir, { recoveryGraceMs: 300 });
    await tasks.start();
    const ran: string[] = [];
    tasks.registerKind('ready', { run: (ctx) => void ran.push(ctx.task.id) });
    expect((await waitForStatus(() => tasks.get('task-r'), ['completed', 'failed'])).status).toBe('completed');

    const failed = await waitForStatus(() => tasks.get('task-n'), ['completed', 'failed']);
    expect(failed).toMatchObject({
      status: 'failed',
      error:
        'interrupted: Hangar stopped while the task was submitted; no handler for kind "never" is registered, so its work could not be restarted',
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(await tasks.get('task-r')).toMatchObject({ status: 'completed', attempts: 1 });
    expect(ran).toEqual(['task-r']);
    // The kind arriving after the grace changes nothing: the task has settled.
    tasks.registerKind('never', { run: () => void ran.push('never') });
    await new Promise((r) => setTimeout(r, 50));
    expect(ran).toEqual(['task-r']);
    expect((await tasks.get('task-n')).status).toBe('failed');
  });

  it('a task waiting for its kind can be cancelled: it ends canceled and its kind registering later runs nothing', async () => {
    const dir = dataDir();
    await storeTasks(dir, [
      { id: 'task-c', kind: 'late', status: 'working', created_at: T0 },
      { id: 'task-d', kind: 'late', status: 'submitted', created_at: T1 },
    ]);
    const tasks = service(dir, { recoveryGraceMs: 60_000 });
    await tasks.start();
    const outcome = await tasks.cancel('task-c');
    expect(outcome).toMatchObject({
      canceled: true,
      message: 'task canceled before it was resumed after a restart',
      task: { status: 'canceled', error: 'canceled by request' },
    });
    await tasks.delete('task-d');
    await expect(tasks.get('task-d')).rejects.toMatchObject({ status: 404 });

    const ran: string[] = [];
    tasks.registerKind('late', { idempotent: true, run: (ctx) => void ran.push(ctx.task.id) });
    await new Promise((r) => setTimeout(r, 100));
    expect(ran).toEqual([]);
    expect(await tasks.get('task-c')).toMatchObject({ status: 'canceled', error: 'canceled by request' });
    // A second cancel finds it settled.
    expect(await tasks.cancel('task-c')).toMatchObject({ canceled: false, message: 'task already canceled; cancel changed nothing' });
  });

  it('with every kind registered before start nothing waits, so no grace timer fails anything later', async () => {
    const dir = dataDir();
    await storeTasks(dir, [{ id: 'task-h', kind: 'held', status: 'submitted', created_at: T0 }]);
    const tasks = service(dir, { recoveryGraceMs: 50 });
    const hold = gate();
    tasks.registerKind('held', { run: () => hold.promise.then(() => 'held') });
    await tasks.start();
    await waitForStatus(() => tasks.get('task-h'), ['working']);
    await new Promise((r) => setTimeout(r, 150));
    expect((await tasks.get('task-h')).status).toBe('working');
    hold.open();
    expect(await waitForStatus(() => tasks.get('task-h'), ['completed', 'failed'])).toMatchObject({ status: 'completed', result: 'held' });
  });
});

describe('task recovery: a store that fails', () => {
  async function failingBoard(kind: string) {
    const dir = dataDir();
    await storeTasks(dir, [{ id: 'task-f', kind, status: 'submitted', created_at: T0 }]);
    const { TaskService } = await import('../../core/tasks/service.js');
    const store = new SqliteStore(path.join(dir, 'hangar.db'));
    const logged: Array<[string, Record<string, unknown> | undefined]> = [];
    const tasks = new TaskService({
      store,
      recoveryGraceMs: 100,
      log: { warn: () => {}, error: (message, fields) => logged.push([message, fields]) },
    });
    await tasks.start();
    store.close();
    return { tasks, logged };
  }

  async function until(check: () => boolean) {
    for (let i = 0; i < 500 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  }

  it('a task the grace period cannot settle is logged with its id and the error', async () => {
    const { logged } = await failingBoard('never');
    await until(() => logged.length > 0);
    expect(logged).toEqual([['could not settle an interrupted task', { task: 'task-f', error: expect.stringMatching(/.+/) }]]);
  });

  it('a task a late kind cannot recover is logged with the kind and the error', async () => {
    const { tasks, logged } = await failingBoard('late');
    tasks.registerKind('late', { run: () => 'x' });
    await until(() => logged.length > 0);
    expect(logged[0]).toEqual(['task recovery failed', { kind: 'late', error: expect.stringMatching(/.+/) }]);
  });
});
