import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { browserError, chooseWindow, openAppWindow, systemProbe, type WindowProbe } from '../../core/app/window.js';
import { loginUrl } from '../../core/coderun/login.js';
import { type FakeBrowserKind, fakeBrowser, ROOT_STDERR } from '../support/fake-browser.js';
import { eventually, startTestServer, type TestServer } from '../support/server.js';

const probe = (overrides: Partial<WindowProbe>): WindowProbe => ({
  platform: 'linux',
  env: { DISPLAY: ':0' },
  electron: () => undefined,
  browser: () => undefined,
  ...overrides,
});

describe('choosing the window', () => {
  it('prefers the Electron shell when its binary is installed', () => {
    expect(chooseWindow(probe({ electron: () => '/x/electron', browser: () => '/usr/bin/chromium' }))).toEqual({
      kind: 'electron',
      binary: '/x/electron',
    });
  });

  it('falls back to a Chromium --app window without Electron', () => {
    expect(chooseWindow(probe({ browser: () => '/usr/bin/chromium' }))).toEqual({ kind: 'app', browser: '/usr/bin/chromium' });
  });

  it('says why nothing opens: no display, or neither program', () => {
    let asked = false;
    const headless = chooseWindow(probe({ env: {}, electron: () => ((asked = true), '/x/electron') }));
    expect(headless).toEqual({ kind: 'none', reason: 'no display available (DISPLAY/WAYLAND_DISPLAY unset)' });
    expect(asked).toBe(false);
    expect(chooseWindow(probe({ env: { WAYLAND_DISPLAY: 'wayland-0' } }))).toEqual({
      kind: 'none',
      reason: 'no Electron binary and no Chromium/Chrome found',
    });
    // macOS and Windows always have a display.
    expect(chooseWindow(probe({ platform: 'darwin', env: {}, browser: () => '/Applications/Chrome' })).kind).toBe('app');
  });

  it('reports the outcome of opening without spawning anything when nothing fits', async () => {
    expect(await openAppWindow('http://127.0.0.1:1/', { probe: probe({ env: {} }) })).toEqual({
      opened: false,
      reason: 'no display available (DISPLAY/WAYLAND_DISPLAY unset)',
    });
  });
});

describe('finding Electron', () => {
  it('treats a package without its downloaded binary as missing, without trying to download it', () => {
    const pkg = path.resolve('node_modules', 'electron');
    if (!existsSync(pkg) || existsSync(path.join(pkg, 'path.txt'))) return; // only meaningful when the binary is absent
    const logged = vi.spyOn(console, 'log');
    try {
      expect(systemProbe.electron()).toBeUndefined();
      // Electron's own index.js would print "Downloading Electron binary..." and go online.
      expect(logged).not.toHaveBeenCalled();
    } finally {
      logged.mockRestore();
    }
  });
});

