import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, open, readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { buildShell, repositoryRoot } from '../../desktop/build.js';
import { DESKTOP_PRINCIPAL, mintToken } from '../../desktop/policy.js';

/**
 * Opening the desktop window from the CLI. The Electron shell (desktop/) is used when its binary is
 * installed; otherwise a Chromium/Chrome `--app` window when one is on the machine and a display is
 * available; otherwise nothing opens and the caller prints the URL. Each outcome says which.
 *
 * The choice (`chooseWindow`) is a pure function of what the machine offers, so it is tested
 * without any of those programs; `openAppWindow` acts on it and reports only what it saw: a
 * browser that dies at once is "not opened", with the browser's own reason.
 */
export type WindowOutcome = { opened: true; via: string; confirmed: boolean } | { opened: false; reason: string };

export type WindowChoice = { kind: 'electron'; binary: string } | { kind: 'app'; browser: string } | { kind: 'none'; reason: string };

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
 * The binary of the optional `electron` package, found the way its index.js finds it (`path.txt`
 * names the executable under `dist/`) but without loading index.js: since Electron 42 that module
 * downloads the binary when it is missing, and starting Hangar must never reach the network. A
 * package whose binary was never downloaded (install scripts are denied) is the "missing" case.
 */
function electronBinary(): string | undefined {
  let dir: string;
  try {
    dir = path.dirname(createRequire(import.meta.url).resolve('electron/package.json'));
  } catch {
    return undefined;
  }
  const pathFile = path.join(dir, 'path.txt');
  if (!existsSync(pathFile)) return undefined;
  const executable = readFileSync(pathFile, 'utf8').trim();
  const dist = process.env.ELECTRON_OVERRIDE_DIST_PATH ?? path.join(dir, 'dist');
  const binary = path.join(dist, executable);
  return executable && existsSync(binary) ? binary : undefined;
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
  /**
   * The one-time login link the window opens on (core/coderun/login.ts), and a promise settled
   * when its code is exchanged — the page loaded and ran its script, which is how "opened" is
   * confirmed. Without it the window shows `/ui/` and only the browser's survival is checked.
   */
  login?: { code: string; url: string; used: Promise<void> };
  /**
   * The workspace's `.hangar/` folder: the app window's own browser profile (`window-profile/`) and
   * the browser's output (`window.log`) go there. Default: a folder in the OS temp directory.
   */
  stateDir?: string;
  /** How long to wait for the page to load before saying the window opened unconfirmed (ms). */
  confirmMs?: number;
  /** Without a login link: how long the browser must survive to count as opened (ms). */
  graceMs?: number;
}

/**
 * Opens the UI in the best window available; `url` is the server's URL. Resolves once the outcome
 * is known, so what the CLI prints is true:
 * - `opened`, `confirmed: true` — the page exchanged its login code (it loaded and ran);
 * - `opened`, `confirmed: false` — the browser is still running when the wait ends, but the page
 *   has not been seen (a slow first start, or a window stuck without content);
 * - not opened — the browser exited before the page was seen, with its own first error line (a
 *   browser exiting 0 may have handed the page to an instance already running on the profile, so
 *   that case waits for the page too, and only fails when the page never comes).
 */
export async function openAppWindow(url: string, options: OpenWindowOptions = {}): Promise<WindowOutcome> {
  const choice = chooseWindow(options.probe ?? systemProbe);
  switch (choice.kind) {
    case 'none':
      return { opened: false, reason: choice.reason };
    case 'app':
      return launchAppWindow(choice.browser, url, options);
    case 'electron':
      return launchElectron(choice.binary, url, options);
    default:
      return choice satisfies never;
  }
}

/** Where the browser's output goes and its profile lives. */
function windowFiles(options: OpenWindowOptions): { profile: string; log: string } {
  const dir = options.stateDir ?? path.join(os.tmpdir(), 'hangar-window');
  return { profile: path.join(dir, 'window-profile'), log: path.join(dir, 'window.log') };
}

async function launchAppWindow(browser: string, url: string, options: OpenWindowOptions): Promise<WindowOutcome> {
  const name = path.basename(browser);
  const files = windowFiles(options);
  await mkdir(files.profile, { recursive: true });
  const page = options.login?.url ?? new URL('/ui/', url).href;
  // A profile of its own: the app window neither reads the person's browser profile (extensions,
  // sessions) nor is handed over to a browser they already have open on it.
  const args = [`--app=${page}`, `--user-data-dir=${files.profile}`, '--no-first-run', '--no-default-browser-check'];
  // stderr goes to a file rather than a pipe: the browser outlives this wait (and may outlive the
  // server), and a pipe nobody reads any more would stall or break it.
  const log = await open(files.log, 'w');
  let child: ChildProcess;
  let exited: Promise<Exit>;
  try {
    child = spawn(browser, args, { stdio: ['ignore', 'ignore', log.fd], detached: true });
    exited = exitOf(child);
  } finally {
    await log.close();
  }
  const outcome = await watchLaunch(exited, `${name} --app window`, name, files.log, options);
  child.unref();
  return outcome;
}

