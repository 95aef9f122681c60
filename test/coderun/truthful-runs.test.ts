/**
 * Runs that tell the truth (issue #22): across three toolchains the board, tickets and summary are
 * right; the plan cap is reported and a pinned team losing its work stops the plan before approval;
 * needs_human counts problems; one task_update per state change; a ticket is resolved only by its
 * check passing.
 */
import { execSync } from 'node:child_process';
import { mkdtemp, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  API_TEAM,
  type CodeServer,
  HEALTH_OK,
  HEALTH_TEST,
  makeRepo,
  runFrames,
  startCodeServer,
  tearDownAfterEach,
  WEB_TEAM,
} from './support/fixture.js';
import { agentScript, approve, planAnswer, planTask, type ScriptedModel, startScriptedModel, write } from './support/scripted-model.js';

const task = planTask;

const HEALTH_BAD = `export const health = () => ({ ok: false });\n`;
const CART_BAD = 'class Cart:\n    pass\n';
const CART_OK = 'class Cart:\n    def __eq__(self, other):\n        return other == 3\n';
const CART_TEST = 'from cart import Cart\n\ndef test_total():\n    assert Cart() == 3\n';

const PY_TEAM = { charter: 'Python code', owns: ['py/**'], acceptance: 'python3 -m pytest -q py', match: { keywords: ['python'] } };
const RS_TEAM = {
  charter: 'Rust crate',
  owns: ['rs/**'],
  acceptance: 'cargo test --manifest-path rs/Cargo.toml',
  match: { keywords: ['rust'] },
};
const DOCS_TEAM = { charter: 'Docs', owns: ['docs/**'], acceptance: '', match: { keywords: ['docs'] } };

const pytest = (() => {
  try {
    execSync('python3 -m pytest --version', { stdio: 'ignore' });
    return { ok: true, reason: '' };
  } catch {
    return { ok: false, reason: 'skipped: `python3 -m pytest --version` failed (install python3-pytest)' };
  }
})();

let model: ScriptedModel | undefined;
let server: CodeServer | undefined;
let repo: string | undefined;
let marks: string | undefined;
tearDownAfterEach(() => [server, model, repo, marks]);

async function events(runId: string): Promise<any[]> {
  return runFrames((await server!.api(`/api/runs/${runId}/events`)).text);
}

/** Every task's task_update states in order: one per state change, so no state twice in a row. */
function repeatedStates(stream: any[]): string[] {
  const last = new Map<string, string>();
  const repeats: string[] = [];
  for (const e of stream.filter((x) => x.type === 'task_update')) {
    if (last.get(e.task) === e.state) repeats.push(`${e.task} → ${e.state}`);
    last.set(e.task, e.state);
  }
  return repeats;
}

describe('a run across three toolchains (node, python, rust)', () => {
  it.skipIf(!pytest.ok)(
    `bumps one ticket for the same pytest failure, reports a missing Cargo.toml as UNVERIFIED, and sums it up right${pytest.ok ? '' : ` (${pytest.reason})`}`,
    async () => {
      repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
      model = await startScriptedModel((c) => {
        if (c.kind === 'planner') {
          return planAnswer({
            summary: 'health route, python cart, rust notes',
            tasks: [
              task('T1', 'api', ['src/api/health.mjs', 'test/api/health.test.mjs']),
              task('T2', 'py', ['py/cart.py', 'py/test_cart.py']),
              task('T3', 'rs', ['rs/NOTES.md']),
            ],
          });
        }
        if (c.kind === 'reviewer') return approve;
        if (c.task === 'T1')
          return agentScript([write('src/api/health.mjs', HEALTH_OK), write('test/api/health.test.mjs', HEALTH_TEST)], c);
        // The cart's default repr names a new memory address on every pytest run.
        if (c.task === 'T2') return agentScript([write('py/cart.py', CART_BAD), write('py/test_cart.py', CART_TEST)], c);
        if (c.task === 'T3') return agentScript([write('rs/NOTES.md', 'notes\n')], c);
        if (c.task === 'TK1-PY-FIX1') return agentScript([write('py/cart.py', CART_BAD)], c);
        return agentScript([write('py/cart.py', CART_OK)], c);
      });
      server = await startCodeServer({
        baseUrl: model.baseUrl,
        teams: { api: API_TEAM, py: PY_TEAM, rs: RS_TEAM },
        code: { review_rounds: 1, attempt_ceiling: 1, command_timeout_ms: 60_000 },
      });
      const started = await server.api('/api/runs', {
        method: 'POST',
        json: { request: 'health route, python cart and rust notes', repo },
      });
      const run = await server.settle(started.body.id, 150_000);

      const final = (team: string) => [...run.gates].reverse().find((g: any) => g.team === team);
      expect(run.gates.filter((g: any) => g.team === 'py').map((g: any) => g.outcome)).toEqual(['RED', 'RED', 'green']);
      expect(final('api')).toMatchObject({ outcome: 'green', tests: 1 });
      expect(final('rs')).toMatchObject({ outcome: 'UNVERIFIED', reason: expect.stringMatching(/cargo/) });
      // One defect, one ticket: seen twice, staffed twice, resolved when pytest passed.
      expect(run.tickets.map((t: any) => [t.id, t.status, t.count, t.staffed])).toEqual([['TK1-PY', 'resolved', 2, 2]]);
      expect(run.tasks.map((t: any) => [t.id, t.state])).toEqual([
        ['T1', 'done'],
        ['T2', 'done'],
        ['T3', 'done'],
        ['TK1-PY-FIX1', 'to_scope'],
        ['TK1-PY-FIX2', 'done'],
      ]);
      expect(run.repairs).toEqual({ found: 1, resolved: 1, restaffed: 1, needs_human: 0 });
      expect(run.integration.outcome).toBe('UNVERIFIED');
      expect(run.summary).toBe('4/5 tasks done; green: api, py; RED: none; UNVERIFIED: rs; integration: UNVERIFIED');
      expect(run.status).toBe('succeeded');
      const stream = await events(run.id);
      expect(stream.filter((e) => e.type === 'ticket').map((e) => [e.ticket, e.action, e.count])).toEqual([
        ['TK1-PY', 'raised', 1],
        ['TK1-PY', 'bumped', 2],
        ['TK1-PY', 'resolved', 2],
      ]);
      expect(repeatedStates(stream)).toEqual([]);
    },
    180_000,
  );
});

