/**
 * The slice of Electron's main-process API the shell uses. The shell is written against this
 * interface instead of `import 'electron'` so its logic runs and is tested under plain Node: Electron
 * is an optional dependency whose binary may be missing, and tests inject a small stand-in.
 * Names and signatures follow Electron's own (https://www.electronjs.org/docs/latest/api/app).
 */

export interface WebPreferences {
  preload: string;
  contextIsolation: boolean;
  sandbox: boolean;
  nodeIntegration: boolean;
  nodeIntegrationInWorker: boolean;
  nodeIntegrationInSubFrames: boolean;
  webSecurity: boolean;
  allowRunningInsecureContent: boolean;
  webviewTag: boolean;
  navigateOnDragDrop: boolean;
  spellcheck: boolean;
}

export interface BrowserWindowOptions {
  width: number;
  height: number;
  minWidth: number;
  minHeight: number;
  show: boolean;
  title: string;
  backgroundColor: string;
  autoHideMenuBar: boolean;
  webPreferences: WebPreferences;
}

/** What Electron passes to `will-navigate` and friends: only `preventDefault` matters here. */
export interface PreventableEvent {
  preventDefault(): void;
}

export interface WebContentsLike {
  on(event: 'will-navigate' | 'will-redirect', listener: (event: PreventableEvent, url: string) => void): void;
  on(event: 'will-attach-webview', listener: (event: PreventableEvent) => void): void;
  setWindowOpenHandler(handler: (details: { url: string }) => { action: 'deny' } | { action: 'allow' }): void;
  getURL(): string;
}

export interface BrowserWindowLike {
  readonly webContents: WebContentsLike;
  loadURL(url: string): Promise<void>;
  once(event: 'ready-to-show', listener: () => void): void;
  on(event: 'closed', listener: () => void): void;
  show(): void;
  focus(): void;
  isMinimized(): boolean;
  restore(): void;
  isDestroyed(): boolean;
}

export interface IpcInvokeEvent {
  /** The frame that sent the message; null once it navigated away or was destroyed. */
  senderFrame: { url: string } | null;
}

export interface MenuItemOptions {
  label?: string;
  role?: string;
  type?: 'separator';
  accelerator?: string;
  click?: () => void;
  submenu?: MenuItemOptions[];
}

export interface HeadersReceivedDetails {
  url: string;
  responseHeaders?: Record<string, string[]>;
}

export interface ElectronMain {
  app: {
    whenReady(): Promise<unknown>;
    on(event: 'window-all-closed', listener: () => void): void;
    on(event: 'before-quit', listener: (event: PreventableEvent) => void): void;
    on(event: 'second-instance', listener: (event: unknown, argv: string[]) => void): void;
    on(event: 'open-url', listener: (event: PreventableEvent, url: string) => void): void;
    requestSingleInstanceLock(): boolean;
    setAsDefaultProtocolClient(protocol: string): boolean;
    quit(): void;
    exit(code?: number): void;
  };
  BrowserWindow: new (options: BrowserWindowOptions) => BrowserWindowLike;
  shell: { openExternal(url: string): Promise<void> };
  ipcMain: { handle(channel: string, listener: (event: IpcInvokeEvent, ...args: unknown[]) => unknown): void };
  Menu: { buildFromTemplate(template: MenuItemOptions[]): unknown; setApplicationMenu(menu: unknown): void };
  dialog: { showErrorBox(title: string, content: string): void };
  session: {
    defaultSession: {
      setPermissionRequestHandler(handler: (webContents: unknown, permission: string, callback: (granted: boolean) => void) => void): void;
      webRequest: {
        onHeadersReceived(
          listener: (details: HeadersReceivedDetails, callback: (response: { responseHeaders?: Record<string, string[]> }) => void) => void,
        ): void;
      };
    };
  };
}

/** The renderer-side slice the preload script uses. */
export interface ElectronPreload {
  contextBridge: { exposeInMainWorld(key: string, api: unknown): void };
  ipcRenderer: { invoke(channel: string, ...args: unknown[]): Promise<unknown> };
}
