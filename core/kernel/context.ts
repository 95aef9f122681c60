import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Discovery } from './discovery.js';
import type { Logger } from './log.js';
import type { Metrics } from './metrics.js';
import type { DropInKind, Registry } from './registry.js';
import type { ServiceName, Services } from './services.js';
import type { Settings } from './settings.js';
import type { Store } from './store.js';
import type { TypeChecker } from './typecheck.js';

export interface WorkspacePaths {
  root: string;
  /** `root/.hangar`: everything Hangar writes about the workspace. */
  state: string;
  data: string;
  logs: string;
}

/**
 * What every subsystem receives: the frozen settings and the shared services of one running server.
 * Services one subsystem provides to others are in `services` (core/kernel/services.ts).
 */
export interface HangarContext {
  readonly settings: Settings;
  readonly paths: WorkspacePaths;
  readonly store: Store;
  readonly registry: Registry;
  readonly discovery: Discovery;
  readonly log: Logger;
  readonly metrics: Metrics;
  readonly version: string;
  readonly startedAt: Date;
  readonly lifecycle: Lifecycle;
  /** principal → token minted at run time (the desktop shell's per-launch token). */
  readonly runtimeTokens: Record<string, string>;
  /**
   * Tokens a client on this machine needs to drive this server, recorded in its runtime file
   * (core/kernel/server-files.ts); the coderun subsystem sets `session` at setup.
   */
  readonly clientTokens: { session?: string };
  /** Background type check of the workspace's drop-ins (core/kernel/typecheck.ts): warnings only. */
  readonly typeCheck: TypeChecker;
  /** Paths reachable without a token: the probes, plus what subsystems add at setup (UI files). */
  readonly publicPaths: Set<string>;
  /**
   * Websocket endpoints by exact path. The server checks Host, Origin and the token (header, or
   * `?token=` since browsers cannot set headers on ws) before calling the handler.
   */
  readonly upgrades: Map<string, UpgradeHandler>;
  /**
   * What every agent serves, filled in by the subsystems that serve it: endpoint key → path
   * template (`{agent}` is replaced by the agent's name) and card capability flags. Agent cards
   * are built from this, so a card never lists a route this deployment does not serve.
   */
  readonly agentSurface: { endpoints: Record<string, string>; capabilities: Record<string, boolean> };
  /** Other subsystems' services, typed (core/kernel/services.ts). */
  readonly services: Services;
}

export type UpgradeHandler = (req: IncomingMessage, socket: Duplex, head: Buffer, principal: string) => void;

/**
 * A subsystem plugs into the server the way a Fastify plugin does: it may register drop-in kinds,
 * set up its services, contribute routes (with their OpenAPI docs) and clean up on shutdown.
 * The list in `core/app/subsystems.ts` is the whole of the wiring.
 */
export interface Subsystem {
  name: string;
  /** Services this subsystem puts in `ctx.services` at setup (core/kernel/services.ts). */
  provides?: readonly ServiceName[];
  /** Services it needs: start-up refuses to run without their providers, and sets it up after them. */
  depends?: readonly ServiceName[];
  /** Services it uses when present (set up after them if they are); it works without them. */
  uses?: readonly ServiceName[];
  // biome-ignore lint/suspicious/noExplicitAny: one list holds kinds of different definitions
  kinds?: DropInKind<any>[];
  setup?(ctx: HangarContext): void | Promise<void>;
  /** Adds its routes (and any hooks) to the one app; called once, after every subsystem's setup. */
  routes?(app: FastifyInstance, ctx: HangarContext): void;
  close?(ctx: HangarContext): void | Promise<void>;
}

/**
 * Where the server is in its life. What must happen as a stop begins registers with `onStopping`
 * rather than polling `stopping`: a timer checking a flag woke an idle server's thread ten times a
 * second for a stop that comes once.
 */
export class Lifecycle {
  /** Readiness: discovery finished, and not stopping. */
  ready = false;
  #stopping = false;
  readonly #onStopping: Array<() => void> = [];

  get stopping(): boolean {
    return this.#stopping;
  }

  /** Called once, as a stop begins, before the HTTP server waits for its connections to end. */
  onStopping(listener: () => void): void {
    this.#onStopping.push(listener);
  }

  /** Begin stopping: no longer ready, and every `onStopping` listener runs, once. */
  stop(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    this.ready = false;
    for (const listener of this.#onStopping.splice(0)) listener();
  }
}
