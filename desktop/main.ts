/**
 * Electron entry of Hangar (`electron dist/desktop/main.mjs [--root DIR] [--port N] [hangar://…]`).
 *
 * Two modes:
 * - in-process (the default): the shell starts the platform itself and mints the per-launch token;
 * - attached (`HANGAR_DESKTOP_URL` set by `hangar` when its server already runs, see
 *   core/app/window.ts): the window shows that server, with the token the CLI minted, handed
 *   over in `HANGAR_DESKTOP_TOKEN` (the environment, not argv, because any local user can read a
 *   process's argv), and a one-time login code in `HANGAR_DESKTOP_LOGIN` that the first page load
 *   exchanges for the coding-run session token. The variables are removed at once so no child
 *   process inherits them.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startServer } from '../core/app/server.js';
import { loadSettings } from '../core/kernel/settings.js';
import type { ElectronMain } from './electron-api.js';
import { type PlatformHandle, startShell } from './shell.js';

// Electron's main process loads ES modules (Electron >= 28); `electron` itself is CommonJS.
const electron = createRequire(import.meta.url)('electron') as ElectronMain;
const here = path.dirname(fileURLToPath(import.meta.url));
const attachedUrl = process.env.HANGAR_DESKTOP_URL;
const attachedToken = process.env.HANGAR_DESKTOP_TOKEN;
const attachedLogin = process.env.HANGAR_DESKTOP_LOGIN;
delete process.env.HANGAR_DESKTOP_URL;
delete process.env.HANGAR_DESKTOP_TOKEN;
delete process.env.HANGAR_DESKTOP_LOGIN;

/** The workspace defaults to the repository, two folders above dist/desktop/. */
const repository = path.resolve(here, '..', '..');

async function inProcess(): Promise<PlatformHandle> {
  // Electron adds its own switches; unknown ones are ignored rather than fatal.
  const { values } = parseArgs({
    args: process.argv.slice(1),
    options: { root: { type: 'string' }, port: { type: 'string' }, host: { type: 'string' }, config: { type: 'string' } },
    strict: false,
    allowPositionals: true,
  });
  const settings = loadSettings({
    defaultRoot: repository,
    configFile: typeof values.config === 'string' ? values.config : undefined,
    flags: { root: values.root, port: values.port, host: values.host, window: false },
  });
  const running = await startServer(settings);
  return {
    url: running.url,
    runtimeTokens: running.ctx.runtimeTokens,
    close: running.close,
    // Written by the coding-run subsystem at start-up (core/coderun/subsystem.ts), owner-only.
    codeSession: async () =>
      (JSON.parse(await readFile(path.join(running.ctx.paths.state, 'code-session.json'), 'utf8')) as { token?: string }).token ?? null,
  };
}

const platform = attachedUrl ? async (): Promise<PlatformHandle> => ({ url: attachedUrl, close: async () => {} }) : inProcess;

for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => electron.app.quit());

void startShell({
  electron,
  preload: path.join(here, 'preload.cjs'),
  argv: process.argv,
  platform,
  token: attachedToken,
  login: attachedLogin,
});
