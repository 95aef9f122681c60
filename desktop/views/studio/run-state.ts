/**
 * What the run panel and the graph show about one run, folded from the studio's run events
 * (core/studio/events.ts: the engine's RunEvent union plus `done`). A pure reducer, so replaying a
 * stored run (GET /runs/{id}) and following a live stream give the same picture.
 */
import type { StudioEvent, StudioRunStatus } from '../../../core/studio/events.js';

/** A run's status as the panel shows it: the server's, or `idle` before any run. */
export type RunStatus = 'idle' | StudioRunStatus;

export interface Todo {
  content: string;
  status: string;
}

export interface ToolCallView {
  tool: string;
  args: unknown;
  callId?: string;
  state?: 'running' | 'ok' | 'error';
  result?: unknown;
  error?: string;
  durationMs?: number;
}

export interface RunView {
  runId: string | null;
  status: RunStatus;
  /** The node executing now. */
  active: string | null;
  /** Nodes finished in this run, in order (a node run twice appears twice). */
  visited: string[];
  /** The answer so far: streamed model tokens, or the latest node's `response`. */
  answer: string;
  todos: Todo[];
  /**
   * Planning updates and the model's tool calls, in the order they started; a tool call has its
   * id, and once it ends its result or error and how long it took.
   */
  tools: ToolCallView[];
  subagents: { name: string; query: string; done: boolean }[];
  /** Where the run waits; `payload` says what for (a gated tool call's is `{kind: 'tool_call', tool, arguments}`). */
  paused: {
    node: string;
    reason: 'breakpoint' | 'interrupt';
    message: string;
    checkpointId: string;
    payload?: Record<string, unknown>;
  } | null;
  error: { message: string; node: string | null } | null;
  durationMs: number | null;
  /** The run's tokens, and its cost when the server has a price table (`model.prices`); null before the end or without a model call. */
  usage: { prompt: number; completion: number; cost: number | null; currency: string | null } | null;
  /** One line per event, for the event list. */
  log: { seq: number; type: string; node: string | null }[];
  /** Set by a token after a node starts: the next chunk starts a fresh answer. */
  freshAnswer: boolean;
}

export const idleRun: RunView = {
  runId: null,
  status: 'idle',
  active: null,
  visited: [],
  answer: '',
  todos: [],
  tools: [],
  subagents: [],
  paused: null,
  error: null,
  durationMs: null,
  usage: null,
  log: [],
  freshAnswer: true,
};

function responseOf(output: unknown): string | undefined {
  const response = (output as { response?: unknown } | null)?.response;
  return typeof response === 'string' ? response : undefined;
}

function todosOf(args: unknown): Todo[] | undefined {
  const todos = (args as { todos?: unknown } | null)?.todos;
  if (!Array.isArray(todos)) return undefined;
  return todos.map((t) => ({ content: String((t as Todo).content ?? ''), status: String((t as Todo).status ?? 'pending') }));
}

export function applyEvent(view: RunView, event: StudioEvent): RunView {
  const log = [...view.log, { seq: event.seq, type: event.type, node: 'node' in event ? (event.node ?? null) : null }];
  const next = { ...view, log };
  switch (event.type) {
    case 'run_start':
      // A resume continues the picture of the run it resumes; a new run starts a fresh one.
      if (event.resumed_from === null || view.runId !== event.run_id) return { ...idleRun, log, runId: event.run_id, status: 'running' };
      return { ...next, status: 'running', paused: null, error: null };
    case 'node_start':
      return { ...next, active: event.node, freshAnswer: true };
    case 'node_end':
      return { ...next, active: null, visited: [...view.visited, event.node], answer: responseOf(event.output) ?? view.answer };
    case 'message_chunk':
      return { ...next, answer: view.freshAnswer ? event.content : view.answer + event.content, freshAnswer: false };
    case 'subagent_start':
      return { ...next, subagents: [...view.subagents, { name: event.node, query: event.query, done: false }] };
    case 'subagent_end':
      return { ...next, subagents: view.subagents.map((s) => (s.name === event.node && !s.done ? { ...s, done: true } : s)) };
    case 'task_update':
      return { ...next, tools: [...view.tools, { tool: event.tool, args: event.args }], todos: todosOf(event.args) ?? view.todos };
    case 'tool_start':
      return { ...next, tools: [...view.tools, { tool: event.name, args: event.arguments, callId: event.call_id, state: 'running' }] };
    case 'tool_end': {
      const ended = (t: ToolCallView): ToolCallView => ({
        ...t,
        args: event.arguments,
        state: event.error !== undefined ? 'error' : 'ok',
        ...(event.error !== undefined ? { error: event.error } : { result: event.result }),
        durationMs: event.duration_ms,
      });
      // A stored run replayed from the middle may lack the start: the end alone still shows the call.
      const known = view.tools.some((t) => t.callId === event.call_id && t.state === 'running');
      const tools = known
        ? view.tools.map((t) => (t.callId === event.call_id && t.state === 'running' ? ended(t) : t))
        : [...view.tools, ended({ tool: event.name, args: event.arguments, callId: event.call_id })];
      return { ...next, tools };
    }
    case 'breakpoint_hit':
      return {
        ...next,
        active: null,
        paused: {
          node: event.node,
          reason: event.reason,
          message: event.message ?? '',
          checkpointId: event.checkpoint_id,
          ...(event.payload ? { payload: event.payload } : {}),
        },
      };
    case 'run_complete': {
      const usage = event.usage
        ? {
            prompt: event.usage.prompt_tokens,
            completion: event.usage.completion_tokens,
            cost: event.usage.cost ?? null,
            currency: event.usage.currency ?? null,
          }
        : null;
      return { ...next, status: event.status, answer: event.response || view.answer, durationMs: event.duration_ms, usage, active: null };
    }
    case 'run_error':
      return { ...next, status: 'error', error: { message: event.error, node: event.node }, active: null };
    case 'done':
      return {
        ...next,
        status: event.status,
        active: null,
        paused: event.status === 'breakpoint' || event.status === 'interrupted' ? view.paused : null,
      };
    default:
      return next;
  }
}
