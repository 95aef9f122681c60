import { uiContentSecurityPolicy } from '../core/http/csp.js';
import type { BrowserWindowLike, ElectronMain, MenuItemOptions } from './electron-api.js';
import {
  DEEP_LINK_SCHEME,
  DESKTOP_PRINCIPAL,
  deepLinkFromArgv,
  deepLinkRoute,
  isAppUrl,
  mintToken,
  validateExternalUrl,
  windowOptions,
} from './policy.js';

/**
 * The Electron main process of Hangar: one window on the platform's UI, hardened per the Electron
 * security checklist, with the per-launch token handed to the page through the preload bridge and a
 * quit that closes the server before the process ends.
 *
 * Written against `ElectronMain` (the slice of Electron it uses), so tests drive it under Node.
 */

/** The platform the window shows: started in-process by the shell, or one that already runs. */
export interface PlatformHandle {
  /** `http://127.0.0.1:8787`, no trailing slash. */
  url: string;
  /**
   * The server's run-time tokens (`ctx.runtimeTokens`). When given, the shell mints the per-launch
   * token into it; when absent (attached to a server started elsewhere) `token` below is used.
   */
  runtimeTokens?: Record<string, string>;
  /** Stops the server cleanly (in-flight requests finish, store flushed). */
  close(): Promise<void>;
  /** The coding-run session token of the workspace, when the shell can read it. */
  codeSession?: () => Promise<string | null>;
}

export interface ShellOptions {
  electron: ElectronMain;
  /** Absolute path of the bundled preload script. */
  preload: string;
  /** The process's arguments, searched for a `hangar://` deep link. */
  argv: readonly string[];
  platform: () => Promise<PlatformHandle>;
  /** Token of an attached server (its CLI minted it); ignored when the shell mints its own. */
  token?: string;
  /**
   * A one-time login code of an attached server (core/coderun/login.ts): the first page load
   * carries it, so the UI gets the coding-run session token without the shell reading the workspace.
   */
  login?: string;
  log?: (line: string) => void;
}

export interface Shell {
  window: BrowserWindowLike;
  platform: PlatformHandle;
  /** The per-launch token, or null when the server needs none (attached, no auth). */
  token: string | null;
  /** Shows a UI route such as `#/studio/echo` in the window. */
  navigate(route: string): void;
}

export const IPC_BOOTSTRAP = 'hangar:bootstrap';
export const IPC_OPEN_EXTERNAL = 'hangar:open-external';

/**
 * Starts the shell. Resolves with the window once the UI is loading, or undefined when another
 * instance already runs (that instance is focused and handed our deep link instead).
 */
