import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  API_TEAM,
  type CodeServer,
  git,
  HEALTH_OK,
  HEALTH_TEST,
  makeRepo,
  runFrames,
  startCodeServer,
  tearDownAfterEach,
  WEB_TEAM,
} from './support/fixture.js';
import {
  agentScript,
  approve,
  barrier,
  type Classified,
  type ScriptedAnswer,
  type ScriptedModel,
  startScriptedModel,
  write,
} from './support/scripted-model.js';

const HEALTH_BAD = `export const health = () => ({ ok: false });\n`;
const PAGE = `export const page = () => '<h1>health</h1>';\n`;
const PAGE_TEST = `import test from 'node:test';\nimport assert from 'node:assert';\nimport { page } from '../../src/web/page.mjs';\ntest('page shows health', () => assert.match(page(), /health/));\n`;

const task = (id: string, squad: string, files: string[], extra: Record<string, unknown> = {}) => ({
  id,
  title: `task ${id}`,
  description: `do ${id}`,
  role: 'developer',
  squad,
  acceptance: '',
  criteria: [],
  priority: 5,
  files,
  dependencies: [],
  ...extra,
});

const planAnswer = (plan: Record<string, unknown>): ScriptedAnswer => ({ tool_calls: [{ name: 'submit_plan', arguments: plan }] });

let model: ScriptedModel | undefined;
let server: CodeServer | undefined;
let repo: string | undefined;
tearDownAfterEach(() => [server, model, repo]);

async function events(runId: string): Promise<any[]> {
  return runFrames((await server!.api(`/api/runs/${runId}/events`)).text);
}

