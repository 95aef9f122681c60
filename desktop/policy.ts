import { randomBytes } from 'node:crypto';
import type { BrowserWindowOptions } from './electron-api.js';

/**
 * The shell's security decisions as plain functions, following Electron's security checklist
 * (https://www.electronjs.org/docs/latest/tutorial/security): what a window may run, where it may
 * navigate, which links leave for the system browser, which deep links are understood.
 */

/** The principal the per-launch token maps to; requests from the window are logged under it. */
export const DESKTOP_PRINCIPAL = 'desktop';

/** The custom URL scheme of deep links: `hangar://studio/echo`. */
export const DEEP_LINK_SCHEME = 'hangar';

/** The views the UI routes to (`/ui/#/<view>/<name>`), and so the only deep-link targets. */
export const VIEWS = ['status', 'studio', 'notebook', 'runs'] as const;
export type View = (typeof VIEWS)[number];

export function windowOptions(preload: string): BrowserWindowOptions {
  return {
    width: 1280,
    height: 820,
    minWidth: 720,
    minHeight: 480,
    // Shown on ready-to-show, so the user never sees an unstyled flash.
    show: false,
    title: 'Hangar',
    backgroundColor: '#111318',
    autoHideMenuBar: false,
    webPreferences: {
      preload,
      contextIsolation: true,
      sandbox: true,
      nodeIntegration: false,
      nodeIntegrationInWorker: false,
      nodeIntegrationInSubFrames: false,
      webSecurity: true,
      allowRunningInsecureContent: false,
      webviewTag: false,
      // Dropping a file on the window would otherwise navigate to it.
      navigateOnDragDrop: false,
      spellcheck: false,
    },
  };
}

/**
 * A per-launch API token: 256 random bits, hex so it works as `?token=` on ws and can never be
 * mistaken for a command-line option (base64url can start with '-').
 */
export function mintToken(): string {
  return randomBytes(32).toString('hex');
}

/** True when `url` belongs to the app (same scheme, host and port as the server). */
export function isAppUrl(url: string | undefined | null, appOrigin: string): boolean {
  if (!url) return false;
  try {
    return new URL(url).origin === new URL(appOrigin).origin;
  } catch {
    return false;
  }
}

const EXTERNAL_SCHEMES = new Set(['https:', 'http:', 'mailto:']);

/**
 * The URL to hand to the system browser, or undefined when it must not leave the app: only
 * http(s) and mailto, no embedded credentials (`https://user:pass@…` is a classic phishing shape),
 * nothing absurdly long. `shell.openExternal` with `file:` or a custom scheme can run programs,
 * which is why everything else is refused.
 */
export function validateExternalUrl(raw: unknown): string | undefined {
  if (typeof raw !== 'string' || raw.length > 2048) return undefined;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  if (!EXTERNAL_SCHEMES.has(url.protocol)) return undefined;
  if (url.username || url.password) return undefined;
  if (url.protocol !== 'mailto:' && !url.hostname) return undefined;
  return url.href;
}

/**
 * The UI route of a deep link, or undefined when the link is not one of ours.
 * `hangar://studio/echo` → `#/studio/echo`; `hangar://status` → `#/status`. Names are restricted
 * to the characters drop-in names use, so a link cannot smuggle a path or script into the UI.
 */
export function deepLinkRoute(link: string): string | undefined {
  let url: URL;
  try {
    url = new URL(link);
  } catch {
    return undefined;
  }
  if (url.protocol !== `${DEEP_LINK_SCHEME}:`) return undefined;
  // `hangar://studio/echo` parses with host "studio"; `hangar:studio/echo` with an opaque path.
  const parts = [url.host, ...url.pathname.split('/')].filter(Boolean).map(decodeURIComponent);
  const [view, ...rest] = parts;
  if (!view || !(VIEWS as readonly string[]).includes(view)) return undefined;
  if (rest.length > 2 || rest.some((p) => !/^[A-Za-z0-9._-]{1,100}$/.test(p))) return undefined;
  return `#/${[view, ...rest].join('/')}`;
}

/** The first deep link among command-line arguments (how Windows and Linux deliver them). */
export function deepLinkFromArgv(argv: readonly string[]): string | undefined {
  for (const arg of argv) {
    const route = arg.startsWith(`${DEEP_LINK_SCHEME}:`) ? deepLinkRoute(arg) : undefined;
    if (route) return route;
  }
  return undefined;
}
