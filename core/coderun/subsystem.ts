/**
 * The coding-run subsystem as the server wires it: the `team` drop-in kind (shipped teams in
 * teams/), the `coderun` service, its routes behind the session token (core/coderun/session.ts),
 * one-time login links (`loginLinks`), and a websocket at /api/runs/ws streaming every run's events
 * to the UI.
 *
 * What must happen at start-up does: the workspace's session token is claimed and its file written,
 * and runs a dead process left active are marked failed. The service itself is built on first use
 * (the first coding-run request, or a client of the websocket), so a server that never runs code
 * does not pay for it. Its routes are loaded by the first request under its prefixes too
 * (core/http/on-first-use.ts), behind the session guard of their scope: their modules and 29
 * routes were ~7 ms of every start. In team mode the instance also serves the coding-run queue
 * from start-up (the first run it takes builds the service); see the header of service.ts.
 */
import { WebSocketServer } from 'ws';
import { mountOnFirstUse } from '../http/on-first-use.js';
import { mountRoutes } from '../http/route.js';
import type { HangarContext, Subsystem } from '../kernel/context.js';
import type { TeamCoordinator } from '../storage/team.js';
import { LOGIN_PATH, LoginLinks, loginRoutes } from './login.js';
import { recoverInterruptedRuns, sendLostRuns } from './recovery.js';
import type { CodeRunService } from './service.js';
import {
  CODE_PREFIXES,
  claimSession,
  releaseSession,
  sessionFile,
  sessionGuard,
  sessionMatches,
  sessionTokenOf,
  writeSessionFile,
} from './session.js';
import type { CodeRunTeam } from './team-mode.js';
import type { Team } from './team-schema.js';
import { teamKind } from './teams.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    coderun: CodeRunService;
    loginLinks: LoginLinks;
  }
}

export const CODE_WS_PATH = '/api/runs/ws';

/**
 * The service's module — the harness (runs, planner, gates, git, its schemas) — is imported on first
 * use, not at start: loading the bundle took 10-14 ms less without it (medians and lower quartiles
 * of 20 alternating loads, 288 → 274 ms and 272 → 263 ms). Whatever builds the service
 * (`ctx.services.get('coderun')`) awaits this first; it is the first coding-run request, a client
 * of the websocket, or in team mode a run taken from the queue. Code in the server's process gets
 * it from `codeRunService(ctx)`, never from the registry directly.
 */
let CodeRun: typeof CodeRunService | undefined;
async function loadCodeRun(): Promise<void> {
  CodeRun ??= (await import('./service.js')).CodeRunService;
}

/** The server's coding-run service, its module loaded first: for callers in this process (team mode's queue, benchmarks). */
export async function codeRunService(ctx: HangarContext): Promise<CodeRunService> {
  await loadCodeRun();
  return ctx.services.get('coderun');
}

/** The queue of coding runs (team mode): one job per run, taken by whichever instance has a free slot. */
const CODERUN_QUEUE = 'hangar-coderuns';
/**
 * Runs one instance takes from the queue at once (more wait for this or another instance). A run
 * waiting at the approval gate holds its slot; one run per repository is checked team-wide at start.
 */
const CODERUN_CONCURRENCY = 4;

/** Team mode: a run's queue job, its liveness lock, and its announcements (ids only), on the team's database. */
function codeRunTeam(team: TeamCoordinator): CodeRunTeam & {
  serve(take: (run: string) => Promise<void>, dead: (run: string) => Promise<void>): Promise<void>;
} {
  let queue: Promise<void> | undefined;
  // A run is watched by its job's heartbeat (a dead instance); a day bounds a job nobody watches.
  const ready = () => (queue ??= team.queue(CODERUN_QUEUE, { expireSeconds: 86_400 }));
  const key = (run: string) => `coderun:${run}`;
  return {
    hold: (run) => team.tryLock(`coderun-run:${run}`),
    announce: (topic, id) => void team.announce(topic, id).catch(() => {}),
    on: (topic, handler) => team.on(topic, (announcement) => handler(announcement.id)),
    dispatch: async (run) => {
      await ready();
      await team.sendOnce(CODERUN_QUEUE, { id: run }, key(run));
    },
    queued: async (run) => {
      await ready();
      const state = await team.jobState(CODERUN_QUEUE, key(run));
      return state === 'created' || state === 'retry' || state === 'active';
    },
    serve: async (take, dead) => {
      await ready();
      await team.work(CODERUN_QUEUE, { concurrency: CODERUN_CONCURRENCY }, (job) => take(job.data.id));
      await team.work(`${CODERUN_QUEUE}-dead`, { concurrency: 1 }, (job) => dead(job.data.id));
    },
  };
}

