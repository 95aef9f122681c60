import type { ElectronPreload } from './electron-api.js';

/**
 * The narrow bridge the preload script exposes as `window.hangar`: three functions, no Electron or
 * Node objects. The page cannot send arbitrary IPC; each function maps to one channel whose handler
 * in the main process checks the sender (see shell.ts).
 */
export interface HangarBridge {
  readonly shell: 'electron';
  /** The per-launch API token (null when the server needs none). */
  token(): Promise<string | null>;
  /** The coding-run session token of the workspace (null when unknown). */
  codeSession(): Promise<string | null>;
  /** Opens an http(s)/mailto link in the system browser; false when it was refused. */
  openExternal(url: string): Promise<boolean>;
}

export function exposeBridge({ contextBridge, ipcRenderer }: ElectronPreload): void {
  const bridge: HangarBridge = {
    shell: 'electron',
    token: async () => {
      const answer = (await ipcRenderer.invoke('hangar:bootstrap')) as { token: string | null };
      return answer.token;
    },
    codeSession: async () => {
      const answer = (await ipcRenderer.invoke('hangar:bootstrap')) as { codeSession?: string | null };
      return answer.codeSession ?? null;
    },
    // Only a string crosses the bridge, never a caller-supplied object.
    openExternal: async (url: string) => Boolean(await ipcRenderer.invoke('hangar:open-external', String(url))),
  };
  contextBridge.exposeInMainWorld('hangar', bridge);
}
