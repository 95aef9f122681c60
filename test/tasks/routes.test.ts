import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { TaskService } from '../../core/tasks/service.js';
import { eventually, startTestServer, type TestServer } from '../support/server.js';
import { readSse } from '../support/sse.js';
import { gate } from './helpers.js';

const servers: TestServer[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.stop();
});

async function boot(settings: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer & { tasks: TaskService }> {
  const server = await startTestServer({ settings: { watch: false, ...settings.settings }, ...settings });
  servers.push(server);
  return Object.assign(server, { tasks: server.ctx.services.get('tasks') });
}

/** A kind whose work the test drives: it emits `count` frames after `go` opens. */
function registerCounter(tasks: TaskService, go: Promise<void> = Promise.resolve()) {
  tasks.registerKind('test.count', {
    prepare: ({ input }) => {
      const count = (input as { count?: unknown })?.count;
      if (typeof count !== 'number') throw Object.assign(new Error('body.input.count: expected a number'), { status: 422 });
      return { input: { count } };
    },
    run: async (ctx) => {
      await go;
      const { count } = ctx.task.input as { count: number };
      for (let i = 1; i <= count; i++) {
        ctx.emit({ i });
        ctx.progress((i / count) * 100, `frame ${i}`);
      }
      return { frames: count };
    },
  });
}

describe('/api/v1/tasks board', () => {
  it('submits, polls, streams and collects a task', async () => {
    const server = await boot();
    registerCounter(server.tasks);
    const submit = await server.request('/api/v1/tasks', {
      method: 'POST',
      json: { kind: 'test.count', target: 'demo', input: { count: 3 } },
    });
    expect(submit.status).toBe(202);
    expect(submit.headers.get('location')).toBe(`/api/v1/tasks/${submit.body.id}`);
    expect(submit.body).toMatchObject({ kind: 'test.count', target: 'demo', status: 'submitted', principal: 'local' });

    const stream = await readSse(`${server.url}/api/v1/tasks/${submit.body.id}/events`);
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.done).toBe(true);
    // SSE id = sequence, contiguous from 1.
    expect(stream.frames.map((f) => Number(f.id))).toEqual(stream.frames.map((_, i) => i + 1));
    expect(stream.frames.every((f) => f.data.sequence === Number(f.id) && f.data.task_id === submit.body.id)).toBe(true);
    expect(stream.frames.at(-1)!.data).toMatchObject({ type: 'status', status: 'completed', result: { frames: 3 } });
    expect(stream.frames.filter((f) => f.data.type === 'output').map((f) => f.data.data)).toEqual([{ i: 1 }, { i: 2 }, { i: 3 }]);

    const got = await server.request(`/api/v1/tasks/${submit.body.id}`);
    expect(got.body).toMatchObject({ status: 'completed', progress: { percent: 100 } });
    const result = await server.request(`/api/v1/tasks/${submit.body.id}/result`);
    expect(result).toMatchObject({ status: 200, body: { id: submit.body.id, status: 'completed', result: { frames: 3 }, error: null } });
  });

  it('refuses invalid submissions with 422 naming the field', async () => {
    const server = await boot();
    registerCounter(server.tasks);
    const noKind = await server.request('/api/v1/tasks', { method: 'POST', json: { target: 'x' } });
    expect(noKind.status).toBe(422);
    expect(noKind.body.detail).toMatch(/^body\.kind: /);
    const unknownKind = await server.request('/api/v1/tasks', { method: 'POST', json: { kind: 'nope', target: 'x' } });
    expect(unknownKind).toMatchObject({ status: 422, body: { detail: 'body.kind: no task handler is registered for kind "nope"' } });
    const badInput = await server.request('/api/v1/tasks', { method: 'POST', json: { kind: 'test.count', target: 'x', input: {} } });
    expect(badInput).toMatchObject({ status: 422, body: { detail: 'body.input.count: expected a number' } });
    const badQuery = await server.request('/api/v1/tasks?status=sleeping');
    expect(badQuery.status).toBe(422);
    expect(badQuery.body.detail).toMatch(/^query\.status/);
    expect((await server.request('/api/v1/tasks')).body.total).toBe(0);
  });

  it('answers 404 for unknown tasks on every route', async () => {
    const server = await boot();
    for (const [method, path] of [
      ['GET', '/api/v1/tasks/missing'],
      ['GET', '/api/v1/tasks/missing/events'],
      ['GET', '/api/v1/tasks/missing/result'],
      ['POST', '/api/v1/tasks/missing/cancel'],
      ['DELETE', '/api/v1/tasks/missing'],
    ] as const) {
      const res = await server.request(path, { method });
      expect([method, path, res.status, res.body]).toEqual([
        method,
        path,
        404,
        { detail: 'task missing not found', code: 'HANGAR_TASK_NOT_FOUND' },
      ]);
    }
  });

  it('lists with status, kind and target filters and paging', async () => {
    const server = await boot();
    registerCounter(server.tasks);
    const ids: string[] = [];
    for (const target of ['a', 'b', 'a']) {
      ids.push(
        (await server.request('/api/v1/tasks', { method: 'POST', json: { kind: 'test.count', target, input: { count: 1 } } })).body.id,
      );
    }
    await eventually(async () => (await server.request('/api/v1/tasks?status=completed')).body.total === 3);
    const page = await server.request('/api/v1/tasks?target=a&limit=1');
    expect(page.body).toMatchObject({ count: 1, total: 2, limit: 1, offset: 0 });
    expect(page.body.tasks[0].id).toBe(ids[2]);
    const second = await server.request('/api/v1/tasks?target=a&limit=1&offset=1');
    expect(second.body.tasks[0].id).toBe(ids[0]);
    expect((await server.request('/api/v1/tasks?kind=other')).body.total).toBe(0);
    expect((await server.request('/api/v1/tasks?status=working,submitted')).body.total).toBe(0);
  });

  it('resumes with Last-Event-ID mid-stream: replays N+1 onwards, then goes live to [DONE]', async () => {
    const server = await boot();
    const go = gate();
    registerCounter(server.tasks, go.promise);
    const { body: task } = await server.request('/api/v1/tasks', {
      method: 'POST',
      json: { kind: 'test.count', target: 'x', input: { count: 5 } },
    });

    // First connection: read the two status frames (submitted, working), then drop.
    const first = await readSse(`${server.url}/api/v1/tasks/${task.id}/events`, { stopAfter: (_f, all) => all.length === 2 });
    expect(first.frames.map((f) => f.data.status)).toEqual(['submitted', 'working']);
    expect(first.done).toBe(false);

    // Work continues while nobody listens.
    go.open();
    await eventually(async () => (await server.request(`/api/v1/tasks/${task.id}`)).body.status === 'completed');
    const resumed = await readSse(`${server.url}/api/v1/tasks/${task.id}/events`, { headers: { 'Last-Event-ID': '2' } });
    expect(resumed.frames[0]!.id).toBe('3');
    expect(resumed.frames.map((f) => Number(f.id))).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
    expect(resumed.done).toBe(true);

    const viaQuery = await readSse(`${server.url}/api/v1/tasks/${task.id}/events?since=11`);
    expect(viaQuery.frames.map((f) => f.id)).toEqual(['12', '13']);
    const bad = await server.request(`/api/v1/tasks/${task.id}/events?since=-1`);
    expect(bad).toMatchObject({ status: 422, body: { detail: 'query.since: expected a non-negative integer' } });
  });

  it('a live subscriber that resumes while work runs gets the replay and then live frames in order', async () => {
    const server = await boot();
    const go = gate();
    const step = gate();
    server.tasks.registerKind('test.twophase', {
      run: async (ctx) => {
        await go.promise;
        ctx.emit('one');
        await step.promise;
        ctx.emit('two');
        return 'end';
      },
    });
    const { body: task } = await server.request('/api/v1/tasks', { method: 'POST', json: { kind: 'test.twophase', target: 'x' } });
    go.open();
    await eventually(async () => (await server.request(`/api/v1/tasks/${task.id}`)).body.last_sequence === 3);
    const reading = readSse(`${server.url}/api/v1/tasks/${task.id}/events`, { headers: { 'Last-Event-ID': '1' } });
    await new Promise((r) => setTimeout(r, 50));
    step.open();
    const stream = await reading;
    expect(stream.frames.map((f) => [Number(f.id), f.data.type, f.data.data ?? f.data.status])).toEqual([
      [2, 'status', 'working'],
      [3, 'output', 'one'],
      [4, 'output', 'two'],
      [5, 'status', 'completed'],
    ]);
    expect(stream.done).toBe(true);
  });

  it('sends the truncated marker and the current task when the resume point was evicted', async () => {
    const server = await boot({ settings: { tasks: { eventsPerTask: 10 } } });
    registerCounter(server.tasks);
    const { body: task } = await server.request('/api/v1/tasks', {
      method: 'POST',
      json: { kind: 'test.count', target: 'x', input: { count: 20 } },
    });
    await eventually(async () => (await server.request(`/api/v1/tasks/${task.id}`)).body.status === 'completed');
    // 1 submitted + 1 working + 20 × (output + progress) + 1 completed = 43 events; 34..43 kept.
    const stream = await readSse(`${server.url}/api/v1/tasks/${task.id}/events`, { headers: { 'Last-Event-ID': '5' } });
    // The marker and the snapshot carry the id just before the first retained frame, so a client
    // that reconnects after them resumes there rather than at the evicted point.
    expect(stream.frames[0]).toEqual({ id: '33', data: { event: 'truncated', requested_after: 5, first_retained: 34 } });
    expect(stream.frames[1]!.id).toBe('33');
    expect(stream.frames[1]!.data).toMatchObject({ id: task.id, status: 'completed', last_sequence: 43 });
    expect(stream.frames.slice(2).map((f) => Number(f.id))).toEqual([34, 35, 36, 37, 38, 39, 40, 41, 42, 43]);
    expect(stream.done).toBe(true);
    const reconnected = await readSse(`${server.url}/api/v1/tasks/${task.id}/events`, {
      headers: { 'Last-Event-ID': stream.frames[1]!.id! },
    });
    expect(reconnected.frames.map((f) => Number(f.id))).toEqual([34, 35, 36, 37, 38, 39, 40, 41, 42, 43]);
    const inside = await readSse(`${server.url}/api/v1/tasks/${task.id}/events?since=40`);
    expect(inside.frames.map((f) => f.id)).toEqual(['41', '42', '43']);
  });

  it('cancel reaches the running work; cancelling again is a no-op with a clear answer', async () => {
    const server = await boot();
    const started = gate();
    let signalled = false;
    server.tasks.registerKind('test.forever', {
      run: (ctx) =>
        new Promise((resolve) => {
          ctx.signal.addEventListener('abort', () => {
            signalled = true;
            resolve('ignored');
          });
          started.open();
        }),
    });
    const { body: task } = await server.request('/api/v1/tasks', { method: 'POST', json: { kind: 'test.forever', target: 'x' } });
    await started.promise;
    const pending = await server.request(`/api/v1/tasks/${task.id}/result`);
    expect(pending.status).toBe(409);
    expect(pending.headers.get('retry-after')).toBe('1');

    const following = readSse(`${server.url}/api/v1/tasks/${task.id}/events`);
    const cancel = await server.request(`/api/v1/tasks/${task.id}/cancel`, { method: 'POST' });
    expect(cancel.status).toBe(200);
    expect(cancel.body).toMatchObject({ canceled: true, task: { status: 'canceled', error: 'canceled by request' } });
    expect(signalled).toBe(true);
    const stream = await following;
    expect(stream.done).toBe(true);
    expect(stream.frames.at(-1)!.data).toMatchObject({ type: 'status', status: 'canceled' });

    const again = await server.request(`/api/v1/tasks/${task.id}/cancel`, { method: 'POST' });
    expect(again.body).toMatchObject({
      canceled: false,
      message: 'task already canceled; cancel changed nothing',
      task: { status: 'canceled' },
    });
    const result = await server.request(`/api/v1/tasks/${task.id}/result`);
    expect(result.body).toEqual({ id: task.id, status: 'canceled', result: null, error: 'canceled by request' });
  });

  it('DELETE removes a task; afterwards it is 404', async () => {
    const server = await boot();
    registerCounter(server.tasks);
    const { body: task } = await server.request('/api/v1/tasks', {
      method: 'POST',
      json: { kind: 'test.count', target: 'x', input: { count: 1 } },
    });
    const res = await server.request(`/api/v1/tasks/${task.id}`, { method: 'DELETE' });
    expect(res).toMatchObject({ status: 200, body: { status: 'deleted', id: task.id } });
    expect((await server.request(`/api/v1/tasks/${task.id}`)).status).toBe(404);
    expect((await server.request(`/api/v1/tasks/${task.id}/events`)).status).toBe(404);
  });

  it("another principal's task is the same 404 as an unknown one", async () => {
    const server = await boot({ settings: { auth: { tokens: { alice: 'alice-token', bob: 'bob-token' } } } });
    registerCounter(server.tasks);
    const as = (token: string) => ({ authorization: `Bearer ${token}` });
    const { body: task } = await server.request('/api/v1/tasks', {
      method: 'POST',
      headers: as('alice-token'),
      json: { kind: 'test.count', target: 'x', input: { count: 1 } },
    });
    expect(task.principal).toBe('alice');
    const bob = await server.request(`/api/v1/tasks/${task.id}`, { headers: as('bob-token') });
    expect(bob).toMatchObject({ status: 404, body: { detail: `task ${task.id} not found` } });
    expect((await server.request(`/api/v1/tasks/${task.id}/events`, { headers: as('bob-token') })).status).toBe(404);
    expect((await server.request(`/api/v1/tasks/${task.id}/cancel`, { method: 'POST', headers: as('bob-token') })).status).toBe(404);
    expect((await server.request('/api/v1/tasks', { headers: as('bob-token') })).body.total).toBe(0);
    expect((await server.request(`/api/v1/tasks/${task.id}`, { headers: as('alice-token') })).status).toBe(200);
  });

  it('is described in /openapi.json', async () => {
    const server = await boot();
    const doc = await server.request('/openapi.json');
    expect(doc.status).toBe(200);
    const paths = doc.body.paths as Record<string, Record<string, unknown>>;
    expect(Object.keys(paths['/api/v1/tasks']!).sort()).toEqual(['get', 'post']);
    expect(paths['/api/v1/tasks/{id}/events']).toHaveProperty('get');
    expect(paths['/api/v1/tasks/{id}/result']).toHaveProperty('get');
    expect(paths['/api/v1/tasks/{id}/cancel']).toHaveProperty('post');
    expect(paths['/api/v1/tasks/{id}']).toHaveProperty('delete');
    expect(paths['/api/v1/{agent}/a2a/tasks']).toHaveProperty('post');
  });

  it('with tasks.enabled off the board answers 501', async () => {
    const server = await boot({ settings: { tasks: { enabled: false } } });
    for (const [method, path] of [
      ['POST', '/api/v1/tasks'],
      ['GET', '/api/v1/tasks'],
      ['GET', '/api/v1/tasks/x'],
      ['GET', '/api/v1/tasks/x/events'],
      ['POST', '/api/v1/tasks/x/cancel'],
    ] as const) {
      const res = await server.request(path, { method, ...(method === 'POST' ? { json: { kind: 'a', target: 'b' } } : {}) });
      expect([path, res.status]).toEqual([path, 501]);
      expect(res.body.detail).toMatch(/task subsystem is disabled/);
    }
  });

  it('a subscriber that stops reading is cut off without slowing the task or other subscribers', async () => {
    const server = await boot({ settings: { tasks: { eventsPerTask: 100_000 } } });
    const go = gate();
    const blob = 'x'.repeat(2048);
    server.tasks.registerKind('test.flood', {
      run: async (ctx) => {
        await go.promise;
        // ~16 MB of frames, more than the SSE per-connection buffer limit (8 MB), produced the way
        // a streaming agent does: in bursts, yielding to the event loop between them.
        for (let i = 0; i < 8000; i++) {
          ctx.emit({ i, blob });
          if (i % 50 === 49) await new Promise((r) => setImmediate(r));
        }
        return 'flooded';
      },
    });
    const { body: task } = await server.request('/api/v1/tasks', { method: 'POST', json: { kind: 'test.flood', target: 'x' } });

    // A raw client that sends the request and never reads.
    const { port } = new URL(server.url);
    const stalled = net.connect(Number(port), '127.0.0.1');
    stalled.on('error', () => {});
    await new Promise((r) => stalled.once('connect', r));
    stalled.write(`GET /api/v1/tasks/${task.id}/events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
    stalled.pause();
    let received = '';
    const ended = new Promise<void>((resolve) =>
      stalled.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
        // The chunked-encoding terminator: the server ended this response.
        if (received.endsWith('\r\n0\r\n\r\n')) resolve();
      }),
    );

    const healthy = readSse(`${server.url}/api/v1/tasks/${task.id}/events`, { timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 100));
    go.open();
    const stream = await healthy;
    expect(stream.done).toBe(true);
    expect(stream.frames.filter((f) => f.data.type === 'output')).toHaveLength(8000);
    expect((await server.request(`/api/v1/tasks/${task.id}`)).body.status).toBe('completed');
    // The stalled client's response was ended by the server rather than buffered without bound:
    // it has a prefix of the frames and no [DONE]; it can resume with Last-Event-ID.
    stalled.resume();
    await ended;
    stalled.destroy();
    expect(received).not.toContain('data: [DONE]');
    const frames = received.match(/^id: \d+$/gm)!.length;
    expect(frames).toBeGreaterThan(0);
    expect(frames).toBeLessThan(8000);
  });
});

describe('task board across a restart', () => {
  it('tasks working at shutdown come back failed as interrupted, with their events replayable', async () => {
    const first = await boot();
    const started = gate();
    const slow = (tasks: TaskService) =>
      tasks.registerKind('test.slow', {
        run: (ctx) => {
          ctx.emit('begun');
          started.open();
          return new Promise(() => {});
        },
      });
    slow(first.tasks);
    const { body: task } = await first.request('/api/v1/tasks', { method: 'POST', json: { kind: 'test.slow', target: 'x' } });
    await started.promise;
    await first.close();
    servers.splice(servers.indexOf(first), 1);

    const second = await boot({ root: first.root });
    slow(second.tasks);
    const after = await eventually(async () => {
      const res = await second.request(`/api/v1/tasks/${task.id}`);
      return res.body.status === 'failed' && res.body;
    });
    expect(after.error).toMatch(/^interrupted: /);
    const stream = await readSse(`${second.url}/api/v1/tasks/${task.id}/events`);
    expect(stream.frames.map((f) => [f.id, f.data.type, f.data.status])).toEqual([
      ['1', 'status', 'submitted'],
      ['2', 'status', 'working'],
      ['3', 'output', 'working'],
      ['4', 'status', 'failed'],
    ]);
    expect(stream.done).toBe(true);
  });
});
