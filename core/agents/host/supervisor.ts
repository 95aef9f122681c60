/**
 * Supervised agent hosts: where an agent's node functions (a function agent's `run`, a graph's
 * function nodes) run, so a drop-in that loops, allocates without bound or never returns costs
 * its own host, never the server thread, the store or another agent.
 *
 * Layout: one host per agent, a worker thread (core/lib/worker-pool.ts) with a heap cap, running
 * that agent's calls concurrently (they mostly wait on the model). One per agent rather than a
 * small shared pool because the failures this exists for are per drop-in: a heap overflow or a
 * stuck loop ends the thread and every call on it, and with a shared pool that would be other
 * agents' calls. An idle host stops after a minute and starts again on the next call.
 *
 * How a call ends early:
 * - cancelled or past its deadline (the run's signal): the call is answered at once; the host is
 *   told to abort, and if its event loop does not take the message within a short grace (code stuck
 *   in a synchronous loop), the host is terminated;
 * - heap cap passed: V8 stops the thread; its calls fail `out of memory: agent x exceeded N MB`;
 * - watchdog: a host marks itself alive every heartbeat while it runs calls (in memory the thread
 *   shares, protocol.ts); one silent for `agents.watchdogMs` is terminated and its calls fail saying so.
 * A call the host never started (queued behind a stuck one) is retried once on the new host.
 *
 * Cold start: a host's thread is started when discovery loads or reloads its agent, and again at
 * once after a restart, in the background (prepare()); its first call then finds it running rather
 * than waiting for a bundle and a thread within its own deadline.
 */
import path from 'node:path';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { z } from 'zod';
import { bundleOf } from '../../kernel/bundles.js';
import { type DropInHostStatus, HostThread, type RestartReason } from '../../kernel/dropin-host.js';
import { fail } from '../../kernel/errors.js';
import type { Registry } from '../../kernel/registry.js';
import { InFlight } from '../../lib/in-flight.js';
import { WorkerOutOfMemoryError } from '../../lib/worker-pool.js';
import type { AgentRef, CallSite, NodeHost } from '../engine.js';
import { compileGraph, type GraphFunction } from '../graph.js';
import type { Agent } from '../kind.js';
import { toolAgentRun } from '../tool-agent.js';
import type { AnyTool } from '../tools.js';
import type { AgentState, RunContext } from '../types.js';
import { HostTools } from './host-tools.js';
import {
  type FromHost,
  LINK_ALIVE_AT,
  LINK_SLOTS,
  LINK_STARTED,
  type NodeTask,
  rebuildError,
  type ServeTask,
  serializeError,
  type ToHost,
  type ToHostMessage,
} from './protocol.js';

export interface AgentHostsOptions {
  registry: Registry;
  /** Workspace root: registry files are relative to it. */
  root: string;
  /** `agents.maxHeapMb`: each host's heap cap, unless the agent's `max_heap_mb` says otherwise. */
  maxHeapMb: number;
  /** `agents.watchdogMs`: how long a running host may go without a heartbeat. */
  watchdogMs: number;
  /** Looks up `tools/` drop-ins an agent lists by name. */
  resolveTool?: (name: string) => AnyTool | undefined;
  /** The tools an agent's `mcp:<server>/…` entry names. */
  resolveMcpTools?: (ref: string, agent: string) => Promise<AnyTool[]>;
  /** Told of every host restart (metrics). */
  onRestart?: (agent: string, reason: RestartReason) => void;
  /** Told when a host could not be started ahead of its first call (the call then tries again). */
  onWarmError?: (agent: string, error: unknown) => void;
}

export type { RestartReason };

/** One agent's host as `/api/v1/status` shows it: a drop-in host's status, named by its agent as well. */
export type HostStatus = DropInHostStatus & { agent: string };

/**
 * After an abort, the node may return by itself for this long (its output then counts, as it does
 * inline); past it the host lets the call go, and a host that has not answered by twice this is
 * stuck (a synchronous loop) and is terminated.
 */
const ABORT_GRACE_MS = 100;

/** A host without calls for this long lets its thread go (the pool stops it after its own idle time). */
const IDLE_MS = 30_000;

/**
 * One agent's host: its thread and accounting (core/kernel/dropin-host.ts, shared with every other
 * drop-in kind's hosts) and the link its calls travel over.
 */
class Host extends HostThread<ServeTask> {
  /** The link to its thread (made with the thread's first call, replaced when the thread is). */
  link: Link | undefined = undefined;
}

