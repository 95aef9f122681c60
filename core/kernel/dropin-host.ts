/**
 * Supervised hosts for drop-in code of any kind (endpoint handlers, ingestors; agents have their own
 * protocol in core/agents/host/): where a drop-in's functions run, so one that loops, allocates
 * without bound or never returns costs its own host, never the server thread, the store or another
 * drop-in. VS Code's extension host, with Deno's per-isolate limits.
 *
 * This module owns the thread and what keeps it honest; a kind brings its worker entry (built on
 * dropin-host-worker.ts) and answers the `ctx` calls its drop-ins make:
 * - layout: one host per drop-in, a worker thread (core/lib/worker-pool.ts) running that drop-in's
 *   calls concurrently; an idle host stops after a minute and starts again on the next call;
 * - heap cap: V8's old-generation limit per thread (the kind's setting, or the drop-in's
 *   `max_heap_mb`); past it the thread dies, its calls fail `out of memory: <kind> x exceeded N MB`;
 * - cancellation: when a call's signal aborts (its deadline, a cancel, the caller gone) it is
 *   answered at once; the host is told, and one whose event loop does not take the message within
 *   a short grace (a synchronous loop) is terminated;
 * - watchdog: a host says it is alive while it runs calls; one silent for `watchdogMs` is
 *   terminated and its calls fail saying so;
 * - restarts: counted per drop-in with the reason (`out_of_memory`, `unresponsive`, `stopped`),
 *   reported to `onRestart` (metrics, the log) and in `status()` (`/api/v1/status`). A call the
 *   host never started (queued behind a stuck one) is run again once on the new thread. A host
 *   restarted once keeps a spare thread that takes over at its next restart.
 */

import path from 'node:path';
import { InFlight } from '../lib/in-flight.js';
import { TaskChannel, WorkerOutOfMemoryError, WorkerPool } from '../lib/worker-pool.js';
import { bundleOf } from './bundles.js';
import type { HangarContext } from './context.js';
import {
  type FromHosted,
  type HostedReply,
  type HostedTask,
  rebuildError,
  serializeError as serializeForHost,
  type ToHosted,
  type WarmTask,
} from './dropin-host-protocol.js';
import { errorMessage, fail } from './errors.js';
import type { Registry } from './registry.js';

export type RestartReason = 'out_of_memory' | 'unresponsive' | 'stopped';

/** One drop-in's host as `/api/v1/status` shows it. */
export interface DropInHostStatus {
  kind: string;
  name: string;
  heap_mb: number;
  /** Its thread is running: a call does not wait for it to start. */
  ready: boolean;
  running: number;
  restarts: number;
  out_of_memory: number;
  last_restart: { reason: RestartReason; detail: string; at: string } | null;
}

/**
 * How every kind's hosts report, the same for agents, tools, endpoints and ingestors: a restart is
 * counted in /metrics (`hangar_dropin_host_restarts_total{kind,name,reason}`) and logged, a host
 * that did not start ahead of its first call is logged (the call starts it again).
 */
export function hostReports(
  ctx: Pick<HangarContext, 'log' | 'metrics'>,
  kind: string,
): { onRestart: (name: string, reason: RestartReason) => void; onWarmError: (name: string, error: unknown) => void } {
  return {
    onRestart: (name, reason) => {
      ctx.metrics.dropinHostRestarts.inc({ kind, name, reason });
      ctx.log.warn(`${kind} host restarted: ${name} (${reason.replaceAll('_', ' ')})`);
    },
    onWarmError: (name, err) => ctx.log.warn(`${kind} host of ${name} did not start ahead of its first call`, { error: errorMessage(err) }),
  };
}

export interface DropInHostsOptions {
  /** The drop-in kind, as `/metrics` and messages name it ('endpoint', 'ingestor'). */
  kind: string;
  /** The worker module (a path relative to the package root, see core/lib/worker-pool.ts). */
  entry: string;
  /** How long a host running calls may go without a heartbeat before it is restarted. */
  watchdogMs: number;
  /**
   * How long an idle host keeps its thread (default a minute). A kind whose drop-ins keep state in
   * their module between calls (an express router's in-memory data) keeps it for as long as a
   * timer can say, as VS Code keeps an extension's host while the window is open.
   */
  idleTimeoutMs?: number;
  /** Told of every restart. */
  onRestart?: (name: string, reason: RestartReason, detail: string) => void;
  /** Told when a host could not be started ahead of its first call (the call then tries again). */
  onWarmError?: (name: string, error: unknown) => void;
}

