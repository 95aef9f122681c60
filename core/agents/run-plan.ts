/**
 * What an agent run is before it starts: its agent, input and prompt, whether its checkpoints are
 * kept, who it is for, where it came from, and its deadline (see "Deadlines" in `service.ts`).
 */
import { randomUUID } from 'node:crypto';
import type { Agent } from './kind.js';
import { modelNotConfigured } from './model.js';
import { resolvePrompt } from './prompts.js';
import type { InvokeRequest } from './schemas.js';
import type { AgentInput, ChatMessage } from './types.js';

/** How a run came to be: the route (for the approvals list) and the board task that ran it. */
export interface RunOrigin {
  source: string;
  task_id?: string;
}

export interface RunPlan {
  agent: Agent;
  input: AgentInput;
  promptVersion: string;
  prompt: string;
  persistent: boolean;
  /** Who the run is for; undefined for the platform's own runs (owned by `local`). */
  principal?: string;
  origin: RunOrigin;
  /** The run's deadline (see "Deadlines" in `service.ts`). */
  timeoutMs: number;
}

/** The deadline of a run whose agent and request name none (the default of `agents.timeoutMs`). */
const DEFAULT_TIMEOUT_MS = 300_000;

/** The agent's own deadline: its `timeout_ms`, else `agents.timeoutMs` (`defaultTimeoutMs`). */
export function deadlineOf(agent: Pick<Agent, 'definition'>, defaultTimeoutMs: number | undefined): number {
  return agent.definition.timeout_ms ?? defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS;
}

/** Plan a run of `agent` for `request`; 503 when the agent needs a model and none is configured. */
export function planRun(
  agent: Agent,
  request: Partial<Omit<InvokeRequest, 'query'>> & { query: string },
  history: ChatMessage[],
  principal: string | undefined,
  origin: RunOrigin,
  settings: { modelConfigured: boolean; defaultTimeoutMs?: number },
): RunPlan {
  const prompt = resolvePrompt(agent, request.prompt_version);
  if (agent.definition.requiresModel && !settings.modelConfigured) throw modelNotConfigured(agent.name);
  const input: AgentInput = {
    query: request.query,
    user_id: request.user_id ?? 'default-user',
    context: request.context ?? {},
    // A stateless run's thread is never listed, so it needs no time order (randomUUID is ~15× cheaper).
    thread_id: request.thread_id ?? randomUUID(),
    metadata: request.metadata ?? {},
    prompt_version: prompt.version,
    temperature: request.temperature ?? null,
    max_tokens: request.max_tokens ?? null,
    history,
  };
  const own = deadlineOf(agent, settings.defaultTimeoutMs);
  // A caller may shorten a run freely and lengthen it only up to what the workspace allows.
  const cap = Math.max(own, settings.defaultTimeoutMs ?? DEFAULT_TIMEOUT_MS);
  const timeoutMs = request.timeout_ms === undefined ? own : Math.min(request.timeout_ms, cap);
  return {
    agent,
    input,
    promptVersion: prompt.version,
    prompt: prompt.text,
    persistent: !!request.thread_id,
    principal,
    origin,
    timeoutMs,
  };
}
