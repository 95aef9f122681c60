import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { chooseWindow, openAppWindow, type WindowProbe } from '../../core/kernel/window.js';

const probe = (overrides: Partial<WindowProbe>): WindowProbe => ({
  platform: 'linux',
  env: { DISPLAY: ':0' },
  electron: () => undefined,
  browser: () => undefined,
  ...overrides,
});

describe('choosing the window', () => {
  it('prefers the Electron shell when its binary is installed', () => {
    expect(chooseWindow(probe({ electron: () => '/x/electron', browser: () => '/usr/bin/chromium' }))).toEqual({ kind: 'electron', binary: '/x/electron' });
  });

  it('falls back to a Chromium --app window without Electron', () => {
    expect(chooseWindow(probe({ browser: () => '/usr/bin/chromium' }))).toEqual({ kind: 'app', browser: '/usr/bin/chromium' });
  });

  it('says why nothing opens: no display, or neither program', () => {
    let asked = false;
    const headless = chooseWindow(probe({ env: {}, electron: () => ((asked = true), '/x/electron') }));
    expect(headless).toEqual({ kind: 'none', reason: 'no display available (DISPLAY/WAYLAND_DISPLAY unset)' });
    expect(asked).toBe(false);
    expect(chooseWindow(probe({ env: { WAYLAND_DISPLAY: 'wayland-0' } }))).toEqual({ kind: 'none', reason: 'no Electron binary and no Chromium/Chrome found' });
    // macOS and Windows always have a display.
    expect(chooseWindow(probe({ platform: 'darwin', env: {}, browser: () => '/Applications/Chrome' })).kind).toBe('app');
  });

  it('reports the outcome of opening without spawning anything when nothing fits', () => {
    expect(openAppWindow('http://127.0.0.1:1/', { probe: probe({ env: {} }) })).toEqual({
      opened: false,
      reason: 'no display available (DISPLAY/WAYLAND_DISPLAY unset)',
    });
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
      const closed = new Promise<void>((resolve) => {
        const outcome = openAppWindow('http://127.0.0.1:8787/', {
          runtimeTokens,
          probe: probe({ electron: () => fake }),
          onClosed: () => resolve(),
        });
        expect(outcome).toEqual({ opened: true, via: 'Electron window' });
        seenWhileOpen = runtimeTokens.desktop;
      });
      await closed;
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
