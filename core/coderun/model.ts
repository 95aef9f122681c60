/**
 * How the harness talks to a chat model: OpenAI-compatible chat completions with tool calls,
 * through the client of core/lib/model-client.ts (the one the agent runtime's provider uses too).
 *
 * One `ModelGate` per run holds the run-wide `max_parallel` bound: every model call of the run —
 * planner, agent loops in workers, reviewers, calibration — waits for a slot here, so the bound is
 * one number whatever the number of workers. It also picks the model for a call: an agent's own
 * pin, else the task's rung of `model_escalation` when it has been escalated, else `model_roles`
 * for the role, else the configured default.
 */
import { errorMessage } from '../kernel/errors.js';
import { resolveSecret } from '../kernel/settings.js';
import {
  endpointClient,
  loadOpenAI,
  type ModelToolCall,
  type ToolSpec,
  toolCallsOf,
  toWireMessage,
  toWireTools,
} from '../lib/model-client.js';

// core/coderun/review.ts (mid-split) still takes ToolSpec from here; once it imports core/lib/model-client.ts directly, this line goes.
export type { ToolSpec } from '../lib/model-client.js';

export type Message =
  | { role: 'system' | 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: ModelToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

export interface ModelReply {
  content: string | null;
  tool_calls: ModelToolCall[];
  model: string;
  ms: number;
  completion_tokens: number | null;
  prompt_tokens: number | null;
}

export interface ModelCall {
  role: string;
  messages: Message[];
  tools?: ToolSpec[];
  /** 0 = the role's model; k ≥ 1 = the k-th model of `model_escalation`. */
  rung?: number;
  /** An agent's own model pin. */
  model?: string;
  signal?: AbortSignal;
  max_tokens?: number;
}

export interface EndpointSettings {
  baseUrl?: string;
  apiKey?: string;
  model: string;
  timeoutMs: number;
  retries: number;
}

export class ModelError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
  ) {
    super(message);
    this.name = 'ModelError';
  }
}

/** A counting semaphore; waiters are served first come, first served. */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(readonly limit: number) {}

  get inFlight(): number {
    return this.active;
  }

  /** The most calls that were ever in flight at once (measured, for the run report). */
  peak = 0;

  async use<T>(fn: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.active >= this.limit) {
      await new Promise<void>((resolve, reject) => {
        const go = () => {
          signal?.removeEventListener('abort', abort);
          resolve();
        };
        const abort = () => {
          const i = this.waiting.indexOf(go);
          if (i >= 0) this.waiting.splice(i, 1);
          reject(new ModelError('model call cancelled', false));
        };
        signal?.addEventListener('abort', abort, { once: true });
        this.waiting.push(go);
      });
    }
    this.active++;
    this.peak = Math.max(this.peak, this.active);
    try {
      return await fn();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

export class ModelGate {
  readonly slots: Semaphore;
  private readonly apiKey: string;
  calls = 0;

  constructor(
    private readonly endpoint: EndpointSettings,
    private readonly options: { maxParallel: number; modelRoles: Record<string, string>; escalation: string[] },
  ) {
    this.slots = new Semaphore(options.maxParallel);
    // Resolved now, so a missing secret is reported when the gate is made, not at the first call.
    this.apiKey = endpoint.baseUrl ? (resolveSecret(endpoint.apiKey) ?? '') : '';
  }

  get configured(): boolean {
    return Boolean(this.endpoint.baseUrl);
  }

  /** Rungs above the role's model a task can still climb. */
  get ladderLength(): number {
    return this.options.escalation.length;
  }

  modelFor(call: Pick<ModelCall, 'role' | 'rung' | 'model'>): string {
    if (call.model) return call.model;
    const rung = call.rung ?? 0;
    if (rung > 0 && this.options.escalation.length) return this.options.escalation[Math.min(rung, this.options.escalation.length) - 1]!;
    return this.options.modelRoles[call.role] ?? this.endpoint.model;
  }

  async chat(call: ModelCall): Promise<ModelReply> {
    if (!this.configured) {
      throw new ModelError(
        'no model endpoint is configured: set model.baseUrl in hangar.config.json or HANGAR_MODEL__BASE_URL (e.g. http://127.0.0.1:11434/v1 for Ollama)',
        false,
      );
    }
    const model = this.modelFor(call);
    return this.slots.use(async () => {
      this.calls++;
      const started = performance.now();
      const openai = await loadOpenAI();
      try {
        // The client library is not loaded until a model is really used.
        const client = await endpointClient({
          baseUrl: this.endpoint.baseUrl!,
          apiKey: this.apiKey,
          timeoutMs: this.endpoint.timeoutMs,
          retries: this.endpoint.retries,
        });
        const completion = await client.chat.completions.create(
          {
            model,
            messages: call.messages.map(toWireMessage),
            ...(call.tools?.length ? { tools: toWireTools(call.tools) } : {}),
            ...(call.max_tokens ? { max_tokens: call.max_tokens } : {}),
          },
          { signal: call.signal },
        );
        const message = completion.choices[0]?.message;
        return {
          content: message?.content ?? null,
          tool_calls: toolCallsOf(message),
          model,
          ms: performance.now() - started,
          completion_tokens: completion.usage?.completion_tokens ?? null,
          prompt_tokens: completion.usage?.prompt_tokens ?? null,
        };
      } catch (err) {
        if (err instanceof openai.APIUserAbortError || call.signal?.aborted) throw new ModelError('model call cancelled', false);
        if (err instanceof openai.APIConnectionTimeoutError) throw new ModelError(`model ${model} timed out`, true);
        if (err instanceof openai.APIError)
          throw new ModelError(`model ${model} answered ${err.status ?? 'no status'}: ${err.message}`, true);
        throw new ModelError(`model ${model} call failed: ${errorMessage(err)}`, true);
      }
    }, call.signal);
  }
}

/**
 * The JSON object in a model's text answer, for models that answer in prose instead of calling
 * the tool: a ```json fence, else the outermost braces.
 */
export function jsonFromText(text: string | null): unknown {
  if (!text) return undefined;
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(text);
  const candidate = fenced ? fenced[1]! : text.slice(text.indexOf('{'), text.lastIndexOf('}') + 1);
  try {
    return JSON.parse(candidate);
  } catch {
    return undefined;
  }
}
