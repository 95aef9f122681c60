import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCommand } from '../../core/coderun/command.js';
import { eventually } from '../support/server.js';
import {
  API_TEAM,
  CODE_SUBSYSTEMS,
  type CodeServer,
  git,
  HEALTH_OK,
  makeRepo,
  startCodeServer,
  tearDownAfterEach,
} from './support/fixture.js';
import {
  agentScript,
  approve,
  planAnswer,
  planTask,
  reject,
  type ScriptedModel,
  startScriptedModel,
  write,
} from './support/scripted-model.js';

const task = (id: string, squad: string, files: string[], extra: Record<string, unknown> = {}) =>
  planTask(id, squad, files, { description: '', ...extra });

let model: ScriptedModel | undefined;
let server: CodeServer | undefined;
let repo: string | undefined;
const cleanup: string[] = [];
tearDownAfterEach(() => [server, model, repo, ...cleanup.splice(0)]);

/** A marker-file folder removed after the test. */
async function marksDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-marks-'));
  cleanup.push(dir);
  return dir;
}

describe('review ladder, escalation, approval gate, cancellation', () => {
  it('hands an exhausted review ladder to the language corrector once, then sends the task to to_scope', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return planAnswer({ tasks: [task('T1', 'api', ['src/api/health.mjs'])] });
      if (c.kind === 'reviewer') return reject(`missing error handling (review ${c.body.messages.length})`);
      return agentScript([write('src/api/health.mjs', HEALTH_OK)], c);
    });
    const api = {
      ...API_TEAM,
      agents: [
        { name: 'api-dev', role: 'developer' },
        { name: 'js-corrector', role: 'corrector', languages: ['mjs'] },
      ],
    };
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api }, code: { review_rounds: 1 } });
    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'health route', repo } });
    const run = await server.settle(started.body.id);

    expect(run.tasks[0]).toMatchObject({
      id: 'T1',
      state: 'to_scope',
      handed_over: true,
      assignee: 'js-corrector',
      needs_human: true,
      files: ['src/api/health.mjs'],
    });
    const agents = model.requests.filter((r) => r.kind === 'agent' && r.turn === 0);
    expect(agents.map((r) => r.agent)).toEqual(['api-dev', 'js-corrector']);
    // The corrector works the same task with the reviewer's findings as context.
    expect(agents[1]!.system).toContain('Task T1:');
    expect(agents[1]!.system).toMatch(/Reviewer findings to address:\n- missing error handling/);
    expect(run.status).toBe('failed');
    expect(run.repairs.needs_human).toBe(1);
    // Nothing of the rejected task is committed, and the user's tree is clean.
    expect(git(repo, 'log', '--format=%s', `main..${run.branch}`)).toBe('');
    expect(git(repo, 'status', '--porcelain')).toBe('');
  });

  it('retries malformed tool calls, then escalates the task to the next model of the ladder', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner')
        return c.turn === 0
          ? { content: 'I think the plan is: do it' }
          : planAnswer({ tasks: [task('T1', 'api', ['src/api/health.mjs'])] });
      if (c.kind === 'reviewer') return approve;
      if (c.body.model === 'small-model')
        return { tool_calls: [{ name: 'write_file', arguments: '{"path": "src/api/health.mjs", content' }] };
      return agentScript([write('src/api/health.mjs', HEALTH_OK)], c);
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM }, code: { model_escalation: ['big-model'] } });
    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'health route', repo } });
    const run = await server.settle(started.body.id);

    expect(run.tasks[0]).toMatchObject({ state: 'done', escalation: 1 });
    const agentModels = model.requests.filter((r) => r.kind === 'agent').map((r) => r.body.model);
    // 1 + MALFORMED_RETRIES (2) turns on the small model, then the big one.
    expect(agentModels.slice(0, 3)).toEqual(['small-model', 'small-model', 'small-model']);
    expect(agentModels.slice(3).every((m) => m === 'big-model')).toBe(true);
    // The planner's prose answer was sent back with the reason and retried.
    const planners = model.requests.filter((r) => r.kind === 'planner');
    expect(planners).toHaveLength(2);
    expect(planners[1]!.body.messages.at(-1)!.content).toMatch(/called no submit_plan tool/);
    const res = await server.api(`/api/runs/${run.id}/events`);
    expect(res.text).toContain('escalated to big-model after malformed tool calls');
  });

  it('gives up on a task, never the run, when malformed calls continue with no bigger model left', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner')
        return planAnswer({
          tasks: [task('T1', 'api', ['src/api/a.mjs']), task('T2', 'api', ['src/api/b.mjs'], { dependencies: ['T1'] })],
        });
      return { tool_calls: [{ name: 'no_such_tool', arguments: {} }] };
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM } });
    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'x', repo } });
    const run = await server.settle(started.body.id);
    expect(run.status).toBe('failed');
    expect(run.tasks.map((t: any) => [t.id, t.state])).toEqual([
      ['T1', 'to_scope'],
      ['T2', 'to_scope'],
    ]);
    expect(run.tasks[0].note).toMatch(/malformed tool calls and no bigger model is left/);
    expect(run.tasks[1].note).toMatch(/a dependency cannot finish \(T1\)/);
  });

  it('approval gate: an edit breaking disjoint ownership is refused whole; squad changes name the owner; removal repairs dependencies', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') {
        return planAnswer({
          tasks: [
            task('T1', 'api', ['src/api/health.mjs']),
            task('T2', 'web', ['src/web/page.mjs'], { dependencies: ['T1'] }),
            task('T3', 'web', ['src/web/b.mjs']),
          ],
        });
      }
      return { content: 'done' };
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, code: { require_approval: true } });
    const started = await server.api('/api/runs', {
      method: 'POST',
      json: { request: 'health route and page', repo, teams: ['api', 'web'] },
    });
    const id = started.body.id;
    await eventually(async () => (await server!.api(`/api/runs/${id}`)).body.status === 'awaiting_approval', 30_000);
    const before = (await server.api(`/api/runs/${id}/plan`)).body;
    expect(before).toMatchObject({ status: 'awaiting_approval', shown: 3, total: 3, note: null });

    const refused = await server.api(`/api/runs/${id}/plan`, {
      method: 'PATCH',
      json: { tasks: [{ id: 'T3', title: 'renamed' }], teams: [{ id: 'web', owns: ['src/**'] }] },
    });
    expect(refused.status).toBe(422);
    expect(refused.body.detail).toBe("ownership must be disjoint: teams 'api' and 'web' both own paths: 'src/api/**' overlaps 'src/**'");
    expect((await server.api(`/api/runs/${id}/plan`)).body).toEqual(before);

    const unstaffable = await server.api(`/api/runs/${id}/plan`, { method: 'PATCH', json: { tasks: [{ id: 'T3', role: 'astronaut' }] } });
    expect(unstaffable).toMatchObject({
      status: 422,
      body: { detail: "task T3: role 'astronaut' cannot be staffed (no generic agent and no roster agent has it)" },
    });

    const squad = await server.api('/api/tasks/T1', { method: 'PATCH', json: { squad: 'web' } });
    expect(squad).toMatchObject({
      status: 422,
      body: { detail: "task T1 cannot go to team 'web': src/api/health.mjs is owned by team 'api'" },
    });
    const unassign = await server.api('/api/tasks/T1', { method: 'PATCH', json: { squad: null } });
    expect(unassign.body.detail).toBe("task T1 cannot be un-assigned: its files are owned by team 'api'");
    const retitled = await server.api('/api/tasks/T3', { method: 'PATCH', json: { title: 'page styles', priority: 1 } });
    expect(retitled.body.task).toMatchObject({ id: 'T3', title: 'page styles', priority: 1, squad: 'web' });

    const edited = await server.api(`/api/runs/${id}/plan`, {
      method: 'PATCH',
      json: {
        tasks: [
          { id: 'T1', remove: true },
          { id: 'T3', description: '' },
        ],
      },
    });
    expect(edited.status).toBe(200);
    expect(edited.body.tasks.map((t: any) => [t.id, t.dependencies, t.title])).toEqual([
      ['T2', [], 'task T2'],
      ['T3', [], 'page styles'],
    ]);
    const stream = await fetch(`${server.url}/api/runs/${id}/events?session=${server.token}`, { signal: AbortSignal.timeout(20_000) }).then(
      async (r) => {
        const reader = r.body!.getReader();
        let text = '';
        try {
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            text += new TextDecoder().decode(value);
            if (text.includes('dependency_dropped')) break;
          }
        } catch {
          // aborted by the timeout: what arrived is enough
        } finally {
          await reader.cancel().catch(() => undefined);
        }
        return text;
      },
    );
    expect(stream).toContain(
      '"type":"dependency_dropped","run":"' + id + '","task":"T2","dependency":"T1","reason":"task removed at the approval gate"',
    );

    const cancelled = await server.api(`/api/runs/${id}/cancel`, { method: 'POST' });
    expect(cancelled.status).toBe(200);
    expect((await server.settle(id)).status).toBe('cancelled');
  }, 120_000);

  it('cancelling a run stops its workers and commands and leaves the repository clean', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    // The command says when it is running (outside the repository), so the cancel lands mid-`sleep 30`.
    const commandStarted = path.join(await marksDir(), 'command-started');
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return planAnswer({ tasks: [task('T1', 'api', ['src/api/a.mjs'])] });
      return agentScript(
        [
          write('src/api/a.mjs', 'half-written'),
          { tool_calls: [{ name: 'run_command', arguments: { command: `touch ${commandStarted} && sleep 30` } }] },
        ],
        c,
      );
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM } });
    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'x', repo } });
    const id = started.body.id;
    await eventually(() => existsSync(commandStarted), 30_000);
    const t0 = Date.now();
    await server.api(`/api/runs/${id}/cancel`, { method: 'POST' });
    const run = await server.settle(id, 25_000);
    // Cancel plus git cleanup, on a loaded machine: still well under the 30 s the command would take.
    expect(Date.now() - t0).toBeLessThan(20_000);
    expect(run.status).toBe('cancelled');
    expect(git(repo, 'status', '--porcelain')).toBe('');
    expect(git(repo, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('main');
    expect(git(repo, 'log', '--format=%s', `main..${run.branch}`)).toBe('');
    expect(existsSync(path.join(server.root, '.hangar', 'worktrees', id))).toBe(false);
    expect(git(repo, 'worktree', 'list').split('\n')).toHaveLength(1);
  }, 120_000);

  it('re-queues a task orphaned by a failed model call, up to the attempt ceiling', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    let agentCalls = 0;
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return planAnswer({ tasks: [task('T1', 'api', ['src/api/a.mjs'])] });
      if (c.kind === 'reviewer') return approve;
      // The endpoint fails the first agent call: the loop ends with nothing in flight for T1.
      if (++agentCalls === 1) return { status: 500 };
      return agentScript([write('src/api/a.mjs', 'export {};\n')], c);
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM }, code: { attempt_ceiling: 2 } });
    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'x', repo } });
    const run = await server.settle(started.body.id);
    expect(run.tasks[0]).toMatchObject({ state: 'done', attempts: 2 });
    const res = await server.api(`/api/runs/${run.id}/events`);
    expect(res.text).toMatch(/"task":"T1","team":"api","state":"ready_to_dev","note":"model_error: model small-model answered 500/);
  });

  it('retries a stuck task of a live run on request', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    // T2's command keeps the run alive until the test opens this gate (after its retry request).
    const gate = path.join(await marksDir(), 'open');
    const hold = `n=0; while [ ! -e ${gate} ] && [ $n -lt 1800 ]; do sleep 0.05; n=$((n+1)); done`;
    let t1Dispatches = 0;
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return planAnswer({ tasks: [task('T1', 'api', ['src/api/a.mjs']), task('T2', 'api', ['src/api/b.mjs'])] });
      if (c.kind === 'reviewer') return approve;
      if (c.task === 'T1') {
        if (c.turn === 0) t1Dispatches++;
        return t1Dispatches === 1
          ? { tool_calls: [{ name: 'write_file', arguments: 'not json' }] }
          : agentScript([write('src/api/a.mjs', 'export {};\n')], c);
      }
      return agentScript(
        [{ tool_calls: [{ name: 'run_command', arguments: { command: hold } }] }, write('src/api/b.mjs', 'export {};\n')],
        c,
      );
    });
    // The held command must not hit its timeout while the test waits (the model's own timeout would
    // cut a hold in the scripted model short, hence a command).
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM }, code: { command_timeout_ms: 120_000 } });
    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'x', repo } });
    const id = started.body.id;
    await eventually(
      async () => (await server!.api(`/api/runs/${id}`)).body.tasks?.find((t: any) => t.id === 'T1')?.state === 'to_scope',
      30_000,
    );
    const retried = await server.api('/api/tasks/T1/retry', { method: 'POST', json: {} });
    await writeFile(gate, '');
    expect(retried.body.task).toMatchObject({ id: 'T1', state: 'ready_to_dev', attempts: 0, needs_human: false });
    const run = await server.settle(id);
    expect(run.tasks.map((t: any) => [t.id, t.state])).toEqual([
      ['T1', 'done'],
      ['T2', 'done'],
    ]);
    expect(t1Dispatches).toBe(2);
    const late = await server.api('/api/tasks/T1/retry', { method: 'POST', json: {} });
    // A finished run is not resumed (README, decision): the 409 says exactly how to redo the task.
    expect(late).toMatchObject({
      status: 409,
      body: {
        detail:
          `task T1 belongs to run '${id}', which has succeeded; a finished run is not resumed, so the task cannot be retried there. ` +
          `To redo it, start a new run: POST /api/runs {"request": "task T1", "repo": ${JSON.stringify(repo)}} or \`hangar code run "task T1" --repo ${repo}\`. ` +
          `A new run starts from the repository's HEAD: merge hangar/run-${id} first if it should build on this run's finished tasks.`,
      },
    });
    expect((await server.api('/api/tasks/T1', { method: 'PATCH', json: { title: 'x' } })).body.detail).toMatch(
      /^task T1 belongs to run '.+', which has succeeded; a finished run is not resumed, so the task cannot be changed there\./,
    );
    // The run named explicitly gets the same answer; the task state is untouched.
    expect((await server.api('/api/tasks/T1/retry', { method: 'POST', json: { run: id } })).status).toBe(409);
    expect((await server.api(`/api/runs/${id}`)).body.tasks[0]).toMatchObject({ id: 'T1', state: 'done' });
    expect((await server.api('/api/tasks/T9/retry', { method: 'POST', json: {} })).status).toBe(404);
  }, 120_000);

  it('an integration check failing after green gates raises a ticket for a person and fails the run', async () => {
    repo = await makeRepo({
      'package.json': '{"type":"module"}\n',
      'test/api/ok.test.mjs': "import test from 'node:test';\ntest('ok', () => {});\n",
    });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return planAnswer({ tasks: [task('T1', 'api', ['src/api/a.mjs'])] });
      if (c.kind === 'reviewer') return approve;
      return agentScript([write('src/api/a.mjs', 'export {};\n')], c);
    });
    server = await startCodeServer({
      baseUrl: model.baseUrl,
      teams: { api: API_TEAM },
      code: {
        integration_command: 'node --test "test/api/**/*.test.mjs" && node -e "console.error(\'not ok - wiring\'); process.exit(2)"',
      },
    });
    const run = await server.settle((await server.api('/api/runs', { method: 'POST', json: { request: 'x', repo } })).body.id);
    expect(run.gates.map((g: any) => g.outcome)).toEqual(['green']);
    expect(run.integration).toMatchObject({ outcome: 'RED', exit_code: 2 });
    expect(run.tickets).toEqual([
      expect.objectContaining({ id: 'TK1-INTEGRATION', team: 'integration', status: 'needs_human', files: ['src/api/a.mjs'] }),
    ]);
    expect(run.repairs).toEqual({ found: 1, resolved: 0, restaffed: 0, needs_human: 1 });
    expect(run.status).toBe('failed');
    expect(run.summary).toContain('integration: RED');
  });

  it('marks runs interrupted by a crash as failed on the next start and removes their worktrees', async () => {
    repo = await makeRepo({ 'README.md': 'x\n' });
    server = await startCodeServer();
    const root = server.root;
    const dir = path.join(root, '.hangar', 'worktrees', 'crashed-1');
    git(repo, 'worktree', 'add', '-q', '-b', 'hangar/run-crashed-1', dir);
    await server.ctx.store.collection('coderun_runs', { shards: 4 }).put('crashed-1', {
      id: 'crashed-1',
      request: 'x',
      repo,
      status: 'running',
      created_at: new Date().toISOString(),
      finished_at: null,
      pins: [],
      teams: [],
      plan: null,
      tasks: [],
      tickets: [],
      gates: [],
      integration: null,
      branch: 'hangar/run-crashed-1',
      base: null,
      contract_file: null,
      repairs: { found: 0, resolved: 0, restaffed: 0, needs_human: 0 },
      summary: null,
      error: null,
    });
    await server.ctx.store.flush();
    await server.close();
    const { startTestServer } = await import('../support/server.js');
    const again = await startTestServer({ root, settings: { watch: false }, start: { subsystems: CODE_SUBSYSTEMS } });
    try {
      const token = JSON.parse(await readFile(path.join(root, '.hangar', 'code-session.json'), 'utf8')).token;
      expect(token).not.toBe(server.token);
      const run = (await again.request('/api/runs/crashed-1', { headers: { 'x-hangar-session': token } })).body;
      expect(run).toMatchObject({ status: 'failed', error: 'interrupted: the server stopped during the run' });
      expect(existsSync(dir)).toBe(false);
      expect(git(repo, 'branch', '--list', 'hangar/run-crashed-1')).toContain('hangar/run-crashed-1');
      expect(git(repo, 'worktree', 'list').split('\n')).toHaveLength(1);
    } finally {
      await again.stop();
      server = undefined;
      await rm(root, { recursive: true, force: true });
    }
  });

  it('with squads off runs one task per wave, and refuses a second run on the same repository', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return planAnswer({ tasks: [task('T1', 'api', ['src/api/a.mjs']), task('T2', 'web', ['src/web/b.mjs'])] });
      if (c.kind === 'reviewer') return approve;
      return agentScript([write(c.task === 'T1' ? 'src/api/a.mjs' : 'src/web/b.mjs', 'export {};\n')], c);
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, code: { squads: false, require_approval: true } });
    const id = (await server.api('/api/runs', { method: 'POST', json: { request: 'x', repo, teams: ['api', 'web'] } })).body.id;
    const second = await server.api('/api/runs', { method: 'POST', json: { request: 'y', repo } });
    expect(second).toMatchObject({ status: 409, body: { detail: `run ${id} is already working on ${repo}` } });
    await eventually(async () => (await server!.api(`/api/runs/${id}`)).body.status === 'awaiting_approval', 30_000);
    expect((await server.api(`/api/runs/${id}/approve`, { method: 'POST' })).status).toBe(200);
    const run = await server.settle(id);
    expect(run.status).toBe('succeeded');
    const text = (await server.api(`/api/runs/${id}/events`)).text;
    const waves = text
      .split('\n')
      .filter((l) => l.includes('"type":"wave"'))
      .map((l) => JSON.parse(l.slice(6)).tasks);
    expect(waves).toEqual([['T1'], ['T2']]);
    // The api lane is proved as soon as it finishes, before the web lane's wave starts.
    const order = text
      .split('\n')
      .filter((l) => /"type":"(wave|gate)"/.test(l))
      .map((l) => JSON.parse(l.slice(6)))
      .map((e) => (e.type === 'wave' ? `wave ${e.wave}` : `gate ${e.team}`));
    expect(order).toEqual(['wave 1', 'gate api', 'wave 2', 'gate web']);
  }, 120_000);

  it('kills a command that hangs at its timeout, with its child processes', async () => {
    const started = Date.now();
    const result = await runCommand('sleep 30 & sleep 30; echo never', { cwd: process.cwd(), timeoutMs: 300 });
    expect(result).toMatchObject({ exit_code: null, timed_out: true });
    expect(result.output).toContain('[killed: timed out after 300 ms]');
    // Well under the 30 s the command would take: the timeout fired (with slack for a loaded machine).
    expect(Date.now() - started).toBeLessThan(15_000);
  });
});