/** A host thread's link (protocol.ts): the port every call on the thread talks over, and the memory they share. */
interface Link {
  port: MessagePort;
  shared: Float64Array;
  /** The calls the thread has not answered, by number (in the order they were sent; not a Map: see in-flight.ts). */
  calls: InFlight<LinkCall>;
  lastCall: number;
  /** Aborting the serve task's signal terminates the thread (every call on it). */
  terminate: AbortController;
  /** When the current run of calls began: the watchdog counts silence from here at the earliest. */
  heardAt: number;
  /** When its last call was answered. */
  idleSince: number;
  timer: NodeJS.Timeout | undefined;
  open: boolean;
  /** Messages for the thread this turn of the event loop (`flush`). */
  outbox: ToHost[];
  /** The agent versions sent to the thread (protocol.ts `AgentDef`), by where they came from. */
  defs: Map<Located, SentDef>;
  lastDef: number;
  /** A message that could not be cloned. */
  unsent: (message: ToHost, err: unknown) => void;
}

/** Post a link's outbox as one message; one that cannot be cloned is sent alone, and what fails is told to `unsent`. */
function flush(link: Link): void {
  const batch = link.outbox;
  if (batch.length === 0) return;
  link.outbox = [];
  if (!link.open) return;
  try {
    link.port.postMessage(batch);
  } catch {
    for (const message of batch) {
      try {
        link.port.postMessage([message]);
      } catch (err) {
        link.unsent(message, err);
      }
    }
  }
}

/** One node call on a link. */
interface LinkCall {
  ref: AgentRef;
  site: CallSite;
  /** A node's `ctx`, which the host calls back on, made on its first call back; a graph function has none. */
  ctx: (() => RunContext) | undefined;
  code: string;
  /** The agent's own tools, made when the node's `ctx.model.run` first needs them. */
  tools: HostTools | undefined;
  settled: boolean;
  finish(outcome: { value: unknown } | { error: unknown }): void;
  /** Its thread was stopped: fail if it had started, else try again on the next thread. */
  restart(): void;
}

interface Located {
  file: string;
  hash: string;
}

/** An agent version sent over a link, and the model it was sent with (the provider's, the same for every run of a server). */
interface SentDef {
  def: number;
  model: { configured: boolean; name: string };
}

export class AgentHosts implements NodeHost {
  readonly #options: AgentHostsOptions;
  readonly #hosts = new Map<string, Host>();
  /** Where each definition came from, remembered so a run of a build just replaced still finds its bundle. */
  readonly #located = new WeakMap<object, Located>();
  readonly #heartbeatMs: number;

  constructor(options: AgentHostsOptions) {
    this.#options = options;
    this.#heartbeatMs = Math.max(10, Math.min(1000, Math.floor(options.watchdogMs / 4)));
  }

  /**
   * Whether this agent's functions run in a host: yes unless it asks for `isolation: 'inline'`, is
   * the built-in tool loop (Hangar's own code), or is not a loaded drop-in (a definition built in
   * code, whose bundle there is none of).
   */
  supervises(ref: AgentRef): boolean {
    const definition = ref.definition;
    if (definition.isolation === 'inline' || definition.run === toolAgentRun) return false;
    return this.#locate(ref) !== undefined;
  }

  /**
   * Start the host of `ref` ahead of its first call, if it has functions to run there. Never waits
   * and never throws: a host that fails to start is started again by the call.
   */
  prepare(ref: AgentRef): void {
    if (!this.supervises(ref) || !hasFunctionNode(ref)) return;
    const host = this.#hostOf(ref);
    host.warm(this.#onWarmError(host));
  }

  runNode(ref: AgentRef, node: string, state: AgentState, ctx: () => RunContext, site: CallSite): Promise<Partial<AgentState> | undefined> {
    return this.#run(ref, node, undefined, state, site, ctx) as Promise<Partial<AgentState> | undefined>;
  }

  /** A graph function of the agent (engine.ts `NodeHost`), as one call on its host's link like a node. */
  runFunction(ref: AgentRef, fn: GraphFunction, state: AgentState, site: CallSite): Promise<unknown> {
    return this.#run(ref, 'node' in fn ? fn.node : fn.kind === 'next' ? fn.from : '', fn, state, site, undefined);
  }

  async #run(
    ref: AgentRef,
    node: string,
    fn: GraphFunction | undefined,
    state: AgentState,
    site: CallSite,
    ctx: (() => RunContext) | undefined,
  ): Promise<unknown> {
    const located = this.#locate(ref);
    if (!located) throw new Error(`agent '${ref.name}' is not a loaded drop-in`);
    const bundle = bundleOf(located.file, located.hash);
    if (!bundle) throw new Error(`the build of agent '${ref.name}' being run was replaced twice since; run it again`);
    const host = this.#hostOf(ref);
    host.running++;
    try {
      const first = await this.#call(host, ref, { node, fn, state, site, ctx }, bundle.code);
      if (first !== RETRY) return first;
      const second = await this.#call(host, ref, { node, fn, state, site, ctx }, bundle.code);
      if (second === RETRY) throw fail('HANGAR_AGENT_HOST_RESTARTED', { agent: ref.name, why: host.lastRestart?.detail ?? 'stopped' });
      return second;
    } finally {
      host.running--;
    }
  }

