/**
 * Fixture repositories (real git repos in temp folders) and a Hangar server wired to a scripted
 * model, for coding-run scenarios.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach } from 'vitest';
import { SUBSYSTEMS } from '../../../core/app/subsystems.js';
import { startTestServer, type TestServer } from '../../support/server.js';
import type { ScriptedModel } from './scripted-model.js';

/**
 * The subsystems coding-run tests need: the coding-run routes and the OpenAPI document. Leaving
 * out the others keeps these tests about this subsystem (and off the pools others start at boot).
 */
export const CODE_SUBSYSTEMS = SUBSYSTEMS.filter((s) => s.name === 'docs' || s.name === 'coderun');

export function git(repo: string, ...args: string[]): string {
  return execFileSync('git', ['-c', 'user.name=Test', '-c', 'user.email=test@localhost', '-c', 'commit.gpgsign=false', ...args], {
    cwd: repo,
    encoding: 'utf8',
  }).trim();
}

/**
 * Where fixture repositories live: one folder that `startCodeServer` lists in `code.repos`, since
 * coding-run routes refuse repositories outside the workspace and that list.
 */
export const FIXTURE_REPOS = path.join(os.tmpdir(), 'hangar-repos');

/** A git repository with `files` committed on `main`; `links` are symlinks (path → target). */
export async function makeRepo(files: Record<string, string>, links: Record<string, string> = {}): Promise<string> {
  await mkdir(FIXTURE_REPOS, { recursive: true });
  const repo = await mkdtemp(path.join(FIXTURE_REPOS, 'repo-'));
  for (const [rel, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(repo, rel)), { recursive: true });
    await writeFile(path.join(repo, rel), content);
  }
  for (const [rel, target] of Object.entries(links)) {
    await mkdir(path.dirname(path.join(repo, rel)), { recursive: true });
    await symlink(target, path.join(repo, rel));
  }
  git(repo, 'init', '-q', '-b', 'main');
  git(repo, 'add', '-A');
  git(repo, 'commit', '-q', '-m', 'initial');
  return repo;
}

export const API_TEAM = {
  charter: 'HTTP API',
  owns: ['src/api/**', 'test/api/**'],
  acceptance: 'node --test "test/api/**/*.test.mjs"',
  match: { keywords: ['route', 'health'] },
};
export const WEB_TEAM = {
  charter: 'Web pages',
  owns: ['src/web/**', 'test/web/**'],
  acceptance: 'node --test "test/web/**/*.test.mjs"',
  match: { keywords: ['page'] },
};

/** The JSON frames of a run's event stream as `GET /api/runs/{id}/events` answered it (after replay, without `[DONE]`). */
export const runFrames = (text: string): any[] =>
  text
    .split('\n')
    .filter((l) => l.startsWith('data: ') && l !== 'data: [DONE]')
    .map((l) => JSON.parse(l.slice(6)));

export interface CodeServer extends TestServer {
  token: string;
  /** A request with the session token. */
  api(pathname: string, init?: RequestInit & { json?: unknown }): ReturnType<TestServer['request']>;
  /** Poll the run until it is no longer active. */
  settle(runId: string, timeoutMs?: number): Promise<any>;
}

/** `root`: a workspace the caller owns (to restart a server on it); `stop()` leaves it in place. */
export async function startCodeServer(
  options: { baseUrl?: string; teams?: Record<string, unknown>; code?: Record<string, unknown>; root?: string } = {},
): Promise<CodeServer> {
  const files: Record<string, string> = {};
  for (const [id, team] of Object.entries(options.teams ?? { api: API_TEAM, web: WEB_TEAM }))
    files[`teams/${id}.json`] = JSON.stringify(team);
  if (options.root) {
    for (const [rel, content] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(options.root, rel)), { recursive: true });
      await writeFile(path.join(options.root, rel), content);
    }
  }
  const server = await startTestServer({
    ...(options.root ? { root: options.root } : { files }),
    settings: {
      watch: false,
      model: { baseUrl: options.baseUrl, model: 'small-model', retries: 0, timeoutMs: 10_000 },
      code: { command_timeout_ms: 20_000, repos: [FIXTURE_REPOS], ...options.code },
    } as never,
    start: { subsystems: CODE_SUBSYSTEMS },
  });
  const { readFile } = await import('node:fs/promises');
  const token = (JSON.parse(await readFile(path.join(server.root, '.hangar', 'code-session.json'), 'utf8')) as { token: string }).token;
  const api: CodeServer['api'] = (pathname, init = {}) =>
    server.request(pathname, { ...init, headers: { ...(init.headers as object), 'x-hangar-session': token } });
  const settle: CodeServer['settle'] = async (runId, timeoutMs = 60_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const { body } = await api(`/api/runs/${runId}`);
      if (['succeeded', 'failed', 'cancelled'].includes(body.status)) return body;
      if (Date.now() > deadline) throw new Error(`run ${runId} still ${body.status} after ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  return Object.assign(server, { token, api, settle });
}

/**
 * After each test, stops what `started()` names, in order (a server before the model it calls) and
 * removes the folders among it. The file's variables keep the last test's values, so a server or
 * model already stopped here is not stopped twice.
 */
export function tearDownAfterEach(started: () => Array<CodeServer | ScriptedModel | string | undefined>): void {
  const stopped = new WeakSet<object>();
  afterEach(async () => {
    for (const thing of started()) {
      if (typeof thing === 'string') await rm(thing, { recursive: true, force: true });
      else if (thing && !stopped.has(thing)) {
        stopped.add(thing);
        await ('stop' in thing ? thing.stop() : thing.close());
      }
    }
  });
}

/** A health module and its node:test file: what the scripted agents of the coding-run tests write. */
export const HEALTH_OK = `export const health = () => ({ ok: true });\n`;
export const HEALTH_TEST = `import test from 'node:test';\nimport assert from 'node:assert';\nimport { health } from '../../src/api/health.mjs';\ntest('health answers ok', () => assert.deepEqual(health(), { ok: true }));\n`;
