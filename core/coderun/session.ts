/**
 * The coding-run session token: what every coding-run route, the runs websocket and the minting of
 * login links require, as header `X-Hangar-Session: <token>` (or `?session=<token>` for EventSource
 * and ws, which cannot set headers). A separate header rather than `Authorization`, so it works
 * whether or not the server also has bearer tokens configured.
 *
 * The token is handed over through `.hangar/code-session.json` (mode 0600, next to the workspace's
 * other state), the server's runtime file (core/kernel/server-files.ts) and the log line naming
 * that file; `hangar code` reads it from there. Browsers get it through one-time login links
 * (core/coderun/login.ts) instead of pasting it.
 *
 * Decision: the token belongs to the workspace while any server runs on it, not to each launch. A
 * second server on the same workspace (another `hangar`, a `hangar code` that found none running
 * in its own process) reuses the token of the running one instead of rewriting the file, so no
 * command ever invalidates another server's token, and the token pasted from the file works on
 * every server of the workspace. It is fresh again once no server runs. Both servers proving the
 * same thing — that the caller can read the workspace's 0600 files — makes sharing it safe.
 */
import { randomBytes } from 'node:crypto';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { onRequestHookHandler } from 'fastify';
import type { HangarContext } from '../kernel/context.js';
import { fail } from '../kernel/errors.js';
import { isAlive, listServers } from '../kernel/server-files.js';
import { sameSecret } from '../lib/same-secret.js';

export const SESSION_HEADER = 'x-hangar-session';
export const SESSION_FILE = 'code-session.json';

/**
 * Hex, not base64url: a token that starts with '-' is taken for an option by
 * `hangar code run --session <token>` (1 launch in 64).
 */
export function newSessionToken(): string {
  return randomBytes(24).toString('hex');
}

export function sessionTokenOf(req: { headers: Record<string, string | string[] | undefined>; url?: string }): string | undefined {
  const header = req.headers[SESSION_HEADER];
  if (typeof header === 'string') return header.trim();
  const query = new URL(req.url ?? '/', 'http://local').searchParams.get('session');
  return query ?? undefined;
}

export function sessionMatches(expected: string, presented: string | undefined): boolean {
  return presented !== undefined && presented !== '' && sameSecret(presented, expected);
}

/**
 * The paths the session token guards, known routes or not: every other path under a prefix (and a
 * prefix itself with a method no route takes) answers 401 first, then the server's usual 404, as a
 * prefix guard should (the control plane's way, core/control/routes.ts). For the methods a route can
 * declare (`ROUTED_METHODS`), not all ~35 Fastify knows: the router pays per method, so an OPTIONS
 * or PROPFIND under a prefix answers the 404 without asking for the token (no route takes those).
 */
export const CODE_PREFIXES = ['/api/runs', '/api/teams', '/api/composition', '/api/tasks', '/api/config', '/api/calibration'];

/** The hook of the coding-run routes' scope: 401 unless the request carries the session token. */
export function sessionGuard(token: string): onRequestHookHandler {
  return function requireSession(req, _reply, done) {
    if (!sessionMatches(token, sessionTokenOf(req)))
      return done(fail('HANGAR_CODERUN_SESSION_REQUIRED', {}, { headers: { 'WWW-Authenticate': 'Bearer' } }));
    done();
  };
}

/** Session tokens held by servers of this process, by state folder (tests run several servers in one). */
const heldHere = new Map<string, { token: string; holders: number }>();

/**
 * The workspace's session token, held by this server until `releaseSession`: the one in the
 * session file while a server that uses it still runs (its writer, or any server listing it in
 * its runtime file), else a fresh one (`shared: false`: this server writes the file).
 */
export async function claimSession(ctx: HangarContext): Promise<{ token: string; shared: boolean }> {
  const session = await workspaceSession(ctx);
  const held = heldHere.get(ctx.paths.state);
  if (held) held.holders++;
  else heldHere.set(ctx.paths.state, { token: session.token, holders: 1 });
  return session;
}

export function releaseSession(ctx: HangarContext): void {
  const held = heldHere.get(ctx.paths.state);
  if (held && --held.holders === 0) heldHere.delete(ctx.paths.state);
}

async function workspaceSession(ctx: HangarContext): Promise<{ token: string; shared: boolean }> {
  const here = heldHere.get(ctx.paths.state);
  if (here) return { token: here.token, shared: true };
  let recorded: { token?: unknown; pid?: unknown } = {};
  try {
    recorded = JSON.parse(readFileSync(sessionFile(ctx), 'utf8')) as typeof recorded;
  } catch {
    // no file yet, or unreadable: a fresh token is written at setup
  }
  if (typeof recorded.token === 'string' && recorded.token) {
    const writerRuns = typeof recorded.pid === 'number' && recorded.pid !== process.pid && isAlive(recorded.pid);
    const others = (await listServers(ctx.paths.root)).filter((s) => s.pid !== process.pid);
    if (writerRuns || others.some((s) => s.session === recorded.token)) return { token: recorded.token, shared: true };
  }
  return { token: newSessionToken(), shared: false };
}

export function sessionFile(ctx: HangarContext): string {
  return path.join(ctx.paths.state, SESSION_FILE);
}

/**
 * Writes the session file, owner-only, for the server that claimed a fresh token. The session file
 * is read and written synchronously: a few hundred bytes, where the asynchronous calls were a dozen
 * thread-pool round trips that a start waited for one after another (at set-up, and before the
 * ready line printed the server's URL).
 */
export function writeSessionFile(ctx: HangarContext, token: string): void {
  const file = sessionFile(ctx);
  writeFileSync(file, JSON.stringify({ token, pid: process.pid, started_at: new Date().toISOString() }) + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
}

/**
 * Adds the server's URL to the session file once it listens (setup runs before), for scripts that
 * read it; `hangar login` finds servers through their runtime files. Only the server that wrote
 * the file records its URL: a second server on the workspace leaves the first one's in place.
 */
export function recordServerUrl(ctx: HangarContext, url: string): void {
  const file = sessionFile(ctx);
  const current = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
  if (current.pid !== process.pid || current.token !== ctx.clientTokens.session) return;
  writeFileSync(file, JSON.stringify({ ...current, url }) + '\n', { mode: 0o600 });
}
