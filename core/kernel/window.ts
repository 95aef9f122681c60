import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';

/**
 * Opening the desktop window from the CLI. The Electron shell (desktop/) is used when its binary is
 * installed; otherwise a Chromium/Chrome `--app` window when one is on the machine and a display is
 * available; otherwise nothing opens and the caller prints the URL. Each outcome says which.
 */
export type WindowOutcome = { opened: true; via: string } | { opened: false; reason: string };

const BROWSERS = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable', 'microsoft-edge'];

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir && existsSync(candidate)) return candidate;
  }
  return undefined;
}

function hasDisplay(): boolean {
  if (process.platform !== 'linux') return true;
  return Boolean(process.env.DISPLAY || process.env.WAYLAND_DISPLAY);
}

export function openAppWindow(url: string): WindowOutcome {
  if (!hasDisplay()) return { opened: false, reason: 'no display available (DISPLAY/WAYLAND_DISPLAY unset)' };
  const browser = BROWSERS.map(onPath).find(Boolean);
  if (!browser) return { opened: false, reason: 'no Electron binary and no Chromium/Chrome found' };
  const child = spawn(browser, [`--app=${url}`, '--new-window'], { stdio: 'ignore', detached: true });
  child.on('error', () => {});
  child.unref();
  return { opened: true, via: `${path.basename(browser)} --app window` };
}
