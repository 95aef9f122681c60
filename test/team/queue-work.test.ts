/**
 * Work the team's queue distributes beyond the task board (#26): notebook schedules fire once per
 * slot across instances (and again elsewhere when the instance running a slot is killed), and a
 * task stored without its job (an instance that died between the two writes) is sent again and
 * runs. Two real `hangar` processes on one real PostgreSQL; the last test kills one.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { timeOrderedId } from '../../core/storage/ids.js';
import { PostgresStore } from '../../core/storage/postgres-store.js';
import { type CliProcess, runCli, stopAll } from '../support/cli.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';
import { agentSource, makeWorkspace, until } from '../support/server.js';

/** `{"file"}`: appends this process's pid to `file` and answers. */
const NOTE_AGENT = agentSource(
  `{ run: async (input) => {
      const { file } = JSON.parse(input.query);
      fs.appendFileSync(file, process.pid + '\\n');
      return 'done by ' + process.pid;
    } }`,
  `import fs from 'node:fs';`,
);

/** A scheduled run says which process ran it. */
const NOTEBOOK = { name: 'tick', cells: [{ source: 'const pid = process.pid;' }, { source: 'pid' }] };

interface Instance {
  proc: CliProcess;
  url: string;
  pid: number;
}

let postgres: TestPostgres;
let databaseUrl: string;
let a: Instance;
let b: Instance;
let scratch: string;

async function startInstance(): Promise<Instance> {
  const root = await makeWorkspace({ 'agents/note.ts': NOTE_AGENT });
  const proc = runCli(['--no-window', '--root', root, '--port', '0'], {
    env: {
      HANGAR_STORAGE__URL: databaseUrl,
      HANGAR_TEAM__HEARTBEAT_SECONDS: '10',
      HANGAR_TEAM__MONITOR_INTERVAL_SECONDS: '1',
    },
  });
  const ready = await proc.line(/ready at/);
  return { proc, url: /http:\/\/[\d.]+:\d+/.exec(ready)![0], pid: proc.child.pid! };
}

const call = async (instance: Instance, pathname: string, json?: unknown, method = json === undefined ? 'GET' : 'POST') => {
  const res = await fetch(instance.url + pathname, {
    method,
    headers: json === undefined ? {} : { 'content-type': 'application/json' },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.text();
  return { status: res.status, body: (text ? JSON.parse(text) : undefined) as any };
};

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  postgres = await startPostgres();
  databaseUrl = await postgres.database();
  scratch = await makeWorkspace();
  a = await startInstance();
  b = await startInstance();
}, 120_000);
afterAll(async () => {
  stopAll();
  await postgres?.stop();
});

