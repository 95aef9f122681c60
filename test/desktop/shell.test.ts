import { afterEach, describe, expect, it } from 'vitest';
import { exposeBridge, type HangarBridge } from '../../desktop/bridge.js';
import type {
  BrowserWindowOptions,
  ElectronMain,
  HeadersReceivedDetails,
  IpcInvokeEvent,
  MenuItemOptions,
  PreventableEvent,
} from '../../desktop/electron-api.js';
import { IPC_BOOTSTRAP, IPC_OPEN_EXTERNAL, type Shell, startShell } from '../../desktop/shell.js';
import { agentSource, eventually, startTestServer, type TestServer } from '../support/server.js';
import { WITHOUT_PLUGIN_WORKERS } from './servers.js';

/**
 * The shell's main-process logic against a stand-in for Electron's API (the binary is optional and
 * absent here) and a real Hangar server. Only Electron is replaced; the server and shell are ours.
 */
type Listener = (...args: any[]) => any;

function fakeElectron(options: { singleInstance?: boolean } = {}) {
  const appListeners = new Map<string, Listener[]>();
  const ipc = new Map<string, Listener>();
  const opened: string[] = [];
  const windows: FakeWindow[] = [];
  const calls: string[] = [];
  let permissionHandler: Listener | undefined;
  let headersListener: Listener | undefined;
  let menu: MenuItemOptions[] = [];

  class FakeWindow {
    readonly loaded: string[] = [];
    readonly listeners = new Map<string, Listener>();
    windowOpenHandler: Listener | undefined;
    shown = false;
    destroyed = false;
    readonly webContents = {
      on: (event: string, listener: Listener) => this.listeners.set(`wc:${event}`, listener),
      setWindowOpenHandler: (handler: Listener) => (this.windowOpenHandler = handler),
      getURL: () => this.loaded.at(-1) ?? '',
    };
    constructor(readonly options: BrowserWindowOptions) {
      windows.push(this);
    }
    async loadURL(url: string) {
      this.loaded.push(url);
    }
    once(event: string, listener: Listener) {
      this.listeners.set(event, listener);
    }
    on(event: string, listener: Listener) {
      this.listeners.set(event, listener);
    }
    show() {
      this.shown = true;
    }
    focus() {}
    isMinimized() {
      return false;
    }
    restore() {}
    isDestroyed() {
      return this.destroyed;
    }
  }

  const emit = (event: string, ...args: unknown[]) => {
    for (const listener of appListeners.get(event) ?? []) listener(...args);
  };

  const quitState = { quits: 0, exitCode: undefined as number | undefined, exited: false };
  const electron: ElectronMain = {
    app: {
      whenReady: async () => {},
      on: (event: string, listener: Listener) => appListeners.set(event, [...(appListeners.get(event) ?? []), listener]),
      requestSingleInstanceLock: () => options.singleInstance ?? true,
      setAsDefaultProtocolClient: (protocol: string) => (calls.push(`protocol:${protocol}`), true),
      quit: () => {
        quitState.quits += 1;
        // Like Electron: quitting asks before-quit listeners first; if none prevents it, the app ends.
        let prevented = false;
        emit('before-quit', { preventDefault: () => (prevented = true) });
        if (!prevented) quitState.exited = true;
      },
      exit: (code?: number) => {
        quitState.exitCode = code;
        quitState.exited = true;
      },
    } as ElectronMain['app'],
    BrowserWindow: FakeWindow as unknown as ElectronMain['BrowserWindow'],
    shell: { openExternal: async (url: string) => void opened.push(url) },
    ipcMain: { handle: (channel, listener) => void ipc.set(channel, listener) },
    Menu: { buildFromTemplate: (template) => ((menu = template), template), setApplicationMenu: () => {} },
    dialog: { showErrorBox: (title, content) => void calls.push(`error:${title}:${content}`) },
    session: {
      defaultSession: {
        setPermissionRequestHandler: (handler) => void (permissionHandler = handler),
        webRequest: { onHeadersReceived: (listener) => void (headersListener = listener) },
      },
    },
  };
  return {
    electron,
    windows,
    opened,
    calls,
    quitState,
    emit,
    menu: () => menu,
    invoke: (channel: string, senderUrl: string | null, ...args: unknown[]) =>
      Promise.resolve().then(() =>
        ipc.get(channel)!({ senderFrame: senderUrl === null ? null : { url: senderUrl } } satisfies IpcInvokeEvent, ...args),
      ),
    permission: (name: string) => new Promise<boolean>((resolve) => permissionHandler!({}, name, resolve)),
    headers: (details: HeadersReceivedDetails) =>
      new Promise<Record<string, string[]> | undefined>((resolve) =>
        headersListener!(details, (r: { responseHeaders?: Record<string, string[]> }) => resolve(r.responseHeaders)),
      ),
  };
}

