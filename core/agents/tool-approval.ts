/**
 * Approval-gated tool calls (`needsApproval`): a call that needs a person's approval suspends the
 * run through the same human-approval path an approval node takes (`ctx.interrupt`: a pending
 * approval, the 202, the approve and reject routes, the UI), as the OpenAI Agents SDK's
 * `needsApproval` and LangGraph's `interrupt()` before a tool do.
 *
 * What differs from an approval node, as the AI SDK's and the OpenAI Agents SDK's users expect:
 * - a rejection does not end the run: the call's result is `denied by the user: <reason>`, which
 *   the model reads, and the run goes on;
 * - the person may approve with edited arguments (`arguments` on approve); they are validated
 *   against the tool's input schema like the model's, and an edit the schema refuses becomes the
 *   call's error result (the model reads it), not a 400 — the route cannot know every tool's schema;
 * - the decision is not merged into `state.metadata`: it belongs to one call, not the run.
 */
import type { PendingInterrupt } from './checkpointer.js';

/** `payload.kind` of the interrupt a gated call raises. */
export const TOOL_APPROVAL = 'tool_call';

/** What the pending approval shows the person (its `payload`). */
export interface ToolApprovalRequest {
  kind: typeof TOOL_APPROVAL;
  /** The graph node the call is made in. */
  node: string;
  call_id: string;
  tool: string;
  /** The model's arguments, as validated by the tool's input schema. */
  arguments: unknown;
}

/** The person's decision, as the interrupted call receives it on resume. */
export interface ToolApprovalAnswer {
  approved: boolean;
  reason?: string | null;
  /** Arguments the person edited; absent when the model's stand. */
  arguments?: unknown;
}

export function isToolApproval(interrupt: Pick<PendingInterrupt, 'payload'> | undefined): boolean {
  return interrupt?.payload.kind === TOOL_APPROVAL;
}

export function approvalMessage(tool: string, args: unknown): string {
  return `Run tool '${tool}' with ${JSON.stringify(args)}?`;
}

/** The result the model reads for a rejected call. */
export function deniedResult(reason: string | null | undefined): string {
  return `denied by the user: ${reason?.trim() || 'no reason given'}`;
}