export async function startShell(options: ShellOptions): Promise<Shell | undefined> {
  const { electron, log = (line) => process.stderr.write(line + '\n') } = options;
  const { app } = electron;
  // One window per user: a second `hangar` (or a clicked deep link) focuses the first.
  if (!app.requestSingleInstanceLock()) {
    app.quit();
    return undefined;
  }
  app.setAsDefaultProtocolClient(DEEP_LINK_SCHEME);
  // Deep links that arrive before the window exists (macOS sends open-url early) are kept.
  let pendingRoute = deepLinkFromArgv(options.argv);
  let shell: Shell | undefined;
  app.on('open-url', (event, url) => {
    event.preventDefault();
    const route = deepLinkRoute(url);
    if (!route) return;
    if (shell) shell.navigate(route);
    else pendingRoute = route;
  });

  await app.whenReady();
  let platform: PlatformHandle;
  try {
    platform = await options.platform();
  } catch (err) {
    electron.dialog.showErrorBox('Hangar could not start', err instanceof Error ? err.message : String(err));
    app.exit(1);
    return undefined;
  }
  const origin = new URL(platform.url).origin;

  let token: string | null = options.token ?? null;
  if (platform.runtimeTokens) {
    token = mintToken();
    platform.runtimeTokens[DESKTOP_PRINCIPAL] = token;
  }

  installQuit(electron, platform, log);

  const openExternal = async (raw: unknown): Promise<boolean> => {
    const url = validateExternalUrl(raw);
    if (!url || isAppUrl(url, origin)) return false;
    await electron.shell.openExternal(url);
    return true;
  };

  // The page asks for the token through the preload bridge; only our own frames get an answer,
  // so a page that somehow ended up in the window (or an iframe) cannot read it.
  electron.ipcMain.handle(IPC_BOOTSTRAP, async (event) => {
    if (!isAppUrl(event.senderFrame?.url, origin)) throw new Error('refused: sender is not the Hangar UI');
    return { token, codeSession: (await platform.codeSession?.().catch(() => null)) ?? null };
  });
  electron.ipcMain.handle(IPC_OPEN_EXTERNAL, async (event, raw) => {
    if (!isAppUrl(event.senderFrame?.url, origin)) throw new Error('refused: sender is not the Hangar UI');
    return openExternal(raw);
  });

  const session = electron.session.defaultSession;
  // The UI needs no camera, notifications or geolocation; nothing gets them.
  session.setPermissionRequestHandler((_contents, _permission, callback) => callback(false));
  // The server sends the UI's CSP itself; this covers any app response that arrives without one.
  session.webRequest.onHeadersReceived((details, callback) => {
    const headers = { ...(details.responseHeaders ?? {}) };
    const hasCsp = Object.keys(headers).some((name) => name.toLowerCase() === 'content-security-policy');
    if (isAppUrl(details.url, origin) && !hasCsp) headers['Content-Security-Policy'] = [uiContentSecurityPolicy(origin)];
    callback({ responseHeaders: headers });
  });

  const window = new electron.BrowserWindow(windowOptions(options.preload));
  const contents = window.webContents;
  const guard = (event: { preventDefault(): void }, url: string) => {
    if (isAppUrl(url, origin)) return;
    event.preventDefault();
    void openExternal(url).catch((err: unknown) => log(`hangar: could not open ${url}: ${String(err)}`));
  };
  contents.on('will-navigate', guard);
  // A redirect is the server's doing, not a click: one leaving the app is stopped, not opened.
  contents.on('will-redirect', (event, url) => {
    if (!isAppUrl(url, origin)) event.preventDefault();
  });
  contents.on('will-attach-webview', (event) => event.preventDefault());
  contents.setWindowOpenHandler(({ url }) => {
    // No second windows: app links open in this one, valid external links in the system browser.
    if (isAppUrl(url, origin)) void window.loadURL(url);
    else void openExternal(url).catch(() => {});
    return { action: 'deny' };
  });
  window.once('ready-to-show', () => window.show());

  const navigate = (route: string) => {
    if (window.isDestroyed()) return;
    if (window.isMinimized()) window.restore();
    window.focus();
    void window.loadURL(`${origin}/ui/${route}`);
  };
  app.on('second-instance', (_event, argv) => {
    const route = deepLinkFromArgv(argv);
    if (route) navigate(route);
    else if (!window.isDestroyed()) window.focus();
  });

  electron.Menu.setApplicationMenu(electron.Menu.buildFromTemplate(menuTemplate(navigate)));
  shell = { window, platform, token, navigate };
  const login = options.login ? `?login=${encodeURIComponent(options.login)}` : '';
  await window.loadURL(`${origin}/ui/${login}${pendingRoute ?? '#/status'}`);
  return shell;
}

/**
 * Closing the last window quits (no tray, on every platform), and quitting waits for the server:
 * the first `before-quit` is cancelled, the server closes, then the app quits for real. A failing
 * close is logged and the app still exits, with code 1.
 */
function installQuit(electron: ElectronMain, platform: PlatformHandle, log: (line: string) => void): void {
  const { app } = electron;
  let state: 'running' | 'closing' | 'closed' = 'running';
  app.on('window-all-closed', () => app.quit());
  app.on('before-quit', (event) => {
    if (state === 'closed') return;
    event.preventDefault();
    if (state === 'closing') return;
    state = 'closing';
    platform.close().then(
      () => {
        state = 'closed';
        app.quit();
      },
      (err: unknown) => {
        log(`hangar: shutdown failed: ${String(err)}`);
        state = 'closed';
        app.exit(1);
      },
    );
  });
}

export function menuTemplate(navigate: (route: string) => void): MenuItemOptions[] {
  const isMac = process.platform === 'darwin';
  const go = (label: string, route: string, key: string): MenuItemOptions => ({
    label,
    accelerator: `CmdOrCtrl+${key}`,
    click: () => navigate(route),
  });
  return [
    { label: 'Hangar', submenu: [{ role: 'about' }, { type: 'separator' }, { role: 'quit', accelerator: isMac ? 'Cmd+Q' : 'Ctrl+Q' }] },
    {
      label: 'Edit',
      submenu: [
        { role: 'undo' },
        { role: 'redo' },
        { type: 'separator' },
        { role: 'cut' },
        { role: 'copy' },
        { role: 'paste' },
        { role: 'selectAll' },
      ],
    },
    {
      label: 'View',
      submenu: [
        go('Status', '#/status', '1'),
        go('Studio', '#/studio', '2'),
        go('Notebooks', '#/notebook', '3'),
        go('Runs', '#/runs', '4'),
        { type: 'separator' },
        { role: 'reload' },
        { role: 'toggleDevTools' },
        { type: 'separator' },
        { role: 'resetZoom' },
        { role: 'zoomIn' },
        { role: 'zoomOut' },
        { role: 'togglefullscreen' },
      ],
    },
  ];
}