const prevent = () => {
  const event: PreventableEvent & { prevented: boolean } = {
    prevented: false,
    preventDefault() {
      event.prevented = true;
    },
  };
  return event;
};

let server: TestServer | undefined;
afterEach(async () => {
  await server?.stop().catch(() => {});
  server = undefined;
});

async function launch(fake = fakeElectron(), argv: string[] = ['electron', 'main.mjs']) {
  server = await startTestServer({
    files: { 'agents/echo.ts': agentSource(`{ run: (input) => ({ response: 'echo: ' + input.query }) }`) },
    start: { subsystems: WITHOUT_PLUGIN_WORKERS },
  });
  let closed = 0;
  const running = server;
  const shell = (await startShell({
    electron: fake.electron,
    preload: '/app/dist/desktop/preload.cjs',
    argv,
    log: () => {},
    platform: async () => ({
      url: running.url,
      runtimeTokens: running.ctx.runtimeTokens,
      codeSession: async () => 'code-session-token',
      close: async () => {
        closed += 1;
        await running.close();
      },
    }),
  })) as Shell;
  return { fake, shell, server: running, closedCount: () => closed };
}

describe('desktop shell', () => {
  it('opens one hardened window on the UI with the preload bridge', async () => {
    const { fake, shell, server } = await launch();
    expect(fake.windows).toHaveLength(1);
    const [window] = fake.windows;
    expect(window!.options.webPreferences).toMatchObject({
      preload: '/app/dist/desktop/preload.cjs',
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
    });
    expect(window!.loaded).toEqual([`${server.url}/ui/#/status`]);
    window!.listeners.get('ready-to-show')!();
    expect(window!.shown).toBe(true);
    expect(fake.calls).toContain('protocol:hangar');
    expect(shell.token).toBeTruthy();
    expect(await fake.permission('media')).toBe(false);
    expect(fake.menu().map((m) => m.label)).toEqual(['Hangar', 'Edit', 'View']);
  });

  it('attached to a running server, opens its first page on the login link the CLI handed over', async () => {
    server = await startTestServer({ start: { subsystems: WITHOUT_PLUGIN_WORKERS } });
    const running = server;
    const fake = fakeElectron();
    await startShell({
      electron: fake.electron,
      preload: '/app/dist/desktop/preload.cjs',
      argv: ['electron', 'main.mjs', 'hangar://studio/echo'],
      log: () => {},
      platform: async () => ({ url: running.url, close: async () => {} }),
      login: 'a1b2c3',
    });
    // The page exchanges the code for the session token the attached shell cannot read itself.
    expect(fake.windows[0]!.loaded).toEqual([`${running.url}/ui/?login=a1b2c3#/studio/echo`]);
  });

  it('mints a per-launch token the API then requires, and hands it only to the app page', async () => {
    const { fake, shell, server } = await launch();
    expect(server.ctx.runtimeTokens.desktop).toBe(shell.token);
    // With a token minted, anonymous local callers are out; the window's token is in.
    expect((await server.request('/api/v1/agents')).status).toBe(401);
    expect((await server.request('/api/v1/agents', { headers: { authorization: `Bearer ${shell.token}` } })).status).toBe(200);

    expect(await fake.invoke(IPC_BOOTSTRAP, `${server.url}/ui/#/status`)).toEqual({
      token: shell.token,
      codeSession: 'code-session-token',
    });
    await expect(fake.invoke(IPC_BOOTSTRAP, 'https://evil.example/')).rejects.toThrow(/not the Hangar UI/);
    await expect(fake.invoke(IPC_BOOTSTRAP, null)).rejects.toThrow(/not the Hangar UI/);
  });

  it('the preload bridge exposes only token(), codeSession() and openExternal() to the page', async () => {
    const { fake, shell, server } = await launch();
    let exposed: { key: string; api: HangarBridge } | undefined;
    exposeBridge({
      contextBridge: { exposeInMainWorld: (key, api) => void (exposed = { key, api: api as HangarBridge }) },
      // The renderer's ipcRenderer, wired to the main-process handlers as if sent from the app page.
      ipcRenderer: { invoke: (channel, ...args) => fake.invoke(channel, `${server.url}/ui/`, ...args) as Promise<unknown> },
    });
    expect(exposed!.key).toBe('hangar');
    expect(Object.keys(exposed!.api).sort()).toEqual(['codeSession', 'openExternal', 'shell', 'token']);
    expect(await exposed!.api.token()).toBe(shell.token);
    expect(await exposed!.api.codeSession()).toBe('code-session-token');
    expect(await exposed!.api.openExternal('https://example.com/')).toBe(true);
    expect(await exposed!.api.openExternal('file:///etc/passwd')).toBe(false);
    expect(fake.opened).toEqual(['https://example.com/']);
  });

  it('keeps navigation on the app origin and sends valid external links to the system browser', async () => {
    const { fake, server } = await launch();
    const window = fake.windows[0]!;
    const navigate = window.listeners.get('wc:will-navigate')!;

    const inside = prevent();
    navigate(inside, `${server.url}/ui/#/studio`);
    expect(inside.prevented).toBe(false);

    const outside = prevent();
    navigate(outside, 'https://example.com/page');
    expect(outside.prevented).toBe(true);

    const dangerous = prevent();
    navigate(dangerous, 'file:///etc/passwd');
    expect(dangerous.prevented).toBe(true);

    const redirect = prevent();
    window.listeners.get('wc:will-redirect')!(redirect, 'http://127.0.0.1:1/elsewhere');
    expect(redirect.prevented).toBe(true);

    const webview = prevent();
    window.listeners.get('wc:will-attach-webview')!(webview);
    expect(webview.prevented).toBe(true);

    // New windows are never created: app links load in the one window, others go out (if valid).
    expect(window.windowOpenHandler!({ url: 'https://example.com/new' })).toEqual({ action: 'deny' });
    expect(window.windowOpenHandler!({ url: 'javascript:alert(1)' })).toEqual({ action: 'deny' });
    expect(window.windowOpenHandler!({ url: `${server.url}/ui/#/studio/echo` })).toEqual({ action: 'deny' });
    await new Promise((r) => setTimeout(r, 10));
    expect(fake.opened).toEqual(['https://example.com/page', 'https://example.com/new']);
    expect(window.loaded.at(-1)).toBe(`${server.url}/ui/#/studio/echo`);
    expect(await fake.invoke(IPC_OPEN_EXTERNAL, 'https://evil.example/', 'https://example.com/').catch((e: Error) => e.message)).toMatch(
      /not the Hangar UI/,
    );
  });

  it('adds the UI content security policy to app responses that lack one', async () => {
    const { fake, server } = await launch();
    const added = await fake.headers({ url: `${server.url}/docs`, responseHeaders: { 'Content-Type': ['text/html'] } });
    expect(added!['Content-Security-Policy']![0]).toContain("script-src 'self'");
    const kept = await fake.headers({ url: `${server.url}/ui/`, responseHeaders: { 'content-security-policy': ["default-src 'none'"] } });
    expect(kept).toEqual({ 'content-security-policy': ["default-src 'none'"] });
    const foreign = await fake.headers({ url: 'https://example.com/', responseHeaders: {} });
    expect(foreign).toEqual({});
  });

  it('opens the view of a deep link given at launch, and of one sent by a second instance', async () => {
    const { fake, server } = await launch(fakeElectron(), ['electron', 'main.mjs', 'hangar://studio/echo']);
    const window = fake.windows[0]!;
    expect(window.loaded).toEqual([`${server.url}/ui/#/studio/echo`]);
    fake.emit('second-instance', {}, ['electron', 'main.mjs', 'hangar://status']);
    expect(window.loaded.at(-1)).toBe(`${server.url}/ui/#/status`);
    const openUrl = prevent();
    fake.emit('open-url', openUrl, 'hangar://studio/other');
    expect(openUrl.prevented).toBe(true);
    expect(window.loaded.at(-1)).toBe(`${server.url}/ui/#/studio/other`);
    fake.emit('open-url', prevent(), 'hangar://nowhere');
    expect(window.loaded.at(-1)).toBe(`${server.url}/ui/#/studio/other`);
  });

  it('a second instance quits at once and starts no server', async () => {
    const fake = fakeElectron({ singleInstance: false });
    let started = false;
    const shell = await startShell({
      electron: fake.electron,
      preload: '/p.cjs',
      argv: [],
      platform: async () => ((started = true), { url: 'http://127.0.0.1:1', close: async () => {} }),
    });
    expect(shell).toBeUndefined();
    expect(started).toBe(false);
    expect(fake.quitState.exited).toBe(true);
  });

  it('quitting closes the server first, once, then exits', async () => {
    const { fake, server, closedCount } = await launch();
    fake.emit('window-all-closed');
    // The first quit is held back while the server closes.
    expect(fake.quitState.exited).toBe(false);
    fake.electron.app.quit();
    await eventually(() => fake.quitState.exited);
    expect(fake.quitState.exited).toBe(true);
    expect(closedCount()).toBe(1);
    expect(server.server.listening).toBe(false);
  });

  it('shows the start-up error and exits with 1 when the platform cannot start', async () => {
    const fake = fakeElectron();
    const shell = await startShell({
      electron: fake.electron,
      preload: '/p.cjs',
      argv: [],
      platform: async () => {
        throw new Error('port 8787 is already in use');
      },
    });
    expect(shell).toBeUndefined();
    expect(fake.calls).toContain('error:Hangar could not start:port 8787 is already in use');
    expect(fake.quitState.exitCode).toBe(1);
    expect(fake.windows).toHaveLength(0);
  });
});