/** One call: the task (without what the supervisor adds), the bundle to evaluate, and how to answer the host. */
export interface HostedCall<Task extends HostedTask> {
  name: string;
  heapMb: number;
  task: Omit<Task, 'heartbeatMs' | 'abandonAfterMs'>;
  /** The build's code, sent the first time a host thread runs this build. */
  code: string;
  /** Aborts the call: it rejects with the signal's reason at once. */
  signal: AbortSignal;
  /** Answer a `ctx` method the drop-in called in the host. */
  onCall?: (method: string, args: unknown[]) => Promise<unknown>;
  /** Take a report the drop-in posted. */
  onPost?: (method: string, args: unknown[]) => void;
}

/**
 * After an abort, the call may return by itself for this long (its outcome then counts); past it
 * the host lets it go, and a host that has not answered by twice this is stuck and is terminated.
 */
const ABORT_GRACE_MS = 100;

const RETRY = Symbol('retry on the new host');

/**
 * Hosts start one after another, across kinds: started all at once (a workspace's drop-ins at
 * start-up) they share the machine and each takes several times as long.
 */
let warmingChain: Promise<void> = Promise.resolve();

/**
 * One drop-in's host thread and what is counted about it, whatever protocol its calls travel by
 * (the per-call channel of `DropInHosts`, the agents' links in core/agents/host/): the pool of its
 * one thread with the heap cap, its spare, the generation each restart bumps, and the status.
 */
export class HostThread<Task extends object = object> {
  pool: WorkerPool<Task | WarmTask, unknown>;
  /**
   * A started thread that takes over at the next restart, kept once the host has been restarted (a
   * drop-in stuck once is likely to be again while its author iterates): the call after a stuck one
   * then does not wait for a thread and a bundle to start, as Chrome keeps a spare renderer.
   */
  spare: WorkerPool<Task | WarmTask, unknown> | undefined;
  running = 0;
  /** Bumped at each restart, so the calls one thread death fails count it once. */
  generation = 0;
  /** Its thread has started (and not been restarted since); warming: being started. */
  ready = false;
  warming = false;
  restarts: number;
  outOfMemory: number;
  lastRestart: DropInHostStatus['last_restart'];
  /** Replaced (a new heap cap), forgotten or closed: nothing starts for it any more. */
  retired = false;

  constructor(
    readonly kind: string,
    readonly name: string,
    readonly heapMb: number,
    private readonly entry: string,
    idleTimeoutMs: number,
    /** The host this one replaces: its counts carry over. */
    previous?: HostThread<Task>,
  ) {
    this.pool = this.#newPool(idleTimeoutMs);
    this.restarts = previous?.restarts ?? 0;
    this.outOfMemory = previous?.outOfMemory ?? 0;
    this.lastRestart = previous?.lastRestart ?? null;
  }

  /**
   * Start the thread if it is not running. Hosts start one after another, across kinds: started
   * all at once (a workspace's drop-ins at start-up) they share the machine and each takes several
   * times as long, so the first ones asked for would wait longest.
   */
  warm(onError?: (error: unknown) => void): void {
    // Stryker disable next-line ConditionalExpression,LogicalOperator: a retired host's warm stops at the check in the chain below, and a second warm of a warming host only runs one more warm task on the thread the first starts
    if (this.retired || this.warming) return;
    // Stryker disable next-line BooleanLiteral: as above, a second warm while one is under way runs one more warm task on the same thread
    this.warming = true;
    const generation = this.generation;
    warmingChain = warmingChain.then(async () => {
      try {
        // Stryker disable next-line ConditionalExpression: a retired host is out of status() (forgotten, or replaced by a new cap) and its pool closes once its calls end: a warm task more on its thread changes nothing seen
        if (this.retired) return;
        // Stryker disable next-line BooleanLiteral: the worker entries take a task with `warm` in it for a warm task, whatever its value
        await this.pool.warm({ warm: true });
        if (this.generation === generation) this.ready = true;
      } catch (err) {
        onError?.(err);
      } finally {
        this.warming = false;
      }
    });
  }

