/**
 * The agent host: the worker thread an agent's node functions run in (supervisor.ts starts it with
 * a heap cap). It evaluates the same bundle discovery evaluated — `hangar` and `zod` provided, as
 * on the server thread, so a drop-in's schemas are this thread's zod classes — and runs one node
 * call per task, several at once (agents mostly wait on the model). Every `ctx` method that needs
 * the server (the model, interrupts, subagents, documents, step and tool reports) is a message.
 *
 * Versions: the host keeps the evaluated exports of the builds it has been asked for, and drops a
 * build no call is using once a newer one arrives, so reloads do not pile up here either.
 */
import './compile-cache.js';
import type { MessagePort } from 'node:worker_threads';
import * as zod from 'zod';
import { evaluateBundle } from '../../kernel/dropin-host-worker.js';
import { InFlight } from '../../lib/in-flight.js';
import * as sdk from '../../sdk.js';
import { compileGraph, runGraphFunction } from '../graph.js';
import type { AnyTool, ToolContext } from '../tools.js';
import type { AgentDefinition, NodeFn, RunContext } from '../types.js';
import {
  type AgentDef,
  type CallMethod,
  type FromHost,
  LINK_ALIVE_AT,
  LINK_STARTED,
  type NodeReply,
  type NodeTask,
  type PostMethod,
  rebuildError,
  type ServeTask,
  serializeError,
  type ToHost,
  type WarmTask,
} from './protocol.js';

const provided: Record<string, unknown> = { hangar: sdk, zod, 'zod/v4': zod };

interface Version {
  exports: Record<string, unknown>;
  running: number;
}

/** file → hash → evaluated exports */
const versions = new Map<string, Map<string, Version>>();

const definitionOf = (exports: Record<string, unknown>) => (exports.default ?? exports.agent ?? exports) as AgentDefinition;

/** The node as the server's engine would run it: compiled by the same graph module. */
function nodeFunction(exports: Record<string, unknown>, agent: string, node: string): NodeFn {
  const definition = definitionOf(exports);
  const compiled = compileGraph(definition).nodes.get(node);
  if (compiled?.kind !== 'function') throw new Error(`agent '${agent}' has no function node '${node}' in this build`);
  return compiled.run;
}

/** The link this thread serves (protocol.ts), from the pool task that handed it over. */
let link: { port: MessagePort; shared: Float64Array; heartbeatMs: number; abandonAfterMs: number } | undefined;
/** The agent versions the link's calls name (protocol.ts `AgentDef`), by number. */
let defs = new Map<number, AgentDef>();
/** The calls running on this thread, by their number on the link (not a Map: see in-flight.ts). */
const calls = new InFlight<HostCall>();
let beat: NodeJS.Timeout | undefined;
/** Ends the serve task once the link is closed and its calls are done. */
let closed: (() => void) | undefined;
let closing = false;

/** One running call's side of the conversation; its parts are made when the call first needs them. */
class HostCall {
  /** Its calls to the server waiting for their reply, made with the first (a no-op node makes none). */
  pending: Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }> | undefined;
  nextId = 0;
  #abort: AbortController | undefined;
  #reason: Error | undefined;
  toolRuns: Map<number, AbortController> | undefined;
  bundleArrived: ((code: string) => void) | undefined;
  abandon: ((reply: NodeReply) => void) | undefined;
  version: Version | undefined;

  constructor(
    readonly id: number,
    readonly abandonAfterMs: number,
  ) {}

  /** The run's signal, made with the node's `ctx` (or on a tool run's first abort). */
  get signal(): AbortSignal {
    if (!this.#abort) {
      this.#abort = new AbortController();
      if (this.#reason) this.#abort.abort(this.#reason);
    }
    return this.#abort.signal;
  }

  aborted(reason: Error): void {
    this.#reason ??= reason;
    this.#abort?.abort(reason);
    // A node that honours its signal returns (its output counts, as inline); one that ignores it is let go.
    setTimeout(() => this.abandon?.({ abandoned: true }), this.abandonAfterMs);
  }

  send(message: Omit<FromHost, 'call'> & { call?: number }): void {
    message.call = this.id;
    post(message as FromHost);
  }

  call<T>(method: CallMethod, args: unknown[]): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const id = this.nextId++;
      (this.pending ??= new Map()).set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.send({ type: 'call', id, method, args } as FromHost);
    });
  }

  post(method: PostMethod, args: unknown[]): void {
    this.send({ type: 'post', method, args } as FromHost);
  }

  /** Run one of the agent's own tools for the server's tool loop. */
  runTool(message: Extract<ToHost, { type: 'run-tool' }>): void {
    const stop = new AbortController();
    (this.toolRuns ??= new Map()).set(message.id, stop);
    const { id } = message;
    const signal = this.#reason ? AbortSignal.abort(this.#reason) : AbortSignal.any([this.signal, stop.signal]);
    runTool(this.version, message, signal, (method, args) => this.call(method, args)).then(
      (value) => {
        this.toolRuns?.delete(id);
        try {
          this.send({ type: 'tool-done', id, value } as FromHost);
        } catch (err) {
          this.send({
            type: 'tool-done',
            id,
            error: serializeError(new Error(`tool '${message.name}' returned what cannot be sent: ${String(err)}`)),
          } as FromHost);
        }
      },
      (err: unknown) => {
        this.toolRuns?.delete(id);
        this.send({ type: 'tool-done', id, error: serializeError(err) } as FromHost);
      },
    );
  }

  end(): void {
    for (const waiting of this.pending?.values() ?? []) waiting.reject(new Error('the run was stopped'));
    for (const stop of this.toolRuns?.values() ?? []) stop.abort(new Error('the run was stopped'));
  }
}

