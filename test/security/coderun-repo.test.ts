/**
 * Issue #18, item 8: `?repo=` (and a body's or a run's `repo`) named any folder on the machine, and
 * a request wrote `.hangar/teams/evil.json` outside the workspace. Only the workspace and the
 * folders in `code.repos` may be named now (403 otherwise), symlinks resolved.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { SESSION_HEADER } from '../../core/coderun/session.js';
import { startTestServer, type TestServer } from '../support/server.js';

let server: TestServer | undefined;
const folders: string[] = [];
afterEach(async () => {
  await server?.stop();
  server = undefined;
  for (const f of folders.splice(0)) await rm(f, { recursive: true, force: true });
});

const team = { id: 'evil', charter: 'x', owns: ['evil/**'], acceptance: 'true' };

async function folder(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-elsewhere-'));
  folders.push(dir);
  return dir;
}

async function start(code: Record<string, unknown> = {}) {
  // A model address nothing answers at: the fence is checked before any model call.
  server = await startTestServer({ settings: { watch: false, code, model: { baseUrl: 'http://127.0.0.1:9/v1', retries: 0 } } as never });
  const token = JSON.parse(await readFile(path.join(server.root, '.hangar', 'code-session.json'), 'utf8')).token as string;
  const s = server;
  return (pathname: string, init: { method?: string; json?: unknown } = {}) =>
    s.request(pathname, { ...init, headers: { [SESSION_HEADER]: token } });
}

describe('coding-run repositories are fenced to the workspace and code.repos', () => {
  it('refuses a folder outside with 403 on every route that takes one, and writes nothing there', async () => {
    const outside = await folder();
    const api = await start();
    const q = encodeURIComponent(outside);
    const attempts = [
      api(`/api/teams?repo=${q}`),
      api(`/api/teams/backend?repo=${q}`),
      api('/api/teams', { method: 'POST', json: { ...team, repo: outside } }),
      api(`/api/teams/evil?repo=${q}`, { method: 'PUT', json: { charter: 'y' } }),
      api(`/api/teams/evil?repo=${q}`, { method: 'DELETE' }),
      api('/api/teams/preselect', { method: 'POST', json: { request: 'x', repo: outside } }),
      api('/api/composition/preview', { method: 'POST', json: { request: 'x', repo: outside } }),
      api('/api/teams/activate', { method: 'POST', json: { teams: ['x'], repo: outside } }),
      api('/api/runs', { method: 'POST', json: { request: 'x', repo: outside } }),
      api(`/api/teams?repo=${encodeURIComponent('../../../..' + outside)}`),
      api(`/api/teams?repo=${encodeURIComponent(path.join(outside, 'not-there'))}`),
    ];
    for (const res of await Promise.all(attempts)) {
      expect([res.status, res.body.detail]).toEqual([
        403,
        expect.stringMatching(/^repo: .* is outside the workspace and the folders listed in code\.repos/),
      ]);
    }
    expect(existsSync(path.join(outside, '.hangar'))).toBe(false);
  });

  it('resolves symlinks: a link inside the workspace to a folder outside is outside', async () => {
    const outside = await folder();
    const api = await start();
    await symlink(outside, path.join(server!.root, 'escape'));
    const res = await api('/api/teams', { method: 'POST', json: { ...team, repo: 'escape' } });
    expect(res.status).toBe(403);
    expect(existsSync(path.join(outside, '.hangar'))).toBe(false);
  });

  it('accepts the workspace, its subfolders, and folders (and their subfolders) listed in code.repos', async () => {
    const listed = await folder();
    await mkdir(path.join(listed, 'app'));
    const api = await start({ repos: [listed] });
    await mkdir(path.join(server!.root, 'sub'));
    for (const repo of [undefined, 'sub', listed, path.join(listed, 'app')]) {
      const res = await api(repo ? `/api/teams?repo=${encodeURIComponent(repo)}` : '/api/teams');
      expect([repo, res.status]).toEqual([repo, 200]);
    }
    expect((await api('/api/teams', { method: 'POST', json: { ...team, repo: listed } })).status).toBe(201);
    expect(existsSync(path.join(listed, '.hangar', 'teams', 'evil.json'))).toBe(true);
  });

  it('keeps code.repos out of reach of HTTP, and a default repo set over HTTP is fenced too', async () => {
    const outside = await folder();
    const api = await start();
    const widen = await api('/api/config', { method: 'PUT', json: { repos: [outside] } });
    expect(widen.status).toBe(422);
    expect(widen.body.detail).toMatch(/^repos is read-only over HTTP/);
    expect((await api('/api/config', { method: 'PUT', json: { repo: outside } })).status).toBe(200);
    expect((await api('/api/teams')).status).toBe(403);
  });
});
