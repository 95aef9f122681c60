import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ServerInfo } from '../../core/kernel/server-files.js';
import { cli, repo, runCli, stopAll } from '../support/cli.js';
import { eventually, makeWorkspace } from '../support/server.js';

beforeAll(() => {
  execFileSync(process.execPath, [path.join(repo, 'scripts', 'build.mjs'), '--quiet']);
});
afterEach(stopAll);

const sessionFile = (root: string) =>
  JSON.parse(readFileSync(path.join(root, '.hangar', 'code-session.json'), 'utf8')) as { token: string };
const serverFiles = (root: string) => {
  const dir = path.join(root, '.hangar', 'servers');
  return readdirSync(dir).map((name) => ({
    name,
    file: path.join(dir, name),
    info: JSON.parse(readFileSync(path.join(dir, name), 'utf8')) as ServerInfo,
  }));
};
const teams = (url: string, token: string) => fetch(`${url}/api/teams`, { headers: { 'x-hangar-session': token } }).then((r) => r.status);

async function start(root: string) {
  const proc = runCli(['--no-window', '--root', root, '--port', '0']);
  const ready = await proc.line(/ready at/);
  return { proc, url: /http:\/\/[\d.]+:\d+/.exec(ready)![0] };
}

describe('server files, as Jupyter keeps them', () => {
  it('a running server has one 0600 runtime file naming its URL, port, token, workspace, start and pid, removed on a clean exit', async () => {
    const root = await makeWorkspace();
    const { proc, url } = await start(root);
    const [entry] = serverFiles(root);
    expect(entry!.name).toBe(`${proc.child.pid}.json`);
    expect(statSync(entry!.file).mode & 0o777).toBe(0o600);
    expect(statSync(path.dirname(entry!.file)).mode & 0o777).toBe(0o700);
    expect(entry!.info).toMatchObject({
      pid: proc.child.pid,
      url,
      port: Number(new URL(url).port),
      workspace: root,
      session: sessionFile(root).token,
    });
    expect(Date.parse(entry!.info.started)).toBeGreaterThan(Date.now() - 60_000);
    expect(await teams(url, entry!.info.session!)).toBe(200);

    proc.child.kill('SIGTERM');
    expect(await proc.exited).toBe(0);
    expect(serverFiles(root)).toEqual([]);
  });

  it("a second server on the same workspace leaves the first one's token working; `hangar list` shows both", async () => {
    const root = await makeWorkspace();
    const first = await start(root);
    const token = sessionFile(root).token;
    expect(await teams(first.url, token)).toBe(200);

    const second = await start(root);
    expect(second.proc.err()).toContain(`another Hangar (pid ${first.proc.child.pid}, ${first.url}/ui/) already serves this workspace`);
    // The token a person reads from the session file (or the UI holds) keeps working on both.
    expect(await teams(first.url, sessionFile(root).token)).toBe(200);
    expect(await teams(first.url, token)).toBe(200);
    expect(await teams(second.url, token)).toBe(200);

    const list = await cli(['list', '--root', root]);
    expect(list.code).toBe(0);
    const lines = list.stdout.trim().split('\n');
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe(
      `${first.url}/ui/  ${root}  (pid ${first.proc.child.pid}, since ${serverFiles(root).find((f) => f.info.url === first.url)!.info.started})`,
    );
    expect(lines[1]).toContain(`${second.url}/ui/  ${root}  (pid ${second.proc.child.pid}`);
    const json = JSON.parse((await cli(['list', '--root', path.dirname(root), '--json'])).stdout) as ServerInfo[];
    expect(json.filter((s) => s.workspace === root).map((s) => s.url)).toEqual([first.url, second.url]);

    // Stopping the first does not take the token from the second.
    first.proc.child.kill('SIGTERM');
    await first.proc.exited;
    expect(await teams(second.url, token)).toBe(200);
  });

  it("a second start on the port of this workspace's running Hangar says where it already runs", async () => {
    const root = await makeWorkspace();
    const first = await start(root);
    const port = new URL(first.url).port;
    const again = await cli(['--no-window', '--root', root, '--port', port]);
    expect(again.code).toBe(1);
    expect(again.stderr.trim().split('\n').at(-1)).toBe(
      `hangar: Hangar is already running on this workspace at ${first.url}/ui/ (pid ${first.proc.child.pid}) (open it; \`hangar login\` prints a login link; or start another with --port 0)`,
    );
  });

  it('`hangar code` attaches to the running server and never invalidates its token', async () => {
    const root = await makeWorkspace();
    const { url } = await start(root);
    const token = sessionFile(root).token;
    const code = await cli(['code', 'teams', '--root', root]);
    expect(code.code).toBe(0);
    expect(code.stderr).toBe('');
    expect(code.stdout).toContain('no teams');
    expect(await teams(url, sessionFile(root).token)).toBe(200);
    expect(sessionFile(root).token).toBe(token);
    // Attached, not started: no second server came and went (it would have said so on stderr).
    expect(serverFiles(root)).toHaveLength(1);
  });

  it('`hangar code` with no server running starts one for the command and says so on stderr', async () => {
    const root = await makeWorkspace();
    const code = await cli(['code', 'teams', '--root', root]);
    expect(code.code).toBe(0);
    expect(code.stderr.trim()).toBe(
      `hangar code: no Hangar is running on ${root}; started one in this process for this command (keep one running with \`hangar --root ${root}\` and later commands use it)`,
    );
    expect(serverFiles(root)).toEqual([]);
  });

  it('`hangar code` on a server of its own prints no spurious error when it stops while a plugin still loads', async () => {
    const slowPlugin = `import { definePlugin, z } from 'hangar';
export default definePlugin({
  card: { task: 'regression' },
  input: z.object({ x: z.number() }),
  load: () => new Promise((resolve) => setTimeout(() => resolve(2), 5_000)),
  predict: (factor: number, input: { x: number }) => ({ y: factor * input.x }),
});
`;
    const root = await makeWorkspace({ 'plugins/slow.ts': slowPlugin });
    const code = await cli(['code', 'teams', '--root', root]);
    expect(code.code).toBe(0);
    expect(code.stderr.trim().split('\n')).toEqual([
      `hangar code: no Hangar is running on ${root}; started one in this process for this command (keep one running with \`hangar --root ${root}\` and later commands use it)`,
    ]);
  });

  it('`hangar notebook list` defaults to the running server of its folder, not port 8899', async () => {
    const root = await makeWorkspace({ 'notebooks/sales.nb.ts': '' });
    const { url } = await start(root);
    await eventually(async () => (await fetch(`${url}/readiness`)).status === 200);
    const list = await cli(['notebook', 'list'], { cwd: root });
    expect(list.stderr).toBe('');
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^sales\.nb\.ts\t/m);
  });

  it('`hangar notebook start` opens the notebook in the running server instead of serving another on 8899', async () => {
    const root = await makeWorkspace();
    const { url } = await start(root);
    const opened = await cli(['notebook', 'start', '--name', 'sales', '--no-browser'], { cwd: root });
    expect(opened.stderr).toBe('');
    expect(opened.code).toBe(0);
    expect(opened.stdout.trim()).toBe(`notebook "sales" on ${url}/ui/#/notebook/sales.nb.ts (the Hangar running on ${root})`);
    expect((await fetch(`${url}/api/notebooks`).then((r) => r.json())).notebooks.map((n: { id: string }) => n.id)).toContain('sales.nb.ts');
  });

  it('a runtime file whose process is gone is ignored and cleaned away', async () => {
    const root = await makeWorkspace();
    const dir = path.join(root, '.hangar', 'servers');
    mkdirSync(dir, { recursive: true });
    // A pid beyond Linux's pid_max cannot be running: a server killed with SIGKILL leaves such a file.
    const dead: ServerInfo = {
      pid: 4_194_400,
      url: 'http://127.0.0.1:1',
      port: 1,
      host: '127.0.0.1',
      workspace: root,
      started: new Date().toISOString(),
      version: '0.1.0',
      session: 'x',
    };
    writeFileSync(path.join(dir, `${dead.pid}.json`), JSON.stringify(dead));
    const list = await cli(['list', '--root', root]);
    expect(list.code).toBe(0);
    expect(list.stdout.trim()).toBe(`no Hangar running on ${root} or below (start one with \`hangar --root DIR\`)`);
    expect(readdirSync(dir)).toEqual([]);
    // `hangar code` does not try the dead one either.
    expect((await cli(['code', 'teams', '--root', root])).stderr).toContain('no Hangar is running on');
  });

  it('`hangar login` asks the newest server of the workspace', async () => {
    const root = await makeWorkspace();
    await start(root);
    const second = await start(root);
    const login = await cli(['login', '--root', root]);
    expect(login.code).toBe(0);
    expect(new URL(/^login link: (\S+)/.exec(login.stdout)![1]!).origin).toBe(second.url);
  });
});
