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
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';
import type { MessagePort } from 'node:worker_threads';
import * as zod from 'zod';
import { virtualName, WRAPPER_HEAD } from '../../kernel/stack.js';
import * as sdk from '../../sdk.js';
import { compileGraph } from '../graph.js';
import type { AnyTool } from '../tools.js';
import type { AgentDefinition, NodeFn, RunContext } from '../types.js';
import {
  type CallMethod,
  type FromHost,
  type NodeReply,
  type NodeTask,
  type PostMethod,
  rebuildError,
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

function evaluate(file: string, hash: string, code: string): Record<string, unknown> {
  const hostRequire = createRequire(file);
  const requireFn = (id: string) => (Object.hasOwn(provided, id) ? provided[id] : hostRequire(id));
  const module = { exports: {} as Record<string, unknown> };
  const fn = new vm.Script(`${WRAPPER_HEAD}${code}\n})`, { filename: virtualName(file, hash) }).runInThisContext() as (
    ...args: unknown[]
  ) => void;
  fn.call(module.exports, module.exports, requireFn, module, file, path.dirname(file));
  return module.exports;
}

const definitionOf = (exports: Record<string, unknown>) => (exports.default ?? exports.agent ?? exports) as AgentDefinition;

/** The node as the server's engine would run it: compiled by the same graph module. */
function nodeFunction(exports: Record<string, unknown>, agent: string, node: string): NodeFn {
  const definition = definitionOf(exports);
  const compiled = compileGraph(definition).nodes.get(node);
  if (compiled?.kind !== 'function') throw new Error(`agent '${agent}' has no function node '${node}' in this build`);
  return compiled.run;
}

export default async function runNode(task: (NodeTask & { port: MessagePort }) | WarmTask): Promise<NodeReply> {
  // Loading this module (the SDK, zod, the graph compiler) was the work; nothing else to do.
  if ('warm' in task) return { value: undefined };
  const { port } = task;
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  let nextId = 0;
  let bundleArrived: ((code: string) => void) | undefined;
  let abandon: ((reply: NodeReply) => void) | undefined;
  const abort = new AbortController();
  const toolRuns = new Map<number, AbortController>();
  const onMessage = (message: ToHost) => {
    if (message.type === 'reply') {
      const waiting = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) waiting?.reject(rebuildError(message.error));
      else waiting?.resolve(message.value);
    } else if (message.type === 'bundle') bundleArrived?.(message.code);
    else if (message.type === 'run-tool') {
      const stop = new AbortController();
      toolRuns.set(message.id, stop);
      const { id } = message;
      runTool(version, message, AbortSignal.any([abort.signal, stop.signal]), call).then(
        (value) => {
          toolRuns.delete(id);
          try {
            send({ type: 'tool-done', id, value });
          } catch (err) {
            send({
              type: 'tool-done',
              id,
              error: serializeError(new Error(`tool '${message.name}' returned what cannot be sent: ${String(err)}`)),
            });
          }
        },
        (err: unknown) => {
          toolRuns.delete(id);
          send({ type: 'tool-done', id, error: serializeError(err) });
        },
      );
    } else if (message.type === 'tool-abort') toolRuns.get(message.id)?.abort(new Error(message.reason));
    else if (message.type === 'abort') {
      abort.abort(new Error(message.reason));
      // A node that honours its signal returns (its output counts, as inline); one that ignores it is let go.
      setTimeout(() => abandon?.({ abandoned: true }), task.abandonAfterMs);
    }
  };
  port.on('message', onMessage);
  const send = (message: FromHost) => port.postMessage(message);
  // The first beat at once: a run stuck from its first line is then still seen by the watchdog.
  send({ type: 'beat' });
  const beat = setInterval(() => send({ type: 'beat' }), task.heartbeatMs);
  const call = <T>(method: CallMethod, args: unknown[]): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const id = nextId++;
      pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
      send({ type: 'call', id, method, args });
    });
  const post = (method: PostMethod, args: unknown[]) => send({ type: 'post', method, args });

  let byHash = versions.get(task.file);
  if (!byHash) versions.set(task.file, (byHash = new Map()));
  let version = byHash.get(task.hash);
  try {
    if (!version) {
      const code = await new Promise<string>((resolve) => {
        bundleArrived = resolve;
        send({ type: 'need-bundle' });
      });
      version = byHash.get(task.hash) ?? { exports: evaluate(task.file, task.hash, code), running: 0 };
      byHash.set(task.hash, version);
      for (const [hash, other] of byHash) if (hash !== task.hash && other.running === 0) byHash.delete(hash);
    }
    version.running++;
    const run = nodeFunction(version.exports, task.agent, task.node);
    const ctx = hostContext(task, abort.signal, call, post);
    const settled = new Promise<NodeReply>((resolve) => {
      abandon = resolve;
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
    clearInterval(beat);
    port.off('message', onMessage);
    for (const waiting of pending.values()) waiting.reject(new Error('the run was stopped'));
    for (const stop of toolRuns.values()) stop.abort(new Error('the run was stopped'));
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
  return tool.run(message.args, { ...message.context, signal, documents: (collection) => call('documents', [collection]) });
}

/** `ctx` as a drop-in sees it in the host: the same methods, answered by the server over the port. */
function hostContext(
  task: NodeTask,
  signal: AbortSignal,
  call: <T>(method: CallMethod, args: unknown[]) => Promise<T>,
  post: (method: PostMethod, args: unknown[]) => void,
): RunContext {
  // An AbortSignal and a function cannot cross: the signal is the host's own, tools go by name.
  const portable = (options: Record<string, unknown> | undefined) => {
    if (!options) return {};
    const { signal: _signal, tools, ...rest } = options as { signal?: AbortSignal; tools?: Array<{ name: string }> };
    return tools ? { ...rest, tools: tools.map((tool) => tool.name) } : rest;
  };
  return {
    input: task.input,
    prompt: task.prompt,
    signal,
    workspace: task.workspace,
    threadId: task.threadId,
    documents: (collection) => call('documents', [collection]),
    step: (name) => post('step', [String(name)]),
    tool: (name, args) => post('tool', [name, args]),
    plan: (tool, args) => post('plan', [tool, args]),
    interrupt: (message, payload) => call('interrupt', [message, payload ?? {}]),
    callAgent: (name, query, context) => call('callAgent', [name, query, context ?? {}]),
    model: {
      configured: task.model.configured,
      name: task.model.name,
      chat: (messages, options) => call('model.chat', [messages, portable(options as Record<string, unknown>)]),
      run: (messages, options) => call('model.run', [messages, portable(options as Record<string, unknown>)]),
      object: async (schema, messages, options) => {
        const value = await call('model.object', [zod.toJSONSchema(schema), messages, portable(options as Record<string, unknown>)]);
        return schema.parse(value);
      },
    },
  };
}
