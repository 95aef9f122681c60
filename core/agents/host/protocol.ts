/**
 * What crosses between the server thread and an agent's host thread for one node call, over the
 * call's TaskChannel (core/lib/worker-pool.ts). One channel per call keeps each call's messages in
 * the order they were posted; the channel is drained before the call settles, so no step, token
 * or tool report can overtake the node's result.
 */
import { type ErrorDetail, HangarError } from '../../kernel/errors.js';
import type { ToolContext } from '../tools.js';
import type { AgentInput, AgentState } from '../types.js';

/** The task a host runs: one function node of one agent version. */
export interface NodeTask {
  agent: string;
  /** Absolute path of the agent's entry, and the build (content hash) the registry serves. */
  file: string;
  hash: string;
  /** The graph node to run; 'agent' is a function agent's `run`. */
  node: string;
  state: AgentState;
  input: AgentInput;
  prompt: string;
  threadId: string;
  workspace: string;
  model: { configured: boolean; name: string };
  /** How often the host says it is alive while this call runs. */
  heartbeatMs: number;
  /** After an abort, how long the node may take to return by itself before the host gives up on it. */
  abandonAfterMs: number;
}

/** Run on a new thread ahead of the first call, so that call does not wait for the thread to start. */
export interface WarmTask {
  warm: true;
}

/** How a call ended inside the host. An error is rebuilt on the server with its name and stack. */
export type NodeReply = { value: Partial<AgentState> | undefined } | { error: SerializedError } | { abandoned: true };

export interface SerializedError {
  name: string;
  message: string;
  stack?: string;
  /** A HangarError's own parts, so a coded error (a model's 502, a subagent's 504) keeps its status and code. */
  coded?: { status: number; detail: ErrorDetail; code: string; headers: Record<string, string>; fields: Record<string, unknown> };
}

/** Context methods that answer (the host awaits them). */
export type CallMethod = 'documents' | 'interrupt' | 'callAgent' | 'model.chat' | 'model.run' | 'model.object';
/** Context methods that only report. */
export type PostMethod = 'step' | 'tool' | 'plan';

export type FromHost =
  | { type: 'call'; id: number; method: CallMethod; args: unknown[] }
  | { type: 'post'; method: PostMethod; args: unknown[] }
  | { type: 'need-bundle' }
  | { type: 'beat' }
  | { type: 'tool-done'; id: number; value?: unknown; error?: SerializedError };

export type ToHost =
  | { type: 'reply'; id: number; value?: unknown; error?: SerializedError }
  | { type: 'bundle'; code: string }
  | { type: 'abort'; reason: string }
  | { type: 'run-tool'; id: number; name: string; args: unknown; context: HostToolContext }
  | { type: 'tool-abort'; id: number; reason: string };

/** A tool's context without what cannot cross (its signal, `documents`): the host makes its own. */
export type HostToolContext = Omit<ToolContext, 'signal' | 'documents'>;

export function serializeError(err: unknown): SerializedError {
  if (err instanceof HangarError) {
    const { status, detail, code, headers, fields } = err;
    return { name: err.name, message: err.message, stack: err.stack, coded: { status, detail, code, headers, fields } };
  }
  if (err instanceof Error) return { name: err.name, message: err.message, stack: err.stack };
  return { name: 'Error', message: String(err) };
}

export function rebuildError(serialized: SerializedError): Error {
  const coded = serialized.coded;
  const err = coded ? new HangarError(coded.status, coded.detail, coded.headers, coded.fields, coded.code) : new Error(serialized.message);
  err.name = serialized.name;
  if (serialized.stack) err.stack = serialized.stack;
  return err;
}
