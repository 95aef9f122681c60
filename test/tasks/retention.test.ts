import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../core/storage/sqlite-store.js';
import { TaskService } from '../../core/tasks/service.js';
import { eventually, startTestServer, type TestServer } from '../support/server.js';
import { gate, tempDir, waitForStatus } from './helpers.js';

/** Finished tasks older than `tasks.retention` go, with their events; nothing else does. */
const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

function open(options: ConstructorParameters<typeof TaskService>[0] extends infer O ? Partial<O> : never = {}) {
  const { dir, cleanup } = tempDir();
  const store = new SqliteStore(path.join(dir, 'hangar.db'));
  const tasks = new TaskService({ store, ...options });
  cleanups.push(cleanup, () => tasks.stop());
  return { tasks, store };
}

const principal = 'local';

describe('task retention', () => {
  it('prunes tasks that finished before the cutoff, with their events; running, queued and newer ones stay', async () => {
    const { tasks, store } = open({ concurrency: 1 });
    const old = [];
    for (let i = 0; i < 3; i++) old.push(await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: (ctx) => ctx.emit(i) }));
    for (const t of old) await waitForStatus(() => tasks.get(t.id), ['completed']);
    const failed = await tasks.submit({
      kind: 'adhoc',
      target: 'x',
      principal,
      run: () => {
        throw new Error('no');
      },
    });
    await waitForStatus(() => tasks.get(failed.id), ['failed']);
    const cutoff = new Date(Date.now() + 1);
    await new Promise((r) => setTimeout(r, 5));
    const held = gate();
    const running = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => held.promise });
    const queued = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => undefined });
    await waitForStatus(() => tasks.get(running.id), ['working']);

    expect(await tasks.pruneFinished(cutoff)).toBe(4);
    const left = (await tasks.list({ limit: 50 })).tasks.map((t) => t.id).sort();
    expect(left).toEqual([running.id, queued.id].sort());
    expect(await store.collection<{ task_id: string }>('task_events').query({ where: { task_id: old[0]!.id } })).toEqual({
      items: [],
      total: 0,
    });
    held.open();
    await waitForStatus(() => tasks.get(queued.id), ['completed']);
    // Finished after the cutoff: kept.
    expect(await tasks.pruneFinished(cutoff)).toBe(0);
    expect((await tasks.list({ limit: 50 })).total).toBe(2);
  });

  it('runs in the background with the tasks.retention setting', async () => {
    const { tasks } = open({ retentionMs: 1, pruneEveryMs: 20 });
    const done = await tasks.submit({ kind: 'adhoc', target: 'x', principal, run: () => 'ok' });
    // Not polled until completed: with a 1 ms retention the background prune may remove it between
    // two polls. Only a finished task is pruned, so an empty board says it finished and went.
    await eventually(async () => (await tasks.list({})).total === 0);
    await expect(tasks.get(done.id)).rejects.toMatchObject({ status: 404 });
  });

  it('a bad tasks.retention is a clear setting error; 0 keeps every task', async () => {
    await expect(startTestServer({ settings: { tasks: { retention: '30 days' } } as never })).rejects.toThrow(
      /"retention"[\s\S]*expected a duration such as 30d/,
    );
    const server: TestServer = await startTestServer({ settings: { watch: false, tasks: { retention: '0' } } as never });
    cleanups.push(() => server.stop());
    expect(server.ctx.settings.tasks.retention).toBe('0');
  });
});
