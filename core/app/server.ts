import { channel } from 'node:diagnostics_channel';
import { mkdirSync } from 'node:fs';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import * as zod from 'zod';
import { expressForDropIns } from '../endpoints/router.js';
import { createApp } from '../http/app.js';
import { normalizeUrl } from '../http/normalize.js';
import { OpenApiRegistry } from '../http/openapi.js';
import { DEFAULT_PUBLIC_PATHS, effectiveRateLimit, ReconfigurableRateLimiter, resolvePrincipal, upgradeChecker } from '../http/security.js';
import { type HangarContext, Lifecycle, type Subsystem } from '../kernel/context.js';
import { Discovery } from '../kernel/discovery.js';
import { Logger } from '../kernel/log.js';
import { Metrics } from '../kernel/metrics.js';
import { Registry } from '../kernel/registry.js';
import { listServers, removeServerFile, type ServerInfo, writeServerFile } from '../kernel/server-files.js';
import { Services } from '../kernel/services.js';
import { isLoopbackHost, resolveSecret, type Settings, type SettingsInput, SettingsSchema } from '../kernel/settings.js';
import { TypeChecker } from '../kernel/typecheck.js';
import { PLATFORM_NAME, VERSION } from '../kernel/version.js';
import { PARSE_ONCE } from '../lib/parse-once.js';
import * as sdk from '../sdk.js';
import { openStore } from '../storage/open.js';
import { checkProvided, planSubsystems } from './plan.js';
import { SUBSYSTEMS } from './subsystems.js';

/** Told when a server is ready: bin/load-cli.mjs makes the CLI's code cache then, with what a start compiled. */
const readyChannel = channel('hangar:ready');

/**
 * Lifecycle of one server: settings → workspace state folder → shared services → subsystems →
 * listen → discovery (readiness flips to 200 when it finishes) → watch. `close()` stops accepting,
 * lets in-flight requests finish, closes streams after a grace period, stops watching and flushes
 * the store.
 */

export interface RunningServer {
  url: string;
  port: number;
  ctx: HangarContext;
  server: http.Server;
  /** Resolves when discovery has finished (readiness is 200 from then on). */
  discovered: Promise<void>;
  close(): Promise<void>;
}

export class StartupError extends Error {
  /** `how` says how to fix it, printed in parentheses by the CLI (core/app/cli/convention.ts). */
  constructor(
    message: string,
    readonly how?: string,
  ) {
    super(message);
    this.name = 'StartupError';
  }
}

export interface StartOptions {
  /** Subsystems to run instead of the full list (benchmarks use a subset). */
  subsystems?: Subsystem[];
  logger?: Logger;
  /** How long open streams get to finish on shutdown. */
  graceMs?: number;
  /** Discovery starts once this settles (lets a caller observe the not-ready window). */
  discoveryGate?: Promise<unknown>;
}

/** How often a stopping server closes the keep-alive connections that have become idle. */
const IDLE_SWEEP_MS = 10;

