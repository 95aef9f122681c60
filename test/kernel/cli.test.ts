import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, utimesSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { repo, runCli, stopAll } from '../support/cli.js';
import { fakeBrowser } from '../support/fake-browser.js';
import { agentSource, eventually, makeWorkspace } from '../support/server.js';

beforeAll(() => {
  execFileSync(process.execPath, [path.join(repo, 'scripts', 'build.mjs'), '--quiet']);
});
afterEach(stopAll);

const run = (args: string[], env: Record<string, string> = {}) => runCli(args, { env });

describe('hangar CLI', () => {
  it('prints help and version', async () => {
    const help = run(['--help']);
    expect(await help.exited).toBe(0);
    expect(help.out()).toContain('hangar [options]');
    expect(help.out()).toContain('--no-window');
    const version = run(['--version']);
    expect(await version.exited).toBe(0);
    expect(version.out().trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('exits non-zero with one clear line on a bad flag or setting', async () => {
    const unknown = run(['--bogus']);
    expect(await unknown.exited).toBe(2);
    expect(unknown.err().trim().split('\n')).toHaveLength(1);
    expect(unknown.err()).toContain("Unknown option '--bogus'");

    const root = await makeWorkspace();
    const bad = run(['--root', root, '--no-window'], { HANGAR_PORT: '70000' });
    expect(await bad.exited).toBe(2);
    expect(bad.err().trim()).toMatch(/^hangar: invalid setting port \(from HANGAR_PORT\): /);
  });

  it('starts headless, prints one ready line with the URL, and shuts down cleanly on SIGTERM letting in-flight requests finish', async () => {
    const root = await makeWorkspace({ 'agents/hi.ts': agentSource(`{ run: async () => 'hi' }`) });
    const proc = run(['--no-window', '--root', root, '--port', '0']);
    const ready = await proc.line(/ready at/);
    expect(ready).toMatch(/^Hangar \S+ ready at http:\/\/127\.0\.0\.1:\d+\/ui\/ \(workspace .+, 1 agent\)$/);
    const url = /http:\/\/[\d.:]+/.exec(ready)![0];
    // The printed address is the UI itself, so a browser following it gets the page, not JSON.
    const page = await fetch(/http:\/\/\S+/.exec(ready)![0]);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toContain('text/html');
    expect((await fetch(`${url}/readiness`)).status).toBe(200);

    // An upload still in progress when the signal arrives completes with a response. The headers
    // go first with Expect: 100-continue: the server answers 100 Continue once it has parsed them
    // and made the request active, so the signal cannot find the connection idle (and drop it).
    // The rest of the body is sent only once the server has taken the signal.
    const inflight = new Promise<number>((resolve, reject) => {
      const headers = { 'content-type': 'application/json', 'transfer-encoding': 'chunked', expect: '100-continue' };
      const req = http.request(`${url}/api/v1/hi/health`, { method: 'POST', headers }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
      req.on('continue', () => {
        req.write('{"a":');
        proc.child.kill('SIGTERM');
        eventually(() => proc.err().includes('SIGTERM received')).then(() => req.end('1}'), reject);
      });
      req.flushHeaders();
    });
    expect(await inflight).toBe(404);
    expect(await proc.exited).toBe(0);
    expect(proc.err()).toContain('SIGTERM received, shutting down');
  });

  it('says plainly when no window can be opened', async () => {
    const root = await makeWorkspace();
    const proc = run(['--root', root, '--port', '0']);
    expect(await proc.line(/^window:/)).toMatch(
      /window: not opened — .+; open http:\/\/127\.0\.0\.1:\d+\/ui\/\?login=[0-9a-f]{64} in a browser/,
    );
    proc.child.kill('SIGINT');
    const code = await proc.exited;
    expect(proc.err()).toContain('SIGINT received');
    expect(code).toBe(0);
  });

  it('prints a one-time login link that signs a browser in once, and `hangar login` prints a fresh one', async () => {
    const root = await makeWorkspace();
    const proc = run(['--no-window', '--root', root, '--port', '0']);
    const line = await proc.line(/^login link:/);
    expect(line).toMatch(/^login link: http:\/\/127\.0\.0\.1:\d+\/ui\/\?login=[0-9a-f]{64} \(works once; `hangar login` prints another\)$/);
    const link = new URL(line.split(' ')[2]!);
    const exchange = (code: string) =>
      fetch(new URL('/api/login', link), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ code }),
      });
    const first = await exchange(link.searchParams.get('login')!);
    expect(first.status).toBe(200);
    const session = JSON.parse(readFileSync(path.join(root, '.hangar', 'code-session.json'), 'utf8')) as { token: string; url: string };
    expect(await first.json()).toEqual({ session: session.token, token: null });
    // The session file names the server, so `hangar login` finds it on any port.
    expect(session.url).toBe(link.origin);
    const second = await exchange(link.searchParams.get('login')!);
    expect(second.status).toBe(401);
    expect(((await second.json()) as { detail: string }).detail).toContain('already used');

    const fresh = run(['login', '--root', root]);
    expect(await fresh.exited).toBe(0);
    const again = new URL(/^login link: (\S+) \(works once\)$/.exec(fresh.out().trim())![1]!);
    expect(again.origin).toBe(link.origin);
    expect((await exchange(again.searchParams.get('login')!)).status).toBe(200);
  });

  it('`hangar login` says what is wrong when no Hangar runs on the workspace', async () => {
    const root = await makeWorkspace();
    const proc = run(['login', '--root', root]);
    expect(await proc.exited).toBe(1);
    expect(proc.err().trim()).toBe(
      `hangar: no Hangar is running on ${root} (start it with \`npm start\` or \`hangar --root ${root}\`; \`hangar list\` shows the running servers)`,
    );
  });

  it('says "not opened" with the browser\'s own reason and the link to open when the browser dies at once', async () => {
    const root = await makeWorkspace();
    const browser = await fakeBrowser('dies');
    try {
      const proc = run(['--root', root, '--port', '0'], { PATH: `${browser.dir}${path.delimiter}${process.env.PATH}`, DISPLAY: ':99' });
      const window = await proc.line(/^window:/);
      const printed = (await proc.line(/^login link:/)).split(' ')[2]!;
      expect(window).toBe(
        `window: not opened — chromium exited with code 1 before the page loaded: Running as root without --no-sandbox is not supported. See https://crbug.com/638180.; open ${printed} in a browser`,
      );
      // The window had its own profile in the workspace, not the person's.
      expect((await browser.record()).args).toContain(`--user-data-dir=${path.join(root, '.hangar', 'window-profile')}`);
    } finally {
      await browser.dispose();
    }
  });

  it('says "opened" when the browser stays up and its page loads', async () => {
    const root = await makeWorkspace();
    const browser = await fakeBrowser('loads');
    try {
      const proc = run(['--root', root, '--port', '0'], { PATH: `${browser.dir}${path.delimiter}${process.env.PATH}`, DISPLAY: ':99' });
      expect(await proc.line(/^window:/)).toBe('window: opened with chromium --app window');
      // The window used a code of its own: the printed link still works.
      const printed = new URL((await proc.line(/^login link:/)).split(' ')[2]!);
      const res = await fetch(new URL('/api/login', printed), {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ code: printed.searchParams.get('login') }),
      });
      expect(res.status).toBe(200);
    } finally {
      await browser.dispose();
    }
  });

  it('fails clearly when the port is taken', async () => {
    const blocker = http.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as { port: number }).port;
    const root = await makeWorkspace();
    const proc = run(['--no-window', '--root', root, '--port', String(port)]);
    expect(await proc.exited).toBe(1);
    expect(proc.err().trim().split('\n').at(-1)).toBe(
      `hangar: port ${port} is already in use on 127.0.0.1 (choose another with --port or HANGAR_PORT, or \`hangar list\` to find a Hangar already running)`,
    );
    blocker.close();
  });

  it('rebuilds stale sources and runs when started from another directory', () => {
    // A copy of the checkout, so this build cannot disturb the dist/ other test files are running.
    const copy = mkdtempSync(path.join(os.tmpdir(), 'hangar-build-'));
    try {
      for (const part of ['bin', 'core', 'desktop', 'scripts', 'package.json'])
        cpSync(path.join(repo, part), path.join(copy, part), { recursive: true });
      symlinkSync(path.join(repo, 'node_modules'), path.join(copy, 'node_modules'));
      const out = execFileSync(process.execPath, [path.join(copy, 'bin', 'hangar.mjs'), '--version'], {
        cwd: os.tmpdir(),
        encoding: 'utf8',
      });
      expect(out.trim()).toMatch(/^\d+\.\d+\.\d+$/);
      // Edit a source: the next start rebuilds, and the build keeps its own entry (its output paths
      // are resolved against the checkout, not the caller's directory).
      const entry = path.join(copy, 'dist', 'cli.cjs');
      const firstBuild = statSync(entry).mtimeMs;
      const later = new Date(Date.now() + 5_000);
      utimesSync(path.join(copy, 'desktop', 'policy.ts'), later, later);
      const again = execFileSync(process.execPath, [path.join(copy, 'bin', 'hangar.mjs'), '--version'], {
        cwd: os.tmpdir(),
        encoding: 'utf8',
      });
      expect(again.trim()).toBe(out.trim());
      expect(statSync(entry).mtimeMs).toBeGreaterThan(firstBuild);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
