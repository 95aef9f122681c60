/**
 * The coding-run subsystem as the server wires it: the `team` drop-in kind (shipped teams in
 * teams/), the service, its routes behind the per-launch session token, and a websocket at
 * /api/runs/ws streaming every run's events to the UI.
 *
 * The session token is handed over through `.hangar/code-session.json` (mode 0600, next to the
 * workspace's other state) and the log line naming that file; `hangar code` reads it from there.
 * Browsers get it through one-time login links (core/coderun/login.ts) instead of pasting it.
 */
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { WebSocketServer } from 'ws';
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { LoginLinks, loginRoutes } from './login.js';
import { codeRoutes, sessionMatches, sessionTokenOf } from './routes.js';
import { CodeRunService } from './service.js';
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
 * Adds the server's URL to the session file once it listens (setup runs before), so `hangar login`
 * finds a server started on another port without being told.
 */
export async function recordServerUrl(ctx: HangarContext, url: string): Promise<void> {
  const file = path.join(ctx.paths.state, SESSION_FILE);
  const current = JSON.parse(await readFile(file, 'utf8')) as Record<string, unknown>;
  await writeFile(file, JSON.stringify({ ...current, url }) + '\n', { mode: 0o600 });
}

export const coderunSubsystem: Subsystem = {
  name: 'coderun',
  kinds: [teamKind],
  async setup(ctx) {
    const service = new CodeRunService({
      store: ctx.store,
      log: ctx.log,
      root: ctx.paths.root,
      state: ctx.paths.state,
      endpoint: ctx.settings.model,
      fileConfig: (ctx.settings as { code?: unknown }).code ?? {},
      shippedTeams: () => ctx.registry.list<Team>('team').map((e) => e.definition),
    });
    services.set(ctx, service);
    logins.set(ctx, new LoginLinks(() => service.sessionToken));
    const interrupted = await service.recover();
    if (interrupted.length) ctx.log.warn(`coding runs interrupted by the last stop marked failed: ${interrupted.join(', ')}`);
    const file = path.join(ctx.paths.state, SESSION_FILE);
    await writeFile(file, JSON.stringify({ token: service.sessionToken, pid: process.pid, started_at: new Date().toISOString() }) + '\n', { mode: 0o600 });
    await chmod(file, 0o600);
    ctx.log.info(`coding-run session token written to ${file}`);

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
    await services.get(ctx)?.close();
  },
};