describe('team mode: scheduled notebook runs and lost submissions', () => {
  it('a schedule every second runs each slot once across two instances, by either; history and pause are shared', async () => {
    // Each instance has its own copy of the workspace, as two machines would.
    for (const instance of [a, b]) expect((await call(instance, '/api/notebooks', NOTEBOOK)).status).toBe(201);
    const created = await call(a, '/api/notebooks/tick.nb.ts/schedules', { cron: '* * * * * *', timezone: 'UTC', name: 'tick' });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    // B arms it too (from the announcement; resuming it there arms it even without one), so both
    // instances fire every slot from here on.
    expect((await call(b, `/api/schedules/${id}/resume`, {})).body).toMatchObject({ paused: false });
    // Which instance takes a slot is a race (each wakes on the job's NOTIFY), so it is not the first
    // eight runs that show both taking slots: wait until both have, and at least eight slots ran.
    const ranOnOf = (runs: Array<Record<string, any>>) =>
      new Set(runs.filter((r) => r.status === 'success').map((r) => Number(r.cells[1].outputs[0].data['text/plain'])));
    await until(
      async () => {
        const { body } = await call(b, `/api/schedules/${id}/runs?limit=1000`);
        return body.runs.length >= 8 && ranOnOf(body.runs).size === 2 ? true : undefined;
      },
      'eight runs, taken by both instances',
      60_000,
    );
    expect((await call(b, `/api/schedules/${id}/pause`, {})).body).toMatchObject({ paused: true, next_run_at: null });
    // A slot sent just before the pause may still be running; after it nothing more runs.
    await sleep(1500);
    const fromA = (await call(a, `/api/schedules/${id}/runs?limit=1000`)).body.runs as Array<Record<string, any>>;
    await sleep(2500);
    const fromB = (await call(b, `/api/schedules/${id}/runs?limit=1000`)).body.runs as Array<Record<string, any>>;
    expect(fromB.map((r) => r.id)).toEqual(fromA.map((r) => r.id));

    const slots = fromA.map((r) => r.scheduled_for);
    expect(new Set(slots).size).toBe(slots.length);
    expect(fromA.every((r) => r.status === 'success')).toBe(true);
    // Consecutive slots, a second apart: none was lost either.
    const times = slots.map((s) => Date.parse(s)).sort((x, y) => x - y);
    expect(times.slice(1).map((t, i) => t - times[i]!)).toEqual(times.slice(1).map(() => 1000));
    const ranOn = ranOnOf(fromA);
    expect([...ranOn].sort()).toEqual([a.pid, b.pid].sort());

    // Deleted on A: gone on B, with its history.
    expect((await call(a, `/api/schedules/${id}`, undefined, 'DELETE')).status).toBe(204);
    expect((await call(b, `/api/schedules/${id}`)).status).toBe(404);
    expect((await call(b, `/api/schedules/${id}/runs`)).status).toBe(404);
  }, 120_000);

  it('a task stored as submitted whose job was never sent is sent again by the sweep and runs', async () => {
    // A task as the board stores it, to copy: its kind, principal and input as /invoke/async makes them.
    const sample = await call(a, '/api/v1/note/invoke/async', { query: JSON.stringify({ file: path.join(scratch, 'sample.pids') }) });
    expect(sample.status).toBe(202);
    const model = await until(async () => {
      const { body } = await call(a, `/api/v1/tasks/${sample.body.id}`);
      return body.status === 'completed' ? body : undefined;
    }, 'the sample task');
    // What a submit leaves in the store when its instance dies before the queue's send: the record.
    const store = new PostgresStore(databaseUrl);
    const tasks = store.collection<Record<string, unknown>>('tasks', { shards: 8, countBy: ['principal', 'status', 'kind', 'target'] });
    const file = path.join(scratch, 'lost.pids');
    const id = timeOrderedId();
    const storedAt = new Date(Date.now() - 120_000).toISOString();
    try {
      await tasks.put(id, {
        id,
        kind: model.kind,
        target: model.target,
        input: { ...model.input, query: JSON.stringify({ file }) },
        principal: model.principal,
        status: 'submitted',
        progress: { percent: 0, message: 'queued' },
        result: null,
        error: null,
        metadata: {},
        created_at: storedAt,
        updated_at: storedAt,
        started_at: null,
        finished_at: null,
        last_sequence: 0,
        attempts: 0,
      });
    } finally {
      await store.close();
    }
    const done = await until(async () => {
      const { body } = await call(b, `/api/v1/tasks/${id}`);
      return ['completed', 'failed', 'canceled'].includes(body.status) ? body : undefined;
    }, 'the lost task to run');
    expect(done.status).toBe('completed');
    expect(done.attempts).toBe(1);
    const pids = existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').map(Number) : [];
    expect(pids).toHaveLength(1);
    expect([a.pid, b.pid]).toContain(pids[0]);
    // Both instances sweep; the task ran once all the same.
    await sleep(11_000);
    expect(readFileSync(file, 'utf8').trim().split('\n')).toHaveLength(1);
  }, 60_000);

  it('kill -9 of the instance running a scheduled run: the slot runs again on the other, once', async () => {
    const slow = {
      name: 'slow',
      cells: [{ source: 'await new Promise((resolve) => setTimeout(resolve, 5000));' }, { source: 'process.pid' }],
    };
    for (const instance of [a, b]) expect((await call(instance, '/api/notebooks', slow)).status).toBe(201);
    // A one-off slot (croner takes an ISO time), a few seconds ahead so both instances arm it.
    const slot = new Date(Math.ceil(Date.now() / 1000) * 1000 + 3000).toISOString();
    const created = await call(a, '/api/notebooks/slow.nb.ts/schedules', { cron: slot, timezone: 'UTC', name: 'once' });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const running = await until(async () => {
      for (const instance of [a, b]) if ((await call(instance, `/api/schedules/${id}`)).body.running) return instance;
      return undefined;
    }, 'the slot to start running');
    const survivor = running === a ? b : a;
    running.proc.child.kill('SIGKILL');
    await running.proc.exited;
    const runs = await until(
      async () => {
        const { body } = await call(survivor, `/api/schedules/${id}/runs`);
        return body.runs.length ? body.runs : undefined;
      },
      'the slot to run again',
      60_000,
    );
    await sleep(1000);
    const after = (await call(survivor, `/api/schedules/${id}/runs`)).body.runs;
    expect(after).toHaveLength(1);
    expect(runs[0]).toMatchObject({ scheduled_for: slot, status: 'success' });
    expect(Number(runs[0].cells[1].outputs[0].data['text/plain'])).toBe(survivor.pid);
  }, 90_000);
});
