/**
 * What crosses between the server thread and a drop-in's host thread for one call
 * (core/kernel/dropin-host.ts on the server, dropin-host-worker.ts in the host), over the call's
 * TaskChannel: the task, its bundle on demand, heartbeats, an abort, and the drop-in's `ctx`
 * methods that need the server, as numbered calls (answered) and posts (reports). A kind names its
 * own methods; the messages are the same for every kind.
 */
import { type ErrorDetail, HangarError } from './errors.js';

/** What every call's task carries; a kind adds its own fields (the function to run, its arguments). */
export interface HostedTask {
  /** The drop-in's name, for messages. */
  name: string;
  /** Absolute path of the drop-in's entry, and the build (content hash) the registry serves. */
  file: string;
  hash: string;
  /** How often the host says it is alive while this call runs (set by the supervisor). */
  heartbeatMs: number;
  /** After an abort, how long the call may take to return by itself before the host lets it go. */
  abandonAfterMs: number;
}

/** Run on a new thread ahead of the first call, so that call does not wait for the thread to start. */
export interface WarmTask {
  warm: true;
}

/** How a call ended inside the host. An error is rebuilt on the server with its name and stack. */
export type HostedReply = { value: unknown } | { error: SerializedError } | { abandoned: true };

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  /** A HangarError's own parts, so a coded error keeps its status and code. */
  coded?: { status: number; detail: ErrorDetail; code: string; headers: Record<string, string>; fields: Record<string, unknown> };
  /** Own enumerable data of the error (an UpstreamCallError's `result`), when it could be cloned. */
  data?: Record<string, unknown>;
}

export type FromHosted =
  | { type: 'beat' }
  | { type: 'need-bundle' }
  | { type: 'call'; id: number; method: string; args: unknown[] }
  | { type: 'post'; method: string; args: unknown[] };

export type ToHosted =
  | { type: 'bundle'; code: string }
  | { type: 'abort'; reason: string }
  | { type: 'reply'; id: number; value?: unknown; error?: SerializedError };

export function serializeError(err: unknown): SerializedError {
  if (err instanceof HangarError) {
    const { status, detail, code, headers, fields } = err;
    return { name: err.name, message: err.message, stack: err.stack, coded: { status, detail, code, headers, fields } };
  }
  if (err instanceof Error) {
    const data = Object.keys(err).length ? structuredCloneable({ ...err }) : undefined;
    return { name: err.name, message: err.message, stack: err.stack, ...(data ? { data } : {}) };
  }
  return { name: 'Error', message: String(err) };
}

export function rebuildError(serialized: SerializedError): Error {
  const coded = serialized.coded;
  const err = coded ? new HangarError(coded.status, coded.detail, coded.headers, coded.fields, coded.code) : new Error(serialized.message);
  err.name = serialized.name;
  if (serialized.stack) err.stack = serialized.stack;
  if (serialized.data) Object.assign(err, serialized.data);
  return err;
}

function structuredCloneable(value: Record<string, unknown>): Record<string, unknown> | undefined {
  try {
    return structuredClone(value);
  } catch {
    return undefined;
  }
}
