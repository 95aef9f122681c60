/**
 * Team mode with real processes: two `hangar` processes (bin/hangar.mjs) on one real PostgreSQL,
 * each with its own copy of the workspace, as two machines behind a proxy would run.
 */
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CliProcess, runCli, stopAll } from '../support/cli.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';
import { agentSource, makeWorkspace, until } from '../support/server.js';
import { readSse as readFrames } from '../support/sse.js';

const readSse = async (url: string, headers?: Record<string, string>) => {
  const read = await readFrames(url, { headers, timeoutMs: 60_000 });
  return { done: read.done, ids: read.frames.map((f) => f.id!), events: read.frames.map((f) => f.data) };
};

/**
 * `{"file", "ms"}`: appends this process's pid to `file`; a first attempt then works `ms` (stopping
 * when cancelled), a later one (the file was there) answers at once — so a retry after kill -9 ends.
 */
const WORK_AGENT = agentSource(
  `{ run: async (input, ctx) => {
      const { file, ms } = JSON.parse(input.query);
      const again = fs.existsSync(file);
      fs.appendFileSync(file, process.pid + '\\n');
      if (!again) await new Promise((resolve, reject) => {
        const timer = setTimeout(resolve, ms);
        ctx.signal?.addEventListener('abort', () => { clearTimeout(timer); reject(new Error('stopped')); });
      });
      return 'done by ' + process.pid;
    } }`,
  `import fs from 'node:fs';`,
);

/** One approval between a draft (which notes the process it ran in, in `pidFile`) and its publication. */
const gateAgent = (pidFile: string) =>
  agentSource(
    `{
  graph: {
    nodes: {
      draft: () => { fs.writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); return { response: 'drafted' }; },
      approve: { type: 'approval', message: 'Publish it?' },
      publish: (s) => ({ response: 'published by ' + String(s.metadata.by) + ' on ' + process.pid }),
    },
    edges: [{ from: 'draft', to: 'approve' }, { from: 'approve', to: 'publish' }],
    entry: 'draft',
  },
}`,
    `import fs from 'node:fs';`,
  );

interface Instance {
  proc: CliProcess;
  url: string;
  pid: number;
}

let postgres: TestPostgres;
let a: Instance;
let b: Instance;
let scratch: string;

async function startInstance(databaseUrl: string): Promise<Instance> {
  const root = await makeWorkspace({ 'agents/work.ts': WORK_AGENT, 'agents/gate.ts': gateAgent(path.join(scratch, 'gate.pid')) });
  const proc = runCli(['--no-window', '--root', root, '--port', '0'], {
    env: {
      HANGAR_STORAGE__URL: databaseUrl,
      HANGAR_TASKS__CONCURRENCY: '1',
      HANGAR_TEAM__HEARTBEAT_SECONDS: '10',
      HANGAR_TEAM__MONITOR_INTERVAL_SECONDS: '1',
    },
  });
  const ready = await proc.line(/ready at/);
  return { proc, url: /http:\/\/[\d.]+:\d+/.exec(ready)![0], pid: proc.child.pid! };
}

