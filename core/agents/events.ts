/**
 * The typed event stream of a run. The studio (runs/stream, resume), invoke streams and A2A task
 * progress are all projections of these events, so this union is the contract between the
 * runtime and everything that watches it. Handle it with an exhaustive `switch` (see
 * `assertNever`).
 *
 * `node` follows the spec's "Node field" column: the node name, the model name for
 * `message_chunk`, the subagent name, or `planning:<tool>` for `task_update`.
 *
 * Decision (spec silent on payloads): every event carries `run_id`, `thread_id` and an ISO
 * `timestamp`. A HITL suspension is reported as `breakpoint_hit` with `reason: 'interrupt'` (plus the
 * approval message) because the spec's list has no separate interrupt event and the studio treats
 * both the same way: the run is paused at a node and can be resumed.
 */

import type { InvokeFrame } from './streams.js';
import type { AgentState } from './types.js';
import type { RunUsage } from './usage.js';

interface Base {
  run_id: string;
  thread_id: string;
  timestamp: string;
}

/** Why a run stopped: finished, paused (interrupt/breakpoint), rejected at an approval, cancelled. */
export type RunStatus = 'completed' | 'interrupted' | 'breakpoint' | 'rejected' | 'cancelled' | 'error';

export type RunEvent =
  | (Base & { type: 'run_start'; agent: string; input: { query: string; user_id: string }; resumed_from: string | null })
  | (Base & { type: 'node_start'; node: string; step: number })
  | (Base & { type: 'node_end'; node: string; step: number; output: unknown; checkpoint_id: string })
  | (Base & { type: 'message_chunk'; node: string; content: string })
  | (Base & { type: 'subagent_start'; node: string; query: string })
  | (Base & { type: 'subagent_end'; node: string; output: unknown })
  | (Base & { type: 'task_update'; node: `planning:${string}`; tool: string; args: unknown })
  /** A tool call of the model's tool loop, in the graph node that made it; `arguments` as parsed (raw text when not JSON). */
  | (Base & { type: 'tool_start'; node: string; call_id: string; name: string; arguments: unknown })
  /** Its end: `result` when it succeeded, else `error` (what the model was told). */
  | (Base & {
      type: 'tool_end';
      node: string;
      call_id: string;
      name: string;
      arguments: unknown;
      result?: unknown;
      error?: string;
      duration_ms: number;
    })
  | (Base & {
      type: 'breakpoint_hit';
      node: string;
      reason: 'breakpoint' | 'interrupt';
      checkpoint_id: string;
      message?: string;
      payload?: Record<string, unknown>;
    })
  /** `usage`: the run's tokens (and cost, with a price table) when it called a model. */
  | (Base & { type: 'run_complete'; status: RunStatus; response: string; steps_taken: string[]; duration_ms: number; usage?: RunUsage })
  | (Base & { type: 'run_error'; error: string; node: string | null; cancelled?: boolean });

export type RunEventType = RunEvent['type'];

/** Distributes over the union so each member keeps its own fields. */
type WithoutBase<E> = E extends unknown ? Omit<E, keyof Base> : never;
export type RunEventBody = WithoutBase<RunEvent>;

export type EventSink = (event: RunEvent) => void;

export function assertNever(value: never): never {
  throw new Error(`unhandled event ${JSON.stringify(value)}`);
}

/** A short, JSON-safe copy of a node's output for `node_end` (state deltas can hold big arrays). */
export function summariseOutput(output: Partial<AgentState> | void | undefined): unknown {
  if (output === undefined || output === null) return null;
  return JSON.parse(JSON.stringify(output)) as unknown;
}

/**
 * A tool call as a stream frame: the run event's fields (name, call_id, arguments, then result or
 * error and duration_ms) beside the response and steps every frame carries.
 */
export function toolFrame(event: Extract<RunEvent, { type: 'tool_start' | 'tool_end' }>, response: string, steps: string[]): InvokeFrame {
  const { type, run_id: _run, thread_id: _thread, timestamp: _time, ...fields } = event;
  return { event: type, ...fields, response, steps_taken: steps };
}
