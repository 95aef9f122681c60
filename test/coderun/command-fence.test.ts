/**
 * `run_command` writes into other teams' paths: checked with git around every command and
 * reverted whether or not the owning team is working — while the owner's own work (uncommitted
 * fenced writes from before the command, and those it makes while the command runs) survives.
 */
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, symlink, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { foreignChanges, foreignOwner, restore, snapshotForeign } from '../../core/coderun/command-fence.js';
import { API_TEAM, type CodeServer, git, makeRepo, runFrames, startCodeServer, tearDownAfterEach, WEB_TEAM } from './support/fixture.js';
import { agentScript, approve, type Classified, type ScriptedModel, startScriptedModel, write } from './support/scripted-model.js';

const API = { id: 'api', owns: API_TEAM.owns };
const WEB = { id: 'web', owns: WEB_TEAM.owns };
const PAGE = `export const page = () => '<h1>health</h1>';\n`;
const task = (id: string, squad: string, files: string[]) => ({
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
});

let model: ScriptedModel | undefined;
let server: CodeServer | undefined;
const cleanup: string[] = [];
tearDownAfterEach(() => [server, model, ...cleanup.splice(0)]);

async function until(check: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`scripted model gave up waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the after-command fence (git snapshot around a command)', () => {
  it('finds changed, new and deleted files in foreign paths only and restores each as it was before', async () => {
    const repo = await makeRepo({
      'src/web/a.mjs': 'a\n',
      'src/web/gone.mjs': 'gone\n',
      'src/web/dirty.mjs': 'committed\n',
      'src/api/own.mjs': 'own\n',
      'README.md': '# r\n',
    });
    cleanup.push(repo);
    // Another team's uncommitted work from before the command: it must come back byte for byte.
    await writeFile(path.join(repo, 'src/web/dirty.mjs'), 'uncommitted work\n');
    await symlink('a.mjs', path.join(repo, 'src/web/link.mjs'));
    const before = await snapshotForeign(repo, API, [API, WEB]);

    // What a shell command might do.
    await writeFile(path.join(repo, 'src/web/a.mjs'), 'hacked\n');
    await writeFile(path.join(repo, 'src/web/dirty.mjs'), 'overwritten\n');
    await writeFile(path.join(repo, 'src/web/new.mjs'), 'new\n');
    await unlink(path.join(repo, 'src/web/gone.mjs'));
    await unlink(path.join(repo, 'src/web/link.mjs'));
    await writeFile(path.join(repo, 'src/api/own.mjs'), 'own change\n');
    await writeFile(path.join(repo, 'README.md'), 'nobody owns this\n');

    const changes = await foreignChanges(repo, API, [API, WEB], before);
    expect(changes).toEqual(
      ['src/web/a.mjs', 'src/web/dirty.mjs', 'src/web/gone.mjs', 'src/web/link.mjs', 'src/web/new.mjs'].map((p) => ({
        path: p,
        owner: 'web',
      })),
    );
    await restore(
      repo,
      before,
      changes.map((c) => c.path),
    );

    expect(await readFile(path.join(repo, 'src/web/a.mjs'), 'utf8')).toBe('a\n');
    expect(await readFile(path.join(repo, 'src/web/dirty.mjs'), 'utf8')).toBe('uncommitted work\n');
    expect(await readFile(path.join(repo, 'src/web/gone.mjs'), 'utf8')).toBe('gone\n');
    expect(await readFile(path.join(repo, 'src/web/link.mjs'), 'utf8')).toBe('a\n');
    expect(existsSync(path.join(repo, 'src/web/new.mjs'))).toBe(false);
    // The task's own paths and unowned paths are not the fence's business.
    expect(await readFile(path.join(repo, 'src/api/own.mjs'), 'utf8')).toBe('own change\n');
    // (The git helper trims its output, hence the trimmed expectation.)
    expect(git(repo, 'status', '--porcelain')).toBe(' M README.md\n M src/api/own.mjs\n M src/web/dirty.mjs\n?? src/web/link.mjs'.trim());
    // A task no team owns trespasses on every team's paths.
    expect(foreignOwner('src/api/x.mjs', { id: 'unowned', owns: [], unowned: true }, [API, WEB])).toBe('api');
    expect(foreignOwner('src/api/x.mjs', API, [API, WEB])).toBeUndefined();
  });

  it("reverts a command's writes into a team that is working, keeps that team's own fenced writes and reports fence violations", async () => {
    const repo = await makeRepo({ 'package.json': '{"type":"module"}\n', 'src/web/index.mjs': 'export {};\n' });
    const marks = await mkdtemp(path.join(os.tmpdir(), 'hangar-marks-'));
    cleanup.push(repo, marks);
    const started = path.join(marks, 'command-started');
    const command = `touch ${started} && sleep 1.5 && echo hacked > src/web/page.mjs && echo x > src/web/evil.mjs && mkdir -p src/api && echo own > src/api/gen.mjs && echo notes > notes.txt && echo all-ran`;
    const seen = (task: string, turn: number) => () => model!.requests.some((r) => r.kind === 'agent' && r.task === task && r.turn >= turn);
    model = await startScriptedModel(async (c: Classified) => {
      if (c.kind === 'planner')
        return {
          tool_calls: [
            {
              name: 'submit_plan',
              arguments: {
                tasks: [task('T1', 'api', ['src/api/a.mjs']), task('T2', 'web', ['src/web/page.mjs', 'src/web/other.mjs'])],
                contract: [],
              },
            },
          ],
        };
      if (c.kind === 'reviewer') return approve;
      if (c.task === 'T1') {
        // The command starts only once web has written its page (uncommitted, T2 still working).
        if (c.turn === 0) await until(seen('T2', 1), 'T2 to write its page');
        return agentScript([{ tool_calls: [{ name: 'run_command', arguments: { command } }] }, write('src/api/a.mjs', 'export {};\n')], c);
      }
      // T2 writes a second file through its fence while T1's command runs, and finishes after it returned.
      if (c.turn === 1) await until(() => existsSync(started), "T1's command to start");
      if (c.turn === 2) await until(seen('T1', 1), "T1's command to return");
      return agentScript([write('src/web/page.mjs', PAGE), write('src/web/other.mjs', 'export const other = 1;\n')], c);
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM, web: WEB_TEAM }, code: { max_parallel: 3 } });

    const res = await server.api('/api/runs', { method: 'POST', json: { request: 'health route and page', repo } });
    const run = await server.settle(res.body.id);
    expect(run.tasks.map((t: any) => [t.id, t.state])).toEqual([
      ['T1', 'done'],
      ['T2', 'done'],
    ]);

    const stream = runFrames((await server.api(`/api/runs/${run.id}/events`)).text);
    expect(stream.filter((e) => e.type === 'fence_violation')).toEqual([
      { type: 'fence_violation', run: run.id, task: 'T1', team: 'api', owner: 'web', file: 'src/web/evil.mjs', command },
      { type: 'fence_violation', run: run.id, task: 'T1', team: 'api', owner: 'web', file: 'src/web/page.mjs', command },
    ]);
    const t1Results = model.requests.filter((r) => r.kind === 'agent' && r.task === 'T1').at(-1)!.toolResults;
    // Its own path and an unowned one are left alone (and the whole command did run).
    expect(t1Results[0]).toMatch(/^exit 0\nall-ran\n/);
    expect(t1Results[0]).toMatch(
      /reverted its writes outside your team's paths: src\/web\/evil.mjs \(team 'web'\), src\/web\/page.mjs \(team 'web'\)$/,
    );

    // web's page is its own bytes, restored over the command's, and its concurrent write is kept.
    const t2 = run.tasks[1];
    expect(git(repo, 'show', `${t2.commit}:src/web/page.mjs`) + '\n').toBe(PAGE);
    expect(git(repo, 'show', '--name-only', '--format=', t2.commit).split('\n').sort()).toEqual(['src/web/other.mjs', 'src/web/page.mjs']);
    expect(git(repo, 'ls-tree', '-r', '--name-only', run.branch)).not.toMatch(/evil|gen\.mjs|notes/);
    // The activity page shows the violation to both teams.
    const activity = await server.api(`/api/teams/activity?team=web&query=${run.id}`);
    expect(activity.body.events.filter((e: any) => e.kind === 'fence').map((e: any) => [e.event.file, e.teams])).toEqual([
      ['src/web/evil.mjs', ['api', 'web']],
      ['src/web/page.mjs', ['api', 'web']],
    ]);
  });

  it('a write a command leaves behind in the background is caught after the loop, when the owner is idle', async () => {
    const repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    const marks = await mkdtemp(path.join(os.tmpdir(), 'hangar-marks-'));
    cleanup.push(repo, marks);
    const go = path.join(marks, 'go');
    const done = path.join(marks, 'done');
    // Detached from the command's output, the subshell outlives the command and the per-command check.
    // It writes only once the test says `go` (after that check), and says `done` once it has written.
    // (Bounded wait, so a failed test leaves no process behind for long.)
    const command =
      `(n=0; while [ ! -e ${go} ] && [ $n -lt 1200 ]; do sleep 0.05; n=$((n+1)); done; ` +
      `[ -e ${go} ] && mkdir -p src/web && echo late > src/web/late.mjs && touch ${done}) > /dev/null 2>&1 &`;
    model = await startScriptedModel(async (c: Classified) => {
      if (c.kind === 'planner')
        return { tool_calls: [{ name: 'submit_plan', arguments: { tasks: [task('T1', 'api', ['src/api/a.mjs'])], contract: [] } }] };
      if (c.kind === 'reviewer') return approve;
      if (c.turn === 1) {
        // Turn 1 is asked for only once the command returned and its per-command check ran: let the
        // background write happen now, and answer only once it landed (so before the after-loop check).
        await writeFile(go, '');
        await until(() => existsSync(done), 'the background write');
      }
      return agentScript([{ tool_calls: [{ name: 'run_command', arguments: { command } }] }, write('src/api/a.mjs', 'export {};\n')], c);
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM, web: WEB_TEAM } });
    const res = await server.api('/api/runs', { method: 'POST', json: { request: 'x', repo } });
    const run = await server.settle(res.body.id);
    expect(run.tasks[0]).toMatchObject({ id: 'T1', state: 'done' });
    const text = (await server.api(`/api/runs/${run.id}/events`)).text;
    const violations = text
      .split('\n')
      .filter((l) => l.startsWith('data: ') && l.includes('"fence_violation"'))
      .map((l) => JSON.parse(l.slice(6)));
    expect(violations).toEqual([
      { type: 'fence_violation', run: run.id, task: 'T1', team: 'api', owner: 'web', file: 'src/web/late.mjs', command: null },
    ]);
    expect(git(repo, 'ls-tree', '-r', '--name-only', run.branch)).not.toMatch(/late/);
  }, 120_000);
});
