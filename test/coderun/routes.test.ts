import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { WebSocket } from 'ws';
import { codeCli } from '../../core/app/cli/code.js';
import { startTestServer } from '../support/server.js';
import { API_TEAM, CODE_SUBSYSTEMS, type CodeServer, makeRepo, startCodeServer, tearDownAfterEach, WEB_TEAM } from './support/fixture.js';
import { agentScript, approve, type ScriptedModel, startScriptedModel, write } from './support/scripted-model.js';

let model: ScriptedModel | undefined;
let server: CodeServer | undefined;
let repo: string | undefined;
tearDownAfterEach(() => [server, model, repo]);

describe('coding-run routes', () => {
  it('answers 401 without the session token on every coding-run route', async () => {
    server = await startCodeServer();
    for (const [method, pathname] of [
      ['GET', '/api/teams'],
      ['POST', '/api/runs'],
      ['GET', '/api/runs/latest'],
      ['POST', '/api/teams/preselect'],
      ['POST', '/api/composition/preview'],
      ['PATCH', '/api/tasks/T1'],
      ['PUT', '/api/config'],
      ['GET', '/api/calibration'],
    ]) {
      const json = method === 'GET' ? undefined : {};
      const res = await server.request(pathname, { method, json });
      expect([pathname, res.status]).toEqual([pathname, 401]);
      expect(res.body.detail).toMatch(/session token/);
      expect(res.body.code).toBe('HANGAR_CODERUN_SESSION_REQUIRED');
      const wrong = await server.request(pathname, { method, json, headers: { 'x-hangar-session': 'nope' } });
      expect(wrong.status).toBe(401);
    }
    expect((await server.api('/api/teams')).status).toBe(200);
    // Unknown paths and methods under a prefix are inside the guarded scope too: 401 first, then 404.
    for (const [method, pathname] of [
      ['DELETE', '/api/runs'],
      ['GET', '/api/composition'],
      ['POST', '/api/config/x'],
      ['PATCH', '/api/teams/x/y'],
      ['HEAD', '/api/calibration/nope'],
    ]) {
      expect([method, pathname, (await server.request(pathname, { method })).status]).toEqual([method, pathname, 401]);
      expect([method, pathname, (await server.api(pathname, { method })).status]).toEqual([method, pathname, 404]);
    }
    const openapi = (await server.request('/openapi.json')).body;
    expect(Object.keys(openapi.paths)).toEqual(
      expect.arrayContaining([
        '/api/runs',
        '/api/runs/latest',
        '/api/teams/{id}',
        '/api/teams/preselect',
        '/api/tasks/{id}',
        '/api/config',
        '/api/calibration',
      ]),
    );
    // The token is generated per launch and handed over in a file only the user can read.
    const file = path.join(server.root, '.hangar', 'code-session.json');
    expect(JSON.parse(await readFile(file, 'utf8')).token).toBe(server.token);
    const { stat } = await import('node:fs/promises');
    expect((await stat(file)).mode & 0o777).toBe(0o600);
  });

  it('refuses read-only configuration keys over HTTP while loading them from the config file', async () => {
    server = await startCodeServer({ code: { mcp_servers: [{ name: 'fs' }], skills_dirs: ['skills'] } });
    const refused = await server.api('/api/config', { method: 'PUT', json: { mcp_servers: [], max_parallel: 3 } });
    expect(refused).toMatchObject({
      status: 422,
      body: {
        detail: 'mcp_servers is read-only over HTTP; set it under "code" in hangar.config.json',
        code: 'HANGAR_CODERUN_CONFIG_READ_ONLY',
      },
    });
    const both = await server.api('/api/config', { method: 'PUT', json: { skills_dirs: [], context_role_budget: {} } });
    expect(both.body.detail).toBe('skills_dirs, context_role_budget are read-only over HTTP; set them under "code" in hangar.config.json');
    const config = (await server.api('/api/config')).body;
    expect(config).toMatchObject({
      mcp_servers: [{ name: 'fs' }],
      skills_dirs: ['skills'],
      max_parallel: 2,
      team_library: true,
      squads: true,
      calibrate_budgets: false,
    });
    const patched = await server.api('/api/config', { method: 'PUT', json: { max_parallel: 3, model_roles: { reviewer: 'big' } } });
    expect(patched.body).toMatchObject({ max_parallel: 3, model_roles: { reviewer: 'big' }, mcp_servers: [{ name: 'fs' }] });
    const invalid = await server.api('/api/config', { method: 'PUT', json: { max_parallel: 0 } });
    expect(invalid.status).toBe(422);
    expect(invalid.body.detail).toMatch(/^body\.max_parallel/);
  });

  it('lists, creates, edits and deletes teams; deleting an override reveals the shipped team', async () => {
    repo = await makeRepo({ 'README.md': '# x\n' });
    server = await startCodeServer();
    const q = `?repo=${encodeURIComponent(repo)}`;
    const list = (await server.api(`/api/teams${q}`)).body;
    expect(list).toMatchObject({ default_manager: 'project-manager', dynamic_enabled: false, running: false });
    expect(list.teams.map((t: any) => [t.id, t.source, t.effective_manager, t.manager_default])).toEqual([
      ['api', 'shipped', 'project-manager', true],
      ['web', 'shipped', 'project-manager', true],
    ]);

    const overlap = await server.api(`/api/teams${q}`, { method: 'POST', json: { id: 'core', charter: 'core', owns: ['src/**'] } });
    expect(overlap.status).toBe(422);
    expect(overlap.body.detail).toContain("teams 'api' and 'core' both own paths: 'src/api/**' overlaps 'src/**'");
    const created = await server.api(`/api/teams${q}`, {
      method: 'POST',
      json: { id: 'docs', charter: 'docs', owns: ['docs/**'], acceptance: '' },
    });
    expect(created).toMatchObject({ status: 201, body: { id: 'docs', source: 'project' } });
    expect(JSON.parse(await readFile(path.join(repo, '.hangar/teams/docs.json'), 'utf8')).owns).toEqual(['docs/**']);

    const edited = await server.api(`/api/teams/api${q}`, { method: 'PUT', json: { charter: 'Our API', acceptance: 'npm test' } });
    expect(edited.body).toMatchObject({ id: 'api', source: 'override', charter: 'Our API', owns: API_TEAM.owns, acceptance: 'npm test' });
    const manager = await server.api('/api/teams/api/manager', { method: 'POST', json: { repo } });
    expect(manager.body).toMatchObject({ manager: 'api-manager', agents: [{ name: 'api-manager', role: 'manager' }] });
    expect((await server.api(`/api/teams${q}`)).body.teams[0]).toMatchObject({
      id: 'api',
      effective_manager: 'api-manager',
      manager_default: false,
    });

    const deleted = await server.api(`/api/teams/api${q}`, { method: 'DELETE' });
    expect(deleted.body).toMatchObject({ deleted: 'api', revealed: { charter: 'HTTP API' } });
    expect((await server.api(`/api/teams/api${q}`)).body).toMatchObject({ source: 'shipped', charter: 'HTTP API', manager: null });
    expect((await server.api(`/api/teams/api${q}`, { method: 'DELETE' })).status).toBe(409);
    expect((await server.api(`/api/teams/nope${q}`)).status).toBe(404);
    const unknownField = await server.api(`/api/teams/web${q}`, { method: 'PUT', json: { colour: 'red' } });
    expect(unknownField.status).toBe(422);
  });

  it('preselects deterministically, previews the composition with pins, activates an org chart for the next run', async () => {
    repo = await makeRepo({ 'README.md': '# x\n' });
    server = await startCodeServer();
    const body = { request: 'add a health route in src/api/health.ts', repo };
    const first = await server.api('/api/teams/preselect', { method: 'POST', json: body });
    expect(first.body).toMatchObject({
      mode: 'library',
      teams: [{ id: 'api', reasons: ["keyword 'route'", "keyword 'health'", 'mentions src/api/health.ts (src/api/**)'] }],
    });
    expect(first.body.teams[0].staffing).toEqual({
      manager: 'project-manager',
      developers: ['api-developer'],
      reviewer: 'api-reviewer',
      tester: 'api-tester',
      correctors: [],
    });
    expect((await server.api('/api/teams/preselect', { method: 'POST', json: body })).body).toEqual(first.body);

    const preview = await server.api('/api/composition/preview', { method: 'POST', json: { ...body, teams: ['web'] } });
    expect(preview.body).toEqual({
      team_mode: 'pinned',
      team_note: 'teams pinned for this run',
      teams: [{ id: 'web', manager: 'project-manager', evidence: ['pinned'], owns: WEB_TEAM.owns, acceptance: WEB_TEAM.acceptance }],
    });
    const unknown = await server.api('/api/composition/preview', { method: 'POST', json: { ...body, teams: ['ghost'] } });
    expect(unknown).toMatchObject({ status: 422, body: { detail: "teams: unknown team 'ghost'", code: 'HANGAR_CODERUN_TEAMS_UNKNOWN' } });
    const missing = await server.api('/api/teams/preselect', { method: 'POST', json: {} });
    expect(missing.status).toBe(422);
    expect(missing.body.detail).toMatch(/^body\.request/);

    const activated = await server.api('/api/teams/activate', { method: 'POST', json: { teams: ['web'], repo } });
    expect(activated.body).toEqual({ org_chart: '.hangar/org-chart.json', pinned: ['web'] });
    expect(JSON.parse(await readFile(path.join(repo, '.hangar/org-chart.json'), 'utf8')).teams.map((t: any) => t.id)).toEqual(['web']);
    expect((await server.api('/api/composition/preview', { method: 'POST', json: body })).body.team_mode).toBe('pinned');
  });

  it('loads shipped teams written with defineTeam and reports a broken team file as a drop-in error', async () => {
    const ts = await startTestServer({
      files: {
        'teams/ops.ts':
          "import { defineTeam } from 'hangar';\nexport default defineTeam({ charter: 'ops', owns: ['deploy/**'], acceptance: 'make check' });\n",
        'teams/broken.json': JSON.stringify({ charter: 'no owns' }),
      },
      settings: { watch: false },
      start: { subsystems: CODE_SUBSYSTEMS },
    });
    try {
      const token = JSON.parse(await readFile(path.join(ts.root, '.hangar', 'code-session.json'), 'utf8')).token;
      const list = await ts.request('/api/teams', { headers: { 'x-hangar-session': token } });
      expect(list.body.teams.map((t: any) => [t.id, t.owns, t.acceptance])).toEqual([['ops', ['deploy/**'], 'make check']]);
      expect(ts.ctx.registry.problemsOf('team').map((p) => [p.entry, p.message])).toEqual([
        ['teams/broken.json', expect.stringContaining('team.owns')],
      ]);
    } finally {
      await ts.stop();
    }
  });

  it('streams run events over the websocket and measures the endpoint for /api/calibration', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n', 'test/api/.keep': '' });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner')
        return {
          tool_calls: [{ name: 'submit_plan', arguments: { tasks: [{ id: 'T1', title: 't', squad: 'api', files: ['src/api/a.mjs'] }] } }],
        };
      if (c.kind === 'reviewer') return approve;
      if (c.kind === 'agent') return agentScript([write('src/api/a.mjs', 'export {};\n')], c);
      return { content: 'ok' };
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM } });
    const refused = await new Promise<string>((resolve) => {
      const ws = new WebSocket(`${server!.url.replace('http', 'ws')}/api/runs/ws`);
      ws.on('unexpected-response', (_req, res) => resolve(String(res.statusCode)));
      ws.on('open', () => resolve('open'));
    });
    expect(refused).toBe('401');
    const ws = new WebSocket(`${server.url.replace('http', 'ws')}/api/runs/ws?session=${server.token}`);
    const received: any[] = [];
    ws.on('message', (data) => received.push(JSON.parse(String(data))));
    await new Promise((r) => ws.once('open', r));
    const started = await server.api('/api/runs', { method: 'POST', json: { request: 'x', repo } });
    const run = await server.settle(started.body.id);
    ws.close();
    expect(run.gates[0].outcome).toBe('UNVERIFIED');
    expect(received.map((e) => e.type)).toEqual(
      expect.arrayContaining(['run_status', 'plan_proposed', 'wave', 'task_update', 'review_pending', 'gate', 'run_finished']),
    );

    const calibration = await server.api('/api/calibration');
    expect(calibration.status).toBe(200);
    expect(calibration.body).toMatchObject({
      model: 'small-model',
      base_url: model.baseUrl,
      context_window: null,
      context_window_source: 'not reported by the endpoint',
      throughput_tokens_per_s: expect.any(Number),
    });
    expect(calibration.body.latency_ms).toBeGreaterThanOrEqual(0);
    expect(calibration.body.useful_parallelism).toBeGreaterThanOrEqual(1);
    expect(Object.keys(calibration.body.parallel_ms)).toEqual(['2', '4']);
  });

  it('calibrate_budgets sizes agent budgets from the measured context window', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n', 'big.txt': 'x'.repeat(12_000) });
    const turn2: string[][] = [];
    model = await startScriptedModel(
      (c) => {
        if (c.kind === 'planner')
          return {
            tool_calls: [{ name: 'submit_plan', arguments: { tasks: [{ id: 'T1', title: 't', squad: 'api', files: ['src/api/a.mjs'] }] } }],
          };
        if (c.kind === 'reviewer') return approve;
        if (c.kind === 'agent') {
          if (c.turn === 2) turn2.push(c.toolResults);
          return agentScript(
            [
              { tool_calls: [{ name: 'read_file', arguments: { path: 'big.txt' } }] },
              { tool_calls: [{ name: 'list_files', arguments: {} }] },
            ],
            c,
          );
        }
        return { content: 'ok' };
      },
      { models: { 'small-model': { context_length: 4096 } } },
    );
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM }, code: { calibrate_budgets: true } });
    const calibration = (await server.api('/api/calibration')).body;
    expect(calibration).toMatchObject({
      context_window: 4096,
      context_window_source: `${model.baseUrl}/models/small-model (context_length)`,
    });
    const calibrated = await server.settle((await server.api('/api/runs', { method: 'POST', json: { request: 'x', repo } })).body.id);
    expect(calibrated.status).not.toBe('cancelled');
    // 4096-token window → 2048-token budget: the 12,000-character file read is trimmed from the conversation.
    expect(turn2[0]![0]).toBe('[output trimmed to fit the context budget]');

    await server.api('/api/config', { method: 'PUT', json: { calibrate_budgets: false } });
    await server.settle((await server.api('/api/runs', { method: 'POST', json: { request: 'x', repo } })).body.id);
    expect(turn2[1]![0]).toHaveLength(12_000);
  });

  it('answers 503 naming how to configure a model when none is set', async () => {
    server = await startCodeServer();
    const run = await server.api('/api/runs', { method: 'POST', json: { request: 'x' } });
    expect(run.status).toBe(503);
    expect(run.body.detail).toMatch(/HANGAR_MODEL__BASE_URL/);
    expect((await server.api('/api/calibration')).status).toBe(503);
  });
});