/** Messages for the server this turn of the event loop, sent as one (a wake-up costs more than a message). */
let outbox: FromHost[] = [];

function post(message: FromHost): void {
  if (outbox.push(message) > 1) return;
  // The last call's result has nothing to wait for.
  if (message.type === 'done' && calls.size === 0) flush();
  else setImmediate(flush);
}

function flush(): void {
  const batch = outbox;
  if (batch.length === 0) return;
  outbox = [];
  if (!link) return;
  try {
    link.port.postMessage(batch);
  } catch {
    // One message cannot be cloned: the others go alone, and a result that cannot fails its call.
    for (const message of batch) {
      try {
        link.port.postMessage([message]);
      } catch (err) {
        if (message.type === 'done')
          link.port.postMessage([
            {
              type: 'done',
              call: message.call,
              reply: { error: serializeError(new Error(`the agent returned what cannot be sent: ${String(err)}`)) },
            },
          ]);
      }
    }
  }
}

function onLinkMessages(batch: ToHost[]): void {
  for (const message of batch) onLinkMessage(message);
}

function onLinkClose(): void {
  closing = true;
  if (calls.size === 0) closed?.();
}

function onLinkMessage(message: ToHost): void {
  if (message.type === 'define') {
    defs.set(message.def, message);
    return;
  }
  if (message.type === 'run') {
    void runCall(message.call, message.task);
    return;
  }
  const call = calls.get(message.call);
  if (!call) return;
  switch (message.type) {
    case 'reply': {
      const waiting = call.pending?.get(message.id);
      call.pending?.delete(message.id);
      if (message.error) waiting?.reject(rebuildError(message.error));
      else waiting?.resolve(message.value);
      return;
    }
    case 'bundle':
      call.bundleArrived?.(message.code);
      return;
    case 'run-tool':
      call.runTool(message);
      return;
    case 'tool-abort':
      call.toolRuns?.get(message.id)?.abort(new Error(message.reason));
      return;
    case 'abort':
      call.aborted(new Error(message.reason));
  }
}

/** Mark this thread alive in the link's shared memory while calls run: the supervisor's watchdog reads it. */
function alive(): void {
  if (link) link.shared[LINK_ALIVE_AT] = Date.now();
}

/**
 * The beat while calls run; it stops at its first tick without any rather than when the last call
 * ends, so a host answering one call after another does not make and clear a timer for each (#27).
 */
function heartbeat(): void {
  if (calls.size > 0) {
    alive();
    return;
  }
  clearInterval(beat);
  beat = undefined;
}

/**
 * The pool task: a warm-up (loading this module was the work), or serving a link until the
 * supervisor closes it. Node calls arrive over the link, not as pool tasks (protocol.ts).
 */
export default function host(task: ServeTask | WarmTask): Promise<{ served: true } | { warm: true }> {
  if ('warm' in task) return Promise.resolve({ warm: true });
  // A thread serves one link; a newer one ends the serve task of the old.
  closed?.();
  const current = {
    port: task.port,
    shared: new Float64Array(task.shared),
    heartbeatMs: task.heartbeatMs,
    abandonAfterMs: task.abandonAfterMs,
  };
  link = current;
  // A new link numbers its agent versions afresh.
  defs = new Map();
  closing = false;
  current.port.on('message', onLinkMessages);
  current.port.once('close', () => link === current && onLinkClose());
  return new Promise((resolve) => {
    closed = () => {
      link?.port.close();
      link = undefined;
      closed = undefined;
      resolve({ served: true });
    };
  });
}

async function runCall(id: number, task: NodeTask): Promise<void> {
  const reply = await runNode(id, task);
  post({ type: 'done', call: id, reply });
  if (closing && calls.size === 0) closed?.();
}

