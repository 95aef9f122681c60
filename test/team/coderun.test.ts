/**
 * Coding runs in team mode (#26): a run runs on the instance that started it (its git worktree and
 * live session are that machine's), and its record, its events and cancel work from any instance;
 * an instance starting up marks failed only the runs no live instance holds. Servers in this
 * process, each with its own workspace and team coordinator, on one real PostgreSQL.
 */
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresStore } from '../../core/storage/postgres-store.js';
import { API_TEAM, CODE_SUBSYSTEMS, FIXTURE_REPOS, makeRepo, runFrames } from '../coderun/support/fixture.js';
import { planAnswer, planTask, type ScriptedModel, startScriptedModel } from '../coderun/support/scripted-model.js';
import { startPostgres, type TestPostgres } from '../support/postgres.js';
import { startTestServer, type TestServer } from '../support/server.js';

let postgres: TestPostgres;
let databaseUrl: string;
let model: ScriptedModel;
let repo: string;
const servers: TestServer[] = [];

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
      code: { require_approval: true, repos: [FIXTURE_REPOS] },
    } as never,
    start: { subsystems: CODE_SUBSYSTEMS },
  });
  servers.push(server);
  const token = JSON.parse(await readFile(path.join(server.root, '.hangar', 'code-session.json'), 'utf8')).token as string;
  return {
    server,
    token,
    api: (pathname, init = {}) => server.request(pathname, { ...init, headers: { 'x-hangar-session': token } }),
  };
}

async function until<T>(what: () => Promise<T | undefined> | T | undefined, label: string, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await what();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${label}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

beforeAll(async () => {
  postgres = await startPostgres();
  databaseUrl = await postgres.database();
  model = await startScriptedModel((c) =>
    c.kind === 'planner' ? planAnswer({ tasks: [planTask('T1', 'api', ['src/api/health.mjs'])] }) : { content: 'done' },
  );
  repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
}, 60_000);
afterAll(async () => {
  for (const server of servers.reverse()) await server.stop().catch(() => {});
  await model?.close();
  if (repo) await rm(repo, { recursive: true, force: true });
  await postgres?.stop();
});

describe('team mode: coding runs', () => {
  it("a run on A is read, followed and cancelled from B; an instance starting meanwhile fails only a dead instance's run", async () => {
    const a = await startInstance();
    const b = await startInstance();
    const started = await a.api('/api/runs', { method: 'POST', json: { request: 'add a health route', repo } });
    expect(started.status, started.text).toBe(202);
    const id = started.body.id as string;
    const waiting = await until(async () => {
      const { body } = await b.api(`/api/runs/${id}`);
      return body.status === 'awaiting_approval' ? body : undefined;
    }, 'the run to wait for approval, read on B');
    expect(waiting.plan.tasks.map((t: { id: string }) => t.id)).toEqual(['T1']);
    expect((await b.api('/api/runs')).body.runs.map((r: { id: string }) => r.id)).toContain(id);

    // What an instance killed mid-run leaves: a run stored as running that no live instance holds.
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

    // B follows the run through the store; the stream ends when A finishes it.
    const stream = fetch(`${b.server.url}/api/runs/${id}/events?session=${b.token}`).then((res) => res.text());
    await new Promise((resolve) => setTimeout(resolve, 300));
    const cancelled = await b.api(`/api/runs/${id}/cancel`, { method: 'POST' });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.body.status).toBe('cancelled');
    expect((await a.api(`/api/runs/${id}`)).body.status).toBe('cancelled');
    const frames = runFrames(await stream);
    expect(frames[0]).toMatchObject({ type: 'run_status', status: 'planning' });
    expect(frames.some((f) => f.type === 'plan_proposed')).toBe(true);
    expect(frames.at(-1)).toMatchObject({ type: 'run_finished', status: 'cancelled' });
    // The same events as the instance that ran it serves.
    expect(runFrames((await a.api(`/api/runs/${id}/events`)).text)).toEqual(frames);

    // Cancelling a finished run from another instance changes nothing and says so.
    expect((await c.api(`/api/runs/${id}/cancel`, { method: 'POST' })).status).toBe(409);
  }, 90_000);
});