export const coderunSubsystem: Subsystem = {
  name: 'coderun',
  provides: ['coderun', 'loginLinks'],
  kinds: [teamKind],
  async setup(ctx) {
    const session = await claimSession(ctx);
    const token = session.token;
    ctx.clientTokens.session = token;
    const file = sessionFile(ctx);
    const team = ctx.services.has('team') ? codeRunTeam(ctx.services.get('team')) : undefined;
    if (session.shared) {
      // Runs stored as active belong to the server already running here: they are not interrupted.
      ctx.log.info(`coding-run session token shared with the Hangar already running on this workspace (${file})`);
    } else {
      // In team mode only the runs no live instance holds: the others are running elsewhere.
      const interrupted = await recoverInterruptedRuns(ctx.store, ctx.paths.state, team?.hold, team?.queued);
      if (interrupted.length) ctx.log.warn(`coding runs interrupted by the last stop marked failed: ${interrupted.join(', ')}`);
      writeSessionFile(ctx, token);
      ctx.log.info(`coding-run session token written to ${file}`);
    }
    ctx.services.provideLazy('coderun', () => {
      if (!CodeRun) throw new Error('the coding-run service was asked for before its module loaded (await loadCodeRun() first)');
      return new CodeRun({
        store: ctx.store,
        log: ctx.log,
        root: ctx.paths.root,
        state: ctx.paths.state,
        endpoint: ctx.settings.model,
        fileConfig: (ctx.settings as { code?: unknown }).code ?? {},
        shippedTeams: () => ctx.registry.list<Team>('team').map((e) => e.definition),
        ...(team ? { team } : {}),
      });
    });
    // Team mode: this instance takes runs from the queue (the service is built by the first job).
    await team?.serve(
      async (run) => (await codeRunService(ctx)).take(run),
      async (run) => (await codeRunService(ctx)).abandon(run),
    );
    if (team) {
      // Runs whose instance died between storing them and sending their job, sent again by one
      // instance at a time every heartbeat (as the task board's lost submissions are).
      const coordinator = ctx.services.get('team');
      const sweep = setInterval(async () => {
        if (ctx.lifecycle.stopping) return clearInterval(sweep);
        const lock = await coordinator.tryLock('coderun-sweep').catch(() => undefined);
        if (!lock) return;
        try {
          const sent = await sendLostRuns(ctx.store, team.dispatch);
          if (sent.length) ctx.log.warn(`coding runs stored but never sent to the queue, sent again: ${sent.join(', ')}`);
        } catch (err) {
          ctx.log.warn('sending lost coding runs failed', { error: String(err) });
        } finally {
          await lock.release().catch(() => undefined);
        }
      }, coordinator.heartbeatSeconds * 1000);
      sweep.unref();
    }
    ctx.services.provide('loginLinks', new LoginLinks(() => token));
    ctx.publicPaths.add(LOGIN_PATH);

    const wss = new WebSocketServer({ noServer: true });
    ctx.upgrades.set(CODE_WS_PATH, (req, socket, head) => {
      if (!sessionMatches(token, sessionTokenOf(req as never))) {
        socket.end('HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      // The handshake is answered only once the service's module has loaded, and the subscription
      // is made as it is answered: a client that sees the socket open gets every event from then on.
      codeRunService(ctx).then(
        (coderun) =>
          wss.handleUpgrade(req, socket, head, (ws) => {
            const off = coderun.onEvent((event) => {
              if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(event));
            });
            ws.on('close', off);
          }),
        (err: unknown) => {
          ctx.log.error('the coding-run service could not load', { error: String(err) });
          socket.end('HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        },
      );
    });
  },
  routes: (app, ctx) => {
    const token = ctx.clientTokens.session!;
    // A scope of their own, so the guard covers exactly the coding-run prefixes and nothing else.
    app.register(async (scope) => {
      scope.addHook('onRequest', sessionGuard(token));
      mountOnFirstUse(scope, ctx.services.get('openapi'), {
        prefixes: CODE_PREFIXES,
        load: async () => {
          const [{ codeRoutes }, { modelRoutes }] = await Promise.all([import('./routes.js'), import('./model-routes.js'), loadCodeRun()]);
          return { routes: [...codeRoutes(() => ctx.services.get('coderun')), ...modelRoutes(() => ctx.settings.model)] };
        },
      });
    });
    mountRoutes(
      app,
      loginRoutes(ctx, ctx.services.get('loginLinks'), () => token),
    );
  },
  async close(ctx) {
    releaseSession(ctx);
    if (ctx.services.isBuilt('coderun')) await ctx.services.get('coderun').close();
  },
};
