/**
 * The coding-run subsystem as the server wires it: the `team` drop-in kind (shipped teams in
 * teams/), the service, its routes behind the per-launch session token, and a websocket at
 * /api/runs/ws streaming every run's events to the UI.
 *
 * The session token is handed over through `.hangar/code-session.json` (mode 0600, next to the
 * workspace's other state), the server's runtime file (core/kernel/server-files.ts) and the log
 * line naming that file; `hangar code` reads it from there. Browsers get it through one-time login
 * links (core/coderun/login.ts) instead of pasting it.
 *
 * Decision: the token belongs to the workspace while any server runs on it, not to each launch. A
 * second server on the same workspace (another `hangar`, a `hangar code` that found none running
 * in its own process) reuses the token of the running one instead of rewriting the file, so no
 * command ever invalidates another server's token, and the token pasted from the file works on
 * every server of the workspace. It is fresh again once no server runs. Both servers proving the
 * same thing — that the caller can read the workspace's 0600 files — makes sharing it safe.
 */
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { WebSocketServer } from 'ws';
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { isAlive, listServers } from '../kernel/server-files.js';
import { LoginLinks, loginRoutes } from './login.js';
import { codeRoutes, sessionMatches, sessionTokenOf } from './routes.js';
import { CodeRunService, newSessionToken } from './service.js';
import type { Team } from './schemas.js';
import { teamKind } from './teams.js';

export const CODE_WS_PATH = '/api/runs/ws';
export const SESSION_FILE = 'code-session.json';

const services = new WeakMap<HangarContext, CodeRunService>();
const logins = new WeakMap<HangarContext, LoginLinks>();

/** The service of a running server (tests and the CLI reach it through the context). */
export function codeService(ctx: HangarContext): CodeRunService {
  const service = services.get(ctx);
  if (!service) throw new Error('the coderun subsystem is not set up on this server');
  return service;
}

/** The one-time login links of a running server (core/coderun/login.ts); the CLI mints from it. */
export function loginLinks(ctx: HangarContext): LoginLinks {
  const links = logins.get(ctx);
  if (!links) throw new Error('the coderun subsystem is not set up on this server');
  return links;
}

/**
 * Adds the server's URL to the session file once it listens (setup runs before), for scripts that
 * read it; `hangar login` finds servers through their runtime files. Only the server that wrote
 * the file records its URL: a second server on the workspace leaves the first one's in place.
 */
export async function recordServerUrl(ctx: HangarContext, url: string): Promise<void> {
  const file = path.join(ctx.paths.state, SESSION_FILE);
  const current = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  if (current.pid !== process.pid || current.token !== ctx.clientTokens.session) return;
  await writeFile(file, JSON.stringify({ ...current, url }) + '\n', { mode: 0o600 });
}

/** Session tokens held by servers of this process, by state folder (tests run several servers in one). */
const heldHere = new Map<string, { token: string; holders: number }>();

/**
 * The workspace's session token: the one in the session file while a server that uses it still
 * runs (its writer, or any server listing it in its runtime file), else a fresh one.
 */
async function workspaceSession(ctx: HangarContext): Promise<{ token: string; shared: boolean }> {
  const here = heldHere.get(ctx.paths.state);
  if (here) return { token: here.token, shared: true };
  let recorded: { token?: unknown; pid?: unknown } = {};
  try {
    recorded = JSON.parse(await readFile(path.join(ctx.paths.state, SESSION_FILE), 'utf8')) as typeof recorded;
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

export const coderunSubsystem: Subsystem = {
  name: 'coderun',
  kinds: [teamKind],
  async setup(ctx) {
    const session = await workspaceSession(ctx);
    const service = new CodeRunService({
      store: ctx.store,
      log: ctx.log,
      root: ctx.paths.root,
      state: ctx.paths.state,
      endpoint: ctx.settings.model,
      fileConfig: (ctx.settings as { code?: unknown }).code ?? {},
      shippedTeams: () => ctx.registry.list<Team>('team').map((e) => e.definition),
      sessionToken: session.token,
    });
    services.set(ctx, service);
    ctx.clientTokens.session = service.sessionToken;
    const held = heldHere.get(ctx.paths.state);
    if (held) held.holders++;
    else heldHere.set(ctx.paths.state, { token: service.sessionToken, holders: 1 });
    logins.set(ctx, new LoginLinks(() => service.sessionToken));
    const file = path.join(ctx.paths.state, SESSION_FILE);
    if (session.shared) {
      // Runs stored as active belong to the server already running here: they are not interrupted.
      ctx.log.info(`coding-run session token shared with the Hangar already running on this workspace (${file})`);
    } else {
      const interrupted = await service.recover();
      if (interrupted.length) ctx.log.warn(`coding runs interrupted by the last stop marked failed: ${interrupted.join(', ')}`);
      await writeFile(file, JSON.stringify({ token: service.sessionToken, pid: process.pid, started_at: new Date().toISOString() }) + '\n', { mode: 0o600 });
      await chmod(file, 0o600);
      ctx.log.info(`coding-run session token written to ${file}`);
    }

    const wss = new WebSocketServer({ noServer: true });
    ctx.upgrades.set(CODE_WS_PATH, (req, socket, head) => {
      if (!sessionMatches(service.sessionToken, sessionTokenOf(req as never))) {
        socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      wss.handleUpgrade(req, socket, head, (ws) => {
        const off = service.onEvent((event) => {
          if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(event));
        });
        ws.on('close', off);
      });
    });
  },
  routes: (app, ctx) => {
    codeRoutes(app, ctx, codeService(ctx));
    loginRoutes(app, ctx, loginLinks(ctx), () => codeService(ctx).sessionToken);
  },
  async close(ctx) {
    const held = heldHere.get(ctx.paths.state);
    if (held && --held.holders === 0) heldHere.delete(ctx.paths.state);
    await services.get(ctx)?.close();
  },
};
