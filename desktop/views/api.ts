/// <reference lib="dom" />
import { createParser } from 'eventsource-parser';
import type { HangarBridge } from '../bridge.js';

/**
 * How the UI talks to the server: same origin, JSON, with the API token when there is one.
 *
 * The token comes from the desktop bridge (`window.hangar`, see desktop/bridge.ts) or, in a plain
 * browser against a server with tokens configured, from the login link the page was opened with,
 * or else from the person (asked once on the first 401); either way it is kept in sessionStorage,
 * so it dies with the tab and never becomes a cookie.
 */
declare global {
  interface Window {
    hangar?: HangarBridge;
  }
}

const STORAGE_KEY = 'hangar.token';
let tokenPromise: Promise<string | null> | undefined;

export function apiToken(): Promise<string | null> {
  tokenPromise ??= redeemLoginLink().then(
    async () => (window.hangar ? await window.hangar.token() : null) ?? sessionStorage.getItem(STORAGE_KEY),
  );
  return tokenPromise;
}

/** Listeners told when the server refused our token (the app then asks for one). */
const unauthorizedListeners = new Set<() => void>();
export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

/**
 * The coding-run session token (header X-Hangar-Session): a second, per-launch secret that only
 * the coding-run routes take. The desktop bridge reads it from the workspace; a browser gets it from
 * its login link, or asks the person once (it is stored in .hangar/code-session.json).
 */
const CODE_SESSION_KEY = 'hangar.code-session';
let codeSessionPromise: Promise<string | null> | undefined;

export function codeSession(): Promise<string | null> {
  // The bridge knows it when the shell started the server itself; a window attached to a running
  // server gets it from its login link, like a browser tab.
  codeSessionPromise ??= redeemLoginLink().then(
    async () => (await window.hangar?.codeSession?.()) ?? sessionStorage.getItem(CODE_SESSION_KEY),
  );
  return codeSessionPromise;
}

/**
 * One-time login links, `/ui/?login=<code>` (core/coderun/login.ts): what `hangar` prints and
 * opens its window on. The code is exchanged once, before any other call, for the session token
 * (and the API token when the server needs one), both kept in sessionStorage like pasted ones.
 */
const LOGIN_PARAM = 'login';
let loginPromise: Promise<void> | undefined;
let loginRefusal: string | null = null;

export function redeemLoginLink(): Promise<void> {
  loginPromise ??= (async () => {
    const url = new URL(location.href);
    const code = url.searchParams.get(LOGIN_PARAM);
    if (code === null) return;
    // Out of the address bar (so out of history, bookmarks and shared screenshots) whatever the answer.
    url.searchParams.delete(LOGIN_PARAM);
    history.replaceState(history.state, '', url.pathname + url.search + url.hash);
    try {
      const res = await fetch('/api/login', {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify({ code }),
      });
      const body = (await res.json().catch(() => ({}))) as { session?: string; token?: string | null; detail?: unknown };
      if (res.ok && body.session) {
        sessionStorage.setItem(CODE_SESSION_KEY, body.session);
        if (body.token) sessionStorage.setItem(STORAGE_KEY, body.token);
        return;
      }
      // A tab that is signed in already (a reload of the original tab) needs no warning.
      if (sessionStorage.getItem(CODE_SESSION_KEY)) return;
      loginRefusal =
        typeof body.detail === 'string'
          ? body.detail
          : `the login link was refused (HTTP ${res.status}); read the session token in .hangar/code-session.json`;
    } catch (err) {
      loginRefusal = `the login link could not be exchanged (${String(err)}); read the session token in .hangar/code-session.json`;
    }
  })();
  return loginPromise;
}

/** Why the login link of this page was refused (used, expired, another launch's), or null. */
export function loginProblem(): Promise<string | null> {
  return redeemLoginLink().then(() => loginRefusal);
}

export function setCodeSession(token: string): void {
  sessionStorage.setItem(CODE_SESSION_KEY, token);
  codeSessionPromise = Promise.resolve(token);
}

export function setBrowserToken(token: string): void {
  sessionStorage.setItem(STORAGE_KEY, token);
  tokenPromise = Promise.resolve(token);
}

