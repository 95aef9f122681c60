/**
 * Coding runs in team mode (#26): a run started on any instance is stored and sent to the team's
 * queue, and whichever instance takes it runs it (`attempts: 1`); its record, its events, cancel,
 * approval, plan edits and task changes and retries work from every instance (a request for a run
 * of another instance is stored and announced, the running instance applies it and stores its
 * answer or refusal); one active run per repository holds team-wide; an instance starting up marks
 * failed only the runs neither a live instance nor the queue holds. Servers in this process, each
 * with its own workspace and team coordinator, on one real PostgreSQL. The kill -9 failover of a
 * run is test/team/coderun-failover.test.ts (real `hangar` processes).
 */
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../core/storage/postgres-store.js';
import { API_TEAM, CODE_SUBSYSTEMS, FIXTURE_REPOS, git, HEALTH_OK, HEALTH_TEST, makeRepo, runFrames } from '../coderun/support/fixture.js';
import {
  agentScript,
  approve,
  planAnswer,
  planTask,
  type ScriptedModel,
  startScriptedModel,
  write,
} from '../coderun/support/scripted-model.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';
import { startTestServer, type TestServer, until } from '../support/server.js';

let postgres: TestPostgres;
let databaseUrl: string;
let model: ScriptedModel;
const repos: string[] = [];
const instances: Instance[] = [];

interface Instance {
  server: TestServer;
  api: (pathname: string, init?: { method?: string; json?: unknown }) => ReturnType<TestServer['request']>;
  token: string;
}

async function startInstance(): Promise<Instance> {
  const server = await startTestServer({
    files: { 'teams/api.json': JSON.stringify(API_TEAM) },
    settings: {
      watch: false,
      storage: { url: databaseUrl },
      team: { heartbeatSeconds: 10, monitorIntervalSeconds: 1 },
      model: { baseUrl: model.baseUrl, model: 'small-model', retries: 0, timeoutMs: 10_000 },
      code: { require_approval: true, command_timeout_ms: 20_000, repos: [FIXTURE_REPOS] },
    } as never,
    start: { subsystems: CODE_SUBSYSTEMS },
  });
  const token = JSON.parse(await readFile(path.join(server.root, '.hangar', 'code-session.json'), 'utf8')).token as string;
  const instance: Instance = {
    server,
    token,
    api: (pathname, init = {}) => server.request(pathname, { ...init, headers: { 'x-hangar-session': token } }),
  };
  instances.push(instance);
  return instance;
}

async function newRepo(): Promise<string> {
  const repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
  repos.push(repo);
  return repo;
}

/** The run's record once it waits at the approval gate, read on `reader`. */
const awaitingApproval = (reader: Instance, id: string) =>
  until(async () => {
    const { body } = await reader.api(`/api/runs/${id}`);
    return body.status === 'awaiting_approval' ? body : undefined;
  }, 'the run to wait for approval');

/** Which instance runs the run (its teams page lists its own running runs), and another one. */
async function runnerOf(id: string, repo: string): Promise<{ runner: Instance; other: Instance }> {
  const runner = await until(async () => {
    for (const instance of instances) {
      const { body } = await instance.api(`/api/teams?repo=${encodeURIComponent(repo)}`);
      if ((body.running_runs as string[]).includes(id)) return instance;
    }
    return undefined;
  }, 'the instance running the run');
  return { runner, other: instances.find((i) => i !== runner)! };
}

const settle = (reader: Instance, id: string) =>
  until(
    async () => {
      const { body } = await reader.api(`/api/runs/${id}`);
      return ['succeeded', 'failed', 'cancelled'].includes(body.status) ? body : undefined;
    },
    'the run to finish',
    60_000,
  );

beforeAll(async () => {
  postgres = await startPostgres();
  databaseUrl = await postgres.database();
  model = await startScriptedModel((c) => {
    if (c.kind === 'planner')
      return planAnswer({ summary: 'a health route', tasks: [planTask('T1', 'api', ['src/api/health.mjs', 'test/api/health.test.mjs'])] });
    if (c.kind === 'reviewer') return approve;
    if (c.kind === 'agent') return agentScript([write('src/api/health.mjs', HEALTH_OK), write('test/api/health.test.mjs', HEALTH_TEST)], c);
    return { content: 'done' };
  });
  await startInstance();
  await startInstance();
}, 60_000);
afterAll(async () => {
  for (const instance of instances.reverse()) await instance.server.stop().catch(() => {});
  await model?.close();
  for (const repo of repos) await rm(repo, { recursive: true, force: true });
  await postgres?.stop();
});