  status(): HostStatus[] {
    return [...this.#hosts.values()].map((host) => ({ ...host.status(), agent: host.name })).sort((a, b) => a.agent.localeCompare(b.agent));
  }

  async close(): Promise<void> {
    await Promise.all([...this.#hosts.values()].map((host) => host.close()));
    this.#hosts.clear();
  }

  #locate(ref: AgentRef): Located | undefined {
    const known = this.#located.get(ref.definition);
    if (known) return known;
    const entry = this.#options.registry.get<Agent>('agent', ref.name);
    if (!entry || entry.definition.definition !== ref.definition || entry.file.endsWith('.json')) return undefined;
    const located = { file: path.resolve(this.#options.root, entry.file), hash: entry.version };
    this.#located.set(ref.definition, located);
    return located;
  }

  #hostOf(ref: AgentRef): Host {
    const heapMb = ref.definition.max_heap_mb ?? this.#options.maxHeapMb;
    const existing = this.#hosts.get(ref.name);
    if (existing && existing.heapMb === heapMb) return existing;
    // A new cap takes a new thread; the old one finishes what it runs, then stops.
    if (existing) void existing.retire();
    const host = new Host('agent', ref.name, heapMb, 'core/agents/host/worker.ts', 30_000, existing);
    this.#hosts.set(ref.name, host);
    return host;
  }

  #restarted(host: Host, generation: number, reason: RestartReason, detail: string): void {
    if (!host.restarted(generation, reason, detail, this.#onWarmError(host))) return;
    this.#options.onRestart?.(host.name, reason);
    const link = host.link;
    if (link) {
      this.#unlink(host, link);
      // Aborting the serve task's signal terminates the thread; every call still on it ends now.
      link.terminate.abort(new Error('its host was restarted'));
      for (const call of link.calls.drain()) call.restart();
    }
  }

  #onWarmError(host: Host) {
    return (err: unknown) => this.#options.onWarmError?.(host.name, err);
  }

  /**
   * The host thread's link, made when there is none: a pool task hands its port to the thread and
   * runs until the link is closed (idle) or the thread ends. Its end is the thread's: out of
   * memory fails the calls on it so, a crash with its error, a restart has ended them already.
   */
  #linkOf(host: Host): Link {
    if (host.link) return host.link;
    const ports = new MessageChannel();
    const buffer = new SharedArrayBuffer(LINK_SLOTS * Float64Array.BYTES_PER_ELEMENT);
    const generation = host.generation;
    const link: Link = {
      port: ports.port1,
      shared: new Float64Array(buffer),
      calls: new InFlight(),
      lastCall: 0,
      terminate: new AbortController(),
      heardAt: Date.now(),
      idleSince: Date.now(),
      timer: undefined,
      open: true,
      outbox: [],
      defs: new Map(),
      lastDef: 0,
      unsent: (message, err) => {
        // A run whose state or input cannot be cloned fails; the thread is fine.
        if (message.type !== 'run') return;
        const call = link.calls.get(message.call);
        link.calls.delete(message.call);
        call?.finish({ error: err });
      },
    };
    ports.port1.on('message', (batch: FromHost[]) => {
      for (const message of batch) this.#heard(link, message);
    });
    // A running call keeps the process alive (its promise); the link must not.
    ports.port1.unref();
    host.link = link;
    const task: ServeTask = {
      serve: true,
      port: ports.port2,
      shared: buffer,
      heartbeatMs: this.#heartbeatMs,
      abandonAfterMs: ABORT_GRACE_MS,
    };
    host.pool.run(task, { signal: link.terminate.signal, transfer: [ports.port2] }).then(
      () => this.#unlink(host, link),
      (err: unknown) => {
        this.#unlink(host, link);
        const calls = link.calls.drain();
        if (err instanceof WorkerOutOfMemoryError) {
          for (const call of calls) call.finish({ error: fail('HANGAR_AGENT_OUT_OF_MEMORY', { agent: host.name, mb: host.heapMb }) });
          return this.#restarted(host, generation, 'out_of_memory', `agent ${host.name} exceeded ${host.heapMb} MB`);
        }
        // Another call's failure stopped the thread (its calls ended then), or the thread failed by itself.
        for (const call of calls) call.finish({ error: err });
      },
    );
    link.timer = setInterval(() => this.#check(host, link, generation), this.#heartbeatMs);
    link.timer.unref();
    return link;
  }

  #unlink(host: Host, link: Link): void {
    link.open = false;
    clearInterval(link.timer);
    link.port.close();
    if (host.link === link) host.link = undefined;
  }

  #heard(link: Link, message: FromHost): void {
    const call = link.calls.get(message.call);
    if (!call) return;
    if (message.type === 'done') {
      link.calls.delete(message.call);
      if (link.calls.size === 0) link.idleSince = Date.now();
      const reply = message.reply;
      if ('error' in reply) call.finish({ error: rebuildError(reply.error) });
      else if ('value' in reply) call.finish({ value: reply.value });
      else if ('returned' in reply) call.finish({ value: reply.returned });
      else call.finish({ error: call.site.signal.reason });
      return;
    }
    // A call that has settled hears nothing more, but an abandoned one may still be waiting for its bundle.
    if (call.settled && message.type !== 'need-bundle') return;
    this.#answer(message, call, link);
  }

  #send(link: Link, call: number, message: ToHostMessage): void {
    (message as ToHost).call = call;
    // Sent as one batch per turn of the event loop: each message wakes the other thread, and a
    // wake-up costs more than the message. A lone call has nothing to wait for: it goes at once.
    if (link.outbox.push(message as ToHost) > 1) return;
    if (link.calls.size <= 1) flush(link);
    else setImmediate(flush, link);
  }