type Exit = { code: number | null; signal: NodeJS.Signals | null } | { error: Error };

/** Listened to at once: a spawn failure is emitted on the next tick and would otherwise be unhandled. */
function exitOf(child: ChildProcess): Promise<Exit> {
  return new Promise((resolve) => {
    child.once('error', (error) => resolve({ error }));
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
}

/**
 * Waits for the first of: the page exchanging its login code, the browser exiting, the deadline.
 * See `openAppWindow` for what each means.
 */
async function watchLaunch(
  exited: Promise<Exit>,
  via: string,
  name: string,
  logFile: string,
  options: OpenWindowOptions,
): Promise<WindowOutcome> {
  const used = options.login?.used;
  const wait = used ? (options.confirmMs ?? 15_000) : (options.graceMs ?? 2_000);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<'deadline'>((resolve) => {
    timer = setTimeout(() => resolve('deadline'), wait);
  });
  const seen = used ? used.then(() => 'seen' as const) : new Promise<never>(() => {});
  try {
    const first = await Promise.race([seen, exited, deadline]);
    if (first === 'seen') return { opened: true, via, confirmed: true };
    if (first === 'deadline') return { opened: true, via, confirmed: false };
    if ('error' in first) return { opened: false, reason: `${name} could not be started: ${first.error.message}` };
    if (first.code === 0 && used) {
      // Handed over to a browser already running on this profile: the page may still come.
      const later = await Promise.race([seen, deadline]);
      if (later === 'seen') return { opened: true, via, confirmed: true };
    }
    const how = first.signal ? `was killed by ${first.signal}` : `exited with code ${first.code}`;
    const said = browserError(await readFile(logFile, 'utf8').catch(() => ''));
    return { opened: false, reason: `${name} ${how} before the page loaded${said ? `: ${said}` : ''}` };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Lines a Chromium-family browser prints on most Linux machines before (or instead of) the real
 * reason: D-Bus being absent, the Debian wrapper script's shell warnings, font and GPU chatter.
 */
const NOISE = [/dbus/i, /Failed to connect to the bus/i, /unexpected operator/, /Fontconfig/i, /gpu_init|viz_main|gles2|libva/i, /^\s*$/];

/**
 * The browser's own reason for failing, from its stderr: the first FATAL line, else the first
 * ERROR line, else the first line, skipping known noise; Chromium's `[pid:tid:time:LEVEL:file]`
 * prefix is dropped. Undefined when it said nothing useful.
 *
 * @example browserError('[1:1:1125/0:ERROR:zygote_host_impl_linux.cc:101] Running as root without --no-sandbox is not supported.')
 *   // → 'Running as root without --no-sandbox is not supported.'
 */
export function browserError(stderr: string): string | undefined {
  const lines = stderr.split(/\r?\n/).filter((line) => !NOISE.some((noise) => noise.test(line)));
  const pick = lines.find((l) => /:FATAL:/.test(l)) ?? lines.find((l) => /:ERROR:/.test(l)) ?? lines[0];
  const text = pick?.replace(/^\[[^\]]*\]\s*/, '').trim();
  return text ? (text.length > 300 ? `${text.slice(0, 300)}…` : text) : undefined;
}

async function launchElectron(binary: string, url: string, options: OpenWindowOptions): Promise<WindowOutcome> {
  let token: string | undefined;
  if (options.runtimeTokens) {
    token = mintToken();
    options.runtimeTokens[DESKTOP_PRINCIPAL] = token;
  }
  const onClosed = options.onClosed ?? (() => process.kill(process.pid, 'SIGTERM'));
  const revoke = () => {
    if (token && options.runtimeTokens?.[DESKTOP_PRINCIPAL] === token) delete options.runtimeTokens[DESKTOP_PRINCIPAL];
  };
  // The shell bundle is built on first use; a failed build is reported like a window that closed.
  let main: string;
  try {
    ({ main } = await buildShell(repositoryRoot()));
  } catch (err) {
    revoke();
    onClosed();
    return { opened: false, reason: `could not build the desktop shell: ${String(err)}` };
  }
  const env: NodeJS.ProcessEnv = { ...process.env, HANGAR_DESKTOP_URL: new URL(url).origin };
  if (token) env.HANGAR_DESKTOP_TOKEN = token;
  // The shell opens its window on the login link, so the coding-run session needs no pasting.
  if (options.login) env.HANGAR_DESKTOP_LOGIN = options.login.code;
  const files = windowFiles(options);
  await mkdir(path.dirname(files.log), { recursive: true });
  const log = await open(files.log, 'w');
  let exited: Promise<Exit>;
  try {
    const child = spawn(binary, [main], { stdio: ['ignore', 'ignore', log.fd], env });
    exited = exitOf(child);
  } finally {
    await log.close();
  }
  // Whenever the shell ends — at once or when the person closes the window — the token goes and
  // this process stops with it.
  void exited.then(() => {
    revoke();
    onClosed();
  });
  return watchLaunch(exited, 'Electron window', 'the Electron shell', files.log, options);
}