describe('hangar code CLI', () => {
  it('runs a request end to end and prints waves, gates and the result', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner')
        return {
          tool_calls: [
            {
              name: 'submit_plan',
              arguments: { tasks: [{ id: 'T1', title: 'health', squad: 'api', files: ['src/api/health.mjs', 'test/api/h.test.mjs'] }] },
            },
          ],
        };
      if (c.kind === 'reviewer') return approve;
      return agentScript(
        [
          write('src/api/health.mjs', 'export const ok = true;\n'),
          write(
            'test/api/h.test.mjs',
            "import test from 'node:test';\nimport assert from 'node:assert';\nimport { ok } from '../../src/api/health.mjs';\ntest('ok', () => assert.ok(ok));\n",
          ),
        ],
        c,
      );
    });
    const root = (await import('../support/server.js')).makeWorkspace;
    const workspace = await root({
      'teams/api.json': JSON.stringify(API_TEAM),
      'hangar.config.json': JSON.stringify({ model: { baseUrl: model.baseUrl, model: 'small-model', retries: 0 } }),
    });
    const out: string[] = [];
    const err: string[] = [];
    const io = { out: (l: string) => out.push(l), err: (l: string) => err.push(l) };
    try {
      expect(await codeCli(['teams', '--root', workspace, '--repo', repo], io)).toBe(0);
      expect(out.join('\n')).toMatch(/^api\s+shipped\s+owns src\/api\/\*\*, test\/api\/\*\*/m);
      out.length = 0;
      expect(await codeCli(['preselect', 'add a health route', '--root', workspace, '--repo', repo], io)).toBe(0);
      expect(out).toEqual([
        'mode library: 1 of 1 teams matched the request',
        "  api (manager project-manager): keyword 'route'; keyword 'health'",
      ]);
      out.length = 0;
      const code = await codeCli(['run', 'add a health route', '--root', workspace, '--repo', repo], io);
      // With no Hangar running on the workspace, each command started one of its own and said so.
      expect(err.filter((l) => !/warn/.test(l) && !l.startsWith(`hangar code: no Hangar is running on ${workspace}; started one`))).toEqual(
        [],
      );
      expect(code).toBe(0);
      const text = out.join('\n');
      expect(text).toMatch(/^wave 1: T1 \[teams api\]$/m);
      expect(text).toMatch(/^gate api: green — passed, 1 test \(`node --test "test\/api\/\*\*\/\*\.test\.mjs"`\)$/m);
      expect(text).toMatch(/^run succeeded: 1\/1 tasks done; green: api/m);
      expect(text).toMatch(/^branch hangar\/run-\S+; repairs found 0, resolved 0, restaffed 0, needs_human 0$/m);
      expect(await codeCli(['frobnicate', '--root', workspace], io)).toBe(2);
      // Against a running server: the session token comes from the workspace's session file.
      server = await startCodeServer({ baseUrl: model.baseUrl });
      out.length = 0;
      expect(await codeCli(['teams', '--url', server.url, '--root', server.root, '--repo', repo], io)).toBe(0);
      expect(out.map((l) => l.split(/\s+/)[0])).toEqual(['api', 'web']);
      expect(await codeCli(['teams', '--url', server.url, '--session', 'wrong', '--repo', repo], io)).toBe(1);
      expect(err.at(-1)).toMatch(/^hangar: the server answered hangar code teams with 401: coding-run routes need the session token/);
    } finally {
      await rm(workspace, { recursive: true, force: true });
    }
  });
});
