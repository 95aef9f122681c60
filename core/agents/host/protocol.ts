/**
 * What crosses between the server thread and an agent's host thread. The thread serves a link: one
 * MessageChannel, handed to it by a long-running pool task (`ServeTask`), over which every node
 * call travels, from its task to its result, each message naming its call. A pool task and a
 * MessageChannel per call (piscina's bookkeeping, a port created, transferred and closed) cost
 * more than the rest of an /invoke of a no-op agent (#27); over one port a call's messages also
 * keep their order by construction, so no report can overtake its node's result.
 *
 * Liveness and "has this call started" are read from memory the thread shares (`LINK_*` slots)
 * rather than sent as messages: the supervisor's watchdog and its retry rule read them.
 */
import type { MessagePort } from 'node:worker_threads';
import type { SerializedError } from '../../kernel/dropin-host-protocol.js';
import type { GraphFunction } from '../graph.js';
import type { ToolContext } from '../tools.js';
import type { AgentInput, AgentState } from '../types.js';

/** Slots of a link's shared Float64Array: the last call the thread started, and when its event loop last turned (Date.now()). */
export const LINK_STARTED = 0;
export const LINK_ALIVE_AT = 1;
export const LINK_SLOTS = 2;

/** The pool task that gives a thread its link; it runs until the supervisor closes the link. */
export interface ServeTask {
  serve: true;
  port: MessagePort;
  shared: SharedArrayBuffer;
  /** How often the host marks itself alive while calls run. */
  heartbeatMs: number;
  /** After an abort, how long a node may take to return by itself before the host gives up on it. */
  abandonAfterMs: number;
}

/**
 * An agent version as a link's calls name it, sent once per link before its first call (`def`):
 * a call's message carries only what changes from call to call, since cloning it costs by its
 * size and its number of objects, on both threads (#27).
 */
export interface AgentDef {
  def: number;
  agent: string;
  /** Absolute path of the agent's entry, and the build (content hash) the registry serves. */
  file: string;
  hash: string;
  workspace: string;
  model: { configured: boolean; name: string };
}

/** One function node of one agent version (`def`, sent before), sent over the link. */
export interface NodeTask {
  def: number;
  /** The graph node to run; 'agent' is a function agent's `run`. */
  node: string;
  /** Set: run this function of the graph instead of a node (its edge conditions, `result`, …); it answers `returned`. */
  fn?: GraphFunction;
  state: AgentState;
  input: AgentInput;
  prompt: string;
  threadId: string;
}

/** Run on a new thread ahead of the first call, so that call does not wait for the thread to start. */
export interface WarmTask {
  warm: true;
}

/** How a call ended inside the host. An error is rebuilt on the server with its name and stack. */
export type NodeReply =
  | { value: Partial<AgentState> | undefined }
  | { returned: unknown }
  | { error: SerializedError }
  | { abandoned: true };

/**
 * Errors cross as every drop-in host's do (core/kernel/dropin-host-protocol.ts): a coded error (a
 * model's 502, a subagent's 504) keeps its status and code.
 */
export { rebuildError, type SerializedError, serializeError } from '../../kernel/dropin-host-protocol.js';

/** Context methods that answer (the host awaits them). */
export type CallMethod = 'documents' | 'interrupt' | 'callAgent' | 'model.chat' | 'model.run' | 'model.object';
/** Context methods that only report. */
export type PostMethod = 'step' | 'tool' | 'plan';

/** Messages from the host, each about one call (`call`). */
export type FromHost = { call: number } & (
  | { type: 'call'; id: number; method: CallMethod; args: unknown[] }
  | { type: 'post'; method: PostMethod; args: unknown[] }
  | { type: 'need-bundle' }
  | { type: 'tool-done'; id: number; value?: unknown; error?: SerializedError }
  | { type: 'done'; reply: NodeReply }
);

/** Messages to the host about one call, before the link stamps the call's number on them. */
export type ToHostMessage =
  | ({ type: 'define' } & AgentDef)
  | { type: 'run'; task: NodeTask }
  | { type: 'reply'; id: number; value?: unknown; error?: SerializedError }
  | { type: 'bundle'; code: string }
  | { type: 'abort'; reason: string }
  /**
   * `fn`: which of the tool's functions, its `run` (the default) or its `needsApproval` rule (a
   * boolean answer); not named `call`, the stamp of the node call the message belongs to.
   */
  | { type: 'run-tool'; id: number; name: string; fn?: 'run' | 'needsApproval'; args: unknown; context: HostToolContext }
  | { type: 'tool-abort'; id: number; reason: string };

/** Sent in batches (arrays), one per turn of the sender's event loop; the link closing ends the serve task. */
export type ToHost = ToHostMessage & { call: number };

/** A tool's context without what cannot cross (its signal, `documents`): the host makes its own. */
export type HostToolContext = Omit<ToolContext, 'signal' | 'documents'>;