describe('the plan size cap, reported', () => {
  const eleven = () =>
    planAnswer({
      summary: 'many small api pieces and one docs page',
      tasks: [
        ...Array.from({ length: 10 }, (_, i) => task(`T${i + 1}`, 'api', [`src/api/part${i + 1}.mjs`])),
        task('T11', 'docs', ['docs/health.md']),
      ],
    });

  it('names every dropped task and the teams left without work; a pinned team losing its only task blocks approval until the plan is fixed', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return eleven();
      if (c.kind === 'reviewer') return approve;
      return agentScript([], c);
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM, web: WEB_TEAM, docs: DOCS_TEAM } });
    const started = await server.api('/api/runs', {
      method: 'POST',
      json: { request: 'health route pieces and docs', repo, teams: ['api', 'docs'], require_approval: true },
    });
    const id = started.body.id;
    for (let i = 0; i < 200 && (await server.api(`/api/runs/${id}`)).body.status !== 'awaiting_approval'; i++)
      await new Promise((r) => setTimeout(r, 25));

    const problem =
      "team 'docs' is pinned but the plan size cap (8) dropped all its tasks (T11): remove other tasks and add one of its tasks back, or remove the team from the plan";
    const record = (await server.api(`/api/runs/${id}`)).body;
    expect(record.plan_cut).toMatchObject({ cap: 8, proposed: 11, teams_without_work: ['docs'] });
    expect(record.plan_problems).toEqual([problem]);
    expect((await server.api(`/api/runs/${id}/plan`)).body.problems).toEqual([problem]);

    const refused = await server.api(`/api/runs/${id}/approve`, { method: 'POST' });
    expect(refused.status).toBe(409);
    expect(refused.body.detail).toBe(`the plan cannot be approved yet: ${problem}`);

    // Make room and bring the docs task back: the problem is gone, the report follows the plan.
    const edited = await server.api(`/api/runs/${id}/plan`, {
      method: 'PATCH',
      json: {
        tasks: [
          { id: 'T8', remove: true },
          { id: 'T11', title: 'task T11', squad: 'docs', files: ['docs/health.md'] },
        ],
      },
    });
    expect(edited.status).toBe(200);
    expect(edited.body.problems).toEqual([]);
    expect(edited.body.plan_cut).toMatchObject({ dropped: [{ id: 'T9' }, { id: 'T10' }], teams_without_work: [] });
    expect((await server.api(`/api/runs/${id}/approve`, { method: 'POST' })).status).toBe(200);
    await server.api(`/api/runs/${id}/cancel`, { method: 'POST' });
    const done = await server.settle(id);
    expect(done.summary).toContain('plan size cap 8: dropped 2 of 11 tasks (T9 [api], T10 [api])');
    // The stream of a live run stays open: read it once the run is over.
    const proposed = (await events(id)).find((e) => e.type === 'plan_proposed');
    expect(proposed).toMatchObject({
      tasks: 8,
      shown: 8,
      proposed: 11,
      cap: 8,
      dropped: [
        { id: 'T9', title: 'task T9', team: 'api' },
        { id: 'T10', title: 'task T10', team: 'api' },
        { id: 'T11', title: 'task T11', team: 'docs' },
      ],
      teams_without_work: ['docs'],
      problems: [problem],
    });
  });

  it('without an approval gate, a pinned team the cap leaves without work fails the run before any work starts', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    model = await startScriptedModel((c) => (c.kind === 'planner' ? eleven() : approve));
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM, docs: DOCS_TEAM } });
    const started = await server.api('/api/runs', {
      method: 'POST',
      json: { request: 'health route pieces and docs', repo, teams: ['api', 'docs'] },
    });
    const run = await server.settle(started.body.id);
    expect(run).toMatchObject({ status: 'failed', tasks: [], branch: null });
    expect(run.error).toMatch(/^the plan cannot start: team 'docs' is pinned but the plan size cap \(8\) dropped all its tasks \(T11\)/);
    expect(model.requests.filter((r) => r.kind === 'agent')).toHaveLength(0);
  });

  it('an unpinned team left without work is named in the record and the summary of the finished run', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return eleven();
      if (c.kind === 'reviewer') return approve;
      return agentScript([], c);
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM, docs: DOCS_TEAM }, code: { max_parallel: 4 } });
    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'health route pieces and docs', repo } });
    const run = await server.settle(started.body.id);
    expect(run.tasks).toHaveLength(8);
    expect(run.plan_cut.teams_without_work).toEqual(['docs']);
    expect(run.summary).toMatch(
      /; plan size cap 8: dropped 3 of 11 tasks \(T9 \[api\], T10 \[api\], T11 \[docs\]\); teams left without work: docs$/,
    );
  });
});

