/**
 * What a finished or failed agent run becomes for its caller: the invoke response (with usage
 * when a model was called), the passages an optimizer reads, and a throw turned into an error the
 * person can act on.
 */
import { errorMessage, fail, HangarError } from '../kernel/errors.js';
import type { Logger } from '../kernel/log.js';
import { cleanStack } from '../kernel/stack.js';
import { NodeError, type RunOutcome } from './engine.js';
import type { Agent } from './kind.js';
import type { InvokeResponse } from './schemas.js';
import type { AgentResult } from './types.js';

/** The invoke response of a finished run of `agent` with prompt `promptVersion`. */
export function invokeResponse(agent: Pick<Agent, 'slug'>, promptVersion: string, outcome: RunOutcome): InvokeResponse {
  const result: AgentResult = outcome.result;
  return {
    response: result.response,
    output: result.output ?? null,
    agent_type: agent.slug,
    thread_id: outcome.thread_id,
    suggestions: result.suggestions ?? [],
    citations: result.citations ?? [],
    steps_taken: result.steps_taken ?? [],
    context: result.context ?? null,
    // Only a run that called a model has usage to report (most stateless invokes do not).
    metadata: outcome.usage.calls.length
      ? { ...result.metadata, prompt_version: promptVersion, run_id: outcome.run_id, usage: outcome.usage }
      : { ...result.metadata, prompt_version: promptVersion, run_id: outcome.run_id },
    duration_ms: outcome.duration_ms,
  };
}

/**
 * A run's throw as the person can act on it: the 500 names the line of their file that threw
 * (`file`, `line`, `column`) and carries the stack mapped to their sources, without Hangar's own
 * frames unless HANGAR_DEBUG=1 (core/kernel/stack.ts); the terminal gets the same stack.
 */
export function runFailure(agentName: string, err: unknown, log: Pick<Logger, 'error'>): HangarError {
  const cause = err instanceof NodeError ? err.cause : err;
  if (cause instanceof HangarError) return cause;
  const node = err instanceof NodeError ? ` at node '${err.node}'` : '';
  const message = errorMessage(cause);
  const clean = cause instanceof Error && cause.stack ? cleanStack(cause.stack) : undefined;
  const top = clean?.top;
  log.error(`agent ${agentName} failed${node}: ${message}${clean?.frames.length ? `\n    ${clean.frames.join('\n    ')}` : ''}`);
  // `detail` stays the message alone: tasks and A2A record it as their error text.
  return fail(
    'HANGAR_AGENT_FAILED',
    { agent: agentName, at: node, problem: message },
    {
      fields: {
        error: message,
        file: top?.file ?? null,
        line: top?.line ?? null,
        column: top?.column ?? null,
        stack: clean?.frames ?? [],
      },
    },
  );
}

/** Passages the agent retrieved, as strings: from `context` (array or `{documents}`) or citations. */
export function retrievalContext(result: AgentResult): string[] {
  const asText = (item: unknown): string => {
    if (typeof item === 'string') return item;
    if (item && typeof item === 'object') {
      const o = item as Record<string, unknown>;
      for (const k of ['content', 'text', 'snippet', 'page_content']) if (typeof o[k] === 'string') return o[k] as string;
    }
    return JSON.stringify(item);
  };
  const context = result.context as unknown;
  if (Array.isArray(context)) return context.map(asText);
  if (context && typeof context === 'object') {
    const docs = (context as Record<string, unknown>).documents ?? (context as Record<string, unknown>).passages;
    if (Array.isArray(docs)) return docs.map(asText);
  }
  if (typeof context === 'string' && context) return [context];
  return (result.citations ?? []).map((c) => c.snippet).filter((s): s is string => typeof s === 'string');
}
