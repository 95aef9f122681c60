/**
 * The shape of an agent definition — what a drop-in in `agents/` exports through `defineAgent`.
 * An agent is either a single async function (`run`) or a graph of nodes (`graph`); the runtime in
 * this folder executes both the same way (a function agent is the graph start → agent → end).
 */
import type { z } from 'zod';
import type { Owned } from '../kernel/ownership.js';
import type { Checkpoint } from './checkpointer.js';
import type { ObjectOptions } from './structured.js';
import type { ToolLoopOptions, ToolLoopResult } from './tool-loop.js';
import type { AnyTool } from './tools.js';

export type Role = 'system' | 'user' | 'assistant' | 'tool';

export interface ChatMessage {
  role: Role;
  content: string;
  timestamp?: string;
  name?: string;
}

/** The JSON state a graph runs over. Agent-defined keys sit beside the standard ones. */
export interface AgentState {
  messages: ChatMessage[];
  response: string;
  steps_taken: string[];
  metadata: Record<string, unknown>;
  [key: string]: unknown;
}

/** What every run receives: the validated request plus the history loaded for it. */
export interface AgentInput {
  query: string;
  user_id: string;
  context: Record<string, unknown>;
  thread_id: string | null;
  metadata: Record<string, unknown>;
  prompt_version: string;
  temperature: number | null;
  max_tokens: number | null;
  /** Conversation so far (chat history), oldest first, not including `query`. */
  history: ChatMessage[];
}

export interface Citation {
  source: string;
  title?: string;
  snippet?: string;
  score?: number;
  [key: string]: unknown;
}

/** What a run returns. A bare string is shorthand for `{ response }`. */
export interface AgentResult {
  response: string;
  output?: unknown;
  suggestions?: string[];
  citations?: Citation[];
  steps_taken?: string[];
  context?: unknown;
  metadata?: Record<string, unknown>;
  /** Why the agent answered as it did (shown by /optimize/invoke); defaults to the steps taken. */
  reasoning?: string;
}

/**
 * A tool call of the run, listed by /optimize/invoke: one the tool loop made (with its `result`
 * or `error`), or one the agent reported through `ctx.tool(...)`.
 */
export interface ToolCall {
  name: string;
  args: unknown;
  result?: unknown;
  error?: string;
}

export interface ModelCallOptions {
  temperature?: number | null;
  max_tokens?: number | null;
  model?: string;
  signal?: AbortSignal;
}

/** The model as an agent sees it; provided by the runtime from the configured provider. */
export interface ModelClient {
  /** True when a model endpoint is configured. */
  readonly configured: boolean;
  readonly name: string;
  /** One completion; tokens are streamed to the run's event stream as they arrive. */
  chat(messages: ChatMessage[], options?: ModelCallOptions): Promise<string>;
  /**
   * The tool loop: the model may call `options.tools` (default: the agent's `tools`) until it
   * answers, or `maxSteps` model calls (default: setting `model.maxSteps`) were made. Tool calls
   * show as `tool_start`/`tool_end` events; invalid arguments and tool failures go back to the
   * model as the call's result instead of throwing.
   *
   * @example
   * const { text, toolResults } = await ctx.model.run(
   *   [{ role: 'system', content: ctx.prompt }, ...input.history, { role: 'user', content: input.query }],
   *   { tools: [weather], maxSteps: 5 },
   * );
   */
  run(messages: ChatMessage[], options?: ToolLoopOptions): Promise<ToolLoopResult>;
  /**
   * Structured output: a value of the schema's type, asked for with the schema's JSON Schema (the
   * response format, or a forced tool call where the server refuses it) and validated by zod, with
   * one repair round; a second wrong answer throws a 502.
   *
   * @example
   * const plan = await ctx.model.object(z.object({ steps: z.array(z.string()) }), [{ role: 'user', content: input.query }]);
   */
  object<S extends z.ZodType>(schema: S, messages: ChatMessage[], options?: ObjectOptions): Promise<z.output<S>>;
}

/** A document in a workspace collection (written by ingestors; see core/ingestion). */
export interface WorkspaceDocument {
  id: string;
  title: string | null;
  content: string;
  /** Where it came from, e.g. a file path relative to the workspace. */
  resource: string;
  metadata: Record<string, unknown>;
}

export interface RunContext {
  input: AgentInput;
  /** The text of the selected prompt version ('' when the agent has no prompts). */
  prompt: string;
  model: ModelClient;
  /** Aborted when the caller cancels (task cancel, client gone on a studio run). */
  signal: AbortSignal;
  /** The workspace folder the server runs on (drop-ins read their data files relative to it). */
  workspace: string;
  /** The thread this run belongs to (generated when the request named none). */
  threadId: string;
  /**
   * The documents of a store collection, e.g. what an ingestor wrote into `docs` — the way an
   * agent retrieves from the workspace's search collections. Empty when the collection is.
   */
  documents(collection: string): Promise<WorkspaceDocument[]>;
  /** Record a processing step (shows in `steps_taken`, and in the node's `node_end` event). */
  step(name: string): void;
  /** Report a tool call (shows in /optimize/invoke `tool_calls`). */
  tool(name: string, args: unknown): void;
  /**
   * Suspend for a person's decision. Returns the approval context once approved; a rejection
   * discards the run. Human-approval graph nodes call this for you.
   *
   * Like LangGraph's `interrupt()`, suspension throws out of the node and a resume re-runs the
   * node from its start: code before `interrupt()` runs again, so keep side effects after it.
   * The n-th call in a node receives the n-th resume value.
   */
  interrupt<T = Record<string, unknown>>(message: string, payload?: Record<string, unknown>): Promise<T>;
  /** Report a planning-tool update (e.g. write_todos) to the event stream. */
  plan(tool: string, args: unknown): void;
  /** Run another registered agent as a subagent. */
  callAgent(name: string, query: string, context?: Record<string, unknown>): Promise<AgentResult>;
}