describe('team mode: coding runs', () => {
  it("a run submitted on A is run by the instance that takes it, read, followed and cancelled from the other; one run per repository team-wide; an instance starting fails only a dead instance's run", async () => {
    const [a, b] = instances as [Instance, Instance];
    const repo = await newRepo();
    const started = await a.api('/api/runs', { method: 'POST', json: { request: 'add a health route', repo } });
    expect(started.status, started.text).toBe(202);
    // Stored and queued: no instance has taken it yet when the answer leaves.
    expect(started.body).toMatchObject({ status: 'planning', attempts: 0, require_approval: true });
    const id = started.body.id as string;
    const waiting = await awaitingApproval(b, id);
    expect(waiting.plan.tasks.map((t: { id: string }) => t.id)).toEqual(['T1']);
    expect(waiting.attempts).toBe(1);
    expect((await a.api(`/api/runs/${id}`)).body).toMatchObject({ status: 'awaiting_approval', attempts: 1 });
    expect((await b.api('/api/runs')).body.runs.map((r: { id: string }) => r.id)).toContain(id);
    const { runner, other } = await runnerOf(id, repo);

    // One active run per repository, whichever instance is asked.
    for (const instance of [a, b]) {
      const second = await instance.api('/api/runs', { method: 'POST', json: { request: 'add another route', repo } });
      expect(second.status, second.text).toBe(409);
      expect(second.body).toMatchObject({ code: 'HANGAR_CODERUN_REPO_BUSY' });
      expect(second.body.detail).toContain(id);
    }

    // What an instance killed mid-run leaves once the queue gave up on it: a run stored as running
    // that no live instance holds and no queue job names.
    const store = new PostgresStore(databaseUrl);
    try {
      await store.collection('coderun_runs', { shards: 4 }).put('dead-1', { ...waiting, id: 'dead-1', status: 'running' });
    } finally {
      await store.close();
    }
    const c = await startInstance();
    expect((await c.api('/api/runs/dead-1')).body).toMatchObject({
      status: 'failed',
      error: 'interrupted: the server stopped during the run',
    });
    expect((await c.api(`/api/runs/${id}`)).body.status).toBe('awaiting_approval');
    // The plan card answers on every instance.
    expect((await other.api(`/api/runs/${id}/plan`)).body).toMatchObject({ status: 'awaiting_approval', total: 1 });

    // The other instance follows the run through the store; the stream ends when the runner finishes it.
    const stream = fetch(`${other.server.url}/api/runs/${id}/events?session=${other.token}`).then((res) => res.text());
    await new Promise((resolve) => setTimeout(resolve, 300));
    const cancelled = await other.api(`/api/runs/${id}/cancel`, { method: 'POST' });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    expect((await runner.api(`/api/runs/${id}`)).body.status).toBe('cancelled');
    const frames = runFrames(await stream);
    expect(frames[0]).toMatchObject({ type: 'run_status', status: 'planning' });
    expect(frames.some((f) => f.type === 'plan_proposed')).toBe(true);
    expect(frames.at(-1)).toMatchObject({ type: 'run_finished', status: 'cancelled' });
    // The same events as the instance that ran it serves.
    expect(runFrames((await runner.api(`/api/runs/${id}/events`)).text)).toEqual(frames);

    // Cancelling a finished run from another instance changes nothing and says so.
    expect((await c.api(`/api/runs/${id}/cancel`, { method: 'POST' })).status).toBe(409);
  }, 120_000);

  it('approval and a plan edit on the instance not running the run: it resumes and runs to the end there', async () => {
    const repo = await newRepo();
    const started = await instances[1]!.api('/api/runs', { method: 'POST', json: { request: 'add a health route', repo } });
    expect(started.status, started.text).toBe(202);
    const id = started.body.id as string;
    await awaitingApproval(instances[0]!, id);
    const { runner, other } = await runnerOf(id, repo);

    // A change to a plan task and a plan edit, asked where the run does not run: applied by the runner.
    const patched = await other.api('/api/tasks/T1', { method: 'PATCH', json: { run: id, title: 'the health route' } });
    expect(patched.status, patched.text).toBe(200);
    expect(patched.body).toMatchObject({ run: id, task: { id: 'T1', title: 'the health route' } });
    const edited = await other.api(`/api/runs/${id}/plan`, {
      method: 'PATCH',
      json: { tasks: [{ id: 'T1', description: 'GET /health' }] },
    });
    expect(edited.status, edited.text).toBe(200);
    expect(edited.body).toMatchObject({ status: 'awaiting_approval', total: 1 });
    const plan = (await runner.api(`/api/runs/${id}/plan`)).body;
    expect(plan.tasks[0]).toMatchObject({ id: 'T1', title: 'the health route', description: 'GET /health' });

    const approved = await other.api(`/api/runs/${id}/approve`, { method: 'POST' });
    expect(approved.status, approved.text).toBe(200);
    expect(approved.body.id).toBe(id);
    // The stored record shows the approval by the time the answer leaves.
    expect((await other.api(`/api/runs/${id}`)).body.status).not.toBe('awaiting_approval');
    // Approving twice: the runner's refusal, answered by the other instance.
    const again = await other.api(`/api/runs/${id}/approve`, { method: 'POST' });
    expect([again.status, again.body.code]).toEqual([409, 'HANGAR_CODERUN_NOT_AWAITING_APPROVAL']);

    const run = await settle(other, id);
    expect([run.status, run.error, run.attempts]).toEqual(['succeeded', null, 1]);
    expect(run.tasks).toMatchObject([{ id: 'T1', title: 'the health route', state: 'done' }]);
    expect(git(repo, 'log', '--format=%s', `hangar/run-${id}`)).toContain('T1: the health route');
    expect((await runner.api(`/api/runs/${id}`)).body.status).toBe('succeeded');
  }, 120_000);

  it('a plan edit, a task change and a retry refused by the running instance give the same error on the other', async () => {
    const repo = await newRepo();
    const started = await instances[0]!.api('/api/runs', { method: 'POST', json: { request: 'add a health route', repo } });
    const id = started.body.id as string;
    await awaitingApproval(instances[1]!, id);
    const { runner, other } = await runnerOf(id, repo);
    const asked = [
      { path: `/api/runs/${id}/plan`, method: 'PATCH', json: { tasks: [{ id: 'T9', remove: true }] }, code: 'HANGAR_CODERUN_PLAN_NO_TASK' },
      { path: '/api/tasks/T1/retry', method: 'POST', json: { run: id }, code: 'HANGAR_CODERUN_TASK_NOT_ON_BOARD' },
      { path: '/api/tasks/T1', method: 'PATCH', json: { run: id, squad: 'nobody' }, code: 'HANGAR_CODERUN_SQUAD_UNKNOWN' },
    ];
    for (const request of asked) {
      const here = await runner.api(request.path, { method: request.method, json: request.json });
      const there = await other.api(request.path, { method: request.method, json: request.json });
      expect(here.body.code, here.text).toBe(request.code);
      expect([there.status, there.body]).toEqual([here.status, here.body]);
    }
    // Nothing changed: the run still waits with its plan as proposed.
    expect((await other.api(`/api/runs/${id}/plan`)).body).toMatchObject({ status: 'awaiting_approval', total: 1 });
    expect((await other.api(`/api/runs/${id}/cancel`, { method: 'POST' })).body.status).toBe('cancelled');
  }, 120_000);
  it('a run stored but never sent to the queue (its instance died between the two writes) is sent by the sweep and runs', async () => {
    const [a, b] = instances as [Instance, Instance];
    // A record as a start stores it, from a run started and cancelled on another repository.
    const template = await a.api('/api/runs', { method: 'POST', json: { request: 'add a health route', repo: await newRepo() } });
    expect(template.status, template.text).toBe(202);
    const record = template.body as Record<string, unknown>;
    await awaitingApproval(b, record.id as string);
    expect((await b.api(`/api/runs/${record.id}/cancel`, { method: 'POST' })).status).toBe(200);

    const repo = await newRepo();
    const storedAt = new Date(Date.now() - 120_000).toISOString();
    const store = new PostgresStore(databaseUrl);
    try {
      await store
        .collection('coderun_runs', { shards: 4 })
        .put('lost-1', { ...record, id: 'lost-1', repo, status: 'planning', attempts: 0, created_at: storedAt });
    } finally {
      await store.close();
    }
    // One instance's sweep (every heartbeat, 10 s here) sends its job; whichever takes it runs it.
    const taken = await until(
      async () => {
        const { body } = await a.api('/api/runs/lost-1');
        return body.status === 'awaiting_approval' ? body : undefined;
      },
      'the lost run to be taken',
      45_000,
    );
    expect(taken).toMatchObject({ attempts: 1, repo });
    expect(taken.plan.tasks.map((t: { id: string }) => t.id)).toEqual(['T1']);
    // Cancelled where it runs, the answer is the ended run, and the other instance reads it so at once.
    const { runner, other } = await runnerOf('lost-1', repo);
    const cancelled = await runner.api('/api/runs/lost-1/cancel', { method: 'POST' });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    expect((await other.api('/api/runs/lost-1')).body.status).toBe('cancelled');
  }, 90_000);
});
