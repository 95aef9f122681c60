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