export type AgentRunFn = (input: AgentInput, ctx: RunContext) => Promise<AgentResult | string> | AgentResult | string;

/** A node's function: reads the state, returns the keys it changes. */
export type NodeFn = (state: AgentState, ctx: RunContext) => Promise<Partial<AgentState> | void> | Partial<AgentState> | void;

export type GraphNode =
  | NodeFn
  | { type?: string; description?: string; run: NodeFn }
  | { type: 'approval'; description?: string; message: string | ((state: AgentState) => string) }
  | { type: 'subagent'; description?: string; agent: string; query?: (state: AgentState) => string };

export const END = '__end__';

export interface GraphEdge {
  from: string;
  to: string;
  /** Taken when it returns true; edges are tried in order and the first match wins. */
  when?: (state: AgentState) => boolean;
  /** Shown as the edge's condition in the studio graph (defaults to the function's source). */
  label?: string;
}

export interface GraphSpec {
  nodes: Record<string, GraphNode>;
  edges: GraphEdge[];
  entry: string;
  /** Nodes after which the run finishes (edges to END count too). */
  end?: string[];
  /** Builds the final result from the state; default `{ response: state.response }`. */
  result?: (state: AgentState) => AgentResult;
}

export interface PromptSet {
  /** version → prompt text, e.g. `{ v1: 'You are…', v2: '…' }` */
  versions: Record<string, string>;
  /** The version used when a request names none (default: 'v1' if present, else the first). */
  active?: string;
}

export interface AgentConfig {
  model?: string;
  temperature?: number;
  max_tokens?: number;
  prompt_version?: string;
  [key: string]: unknown;
}

export interface AgentDefinition {
  /** Path segment under /api/v1/; defaults to the file name (agents/hello.ts → hello). */
  name?: string;
  slug?: string;
  description?: string;
  version?: string;
  /** Label shown in summaries and cards; defaults to 'hangar'. */
  framework?: string;
  prompts?: PromptSet;
  config?: AgentConfig;
  /** Optional models published in /studio/agents/{name}/schemas. */
  input?: z.ZodType;
  output?: z.ZodType;
  /** Needs a model endpoint to answer. */
  requiresModel?: boolean;
  /**
   * A run's deadline in milliseconds (default: the `agents.timeoutMs` setting, 5 minutes). Past it
   * `ctx.signal` aborts and the caller gets a 504 at once, whether or not the run stops.
   */
  timeout_ms?: number;
  /**
   * The system prompt of an agent without `run` or `graph`: such an agent is the tool loop over
   * its `tools`, with the thread's history (as Mastra's `Agent`). Shorthand for
   * `prompts: { versions: { v1: instructions } }`, so prompt versions and overrides apply.
   */
  instructions?: string;
  /**
   * Where the agent's functions run. `supervised` (default): in the agent's own worker thread with
   * a heap cap, so a loop, a runaway allocation or a hang costs that thread, never the server.
   * `inline`: on the server's thread, as before — for a trusted agent on a hot path (it saves a
   * message round trip per node, see README "Isolation"); nothing then stops a synchronous loop.
   */
  isolation?: 'supervised' | 'inline';
  /** The heap cap of this agent's host in MB (default: the `agents.maxHeapMb` setting). */
  max_heap_mb?: number;
  /**
   * Tools the model may call: `defineTool(...)`s, or names of `tools/` drop-ins (resolved at each
   * run, so a saved tool serves the next call). What `ctx.model.run` offers by default.
   */
  tools?: Array<AnyTool | string>;
  run?: AgentRunFn;
  graph?: GraphSpec;
}

/** A run suspended for a person's decision (core/agents/approvals.ts stores them). */
export interface PendingApproval extends Owned {
  id: string;
  agent: string;
  thread_id: string;
  node_name: string;
  message: string;
  payload: Record<string, unknown>;
  state_snapshot: Checkpoint['state'];
  checkpoint: Checkpoint;
  prompt_version: string;
  /** The run kept its checkpoints in the persistent store (it named a thread). */
  persistent: boolean;
  /** Set when the run came from /chat with persist: the answer is saved to the thread on completion. */
  chat?: { persist: boolean; history_loaded: number };
  /** Which route started the run (see `RunOrigin`); absent on records from before it was kept. */
  source?: string;
  /** The board task that ran the agent and now waits in `input-required` for this decision. */
  task_id?: string;
  created_at: string;
}