describe('opening the Electron shell for a running server', () => {
  it('hands a fresh per-launch token to the shell in its environment and revokes it when the window closes', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-fake-electron-'));
    try {
      // Stands in for the Electron binary: records what it was given, then exits (window closed).
      const fake = path.join(dir, 'electron');
      const record = path.join(dir, 'record.json');
      await writeFile(
        fake,
        `#!/bin/sh\nnode -e 'require("fs").writeFileSync(process.argv[1], JSON.stringify({ args: process.argv.slice(2), url: process.env.HANGAR_DESKTOP_URL, token: process.env.HANGAR_DESKTOP_TOKEN }))' ${JSON.stringify(record)} "$@"\n`,
      );
      await chmod(fake, 0o755);
      const runtimeTokens: Record<string, string> = {};
      let seenWhileOpen: string | undefined;
      let outcome: Promise<unknown> | undefined;
      const closed = new Promise<void>((resolve) => {
        outcome = openAppWindow('http://127.0.0.1:8787/', {
          runtimeTokens,
          probe: probe({ electron: () => fake }),
          stateDir: dir,
          onClosed: () => resolve(),
        });
        seenWhileOpen = runtimeTokens.desktop;
      });
      await closed;
      // This stand-in closes at once, and is reported as such.
      expect(await outcome).toEqual({ opened: false, reason: 'the Electron shell exited with code 0 before the page loaded' });
      const seen = JSON.parse(await readFile(record, 'utf8')) as { args: string[]; url: string; token: string };
      expect(seen.url).toBe('http://127.0.0.1:8787');
      expect(seen.token).toBe(seenWhileOpen);
      expect(seen.token).toMatch(/^[0-9a-f]{64}$/);
      // The token is not on the command line, where any local user could read it.
      expect(seen.args.join(' ')).not.toContain(seen.token);
      expect(seen.args[0]).toMatch(/dist[\\/]desktop[\\/]main\.mjs$/);
      expect(runtimeTokens).toEqual({});
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe('reporting the Chromium --app window truthfully', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.stop());

  /** Opens the window on a fresh login link of the test server, with `kind` as the browser. */
  async function openWith(kind: FakeBrowserKind, waits: { confirmMs?: number; graceMs?: number } = {}) {
    const browser = await fakeBrowser(kind);
    const link = server.ctx.services.get('loginLinks').mint();
    const started = Date.now();
    const outcome = await openAppWindow(server.url, {
      probe: probe({ browser: () => browser.executable }),
      stateDir: path.join(server.root, '.hangar'),
      login: { code: link.code, url: loginUrl(server.url, link.code), used: link.used },
      ...waits,
    });
    return { browser, outcome, link, elapsed: Date.now() - started };
  }

  it('says "not opened" with the browser\'s own reason when it exits at once', async () => {
    const { browser, outcome, elapsed } = await openWith('dies');
    try {
      expect(outcome).toEqual({
        opened: false,
        reason:
          'chromium exited with code 1 before the page loaded: Running as root without --no-sandbox is not supported. See https://crbug.com/638180.',
      });
      // Known as soon as it exits, not at the end of the wait.
      expect(elapsed).toBeLessThan(5_000);
      // Its whole output is kept for a closer look.
      expect(await readFile(path.join(server.root, '.hangar', 'window.log'), 'utf8')).toBe(ROOT_STDERR + '\n');
    } finally {
      await browser.dispose();
    }
  });

  it('says "opened" once the page has exchanged its login code, using a profile of its own under .hangar/', async () => {
    const { browser, outcome } = await openWith('loads');
    try {
      expect(outcome).toEqual({ opened: true, via: 'chromium --app window', confirmed: true });
      const { args } = await browser.record();
      const profile = path.join(server.root, '.hangar', 'window-profile');
      expect(args).toEqual([
        expect.stringMatching(/^--app=http:\/\/127\.0\.0\.1:\d+\/ui\/\?login=[0-9a-f]{64}$/),
        `--user-data-dir=${profile}`,
        '--no-first-run',
        '--no-default-browser-check',
      ]);
      expect((await stat(profile)).isDirectory()).toBe(true);
    } finally {
      await browser.dispose();
    }
  });

  it('says the window started but its page is not confirmed when the browser stays up without loading it', async () => {
    const { browser, outcome } = await openWith('hangs', { confirmMs: 800 });
    try {
      expect(outcome).toEqual({ opened: true, via: 'chromium --app window', confirmed: false });
    } finally {
      await browser.dispose();
    }
  });

  it('waits for the page when the browser hands the URL to a running instance, and says so when it never comes', async () => {
    const { browser, outcome, elapsed } = await openWith('hands-over', { confirmMs: 800 });
    try {
      expect(outcome).toEqual({ opened: false, reason: 'chromium exited with code 0 before the page loaded' });
      expect(elapsed).toBeGreaterThanOrEqual(700);
    } finally {
      await browser.dispose();
    }
  });

  it('counts a handed-over page that loads as opened', async () => {
    const browser = await fakeBrowser('hands-over');
    const link = server.ctx.services.get('loginLinks').mint();
    try {
      const opening = openAppWindow(server.url, {
        probe: probe({ browser: () => browser.executable }),
        stateDir: path.join(server.root, '.hangar'),
        login: { code: link.code, url: loginUrl(server.url, link.code), used: link.used },
        confirmMs: 10_000,
      });
      // The launcher has exited; the already-running browser shows the page a moment later.
      await eventually(() => browser.record());
      await new Promise((r) => setTimeout(r, 300));
      expect((await server.request('/api/login', { method: 'POST', json: { code: link.code } })).status).toBe(200);
      expect(await opening).toEqual({ opened: true, via: 'chromium --app window', confirmed: true });
    } finally {
      await browser.dispose();
    }
  });

  it('reports a browser that cannot be started', async () => {
    const outcome = await openAppWindow(server.url, {
      probe: probe({ browser: () => path.join(server.root, 'no-such-chromium') }),
      stateDir: path.join(server.root, '.hangar'),
    });
    expect(outcome.opened).toBe(false);
    expect(outcome.opened === false && outcome.reason).toMatch(/^no-such-chromium could not be started: spawn .*ENOENT/);
  });
});

describe("the browser's reason for failing", () => {
  it("skips the wrapper-script and D-Bus noise and drops Chromium's log prefix", () => {
    expect(browserError(ROOT_STDERR)).toBe('Running as root without --no-sandbox is not supported. See https://crbug.com/638180.');
    const noDisplay = [
      '/usr/bin/chromium: 9: [: 25276510208: unexpected operator',
      '[8278:8308:1125/032111.535727:ERROR:dbus/bus.cc:405] Failed to connect to the bus: Failed to connect to socket /run/dbus/system_bus_socket: No such file or directory',
      '[8278:8278:1125/032111.538016:ERROR:ui/ozone/platform/x11/ozone_platform_x11.cc:257] Missing X server or $DISPLAY',
      '[8278:8278:1125/032111.538043:ERROR:ui/aura/env.cc:246] The platform failed to initialize.  Exiting.',
    ].join('\n');
    expect(browserError(noDisplay)).toBe('Missing X server or $DISPLAY');
  });

  it('prefers a FATAL line, falls back to the first line, and says nothing for silence', () => {
    expect(browserError('[1:1:0:ERROR:a.cc:1] first\n[1:1:0:FATAL:b.cc:2] the real one')).toBe('the real one');
    expect(browserError('Segmentation fault\n')).toBe('Segmentation fault');
    expect(browserError('')).toBeUndefined();
  });
});
