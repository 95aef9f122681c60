import { afterEach, describe, expect, it } from 'vitest';
import type { Task } from '../../core/tasks/schemas.js';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';
import { openService, tempDir, waitForStatus } from './helpers.js';

const principal = 'local';
const cleanups: Array<() => void | Promise<void>> = [];
afterEach(async () => {
  for (const fn of cleanups.splice(0).reverse()) await fn();
});

describe('a cancelled task frees its slot at once, whether or not its work returns', () => {
  it('six never-returning tasks cancelled, then a new task completes', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const tasks = openService(tmp.dir, { concurrency: 4 });
    cleanups.push(() => tasks.stop());
    // Work that ignores its signal and never settles: the worst a drop-in can do without a loop.
    const hung: Task[] = [];
    for (let i = 0; i < 6; i++)
      hung.push(await tasks.submit({ kind: 'adhoc', target: 'hang', principal, run: () => new Promise(() => {}) }));
    await waitForStatus(() => tasks.get(hung[3]!.id), ['working']);
    expect(tasks.load()).toMatchObject({ running: 4, queued: 2 });

    for (const task of hung) expect((await tasks.cancel(task.id)).task.status).toBe('canceled');
    // The two queued ones started in the freed slots before their turn to be cancelled came.
    expect(tasks.load()).toEqual({ queued: 0, running: 0, concurrency: 4, abandoned: 6 });

    const next = await tasks.submit({ kind: 'adhoc', target: 'ok', principal, run: async () => 'answered' });
    const done = await waitForStatus(() => tasks.get(next.id), ['completed', 'failed']);
    expect(done).toMatchObject({ status: 'completed', result: 'answered' });
  });

  it('a late result of a cancelled task is discarded, never recorded', async () => {
    const tmp = tempDir();
    cleanups.push(tmp.cleanup);
    const tasks = openService(tmp.dir, { concurrency: 1 });
    cleanups.push(() => tasks.stop());
    let finishLate!: (value: unknown) => void;
    const task = await tasks.submit({
      kind: 'adhoc',
      target: 'late',
      principal,
      run: () => new Promise((resolve) => (finishLate = resolve)),
    });
    await waitForStatus(() => tasks.get(task.id), ['working']);
    await tasks.cancel(task.id);
    finishLate({ late: true });
    const after = await tasks.submit({ kind: 'adhoc', target: 'next', principal, run: async () => 'next' });
    await waitForStatus(() => tasks.get(after.id), ['completed']);
    expect(await tasks.get(task.id)).toMatchObject({ status: 'canceled', result: null, error: 'canceled by request' });
    expect(tasks.load().abandoned).toBe(0);
    const { events } = await tasks.replay(task.id, 0);
    expect(events.map((e) => e.data.status)).toEqual(['submitted', 'working', 'canceled']);
  });
});

describe('over HTTP: agents that never return', () => {
  let server: TestServer;
  afterEach(() => server?.stop());

  it('six hung /invoke/async runs cancelled on the board, then a new /invoke/async completes', { timeout: 60_000 }, async () => {
    server = await startTestServer({
      settings: { watch: false },
      files: {
        'agents/stuck.ts': agentSource(`{ description: 'Never answers and ignores its signal', run: () => new Promise(() => {}) }`),
        'agents/quick.ts': agentSource(`{ run: async (input) => ({ response: 'quick: ' + input.query }) }`),
      },
    });
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await server.request('/api/v1/stuck/invoke/async', { method: 'POST', json: { query: `hang ${i}` } });
      expect(res.status).toBe(202);
      ids.push(res.body.task_id ?? res.body.id);
    }
    await eventually(async () => (await server.request(`/api/v1/tasks/${ids[3]}`)).body.status === 'working');
    for (const id of ids) {
      const res = await server.request(`/api/v1/tasks/${id}/cancel`, { method: 'POST' });
      expect(res.status).toBe(200);
      expect(res.body.task?.status ?? res.body.status).toBe('canceled');
    }

    const res = await server.request('/api/v1/quick/invoke/async', { method: 'POST', json: { query: 'hello' } });
    const id = res.body.task_id ?? res.body.id;
    const done = await eventually(async () => {
      const task = (await server.request(`/api/v1/tasks/${id}`)).body;
      return task.status === 'completed' || task.status === 'failed' ? task : undefined;
    }, 20_000);
    expect(done.status).toBe('completed');
    expect(done.result).toMatchObject({ response: 'quick: hello' });
  });
});
