/**
 * `hangar code run` from a terminal: the CLI (core/app/cli/code.ts) as a client of a running server
 * (`--url`, token read from the workspace's session file), against a fixture repository and the
 * scripted loopback model.
 */
import { describe, expect, it } from 'vitest';
import { codeCli } from '../../core/app/cli/code.js';
import { API_TEAM, type CodeServer, git, HEALTH_OK, HEALTH_TEST, makeRepo, startCodeServer, tearDownAfterEach } from './support/fixture.js';
import { agentScript, approve, type ScriptedAnswer, type ScriptedModel, startScriptedModel, write } from './support/scripted-model.js';

const HEALTH_BAD = `export const health = () => ({ ok: false });\n`;
const FILES = ['src/api/health.mjs', 'test/api/health.test.mjs'];

const planAnswer: ScriptedAnswer = {
  tool_calls: [
    {
      name: 'submit_plan',
      arguments: {
        summary: 'health route',
        tasks: [
          {
            id: 'T1',
            title: 'health route',
            description: 'add health()',
            role: 'developer',
            squad: 'api',
            acceptance: '',
            criteria: [],
            priority: 5,
            files: FILES,
            dependencies: [],
          },
        ],
        contract: [],
      },
    },
  ],
};

let model: ScriptedModel | undefined;
let server: CodeServer | undefined;
let repo: string | undefined;
tearDownAfterEach(() => [server, model, repo]);

async function runCli(argv: string[]): Promise<{ code: number; out: string[]; err: string[] }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await codeCli(argv, { out: (l) => out.push(l), err: (l) => err.push(l) });
  return { code, out, err };
}

describe('hangar code run (CLI)', () => {
  it('--approve prints the plan at the gate, approves it, prints waves and gates and exits 0 on success', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return planAnswer;
      if (c.kind === 'reviewer') return approve;
      return agentScript([write('src/api/health.mjs', HEALTH_OK), write('test/api/health.test.mjs', HEALTH_TEST)], c);
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM } });

    // No --session: the CLI reads the token the server wrote under <root>/.hangar.
    const { code, out, err } = await runCli([
      'run',
      'add a health route',
      '--repo',
      repo,
      '--approve',
      '--url',
      server.url,
      '--root',
      server.root,
    ]);

    expect(err).toEqual([]);
    expect(code).toBe(0);
    const id = /^run (\S+) on /.exec(out[0]!)?.[1];
    expect(out[0]).toBe(`run ${id} on ${repo} with teams api`);
    // Order matters: the plan is shown at the gate before any wave starts, gates before the result.
    const at = (pattern: RegExp) => {
      const i = out.findIndex((l) => pattern.test(l));
      expect(i, `no line matching ${pattern} in:\n${out.join('\n')}`).toBeGreaterThan(-1);
      return i;
    };
    const gateStop = at(/^run awaiting_approval/);
    const planLine = at(/^ {2}T1 \[api\] health route — files src\/api\/health\.mjs, test\/api\/health\.test\.mjs$/);
    const wave = at(/^wave 1: T1 \[teams api\]$/);
    const done = at(/^ {2}T1 → done$/);
    const gate = at(/^gate api: green — .* \(`node --test "test\/api\/\*\*\/\*\.test\.mjs"`\)$/);
    const integration = at(/^integration: green/);
    const finished = at(/^run succeeded: /);
    expect(at(/^plan: 1 task\(s\) — health route$/)).toBeLessThan(gateStop);
    expect([gateStop < planLine, planLine < wave, wave < done, done < gate, gate < integration, integration < finished]).toEqual([
      true,
      true,
      true,
      true,
      true,
      true,
    ]);
    expect(out.at(-1)).toBe(`branch hangar/run-${id}; repairs found 0, resolved 0, restaffed 0, needs_human 0`);
    // The approval really came from the CLI: the run went through the gate and the task was committed.
    expect(git(repo, 'log', '--format=%s', `hangar/run-${id}`)).toMatch(/^T1: health route/m);
  });

  it('exits 1 and prints the RED gate and the ticket when the run fails', async () => {
    repo = await makeRepo({ 'package.json': '{"type":"module"}\n' });
    model = await startScriptedModel((c) => {
      if (c.kind === 'planner') return planAnswer;
      if (c.kind === 'reviewer') return approve;
      // Every hand (the task and its fix) writes the broken implementation: the gate stays RED.
      return agentScript([write('src/api/health.mjs', HEALTH_BAD), write('test/api/health.test.mjs', HEALTH_TEST)], c);
    });
    server = await startCodeServer({ baseUrl: model.baseUrl, teams: { api: API_TEAM } });

    const { code, out, err } = await runCli(['run', 'add a health route', '--repo', repo, '--url', server.url, '--session', server.token]);

    expect({ code, err }).toMatchObject({ code: 1 });
    expect(out).toContainEqual(expect.stringMatching(/^gate api: RED — /));
    expect(out).toContainEqual(expect.stringMatching(/^ticket \S+ raised \(team api, seen 1x\)$/));
    expect(out).toContainEqual(expect.stringMatching(/^run failed: /));
    expect(out).not.toContainEqual(expect.stringMatching(/awaiting_approval/));
  });
});

describe('session token', () => {
  it('never starts with "-", so `--session <token>` is never read as an option', async () => {
    server = await startCodeServer({ baseUrl: 'http://127.0.0.1:9/v1', teams: { api: API_TEAM } });
    expect(server.token).toMatch(/^[0-9a-f]{48}$/);
  });
});