const call = async (instance: Instance, pathname: string, json?: unknown) => {
  const res = await fetch(instance.url + pathname, {
    method: json === undefined ? 'GET' : 'POST',
    headers: json === undefined ? {} : { 'content-type': 'application/json' },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  return { status: res.status, body: (await res.json()) as any };
};

let works = 0;
const submit = async (on: Instance, ms: number) => {
  const file = path.join(scratch, `work-${++works}.pids`);
  const { status, body } = await call(on, '/api/v1/work/invoke/async', { query: JSON.stringify({ file, ms }) });
  expect(status).toBe(202);
  return { id: body.id as string, file };
};
const pidsIn = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').filter(Boolean).map(Number) : []);
const settled = (on: Instance, id: string) =>
  until(async () => {
    const { body } = await call(on, `/api/v1/tasks/${id}`);
    return ['completed', 'failed', 'canceled'].includes(body.status) ? body : undefined;
  }, `task ${id} to settle`);

beforeAll(async () => {
  postgres = await startPostgres();
  const url = await postgres.database();
  scratch = await makeWorkspace();
  // One after the other: the first applies the migrations, the second finds them done.
  a = await startInstance(url);
  b = await startInstance(url);
}, 120_000);
afterAll(async () => {
  stopAll();
  await postgres?.stop();
});

describe('team mode: two Hangar processes on one PostgreSQL', () => {
  it('a thread written on one instance is read on the other; the status lists both instances with their versions', async () => {
    expect((await call(a, '/api/v1/work/threads', { thread_id: 'team', title: 'Shared' })).status).toBe(200);
    expect((await call(b, '/api/v1/work/threads/team')).body).toMatchObject({ id: 'team', title: 'Shared' });
    const status = (await call(b, '/api/v1/status')).body;
    expect(status.team.instances.map((i: { pid: number }) => i.pid).sort()).toEqual([a.pid, b.pid].sort());
    expect(status.team.instances.every((i: { version: string }) => i.version === status.version)).toBe(true);
    expect(status.team.instance).toBe(status.team.instances.find((i: { pid: number }) => i.pid === b.pid).id);
  });

  it('tasks submitted on one instance run on whichever is free: two at once use both', async () => {
    const first = await submit(a, 1500);
    const second = await submit(a, 1500);
    const done = await Promise.all([settled(b, first.id), settled(b, second.id)]);
    expect(done.map((t) => t.status)).toEqual(['completed', 'completed']);
    expect([...pidsIn(first.file), ...pidsIn(second.file)].sort()).toEqual([a.pid, b.pid].sort());
  });

  it("a task's event stream read on the instance not running it has every event through [DONE], and replays after Last-Event-ID", async () => {
    const task = await submit(b, 800);
    const [fromA, fromB] = await Promise.all([
      readSse(`${a.url}/api/v1/tasks/${task.id}/events`),
      readSse(`${b.url}/api/v1/tasks/${task.id}/events`),
    ]);
    for (const stream of [fromA, fromB]) {
      expect(stream.done).toBe(true);
      expect(stream.events.at(-1)).toMatchObject({ type: 'status', status: 'completed' });
    }
    expect(fromA.ids).toEqual(fromB.ids);
    expect(fromA.ids).toEqual(fromA.ids.map((_, i) => String(i + 1)));
    const resumed = await readSse(`${a.url}/api/v1/tasks/${task.id}/events`, { 'last-event-id': '1' });
    expect(resumed.ids).toEqual(fromA.ids.slice(1));
  });

  it('a run suspended for approval on one instance is approved on the other, which resumes it to the end', async () => {
    const submitted = await call(a, '/api/v1/gate/invoke/async', { query: 'post it' });
    expect(submitted.status).toBe(202);
    const waiting = await until(async () => {
      const { body } = await call(b, `/api/v1/tasks/${submitted.body.id}`);
      return body.status === 'input-required' ? body : undefined;
    }, 'the approval');
    const detail = waiting.result.detail;
    const drafter = Number(readFileSync(path.join(scratch, 'gate.pid'), 'utf8'));
    const approver = drafter === a.pid ? b : a;
    expect((await call(approver, '/api/v1/approvals')).body.approvals.map((x: { id: string }) => x.id)).toContain(detail.approval_id);
    const approved = await call(approver, detail.links.approve, { approval_id: detail.approval_id, context: { by: 'ada' } });
    expect(approved.status).toBe(200);
    expect(approved.body.response).toBe(`published by ada on ${approver.pid}`);
    expect((await settled(drafter === a.pid ? a : b, submitted.body.id)).status).toBe('completed');
  });

  it('cancel on the instance not running a task stops it where it runs', async () => {
    const task = await submit(a, 60_000);
    const runner = await until(() => pidsIn(task.file)[0], 'the task to start');
    const other = runner === a.pid ? b : a;
    const outcome = await call(other, `/api/v1/tasks/${task.id}/cancel`, {});
    expect(outcome.status).toBe(200);
    expect(outcome.body).toMatchObject({ canceled: true, task: { status: 'canceled' } });
    expect((await settled(runner === a.pid ? a : b, task.id)).status).toBe('canceled');
  });

  it('kill -9 of the instance running a task: it runs again on the other after the heartbeat expires, attempt 2, no event lost', async () => {
    const task = await submit(a, 120_000);
    const first = await until(() => pidsIn(task.file)[0], 'the task to start');
    const [victim, survivor] = first === a.pid ? [a, b] : [b, a];
    victim.proc.child.kill('SIGKILL');
    await victim.proc.exited;
    const done = await settled(survivor, task.id);
    expect(done.status).toBe('completed');
    expect(done.attempts).toBe(2);
    expect(pidsIn(task.file)).toEqual([victim.pid, survivor.pid]);
    const events = await readSse(`${survivor.url}/api/v1/tasks/${task.id}/events`);
    expect(events.ids).toEqual(events.ids.map((_, i) => String(i + 1)));
    expect(
      events.events.filter((e: { type: string; status: string }) => e.type === 'status').map((e: { status: string }) => e.status),
    ).toEqual(['submitted', 'working', 'working', 'completed']);
  }, 90_000);
});