describe('repairs and task updates', () => {
  it('needs_human counts the one unresolved problem, not its fix attempts; task_update once per state change', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return planAnswer({ tasks: [task('T1', 'api', ['src/api/health.mjs', 'test/api/health.test.mjs'])] });
      if (c.kind === 'reviewer') return approve;
      return agentScript([write('src/api/health.mjs', HEALTH_BAD), write('test/api/health.test.mjs', HEALTH_TEST)], c);
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM }, code: { review_rounds: 1, attempt_ceiling: 1 } });
    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'health route', repo } });
    const run = await server.settle(started.body.id);

    expect(run.tickets.map((t: any) => [t.id, t.status, t.count, t.staffed])).toEqual([['TK1-API', 'needs_human', 3, 2]]);
    expect(run.tasks.map((t: any) => [t.id, t.state, t.needs_human])).toEqual([
      ['T1', 'done', false],
      ['TK1-API-FIX1', 'to_scope', true],
      ['TK1-API-FIX2', 'to_scope', true],
    ]);
    expect(run.repairs).toEqual({ found: 1, resolved: 0, restaffed: 1, needs_human: 1 });
    const stream = await events(run.id);
    expect(repeatedStates(stream)).toEqual([]);
    expect(stream.filter((e) => e.type === 'task_update' && e.task === 'T1').map((e) => e.state)).toEqual([
      'in_progress',
      'in_review',
      'done',
    ]);
  });

  it('a ticket is resolved only when its check passes, not when a different failure raises a new ticket', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    marks = await mkdtemp(path.join(os.tmpdir(), 'hangar-marks-'));
    const counter = path.join(marks, 'runs');
    // Every run of the check fails differently (as a flaky or order-dependent suite does).
    const test = `import test from 'node:test';\nimport assert from 'node:assert';\nimport { readFileSync, writeFileSync } from 'node:fs';\nlet n = 0;\ntry { n = Number(readFileSync(${JSON.stringify(counter)}, 'utf8')); } catch {}\nwriteFileSync(${JSON.stringify(counter)}, String(n + 1));\ntest('health answers ok', () => assert.equal('run ' + (n + 1), 'passing'));\n`;
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return planAnswer({ tasks: [task('T1', 'api', ['src/api/health.mjs', 'test/api/health.test.mjs'])] });
      if (c.kind === 'reviewer') return approve;
      return agentScript(
        c.task === 'T1'
          ? [write('src/api/health.mjs', HEALTH_OK), write('test/api/health.test.mjs', test)]
          : [write('src/api/health.mjs', HEALTH_OK)],
        c,
      );
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM }, code: { review_rounds: 1, attempt_ceiling: 1 } });
    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'health route', repo } });
    const run = await server.settle(started.body.id);

    expect(run.gates.map((g: any) => g.outcome)).toEqual(['RED', 'RED', 'RED']);
    expect(Number(await readFile(counter, 'utf8'))).toBeGreaterThanOrEqual(3);
    // Nothing passed, so nothing is resolved; the last ticket goes to a person because no gate run
    // is left to judge another fix.
    expect(run.tickets.map((t: any) => [t.id, t.status])).toEqual([
      ['TK1-API', 'open'],
      ['TK2-API', 'open'],
      ['TK3-API', 'needs_human'],
    ]);
    expect(run.tasks.some((t: any) => t.id === 'TK3-API-FIX1')).toBe(false);
    expect(run.repairs).toMatchObject({ found: 3, resolved: 0, needs_human: 3 });
    const stream = await events(run.id);
    expect(stream.filter((e) => e.type === 'ticket').map((e) => `${e.ticket} ${e.action}`)).toEqual([
      'TK1-API raised',
      'TK2-API raised',
      'TK3-API raised',
      'TK3-API needs_human',
    ]);
    expect(run.status).toBe('failed');
  });
});