  /**
   * The thread of `generation` was stopped: count it once (false when it was counted already), and
   * put a successor in place — the spare if one is running, else a new thread started shortly.
   * The caller ends the calls that were on the stopped thread.
   */
  restarted(generation: number, reason: RestartReason, detail: string, onWarmError?: (error: unknown) => void): boolean {
    if (this.generation !== generation) return false;
    this.generation++;
    this.ready = false;
    this.restarts++;
    if (reason === 'out_of_memory') this.outOfMemory++;
    this.lastRestart = { reason, detail, at: new Date().toISOString() };
    const spare = this.spare;
    this.spare = undefined;
    if (spare && spare.threads > 0) {
      const stopped = this.pool;
      this.pool = spare;
      this.ready = true;
      void stopped.close();
    } else {
      void spare?.close();
      // The stopped thread is being terminated now; the next call should find its successor running.
      setTimeout(() => this.warm(onWarmError), ABORT_GRACE_MS).unref();
    }
    // The next spare starts after the successor, never competing with it.
    // Stryker disable next-line ArithmeticOperator: when the spare is prepared is pacing; it is warmed behind the successor on the warming chain either way
    setTimeout(() => this.#prepareSpare(), 4 * ABORT_GRACE_MS).unref();
    return true;
  }

  status(): DropInHostStatus {
    return {
      kind: this.kind,
      name: this.name,
      heap_mb: this.heapMb,
      // A thread idle past its timeout has stopped; the next call starts it again.
      ready: this.ready && this.pool.threads > 0,
      running: this.running,
      restarts: this.restarts,
      out_of_memory: this.outOfMemory,
      last_restart: this.lastRestart,
    };
  }

  /** Replaced or forgotten: what runs on it finishes, then its thread stops. */
  async retire(): Promise<void> {
    this.retired = true;
    void this.spare?.close();
    this.spare = undefined;
    while (this.running > 0) await new Promise((resolve) => setTimeout(resolve, 100));
    await this.pool.close();
  }

  /** Stop at once (the server is closing): calls still running fail. */
  async close(): Promise<void> {
    this.retired = true;
    await Promise.all([this.pool.close(), this.spare?.close()]);
  }

  #prepareSpare(): void {
    if (this.retired || this.spare) return;
    // Held a while, not forever: a spare idle for five minutes stops, and the next restart starts a thread again.
    const spare = this.#newPool(300_000);
    this.spare = spare;
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: a task that is not a warm one fails on the spare's thread, and the thread it started stays: the spare is as warm
    warmingChain = warmingChain.then(() => spare.warm({ warm: true }).catch(() => undefined));
  }

  #newPool(idleTimeoutMs: number): WorkerPool<Task | WarmTask, unknown> {
    return new WorkerPool<Task | WarmTask, unknown>({
      entry: this.entry,
      maxThreads: 1,
      concurrentTasksPerWorker: 256,
      idleTimeoutMs,
      maxHeapMb: this.heapMb,
      atomics: 'disabled',
    });
  }
}

/** A host whose calls each travel over their own channel. */
class Host extends HostThread<HostedTask> {
  /** The calls in flight, each told when the thread it is on is stopped (not a Set: see in-flight.ts). */
  readonly calls = new InFlight<() => void>();
}

export class DropInHosts<Task extends HostedTask> {
  readonly #options: DropInHostsOptions;
  readonly #hosts = new Map<string, Host>();
  readonly #heartbeatMs: number;

  constructor(options: DropInHostsOptions) {
    this.#options = options;
    // Stryker disable next-line MethodExpression: a shorter heartbeat (and watchdog tick) only checks more often; a longer one is capped by the 1000 above
    this.#heartbeatMs = Math.max(10, Math.min(1000, Math.floor(options.watchdogMs / 4)));
  }

  get kind(): string {
    return this.#options.kind;
  }

  /** Start the host of drop-in `name` ahead of its first call. Never waits and never throws. */
  prepare(name: string, heapMb: number): void {
    this.#hostOf(name, heapMb).warm(this.#onWarmError(name));
  }

  /** Run one call in the drop-in's host; its value is what the kind's worker returned. */
  async run(call: HostedCall<Task>): Promise<unknown> {
    const host = this.#hostOf(call.name, call.heapMb);
    host.running++;
    try {
      const first = await this.#call(host, call);
      if (first !== RETRY) return first;
      const second = await this.#call(host, call);
      // Stryker disable next-line ConditionalExpression: unreachable: the retried call's thread is a new one (or the spare), which takes it before any call there can block it, since each first asks for its bundle
      if (second === RETRY) throw this.#restartedError(host);
      return second;
    } finally {
      host.running--;
    }
  }

