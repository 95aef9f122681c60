import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { buildShell, repositoryRoot } from '../../desktop/build.js';
import { DESKTOP_PRINCIPAL, mintToken } from '../../desktop/policy.js';

/**
 * Opening the desktop window from the CLI. The Electron shell (desktop/) is used when its binary is
 * installed; otherwise a Chromium/Chrome `--app` window when one is on the machine and a display is
 * available; otherwise nothing opens and the caller prints the URL. Each outcome says which.
 *
 * The choice (`chooseWindow`) is a pure function of what the machine offers, so it is tested
 * without any of those programs; `openAppWindow` acts on it.
 */
export type WindowOutcome = { opened: true; via: string } | { opened: false; reason: string };

export type WindowChoice =
  | { kind: 'electron'; binary: string }
  | { kind: 'app'; browser: string }
  | { kind: 'none'; reason: string };

/** What the machine offers; each lookup is a function so nothing is probed that is not needed. */
export interface WindowProbe {
  platform: NodeJS.Platform;
  env: NodeJS.ProcessEnv;
  /** Path of the Electron binary, when the optional `electron` package installed one. */
  electron(): string | undefined;
  /** Path of the first Chromium-family browser on PATH. */
  browser(): string | undefined;
}

const BROWSERS = ['chromium', 'chromium-browser', 'google-chrome', 'google-chrome-stable', 'microsoft-edge'];

function onPath(name: string, env: NodeJS.ProcessEnv): string | undefined {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, name);
    if (dir && existsSync(candidate)) return candidate;
  }
  return undefined;
}

/**
 * The binary of the optional `electron` package. Its index.js throws when the download of the
 * binary failed or was skipped (offline installs), which is exactly the "missing" case.
 */
function electronBinary(): string | undefined {
  try {
    const binary = createRequire(import.meta.url)('electron') as unknown;
    return typeof binary === 'string' && existsSync(binary) ? binary : undefined;
  } catch {
    return undefined;
  }
}

export const systemProbe: WindowProbe = {
  platform: process.platform,
  env: process.env,
  electron: electronBinary,
  browser: () => BROWSERS.map((name) => onPath(name, process.env)).find(Boolean),
};

export function chooseWindow(probe: WindowProbe): WindowChoice {
  // Electron and a browser both need a display; on Linux without one nothing can open.
  if (probe.platform === 'linux' && !probe.env.DISPLAY && !probe.env.WAYLAND_DISPLAY) {
    return { kind: 'none', reason: 'no display available (DISPLAY/WAYLAND_DISPLAY unset)' };
  }
  const binary = probe.electron();
  if (binary) return { kind: 'electron', binary };
  const browser = probe.browser();
  if (browser) return { kind: 'app', browser };
  return { kind: 'none', reason: 'no Electron binary and no Chromium/Chrome found' };
}

export interface OpenWindowOptions {
  /**
   * The running server's `ctx.runtimeTokens`. With Electron, a per-launch token is minted into it
   * and handed to the shell, so only the window (and configured clients) reach the API.
   */
  runtimeTokens?: Record<string, string>;
  /**
   * Called when the Electron window is closed. Default: SIGTERM to this process, so the CLI's own
   * signal handler — the one clean shutdown path — stops the server.
   */
  onClosed?: () => void;
  probe?: WindowProbe;
}

/** Opens the UI (`<server>/ui/`) in the best window available; `url` is the server's URL. */
export function openAppWindow(url: string, options: OpenWindowOptions = {}): WindowOutcome {
  const choice = chooseWindow(options.probe ?? systemProbe);
  const ui = new URL('/ui/', url).href;
  switch (choice.kind) {
    case 'none':
      return { opened: false, reason: choice.reason };
    case 'app': {
      const child = spawn(choice.browser, [`--app=${ui}`, '--new-window'], { stdio: 'ignore', detached: true });
      child.on('error', () => {});
      child.unref();
      return { opened: true, via: `${path.basename(choice.browser)} --app window` };
    }
    case 'electron': {
      launchElectron(choice.binary, url, options);
      return { opened: true, via: 'Electron window' };
    }
    default:
      return choice satisfies never;
  }
}

function launchElectron(binary: string, url: string, options: OpenWindowOptions): void {
  let token: string | undefined;
  if (options.runtimeTokens) {
    token = mintToken();
    options.runtimeTokens[DESKTOP_PRINCIPAL] = token;
  }
  const onClosed = options.onClosed ?? (() => process.kill(process.pid, 'SIGTERM'));
  // The shell bundle is built on first use; a failed build is reported like a window that closed.
  void buildShell(repositoryRoot()).then(
    ({ main }) => {
      const env: NodeJS.ProcessEnv = { ...process.env, HANGAR_DESKTOP_URL: new URL(url).origin };
      if (token) env.HANGAR_DESKTOP_TOKEN = token;
      const child = spawn(binary, [main], { stdio: 'ignore', env });
      child.on('error', () => onClosed());
      child.on('exit', () => {
        if (token && options.runtimeTokens?.[DESKTOP_PRINCIPAL] === token) delete options.runtimeTokens[DESKTOP_PRINCIPAL];
        onClosed();
      });
    },
    (err: unknown) => {
      process.stderr.write(`hangar: could not build the desktop shell: ${String(err)}\n`);
      onClosed();
    },
  );
}
