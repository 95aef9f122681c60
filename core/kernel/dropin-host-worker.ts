/**
 * The host side of a supervised drop-in call, for every kind's worker entry (e.g.
 * core/endpoints/handler-worker.ts): evaluate the same bundle discovery evaluated (asked for once
 * per build, with `hangar` and `zod` provided as on the server), say "alive" while the call runs,
 * honour an abort, and give the kind's code a `call`/`post` pair that reaches the server. The
 * kind's entry only says which function of the definition to run, with which `ctx`.
 *
 * Versions: the evaluated exports of each build asked for are kept, and a build no call is using
 * is dropped once a newer one arrives, so reloads do not pile up in a host.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import vm from 'node:vm';
import type { MessagePort } from 'node:worker_threads';
import type { FromHosted, HostedReply, HostedTask, ToHosted } from './dropin-host-protocol.js';
import { rebuildError, serializeError } from './dropin-host-protocol.js';
import { virtualName, WRAPPER_HEAD } from './stack.js';

export interface HostedIo {
  /** Aborted when the server cancels the call (its deadline, a cancel, the caller gone). */
  signal: AbortSignal;
  /** Ask the server; resolves with its answer. */
  call<T = unknown>(method: string, args: unknown[]): Promise<T>;
  /** Tell the server; no answer. */
  post(method: string, args: unknown[]): void;
}

interface Version {
  exports: Record<string, unknown>;
  running: number;
}

/** file → hash → evaluated exports */
const versions = new Map<string, Map<string, Version>>();

/** A build's exports, evaluated as discovery evaluates it (CommonJS wrapper, `provided` modules first). */
export function evaluateBundle(file: string, hash: string, code: string, provided: Record<string, unknown>): Record<string, unknown> {
  const hostRequire = createRequire(file);
  const requireFn = (id: string) => (Object.hasOwn(provided, id) ? provided[id] : hostRequire(id));
  const module = { exports: {} as Record<string, unknown> };
  const fn = new vm.Script(`${WRAPPER_HEAD}${code}\n})`, { filename: virtualName(file, hash) }).runInThisContext() as (
    ...args: unknown[]
  ) => void;
  fn.call(module.exports, module.exports, requireFn, module, file, path.dirname(file));
  return module.exports;
}

/** The definition a drop-in module exports, as discovery reads it. */
export const definitionOf = (exports: Record<string, unknown>) => (exports.default ?? exports) as Record<string, unknown>;

/**
 * Run one call of `task` in this host: `run` gets the drop-in's exports and the call's io, and its
 * value is the call's answer (it must be cloneable: it crosses to the server).
 */
export async function serveHosted<T extends HostedTask>(
  task: T & { port: MessagePort },
  provided: Record<string, unknown>,
  run: (exports: Record<string, unknown>, io: HostedIo) => Promise<unknown>,
): Promise<HostedReply> {
  const { port } = task;
  const pending = new Map<number, { resolve: (value: unknown) => void; reject: (err: Error) => void }>();
  let nextId = 0;
  let bundleArrived: ((code: string) => void) | undefined;
  let abandon: ((reply: HostedReply) => void) | undefined;
  const abort = new AbortController();
  const onMessage = (message: ToHosted) => {
    if (message.type === 'reply') {
      const waiting = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) waiting?.reject(rebuildError(message.error));
      else waiting?.resolve(message.value);
    } else if (message.type === 'bundle') bundleArrived?.(message.code);
    else if (message.type === 'abort') {
      abort.abort(new Error(message.reason));
      // A call that honours its signal returns (its outcome counts); one that ignores it is let go.
      setTimeout(() => abandon?.({ abandoned: true }), task.abandonAfterMs);
    }
  };
  port.on('message', onMessage);
  const send = (message: FromHosted) => port.postMessage(message);
  // The first beat at once: a call stuck from its first line is then still seen by the watchdog.
  send({ type: 'beat' });
  const beat = setInterval(() => send({ type: 'beat' }), task.heartbeatMs);
  const io: HostedIo = {
    signal: abort.signal,
    call: <R>(method: string, args: unknown[]) =>
      new Promise<R>((resolve, reject) => {
        const id = nextId++;
        pending.set(id, { resolve: resolve as (value: unknown) => void, reject });
        send({ type: 'call', id, method, args });
      }),
    post: (method, args) => send({ type: 'post', method, args }),
  };

  let byHash = versions.get(task.file);
  if (!byHash) versions.set(task.file, (byHash = new Map()));
  let version = byHash.get(task.hash);
  try {
    if (!version) {
      const code = await new Promise<string>((resolve) => {
        bundleArrived = resolve;
        send({ type: 'need-bundle' });
      });
      version = byHash.get(task.hash) ?? { exports: evaluateBundle(task.file, task.hash, code, provided), running: 0 };
      byHash.set(task.hash, version);
      for (const [hash, other] of byHash) if (hash !== task.hash && other.running === 0) byHash.delete(hash);
    }
    version.running++;
    const exports = version.exports;
    const settled = new Promise<HostedReply>((resolve) => {
      abandon = resolve;
    });
    return await Promise.race([
      (async (): Promise<HostedReply> => {
        const value = await run(exports, io);
        try {
          // What cannot cross (a function, a class instance with private state) fails here, named.
          return { value: structuredClone(value) };
        } catch (err) {
          throw new Error(`${task.name} returned what cannot be sent to the server: ${(err as Error).message}`);
        }
      })(),
      settled,
    ]);
  } catch (err) {
    return { error: serializeError(err) };
  } finally {
    if (version) version.running--;
    clearInterval(beat);
    port.off('message', onMessage);
    for (const waiting of pending.values()) waiting.reject(new Error('the call was stopped'));
  }
}