  /**
   * Every heartbeat of a link: the watchdog (a thread that has started a call and not marked itself
   * alive, protocol.ts, for `agents.watchdogMs` is stuck: the first such call fails saying so and
   * the thread is restarted, its other calls ending as for any restart), and the idle stop (a link
   * without calls for `IDLE_MS` is closed; the pool then stops the thread after its own idle time).
   */
  #check(host: Host, link: Link, generation: number): void {
    const now = Date.now();
    if (link.calls.size === 0) {
      if (now - link.idleSince > IDLE_MS) {
        // The thread sees its port close and ends the serve task.
        this.#unlink(host, link);
      }
      return;
    }
    if (now - Math.max(link.heardAt, link.shared[LINK_ALIVE_AT]!) <= this.#options.watchdogMs) return;
    const started = link.shared[LINK_STARTED]!;
    for (const [seq, call] of link.calls) {
      if (call.settled || seq > started) continue;
      const error = fail('HANGAR_AGENT_UNRESPONSIVE', { agent: call.ref.name, ms: this.#options.watchdogMs });
      call.finish({ error });
      this.#restarted(host, generation, 'unresponsive', error.message);
      return;
    }
  }

  #call(
    host: Host,
    ref: AgentRef,
    what: { node: string; fn: GraphFunction | undefined; state: AgentState; site: CallSite; ctx: (() => RunContext) | undefined },
    code: string,
  ): Promise<unknown> {
    const { node, fn, state, site, ctx } = what;
    const generation = host.generation;
    const located = this.#located.get(ref.definition)!;
    const signal = site.signal;
    if (signal.aborted) return Promise.reject(signal.reason);
    const link = this.#linkOf(host);
    const seq = ++link.lastCall;

    return new Promise((resolve, reject) => {
      const call: LinkCall = {
        ref,
        site,
        ctx,
        code,
        tools: undefined,
        settled: false,
        finish: (outcome) => {
          if (call.settled) return;
          call.settled = true;
          call.tools?.close(new Error('the node call running this tool ended'));
          signal.removeEventListener('abort', onAbort);
          if ('error' in outcome) reject(outcome.error);
          else resolve(outcome.value);
        },
        // The thread this call is on was stopped for another call: it fails (or, never started, is tried again) at once.
        restart: () => call.finish(link.shared[LINK_STARTED]! >= seq ? { error: restartedError(host, ref) } : { value: RETRY }),
      };
      const onAbort = () => {
        this.#send(link, seq, { type: 'abort', reason: String((signal.reason as Error | undefined)?.message ?? 'the run was cancelled') });
        // The host answers within the grace unless its event loop is stuck; then it is stopped.
        setTimeout(() => {
          if (!link.calls.has(seq)) return;
          call.finish({ error: signal.reason });
          this.#restarted(host, generation, 'stopped', `a run of agent '${ref.name}' ignored its cancellation and was stopped`);
        }, 2 * ABORT_GRACE_MS).unref();
      };
      // Silence is counted from the first call after a quiet spell at the earliest (a thread just started is not stuck).
      if (link.calls.size === 0) link.heardAt = Date.now();
      link.calls.set(seq, call);
      signal.addEventListener('abort', onAbort, { once: true });
      const task: NodeTask = fn
        ? { def: this.#defOf(link, ref, located, site), node, fn, state, input: site.input, prompt: site.prompt, threadId: site.threadId }
        : { def: this.#defOf(link, ref, located, site), node, state, input: site.input, prompt: site.prompt, threadId: site.threadId };
      this.#send(link, seq, { type: 'run', task });
    });
  }

  /** The number the link's thread knows this agent version by, sending its definition first when it has none. */
  #defOf(link: Link, ref: AgentRef, located: Located, site: CallSite): number {
    const sent = link.defs.get(located);
    const { configured, name } = site.model;
    if (sent && sent.model.configured === configured && sent.model.name === name) return sent.def;
    const def = ++link.lastDef;
    const model = { configured, name };
    link.defs.set(located, { def, model });
    // Call 0 is no call: the thread keeps the definition for the link's calls that name it.
    this.#send(link, 0, { type: 'define', def, agent: ref.name, file: located.file, hash: located.hash, workspace: site.workspace, model });
    return def;
  }

  /** Answer one message of a running call; an interrupt (a thrown value that is no error) ends the node. */
  #answer(message: FromHost, call: LinkCall, link: Link): void {
    const ctx = call.ctx;
    switch (message.type) {
      case 'tool-done':
        call.tools?.settle(message);
        return;
      case 'need-bundle':
        this.#send(link, message.call, { type: 'bundle', code: call.code });
        return;
      case 'post': {
        const [a, b] = message.args;
        if (!ctx) return;
        if (message.method === 'step') ctx().step(String(a));
        else if (message.method === 'tool') ctx().tool(String(a), b);
        else ctx().plan(String(a), b);
        return;
      }
      case 'call': {
        const { id } = message;
        const seq = message.call;
        if (!ctx) return;
        this.#dispatch(message.method, message.args, ctx(), call, link, seq).then(
          (value) => this.#send(link, seq, { type: 'reply', id, value }),
          (err: unknown) => {
            // The engine's interrupt is a thrown value, not an Error: it ends the node on this side.
            if (!(err instanceof Error)) call.finish({ error: err });
            this.#send(link, seq, {
              type: 'reply',
              id,
              error: serializeError(err instanceof Error ? err : new Error('the run was suspended')),
            });
          },
        );
      }
    }
  }

  #dispatch(method: string, args: unknown[], ctx: RunContext, call: LinkCall, link: Link, seq: number): Promise<unknown> {
    const [a, b, c] = args as [never, never, never];
    switch (method) {
      case 'documents':
        return ctx.documents(a);
      case 'interrupt':
        return ctx.interrupt(a, b);
      case 'callAgent':
        return ctx.callAgent(a, b, c);
      case 'model.chat':
        return ctx.model.chat(a, { ...(b as object), signal: ctx.signal });
      case 'model.run': {
        const { tools, ...options } = b as { tools?: string[] };
        call.tools ??= new HostTools(call.ref, { send: (message) => this.#send(link, seq, message) }, this.#options);
        return call.tools.forRun(tools).then((resolved) => ctx.model.run(a, { ...options, tools: resolved, signal: ctx.signal }));
      }
      case 'model.object':
        return ctx.model.object(z.fromJSONSchema(a), b, { ...(c as object), signal: ctx.signal });
      default:
        return Promise.reject(new Error(`unknown host call '${method}'`));
    }
  }
}

const RETRY = Symbol('retry on the new host');

/** Whether the agent has code of its own to run (a `run`, or a graph function node). */
function hasFunctionNode(ref: AgentRef): boolean {
  try {
    return [...compileGraph(ref.definition).nodes.values()].some((node) => node.kind === 'function');
  } catch {
    return false; // a graph that does not compile fails at its run, with its own message
  }
}

function restartedError(host: Host, ref: AgentRef) {
  return fail('HANGAR_AGENT_HOST_RESTARTED', { agent: ref.name, why: host.lastRestart?.detail ?? 'its thread stopped' });
}