/** An error answer of the API: `{ detail }` with its status (202 HITL detail is an object). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly detail: unknown,
    /** The whole error body (`{detail, code, …}`), for views that branch on `code` or read extra fields. */
    readonly body: Record<string, unknown> = {},
  ) {
    super(typeof detail === 'string' ? detail : `HTTP ${status}`);
    this.name = 'ApiError';
  }
}

/** The coding-run routes (core/coderun/routes.ts CODE_PREFIXES; copied, not imported, to keep server code out of the bundle). */
const CODE_PREFIXES = ['/api/runs', '/api/teams', '/api/composition', '/api/tasks/', '/api/config', '/api/calibration'];

async function headers(json: boolean, path = ''): Promise<Headers> {
  const result = new Headers({ accept: 'application/json' });
  if (json) result.set('content-type', 'application/json');
  const token = await apiToken();
  if (token) result.set('authorization', `Bearer ${token}`);
  if (CODE_PREFIXES.some((prefix) => path.startsWith(prefix))) {
    const session = await codeSession();
    if (session) result.set('x-hangar-session', session);
  }
  return result;
}

async function failure(res: Response, path = ''): Promise<ApiError> {
  // A 401 from a coding-run route is about the session token, which its view asks for itself.
  if (res.status === 401 && !CODE_PREFIXES.some((prefix) => path.startsWith(prefix)))
    for (const listener of unauthorizedListeners) listener();
  const text = await res.text();
  let detail: unknown = text || res.statusText;
  let body: Record<string, unknown> = {};
  try {
    body = JSON.parse(text) as Record<string, unknown>;
    detail = body.detail ?? detail;
  } catch {
    // not JSON: keep the text
  }
  return new ApiError(res.status, detail, body && typeof body === 'object' ? body : {});
}

export async function getText(path: string): Promise<string> {
  const res = await fetch(path, { headers: await headers(false, path) });
  if (!res.ok) throw await failure(res, path);
  return res.text();
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, { headers: await headers(false, path), signal });
  if (!res.ok) throw await failure(res, path);
  return (await res.json()) as T;
}

/** POST a JSON body; a 2xx other than 200 (the HITL 202) is an ApiError the caller inspects. */
export async function postJson<T>(path: string, body: unknown): Promise<T> {
  const res = await fetch(path, { method: 'POST', headers: await headers(true, path), body: JSON.stringify(body) });
  if (res.status !== 200 && res.status !== 201) throw await failure(res, path);
  return (await res.json()) as T;
}

/** Any method with an optional JSON body; answers the decoded JSON (or null for 204). */
export async function request<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(path, {
    method,
    headers: await headers(body !== undefined, path),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw await failure(res, path);
  const text = await res.text();
  return (text ? JSON.parse(text) : null) as T;
}

/**
 * POST and read the answer as server-sent events, calling `onFrame` with each JSON `data:` line
 * until `[DONE]` or the end of the body. `fetch` rather than EventSource, because EventSource can
 * neither POST nor send the Authorization header.
 */
export async function postStream<T>(path: string, body: unknown, onFrame: (frame: T) => void, signal?: AbortSignal): Promise<void> {
  await readStream(
    await fetch(path, { method: 'POST', headers: await headers(true, path), body: JSON.stringify(body), signal }),
    path,
    onFrame,
  );
}

/** GET a server-sent event stream (replay then live), calling `onFrame` per JSON frame. */
export async function getStream<T>(path: string, onFrame: (frame: T) => void, signal?: AbortSignal): Promise<void> {
  await readStream(await fetch(path, { headers: await headers(false, path), signal }), path, onFrame);
}

async function readStream<T>(res: Response, path: string, onFrame: (frame: T) => void): Promise<void> {
  if (!res.ok || !res.body) throw await failure(res, path);
  const parser = createParser({
    onEvent(event) {
      if (event.data === '[DONE]') return;
      onFrame(JSON.parse(event.data) as T);
    },
  });
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    parser.feed(value);
  }
}

/** Opens a link outside the app: through the shell in the desktop window, a new tab otherwise. */
export function openExternal(url: string): void {
  if (window.hangar) void window.hangar.openExternal(url);
  else window.open(url, '_blank', 'noopener,noreferrer');
}