  /** The drop-in is gone (deleted or renamed): its host stops once its calls are done. */
  forget(name: string): void {
    const host = this.#hosts.get(name);
    if (!host) return;
    this.#hosts.delete(name);
    void host.retire();
  }

  status(): DropInHostStatus[] {
    return [...this.#hosts.values()].map((host) => host.status()).sort((a, b) => a.name.localeCompare(b.name));
  }

  async close(): Promise<void> {
    await Promise.all([...this.#hosts.values()].map((host) => host.close()));
    this.#hosts.clear();
  }

  #hostOf(name: string, heapMb: number): Host {
    const existing = this.#hosts.get(name);
    if (existing && existing.heapMb === heapMb) return existing;
    // A new cap takes a new thread; the old one finishes what it runs, then stops.
    if (existing) void existing.retire();
    const host = new Host(this.#options.kind, name, heapMb, this.#options.entry, this.#options.idleTimeoutMs ?? 60_000, existing);
    this.#hosts.set(name, host);
    return host;
  }

  #onWarmError(name: string) {
    return (err: unknown) => this.#options.onWarmError?.(name, err);
  }

  #restarted(host: Host, generation: number, reason: RestartReason, detail: string): void {
    if (!host.restarted(generation, reason, detail, this.#onWarmError(host.name))) return;
    this.#options.onRestart?.(host.name, reason, detail);
    for (const tell of [...host.calls.values()]) tell();
  }

  #restartedError(host: Host) {
    return fail('HANGAR_DROPIN_HOST_RESTARTED', {
      kind: this.#options.kind,
      name: host.name,
      // Stryker disable next-line OptionalChaining,StringLiteral: this error is made only after a restart, which always sets lastRestart
      why: host.lastRestart?.detail ?? 'its thread stopped',
    });
  }

  #call(host: Host, call: HostedCall<Task>): Promise<unknown> {
    const { kind, watchdogMs } = this.#options;
    const generation = host.generation;
    const { signal } = call;
    const terminate = new AbortController();
    let heard = false;
    let lastHeard = 0;
    let settled = false;
    let returned = false;
    let watchdog: NodeJS.Timeout | undefined;

    return new Promise((resolve, reject) => {
      const finish = (outcome: { value: unknown } | { error: unknown }) => {
        // Stryker disable next-line ConditionalExpression: a promise settles once; the clean-up below only repeats
        if (settled) return;
        // Stryker disable next-line BooleanLiteral: as above; the later checks of `settled` end in finish, which then repeats its clean-up
        settled = true;
        // Stryker disable next-line CallExpression: a finished call left in the set is told at a later restart, and its abort and finish then do nothing
        host.calls.delete(restartTicket);
        clearInterval(watchdog);
        // Stryker disable next-line StringLiteral,CallExpression: an abort after the call ended sends to a closed channel, and its timer finds the run returned
        signal.removeEventListener('abort', onAbort);
        if ('error' in outcome) reject(outcome.error);
        else resolve(outcome.value);
      };
      // The thread this call is on was stopped for another call: it fails (or, never started, is tried again) at once.
      const onRestart = () => {
        // Stryker disable next-line StringLiteral,CallExpression: the run ended here is on a thread already stopped (terminated by the call that restarted it, dead of its heap, or a closed pool's), so its reason is never seen
        terminate.abort(new Error('its host was restarted'));
        finish(heard ? { error: this.#restartedError(host) } : { value: RETRY });
      };
      const restartTicket = host.calls.add(onRestart);
      const onAbort = () => {
        const reason = (signal.reason as Error | undefined)?.message ?? 'the call was cancelled';
        channel.send({ type: 'abort', reason: String(reason) });
        // The host answers within the grace unless its event loop is stuck; then it is stopped.
        setTimeout(() => {
          if (returned) return;
          terminate.abort(signal.reason);
          finish({ error: signal.reason });
          this.#restarted(host, generation, 'stopped', `a call of ${kind} '${host.name}' ignored its cancellation and was stopped`);
        }, 2 * ABORT_GRACE_MS).unref();
      };
      const channel = new TaskChannel<FromHosted, ToHosted>((message) => {
        heard = true;
        lastHeard = performance.now();
        if (message.type === 'need-bundle') return channel.send({ type: 'bundle', code: call.code });
        if (settled || message.type === 'beat') return;
        if (message.type === 'post') return call.onPost?.(message.method, message.args);
        const { id, method, args } = message;
        const answer = call.onCall ? call.onCall(method, args) : Promise.reject(new Error(`unknown host call '${method}'`));
        answer.then(
          (value) => channel.send({ type: 'reply', id, value }),
          (err: unknown) => channel.send({ type: 'reply', id, error: serializeForHost(err) }),
        );
      });
      watchdog = setInterval(() => {
        // Stryker disable next-line EqualityOperator: `>=` against `>` is one tick of timing
        if (heard && performance.now() - lastHeard > watchdogMs) {
          const error = fail('HANGAR_DROPIN_UNRESPONSIVE', { kind, name: host.name, ms: watchdogMs });
          terminate.abort(error);
          finish({ error });
          this.#restarted(host, generation, 'unresponsive', error.message);
        }
      }, this.#heartbeatMs);
      // Stryker disable next-line CallExpression: unref only lets the process exit while a call runs
      watchdog.unref();
      if (signal.aborted) return finish({ error: signal.reason });
      // Stryker disable next-line ObjectLiteral,BooleanLiteral: a signal aborts once
      signal.addEventListener('abort', onAbort, { once: true });

      const task = { ...call.task, heartbeatMs: this.#heartbeatMs, abandonAfterMs: ABORT_GRACE_MS } as Task;
      (host.pool.run(task, { signal: terminate.signal, channel }) as Promise<HostedReply>).then(
        (reply) => {
          returned = true;
          if ('error' in reply) finish({ error: rebuildError(reply.error) });
          else if ('value' in reply) finish({ value: reply.value });
          else finish({ error: signal.reason });
        },
        (err: unknown) => {
          // Stryker disable next-line BooleanLiteral: a run that rejects was ended by a restart (the timer's restart then finds its generation counted) or by close (the host is gone from status())
          returned = true;
          if (err instanceof WorkerOutOfMemoryError) {
            const error = fail('HANGAR_DROPIN_OUT_OF_MEMORY', { kind, name: host.name, mb: host.heapMb });
            finish({ error });
            return this.#restarted(host, generation, 'out_of_memory', error.message);
          }
          // Stryker disable next-line ConditionalExpression: a settled call's finish below does nothing
          if (settled) return;
          // Another call's failure stopped the thread this one was on.
          // Stryker disable next-line ConditionalExpression,ObjectLiteral: unreachable: a restart tells every call on its thread (host.calls) before their runs reject, and they settle then
          if (host.generation !== generation) return finish(heard ? { error: this.#restartedError(host) } : { value: RETRY });
          finish({ error: err });
        },
      );
    });
  }
}

/** Where a loaded drop-in's code is: its entry, its build and the bundle discovery evaluated. */
export interface HostedSource {
  file: string;
  hash: string;
  code: string;
}

/**
 * Where each loaded definition came from, remembered when first asked: a call that started on a
 * build keeps running that build (its bundle is one of the two newest kept) when a save replaces it
 * in the registry mid-way, rather than finding it gone.
 */
const located = new WeakMap<object, { file: string; hash: string }>();

function locate(registry: Registry, root: string, kind: string, name: string, definition: object) {
  const known = located.get(definition);
  if (known) return known;
  const entry = registry.get(kind, name);
  if (!entry || entry.definition !== definition || entry.file.endsWith('.json')) return undefined;
  const where = { file: path.resolve(root, entry.file), hash: entry.version };
  located.set(definition, where);
  return where;
}

/**
 * Whether `definition` is a build the registry served for `kind`/`name` from a file of code (one
 * registered in code, or read from JSON, is not: it has no bundle for a host to run).
 */
export function isLoadedDropIn(registry: Registry, root: string, kind: string, name: string, definition: object): boolean {
  return locate(registry, root, kind, name, definition) !== undefined;
}

/**
 * The source of `definition` if it is a loaded drop-in (see isLoadedDropIn). Throws when that
 * build's bundle is gone (replaced twice while this call was on its way).
 */
export function hostedSource(registry: Registry, root: string, kind: string, name: string, definition: object): HostedSource | undefined {
  const where = locate(registry, root, kind, name, definition);
  if (!where) return undefined;
  const bundle = bundleOf(where.file, where.hash);
  if (!bundle) throw new Error(`the build of ${kind} '${name}' being run was replaced twice since; run it again`);
  return { ...where, code: bundle.code };
}
