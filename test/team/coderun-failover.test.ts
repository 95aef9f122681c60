/**
 * A coding run whose instance is killed (#26): the run is a job on the team's queue, so once the
 * dead instance's heartbeat stops the queue hands it to another instance, which runs it again from
 * the start (`attempts: 2`, a fresh branch and worktree of its own) to the end. Two real `hangar`
 * processes on one real PostgreSQL, the scripted model in this process; the test kills one.
 */
import { readFileSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_TEAM, FIXTURE_REPOS, git, HEALTH_OK, HEALTH_TEST, makeRepo, runFrames } from '../coderun/support/fixture.js';
import {
  agentScript,
  approve,
  planAnswer,
  planTask,
  type ScriptedModel,
  startScriptedModel,
  write,
} from '../coderun/support/scripted-model.js';
import { type CliProcess, runCli, stopAll } from '../support/cli.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';
import { makeWorkspace, until } from '../support/server.js';

interface Instance {
  proc: CliProcess;
  url: string;
  token: string;
}

let postgres: TestPostgres;
let databaseUrl: string;
let model: ScriptedModel;
let repo: string;
/** While set, each agent answer takes this long: the run is mid-task when its instance is killed. */
let agentDelayMs = 0;
const roots: string[] = [];
/** Instances still alive after a test (the next one uses them too). */
const alive: Instance[] = [];

async function startInstance(): Promise<Instance> {
  const root = await makeWorkspace({
    'teams/api.json': JSON.stringify(API_TEAM),
    'hangar.config.json': JSON.stringify({
      storage: { url: databaseUrl },
      team: { heartbeatSeconds: 10, monitorIntervalSeconds: 1 },
      model: { baseUrl: model.baseUrl, model: 'small-model', retries: 0, timeoutMs: 30_000 },
      code: { require_approval: true, command_timeout_ms: 20_000, repos: [FIXTURE_REPOS] },
    }),
  });
  roots.push(root);
  const proc = runCli(['--no-window', '--root', root, '--port', '0']);
  const ready = await proc.line(/ready at/);
  const token = JSON.parse(readFileSync(path.join(root, '.hangar', 'code-session.json'), 'utf8')).token as string;
  return { proc, url: /http:\/\/[\d.]+:\d+/.exec(ready)![0], token };
}