export async function startServer(input: Settings | SettingsInput, options: StartOptions = {}): Promise<RunningServer> {
  const startup = new StartupClock();
  // Without zod's JIT, as loadSettings parses them: compiling the settings' fast path was ~6 ms of a
  // start for its one parse (core/lib/parse-once.ts).
  const settings = Object.freeze(SettingsSchema.parse(input, PARSE_ONCE)) as Settings;
  if (!isLoopbackHost(settings.host) && Object.keys(settings.auth.tokens).length === 0) {
    throw new StartupError(
      `binding to ${settings.host} exposes Hangar beyond this machine without a token`,
      'configure one: auth.tokens in hangar.config.json or HANGAR_AUTH__TOKENS',
    );
  }
  const log = options.logger ?? new Logger(settings.logLevel);
  const root = path.resolve(settings.root);
  const paths = {
    root,
    state: path.join(root, '.hangar'),
    data: path.join(root, '.hangar', 'data'),
    logs: path.join(root, '.hangar', 'logs'),
  };
  for (const dir of [paths.state, paths.logs]) mkdirSync(dir, { recursive: true });

  startup.mark('settings');
  const metrics = new Metrics();
  const registry = new Registry();
  const typeCheck = new TypeChecker({ root, log });
  const discovery = new Discovery({
    root,
    registry,
    log,
    provided: dropInModules(),
    loadTimeoutMs: settings.dropins.loadTimeoutMs,
    onReload: (kind, outcome) => {
      if (discovery.ready) typeCheck.schedule();
      metrics.dropinReloads.inc({ kind, outcome });
      metrics.dropinErrors.set({ kind }, registry.problemsOf(kind).length);
    },
  });
  const openapi = new OpenApiRegistry({
    title: `${PLATFORM_NAME} API`,
    version: VERSION,
    description: 'Local-first agent platform. Routes of discovered drop-ins appear here as soon as they load.',
  });
  registry.on('change', () => openapi.invalidate());

  startup.mark('registry and discovery');
  const publicPaths = new Set(DEFAULT_PUBLIC_PATHS);
  // Opened once here, before any subsystem: the workspace's SQLite file, or PostgreSQL in team mode.
  const opened = await openStore(
    { durability: settings.storage.durability, url: resolveSecret(settings.storage.url) },
    paths,
    (level, line) => log[level](line),
  );
  const ctx: HangarContext = {
    settings,
    paths,
    store: opened.store,
    registry,
    discovery,
    log,
    metrics,
    version: VERSION,
    startedAt: new Date(),
    lifecycle: new Lifecycle(),
    runtimeTokens: {},
    clientTokens: {},
    typeCheck,
    publicPaths,
    upgrades: new Map(),
    agentSurface: { endpoints: {}, capabilities: {} },
    services: new Services(),
  };
  // What the composition root itself provides, before any subsystem is set up.
  ctx.services.provide('openapi', openapi);
  // Team mode: the job queue and announcements shared with the other instances on the database.
  // Imported only in team mode: pg and pg-boss are most of a start's imports otherwise.
  const team = opened.url
    ? await (await import('../storage/team.js')).TeamCoordinator.open({
        url: opened.url,
        version: VERSION,
        log: (level, line) => log[level](line),
        heartbeatSeconds: settings.team.heartbeatSeconds,
        monitorIntervalSeconds: settings.team.monitorIntervalSeconds,
      })
    : undefined;
  if (team) {
    await team.start();
    ctx.services.provide('team', team);
    // Invoke streams stored for every instance to replay and follow, with the retention of one.
    const streams = new (await import('../storage/team-streams.js')).TeamStreams(
      opened.pg!,
      team,
      { retain: settings.streams.retain, ttlMs: settings.streams.ttlSeconds * 1000 },
      (level, line) => log[level](line),
    );
    await streams.start();
    ctx.services.provide('teamStreams', streams);
  }
  // In team mode a principal's requests are counted across every instance.
  const rateLimiter = new ReconfigurableRateLimiter(
    effectiveRateLimit(settings),
    publicPaths,
    team ? (limits) => team.rateCounters(limits) : undefined,
  );
  ctx.services.provide('rateLimiter', rateLimiter);

  startup.mark('store');
  const subsystems = planSubsystems(options.subsystems ?? SUBSYSTEMS, ['openapi', 'rateLimiter']);
  const { app, server } = createApp({
    settings,
    log,
    metrics,
    extraTokens: () => ctx.runtimeTokens,
    publicPaths: ctx.publicPaths,
    rateLimiter,
  });
  startup.mark('app');
  // /openapi.json lists every route the app has, from its declaration (core/http/route.ts).
  app.addHook('onRoute', (route) => openapi.addRoute(route));
  for (const subsystem of subsystems) {
    for (const kind of subsystem.kinds ?? []) discovery.register(kind);
    await subsystem.setup?.(ctx);
    startup.mark(`setup ${subsystem.name}`);
    checkProvided(subsystem, (name) => ctx.services.has(name));
  }
  for (const subsystem of subsystems) subsystem.routes?.(app, ctx);
  await app.ready();
  startup.mark('routes');

  server.keepAliveTimeout = 5_000;
  // Websocket upgrades go to the handler a subsystem registered for the path (normalised as HTTP
  // paths are), after the Host, Origin and token checks; anything else is refused.
  const checkUpgrade = upgradeChecker(settings);
  server.on('upgrade', (req, socket, head) => {
    const reject = (status: number, text: string) =>
      socket.end(`HTTP/1.1 ${status} ${text}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    if (checkUpgrade(req)) return reject(403, 'Forbidden');
    const pathname = new URL(normalizeUrl(req.url ?? '/'), 'http://local').pathname;
    const handler = ctx.upgrades.get(pathname);
    if (!handler) return reject(404, 'Not Found');
    let principal: string;
    try {
      principal = resolvePrincipal(req, settings, ctx.runtimeTokens, new URL(req.url ?? '/', 'http://local').searchParams.get('token'));
    } catch {
      return reject(401, 'Unauthorized');
    }
    handler(req, socket, head, principal);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') {
        reject(
          new StartupError(
            `port ${settings.port} is already in use on ${settings.host}`,
            'choose another with --port or HANGAR_PORT, or `hangar list` to find a Hangar already running',
          ),
        );
      } else if (err.code === 'EACCES') {
        reject(new StartupError(`no permission to listen on ${settings.host}:${settings.port}`, 'use a port above 1023 with --port'));
      } else reject(err);
    });
    server.listen(settings.port, settings.host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const shownHost = settings.host.includes(':') ? `[${settings.host}]` : settings.host;
  const url = `http://${shownHost}:${port}`;
  // Loopback clients (hangar code, notebook, login, list) reach a server bound to every interface
  // through 127.0.0.1; the recorded URL is the one they can always connect to.
  const localUrl = settings.host === '0.0.0.0' || settings.host === '::' ? `http://127.0.0.1:${port}` : url;
  await team?.setUrl(url);
  const serverInfo: ServerInfo = {
    pid: process.pid,
    url: localUrl,
    port,
    host: settings.host,
    workspace: root,
    started: new Date().toISOString(),
    version: VERSION,
    ...(ctx.clientTokens.session ? { session: ctx.clientTokens.session } : {}),
  };
  // The server files are read and written while discovery scans (their disk I/O took 10-60 ms of
  // a start on a loaded machine); readiness and startServer both wait for them, so a server that
  // answers /readiness can be found by `hangar list` and the other commands.
  const listed = (async () => {
    // Allowed, as Jupyter allows two servers on one folder. The SQLite store is shared safely, but
    // live work and the invocation log's index are per process: said plainly, so it is no mystery.
    for (const other of (await listServers(root)).filter((s) => s.pid !== process.pid)) {
      log.warn(
        `another Hangar (pid ${other.pid}, ${other.url}/ui/) already serves this workspace; the store is shared, but each runs its own task queue, streams and notebook sessions and neither sees the other's live work`,
      );
    }
    try {
      await writeServerFile(serverInfo);
    } catch (err) {
      // A read-only workspace still serves; only finding the server from other commands is lost.
      log.warn(`could not write the server file in ${path.join(paths.state, 'servers')}: ${String(err)}`);
    }
  })();
  const discovered = (async () => {
    await options.discoveryGate;
    startup.mark('listen');
    await discovery.scan();
    startup.mark('discovery');
    for (const kind of new Set([...registry.problemsOf().map((p) => p.kind)])) {
      metrics.dropinErrors.set({ kind }, registry.problemsOf(kind).length);
    }
    if (settings.watch) await discovery.watch();
    await listed;
    ctx.lifecycle.ready = true;
    opened.serving();
    // CPU beside wall-clock time: on a loaded machine the wall clock says little about a change.
    const cpu = process.cpuUsage();
    log.info(`ready in ${startup.total()} ms`, { cpu_ms: Math.round((cpu.user + cpu.system) / 1000), phases: startup.phases() });
    if (readyChannel.hasSubscribers) readyChannel.publish({ url });
    // A one-shot server (`hangar code` with none running) has no one to warn while it runs.
    if (settings.watch) typeCheck.schedule();
  })();
  discovered.catch((err: unknown) => log.error('discovery failed', { error: String(err) }));

  await listed;

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      ctx.lifecycle.stop();
      // Unlisted first, so no command attaches to a server that is going away.
      const unlisted = removeServerFile(serverInfo);
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // A keep-alive connection still answering is closed once its last response is sent. Swept
      // while stopping rather than watched on every response: a listener per response was paid
      // by every request for the few that meet a stop.
      const sweep = setInterval(() => server.closeIdleConnections(), IDLE_SWEEP_MS);
      const grace = setTimeout(() => server.closeAllConnections(), options.graceMs ?? 3_000);
      await closed;
      clearInterval(sweep);
      clearTimeout(grace);
      await unlisted;
      await discovered.catch(() => {});
      await discovery.close();
      typeCheck.close();
      for (const subsystem of [...subsystems].reverse()) {
        try {
          await subsystem.close?.(ctx);
        } catch (err) {
          log.error(`closing ${subsystem.name} failed`, { error: String(err) });
        }
      }
      await ctx.store.flush();
      ctx.services.find('teamStreams')?.close();
      await team?.close();
      await opened.close();
    })());

  return { url, port, ctx, server, discovered, close };
}

/**
 * Modules drop-ins get from Hangar instead of bundling their own copy: the SDK, zod, and express
 * for router endpoints (core/endpoints/router.ts). express is shared rather than bundled so each
 * reload costs no express build, and its instance is the one Hangar mounts routers in; what
 * drop-ins get (`expressForDropIns`) evaluates express on first use, not when a router drop-in loads.
 */
function dropInModules(): Record<string, unknown> {
  const modules: Record<string, unknown> = { hangar: sdk, zod, 'zod/v4': zod };
  Object.defineProperty(modules, 'express', { enumerable: true, get: expressForDropIns });
  return modules;
}

/**
 * Where start-up time goes, as Vite prints "ready in N ms": each phase's milliseconds since the
 * previous mark, logged with the ready line and read by the cold-start benchmark.
 */
class StartupClock {
  readonly #started = performance.now();
  #last = this.#started;
  readonly #phases: Record<string, number> = {};

  mark(phase: string): void {
    const now = performance.now();
    this.#phases[phase] = Math.round((now - this.#last) * 10) / 10;
    this.#last = now;
  }

  phases(): Record<string, number> {
    return { ...this.#phases };
  }

  total(): number {
    return Math.round(performance.now() - this.#started);
  }
}