describe('coding run scenarios (scripted loopback model, fixture git repos)', () => {
  it('two teams go green end to end: contract frozen, parallel wave, a commit per task, clean user tree', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n', 'README.md': '# app\n' });
    // The two agents' first calls wait for each other: in a parallel wave both are in flight at
    // once, however long each worker thread took to start.
    const together = barrier(2);
    model = await startScriptedModel(async (c: Classified) => {
      if (c.kind === 'planner') {
        return planAnswer({
          summary: 'health route and page',
          tasks: [
            task('T1', 'api', ['src/api/health.mjs', 'test/api/health.test.mjs']),
            task('T2', 'web', ['src/web/page.mjs', 'test/web/page.test.mjs']),
          ],
          contract: [{ name: 'health()', spec: 'health() returns {ok:true}', provider: 'api', consumers: ['web'] }],
        });
      }
      if (c.kind === 'reviewer') return approve;
      if (c.kind === 'agent' && c.turn === 0) await together();
      if (c.task === 'T1')
        return {
          ...agentScript([write('src/api/health.mjs', HEALTH_OK), write('test/api/health.test.mjs', HEALTH_TEST)], c),
          delayMs: 250,
        };
      return { ...agentScript([write('src/web/page.mjs', PAGE), write('test/web/page.test.mjs', PAGE_TEST)], c), delayMs: 250 };
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, code: { max_parallel: 2 } });

    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'add a health route and a page', repo } });
    expect(started.status).toBe(202);
    const run = await server.settle(started.body.id);

    expect([run.status, run.summary, run.error]).toEqual(['succeeded', expect.any(String), null]);
    expect(run.gates.map((g: any) => [g.team, g.outcome])).toEqual([
      ['api', 'green'],
      ['web', 'green'],
    ]);
    expect(run.integration.outcome).toBe('green');
    expect(run.tasks.map((t: any) => [t.id, t.state, t.commit !== null])).toEqual([
      ['T1', 'done', true],
      ['T2', 'done', true],
    ]);
    expect(run.repairs).toEqual({ found: 0, resolved: 0, restaffed: 0, needs_human: 0 });
    // One commit per task after the contract, each touching only its task's files.
    const log = git(repo, 'log', '--format=%s', `main..${run.branch}`).split('\n');
    expect(log).toHaveLength(3);
    expect(log[2]).toMatch(/^contract: freeze 1 clause/);
    const t1 = run.tasks.find((t: any) => t.id === 'T1');
    expect(git(repo, 'show', '--name-only', '--format=', t1.commit).split('\n').sort()).toEqual([
      'src/api/health.mjs',
      'test/api/health.test.mjs',
    ]);
    expect(JSON.parse(git(repo, 'show', `${run.branch}:.hangar/contract.json`)).clauses[0]).toMatchObject({
      provider: 'api',
      consumers: ['web'],
    });
    // The user's checkout is untouched: still on main, nothing modified, worktree gone.
    expect(git(repo, 'rev-parse', '--abbrev-ref', 'HEAD')).toBe('main');
    expect(git(repo, 'status', '--porcelain')).toBe('');
    expect(existsSync(path.join(repo, 'src'))).toBe(false);
    expect(git(repo, 'worktree', 'list').split('\n')).toHaveLength(1);

    const stream = await events(run.id);
    const types = stream.map((e) => e.type);
    expect(stream.find((e) => e.type === 'wave')).toMatchObject({ wave: 1, tasks: ['T1', 'T2'], teams: ['api', 'web'] });
    expect(stream.find((e) => e.type === 'contract_frozen')).toMatchObject({ name: 'health()', provider: 'api', consumers: ['web'] });
    expect(types.indexOf('contract_frozen')).toBeLessThan(types.indexOf('wave'));
    expect(
      stream
        .filter((e) => e.type === 'review_pending')
        .map((e) => e.task)
        .sort(),
    ).toEqual(['T1', 'T2']);
    // The reviewer reads the change itself: new files whole.
    const review = model.requests.find((r) => r.kind === 'reviewer' && r.task === 'T1')!;
    expect(review.body.messages[1]!.content).toContain(`new file src/api/health.mjs:\n${HEALTH_OK}`);
    expect(types.at(-1)).toBe('run_finished');
    // Resuming after event 3 replays the rest, with the same sequence numbers.
    const resumed = await server.api(`/api/runs/${run.id}/events`, { headers: { 'Last-Event-ID': '3' } });
    const ids = resumed.text
      .split('\n')
      .filter((l) => l.startsWith('id: '))
      .map((l) => Number(l.slice(4)));
    expect(ids[0]).toBe(4);
    expect(ids).toHaveLength(stream.length - 3);
    // Both agents' model calls overlapped (a real parallel wave) within max_parallel = 2.
    expect(model.peakConcurrency).toBe(2);

    const latest = await server.api('/api/runs/latest');
    expect(latest.body.id).toBe(run.id);
    const activity = await server.api(`/api/teams/activity?team=web&query=${run.id}`);
    expect(activity.body.events.length).toBeGreaterThan(0);
    expect(activity.body.events.every((e: any) => e.teams.includes('web'))).toBe(true);
  });

  it('a failing test turns the gate RED, raises a ticket, the fix turns it green', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return planAnswer({ tasks: [task('T1', 'api', ['src/api/health.mjs', 'test/api/health.test.mjs'])] });
      if (c.kind === 'reviewer') return approve;
      if (c.task === 'T1') return agentScript([write('src/api/health.mjs', HEALTH_BAD), write('test/api/health.test.mjs', HEALTH_TEST)], c);
      return agentScript([write('src/api/health.mjs', HEALTH_OK)], c);
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM } });
    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'health route', repo } });
    const run = await server.settle(started.body.id);

    expect(run.gates.map((g: any) => g.outcome)).toEqual(['RED', 'green']);
    expect(run.tickets).toHaveLength(1);
    expect(run.tickets[0]).toMatchObject({
      id: 'TK1-API',
      team: 'api',
      command: API_TEAM.acceptance,
      acceptance: `\`${API_TEAM.acceptance}\` passes`,
      status: 'resolved',
      count: 1,
    });
    // TAP (Node 22) or spec (Node 24) reporter: either way the failing test is named.
    expect(run.tickets[0].output_tail).toMatch(/(?:not ok \d+ -|✖) health answers ok/);
    expect(run.tickets[0].files).toContain('test/api/health.test.mjs');
    const fix = run.tasks.find((t: any) => t.ticket === 'TK1-API');
    expect(fix).toMatchObject({ id: 'TK1-API-FIX1', squad: 'api', state: 'done', criteria: [{ command: API_TEAM.acceptance }] });
    expect(run.repairs).toEqual({ found: 1, resolved: 1, restaffed: 0, needs_human: 0 });
    expect(run.status).toBe('succeeded');
    const stream = await events(run.id);
    expect(stream.filter((e) => e.type === 'ticket').map((e) => e.action)).toEqual(['raised', 'resolved']);
  });

  it('the same defect found twice bumps one ticket instead of raising a second', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    let fixAttempts = 0;
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return planAnswer({ tasks: [task('T1', 'api', ['src/api/health.mjs', 'test/api/health.test.mjs'])] });
      if (c.kind === 'reviewer') return approve;
      if (c.task === 'T1') return agentScript([write('src/api/health.mjs', HEALTH_BAD), write('test/api/health.test.mjs', HEALTH_TEST)], c);
      // The first fix changes nothing useful; the re-staffed fix does it right.
      if (c.turn === 0) fixAttempts++;
      return agentScript(
        c.task === 'TK1-API-FIX1' ? [write('src/api/health.mjs', HEALTH_BAD)] : [write('src/api/health.mjs', HEALTH_OK)],
        c,
      );
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM }, code: { review_rounds: 1, attempt_ceiling: 1 } });
    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'health route', repo } });
    const run = await server.settle(started.body.id);

    expect(run.tickets).toHaveLength(1);
    expect(run.tickets[0]).toMatchObject({ id: 'TK1-API', count: 2, staffed: 2, status: 'resolved' });
    expect(run.tasks.map((t: any) => [t.id, t.state])).toEqual([
      ['T1', 'done'],
      ['TK1-API-FIX1', 'to_scope'],
      ['TK1-API-FIX2', 'done'],
    ]);
    expect(run.gates.map((g: any) => g.outcome)).toEqual(['RED', 'RED', 'green']);
    expect(run.repairs).toEqual({ found: 1, resolved: 1, restaffed: 1, needs_human: 0 });
    expect(fixAttempts).toBe(2);
    const stream = await events(run.id);
    expect(stream.filter((e) => e.type === 'ticket').map((e) => [e.action, e.count])).toEqual([
      ['raised', 1],
      ['bumped', 2],
      ['resolved', 2],
    ]);
  });

  it('refuses writes outside the fence (another team, a symlink, ..) and reports a test-less gate as UNVERIFIED', async () => {
    repo = await makeRepo(
      { 'package.json': '{"type":"module"}\n', 'src/web/index.mjs': 'export {};\n', 'test/api/.keep': '' },
      { 'src/api/link': '../web' },
    );
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return planAnswer({ tasks: [task('T1', 'api', ['src/api/health.mjs'])] });
      if (c.kind === 'reviewer') return approve;
      return agentScript(
        [
          write('src/web/hack.mjs', 'x'),
          write('src/api/link/hack.mjs', 'x'),
          write('src/api/../../../outside.txt', 'x'),
          write('.git/hooks/pre-commit', 'x'),
          write('src/api/health.mjs', HEALTH_OK),
          { tool_calls: [{ name: 'run_command', arguments: { command: 'echo stray > src/web/index.mjs && echo new > src/web/new.mjs' } }] },
        ],
        c,
      );
    });
    server = await startCodeServer({
      baseUrl: model.baseUrl,
      teams: { api: API_TEAM, web: WEB_TEAM },
    });
    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'health route', repo } });
    const run = await server.settle(started.body.id);

    const results = model.requests.filter((r) => r.kind === 'agent').at(-1)!.toolResults;
    expect(results[0]).toBe(
      "error: write refused: src/web/hack.mjs is outside team 'api' owned paths (src/api/**, test/api/**); it is owned by team 'web'",
    );
    expect(results[1]).toBe(
      "error: write refused: src/api/link/hack.mjs (resolves to src/web/hack.mjs) is outside team 'api' owned paths (src/api/**, test/api/**); it is owned by team 'web'",
    );
    expect(results[2]).toBe('error: src/api/../../../outside.txt is outside the repository');
    expect(results[3]).toBe('error: .git/hooks/pre-commit is inside .git');
    expect(results[4]).toMatch(/^wrote src\/api\/health.mjs/);
    const t1 = run.tasks[0];
    expect(git(repo, 'show', '--name-only', '--format=', t1.commit)).toBe('src/api/health.mjs');
    expect(git(repo, 'ls-tree', '-r', '--name-only', run.branch)).not.toMatch(/hack|outside/);
    // A command is not fenced while it runs, but its writes into another team's paths are reverted as soon as it returns.
    const stream = await events(run.id);
    const command = 'echo stray > src/web/index.mjs && echo new > src/web/new.mjs';
    expect(
      stream
        .filter((e) => e.type === 'fence_violation')
        .map(({ task, team, owner, file, command }) => ({ task, team, owner, file, command })),
    ).toEqual([
      { task: 'T1', team: 'api', owner: 'web', file: 'src/web/index.mjs', command },
      { task: 'T1', team: 'api', owner: 'web', file: 'src/web/new.mjs', command },
    ]);
    expect(results[5]).toMatch(
      /^exit 0\n[\s\S]*reverted its writes outside your team's paths: src\/web\/index.mjs \(team 'web'\), src\/web\/new.mjs \(team 'web'\)$/,
    );
    // The api gate passed but ran no tests: UNVERIFIED, never green, and it fails nothing.
    expect(run.gates).toEqual([
      expect.objectContaining({ team: 'api', outcome: 'UNVERIFIED', reason: 'passed but ran no tests', tests: 0 }),
    ]);
    expect(run.status).toBe('succeeded');
    expect(run.summary).toContain('UNVERIFIED: api');
  });
});
