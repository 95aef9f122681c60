import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { describe, expect, it } from 'vitest';
import { RUN_EVENTS_LOG } from '../../core/coderun/run-events.js';
import { makeWorkspace } from '../support/server.js';
import { API_TEAM, type CodeServer, makeRepo, runFrames, startCodeServer, tearDownAfterEach } from './support/fixture.js';
import { agentScript, approve, type ScriptedModel, startScriptedModel, write } from './support/scripted-model.js';

const task = (id: string, file: string) => ({
  id,
  title: `write ${file}`,
  description: `write ${file}`,
  role: 'developer',
  squad: 'api',
  acceptance: '',
  criteria: [],
  priority: 5,
  files: [file],
  dependencies: [],
});

let model: ScriptedModel | undefined;
let server: CodeServer | undefined;
const cleanup: string[] = [];
tearDownAfterEach(() => [server, model, ...cleanup.splice(0)]);

const frames = runFrames;

describe('run history across a restart', () => {
  it("replays each past run's own events from its append-log key after a restart", async () => {
    const root = await makeWorkspace();
    const repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    cleanup.push(root, repo);
    let n = 0;
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner')
        return { tool_calls: [{ name: 'submit_plan', arguments: { tasks: [task('T1', `src/api/run${++n}.mjs`)], contract: [] } }] };
      if (c.kind === 'reviewer') return approve;
      return agentScript([write(`src/api/run${n}.mjs`, 'export {};\n')], c);
    });
    server = await startCodeServer({ root, baseUrl: model.baseUrl, teams: { api: API_TEAM } });
    const ids: string[] = [];
    const before = new Map<string, any[]>();
    for (const request of ['first', 'second']) {
      const res = await server.api('/api/runs', { method: 'POST', json: { request, repo } });
      const run = await server.settle(res.body.id);
      expect(run.status).toBe('succeeded');
      ids.push(run.id);
      before.set(run.id, frames((await server.api(`/api/runs/${run.id}/events`)).text));
    }
    await server.stop();

    // One key per run in the log: a replay reads that run's list, not every run's events.
    const db = new DatabaseSync(path.join(root, '.hangar', 'hangar.db'), { readOnly: true });
    const keys = (db.prepare('SELECT key FROM log_keys WHERE log = ?').all(RUN_EVENTS_LOG) as Array<{ key: string }>).map((row) => row.key);
    db.close();
    expect(keys.sort()).toEqual([...ids].sort());

    server = await startCodeServer({ root, baseUrl: model.baseUrl, teams: { api: API_TEAM } });
    for (const id of ids) {
      const replayed = frames((await server.api(`/api/runs/${id}/events`)).text);
      expect(replayed).toEqual(before.get(id));
      expect(replayed.every((e) => e.run === id)).toBe(true);
      expect(replayed.at(-1)).toMatchObject({ type: 'run_finished', status: 'succeeded' });
      expect(replayed.filter((e) => e.type === 'wave')).toHaveLength(1);
    }
    // Resuming mid-stream works on a replayed run too.
    const resumed = frames((await server.api(`/api/runs/${ids[0]}/events`, { headers: { 'last-event-id': '2' } })).text);
    expect(resumed).toEqual(before.get(ids[0]!)!.slice(2));
    const activity = await server.api(`/api/teams/activity?team=api&query=${ids[1]}`);
    expect(activity.body).toMatchObject({ run: ids[1] });
    expect(activity.body.events.filter((e: any) => e.kind === 'gate').map((e: any) => [e.event.type, e.event.team, e.event.run])).toEqual([
      ['gate', 'api', ids[1]],
    ]);

    // A finished run is not resumed, also when it is only on disk: 409 with what to do, not 404.
    const retry = await server.api('/api/tasks/T1/retry', { method: 'POST', json: { run: ids[0] } });
    expect(retry.status).toBe(409);
    expect(retry.body.detail).toContain(`task T1 belongs to run '${ids[0]}', which has succeeded; a finished run is not resumed`);
    expect(retry.body.detail).toContain(`hangar code run "write src/api/run1.mjs" --repo ${repo}`);
    expect((await server.api('/api/tasks/T1/retry', { method: 'POST', json: {} })).body.detail).toContain(`run '${ids[1]}'`);
    const patch = await server.api('/api/tasks/T1', { method: 'PATCH', json: { run: ids[0], title: 'x' } });
    expect(patch.status).toBe(409);
    expect(patch.body.detail).toContain('so the task cannot be changed there');
    expect((await server.api('/api/tasks/T9/retry', { method: 'POST', json: {} })).status).toBe(404);
  });
});