async function runNode(id: number, task: NodeTask): Promise<NodeReply> {
  const current = link!;
  current.shared[LINK_STARTED] = id;
  alive();
  const call = new HostCall(id, current.abandonAfterMs);
  calls.set(id, call);
  if (!beat) {
    beat = setInterval(heartbeat, current.heartbeatMs);
    // Nothing but a running call needs the beat; the thread may go idle and stop.
    beat.unref();
  }

  const def = defs.get(task.def)!;
  let byHash = versions.get(def.file);
  if (!byHash) versions.set(def.file, (byHash = new Map()));
  let version = byHash.get(def.hash);
  try {
    if (!version) {
      const code = await new Promise<string>((resolve) => {
        call.bundleArrived = resolve;
        call.send({ type: 'need-bundle' } as FromHost);
      });
      version = byHash.get(def.hash) ?? { exports: evaluateBundle(def.file, def.hash, code, provided), running: 0 };
      byHash.set(def.hash, version);
      for (const [hash, other] of byHash) if (hash !== def.hash && other.running === 0) byHash.delete(hash);
    }
    version.running++;
    call.version = version;
    // A graph function is synchronous and takes no ctx: nothing to race, nothing to call back.
    if (task.fn) return { returned: runGraphFunction(definitionOf(version.exports), task.fn, task.state) };
    const run = nodeFunction(version.exports, def.agent, task.node);
    const ctx = hostContext(task, def, call);
    const settled = new Promise<NodeReply>((resolve) => {
      call.abandon = resolve;
    });
    return await Promise.race([
      (async (): Promise<NodeReply> => {
        const output = await run(task.state, ctx);
        return { value: output && typeof output === 'object' ? output : undefined };
      })(),
      settled,
    ]);
  } catch (err) {
    return { error: serializeError(err) };
  } finally {
    if (version) version.running--;
    calls.delete(id);
    call.end();
  }
}

/** Run one of the agent's own tools for the server's tool loop, in this module instance (host-tools.ts). */
async function runTool(
  version: Version | undefined,
  message: Extract<ToHost, { type: 'run-tool' }>,
  signal: AbortSignal,
  call: <T>(method: CallMethod, args: unknown[]) => Promise<T>,
): Promise<unknown> {
  const tools = version ? (definitionOf(version.exports).tools ?? []) : [];
  const tool = tools.find((candidate): candidate is AnyTool => typeof candidate !== 'string' && candidate.name === message.name);
  if (!tool) throw new Error(`this build of agent '${message.context.agent}' has no tool '${message.name}'`);
  const ctx: ToolContext = { ...message.context, signal, documents: (collection) => call('documents', [collection]) };
  if (message.fn !== 'needsApproval') return tool.run(message.args, ctx);
  // The server sends only a function rule here (a boolean one it reads itself); the answer is a boolean.
  const rule = tool.needsApproval;
  return typeof rule === 'function' ? Boolean(await rule(message.args, ctx)) : rule === true;
}

/** `ctx` as a drop-in sees it in the host: the same methods, answered by the server over the port. */
function hostContext(task: NodeTask, def: AgentDef, running: HostCall): RunContext {
  const call = <T>(method: CallMethod, args: unknown[]) => running.call<T>(method, args);
  const post = (method: PostMethod, args: unknown[]) => running.post(method, args);
  // An AbortSignal and a function cannot cross: the signal is the host's own, tools go by name.
  const portable = (options: Record<string, unknown> | undefined) => {
    if (!options) return {};
    const { signal: _signal, tools, ...rest } = options as { signal?: AbortSignal; tools?: Array<{ name: string }> };
    return tools ? { ...rest, tools: tools.map((tool) => tool.name) } : rest;
  };
  // No getters here (the signal is made now, ~50 ns): V8 gives an object literal with a getter a
  // hidden class of its own, made in the old generation, whose getter closure then holds the call's
  // objects through every young collection. With one, every call's objects survived until a full
  // collection: on the host thread under /invoke load, 50 → 17 MB after each young collection
  // (10–20 ms) and a full one every second; without, 12 → 10 MB (0.1–1.3 ms).
  return {
    input: task.input,
    prompt: task.prompt,
    signal: running.signal,
    workspace: def.workspace,
    threadId: task.threadId,
    documents: (collection) => call('documents', [collection]),
    step: (name) => post('step', [String(name)]),
    tool: (name, args) => post('tool', [name, args]),
    plan: (tool, args) => post('plan', [tool, args]),
    interrupt: (message, payload) => call('interrupt', [message, payload ?? {}]),
    callAgent: (name, query, context) => call('callAgent', [name, query, context ?? {}]),
    model: {
      configured: def.model.configured,
      name: def.model.name,
      chat: (messages, options) => call('model.chat', [messages, portable(options as Record<string, unknown>)]),
      run: (messages, options) => call('model.run', [messages, portable(options as Record<string, unknown>)]),
      object: async (schema, messages, options) => {
        const value = await call('model.object', [zod.toJSONSchema(schema), messages, portable(options as Record<string, unknown>)]);
        return schema.parse(value);
      },
    },
  };
}