const call = async (instance: Instance, pathname: string, json?: unknown) => {
  const res = await fetch(instance.url + pathname, {
    method: json === undefined ? 'GET' : 'POST',
    headers: { 'x-hangar-session': instance.token, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  const text = await res.text();
  return { status: res.status, text, body: (text.startsWith('{') ? JSON.parse(text) : undefined) as any };
};

const runOn = (instance: Instance, id: string, test: (run: any) => boolean, label: string, timeoutMs?: number) =>
  until(
    async () => {
      const { body } = await call(instance, `/api/runs/${id}`);
      return test(body) ? body : undefined;
    },
    label,
    timeoutMs,
  );

beforeAll(async () => {
  postgres = await startPostgres();
  databaseUrl = await postgres.database();
  model = await startScriptedModel(async (c) => {
    if (c.kind === 'planner')
      return planAnswer({ summary: 'a health route', tasks: [planTask('T1', 'api', ['src/api/health.mjs', 'test/api/health.test.mjs'])] });
    if (c.kind === 'reviewer') return approve;
    if (c.kind === 'agent')
      return {
        ...agentScript([write('src/api/health.mjs', HEALTH_OK), write('test/api/health.test.mjs', HEALTH_TEST)], c),
        delayMs: agentDelayMs,
      };
    return { content: 'done' };
  });
  repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
}, 120_000);
afterAll(async () => {
  stopAll();
  await model?.close();
  for (const root of roots) await rm(root, { recursive: true, force: true });
  if (repo) await rm(repo, { recursive: true, force: true });
  await postgres?.stop();
});

describe('team mode: a coding run whose instance is killed', () => {
  it('kill -9 of the instance running a run: the other runs it again from the start, attempt 2 on a fresh branch, to the end', async () => {
    const a = await startInstance();
    const b = await startInstance();
    alive.push(a, b);
    const started = await call(a, '/api/runs', { request: 'add a health route', repo });
    expect(started.status, started.text).toBe(202);
    const id = started.body.id as string;
    await runOn(b, id, (r) => r.status === 'awaiting_approval', 'the run to wait for approval');
    const running = await until(async () => {
      for (const instance of [a, b]) {
        const { body } = await call(instance, `/api/teams?repo=${encodeURIComponent(repo)}`);
        if (body.running_runs.includes(id)) return instance;
      }
      return undefined;
    }, 'the instance running the run');
    const survivor = running === a ? b : a;

    // Approved from the survivor, and killed mid-task: the agent's answers take 20 s meanwhile.
    agentDelayMs = 20_000;
    expect((await call(survivor, `/api/runs/${id}/approve`, {})).status).toBe(200);
    const midway = await runOn(survivor, id, (r) => r.tasks?.[0]?.state === 'in_progress', 'the task to start', 30_000);
    expect(midway).toMatchObject({ status: 'running', attempts: 1, branch: `hangar/run-${id}` });
    running.proc.child.kill('SIGKILL');
    await running.proc.exited;
    alive.splice(alive.indexOf(running), 1);
    agentDelayMs = 0;

    // After the heartbeat expires the survivor takes the job again: the run starts over there.
    const again = await runOn(survivor, id, (r) => r.attempts === 2 && r.status === 'awaiting_approval', 'attempt 2', 60_000);
    expect(again).toMatchObject({ branch: null, tasks: [], error: null });
    expect((await call(survivor, `/api/runs/${id}/approve`, {})).status).toBe(200);
    const run = await runOn(survivor, id, (r) => ['succeeded', 'failed', 'cancelled'].includes(r.status), 'the run to finish', 60_000);
    expect([run.status, run.error, run.attempts]).toEqual(['succeeded', null, 2]);
    // A fresh branch: attempt 1's stays where it was left (on one machine here, so both are in the repository).
    expect(run.branch).toBe(`hangar/run-${id}-attempt-2`);
    expect(git(repo, 'log', '--format=%s', run.branch)).toContain('T1: task T1');
    expect(git(repo, 'branch', '--list', `hangar/run-${id}`)).toContain(`hangar/run-${id}`);

    // The run's events hold both attempts; the second says why it started again.
    const frames = runFrames(await (await fetch(`${survivor.url}/api/runs/${id}/events?session=${survivor.token}`)).text());
    const statuses = frames.filter((f) => f.type === 'run_status').map((f) => f.status);
    expect(statuses).toEqual(['planning', 'awaiting_approval', 'running', 'planning', 'awaiting_approval', 'running']);
    expect(frames.find((f) => f.type === 'run_status' && f.detail)?.detail).toMatch(/^attempt 2: the instance running attempt 1 stopped/);
    expect(frames.filter((f) => f.type === 'run_finished')).toMatchObject([{ status: 'succeeded' }]);
  }, 180_000);

  it('a second death ends the run failed: the instance left marks it so, and says why', async () => {
    alive.push(await startInstance(), await startInstance());
    const second = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    try {
      const started = await call(alive[0]!, '/api/runs', { request: 'add a health route', repo: second });
      expect(started.status, started.text).toBe(202);
      const id = started.body.id as string;
      const runnerOf = (attempts: number) =>
        until(async () => {
          for (const instance of alive) {
            const { body } = await call(instance, `/api/teams?repo=${encodeURIComponent(second)}`);
            const run = (await call(instance, `/api/runs/${id}`)).body;
            if (body.running_runs.includes(id) && run.attempts === attempts && run.status === 'awaiting_approval') return instance;
          }
          return undefined;
        }, `attempt ${attempts} to wait for approval`);
      for (const attempts of [1, 2]) {
        const running = await runnerOf(attempts);
        running.proc.child.kill('SIGKILL');
        await running.proc.exited;
        alive.splice(alive.indexOf(running), 1);
      }
      const run = await runOn(alive[0]!, id, (r) => r.status !== 'awaiting_approval' && r.status !== 'planning', 'the run to end', 60_000);
      expect(run).toMatchObject({
        status: 'failed',
        attempts: 2,
        error: 'interrupted: the instance running it stopped (attempt 2); not retried again',
      });
      const frames = runFrames(await (await fetch(`${alive[0]!.url}/api/runs/${id}/events?session=${alive[0]!.token}`)).text());
      expect(frames.at(-1)).toMatchObject({ type: 'run_finished', status: 'failed' });
    } finally {
      await rm(second, { recursive: true, force: true });
    }
  }, 180_000);
});
