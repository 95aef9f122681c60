/**
 * Model providers: the one way agents reach a chat model. The runtime wraps a provider into the
 * `ModelClient` an agent sees (`ctx.model`), adding token events and the request's overrides.
 *
 * The OpenAI-compatible provider speaks /v1/chat/completions through core/lib/model-client.ts, so
 * it works with OpenAI, Ollama, llama.cpp server, vLLM and LM Studio, with the client's timeouts,
 * retries and cancellation.
 *
 * `turn` is one model call with everything the protocol carries: tools, a tool choice, a response
 * format, and back the text, the tool calls (whole or assembled from streamed deltas) and the token
 * usage. `complete` is the text of a turn, for callers that want only that (thread summaries).
 */
import type OpenAI from 'openai';
import { errorMessage, fail, HangarError } from '../kernel/errors.js';
import { resolveSecret } from '../kernel/settings.js';
import {
  endpointClient,
  loadOpenAI,
  type ModelToolCall,
  type OpenAISdk,
  type ToolSpec,
  toolCallsOf,
  toWireMessage,
  toWireTools,
} from '../lib/model-client.js';
import type { ChatMessage } from './types.js';
import type { ModelPrice, Pricing } from './usage.js';

export interface ModelSettings {
  baseUrl?: string;
  /** A literal key or a `${ENV_NAME}` reference, resolved on every call and never logged. */
  apiKey?: string;
  model: string;
  timeoutMs: number;
  retries: number;
  /** Default `maxSteps` of the tool loop (setting `model.maxSteps`). */
  maxSteps?: number;
  /** Prices per million tokens by model (setting `model.prices`), in `currency`. */
  prices?: Record<string, ModelPrice>;
  currency?: string;
}

/** `auto` (the model decides), `none`, `required` (some tool), or one named tool. */
export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

/** The protocol's messages: chat messages plus the assistant's tool calls and the tools' answers. */
export type ModelMessage =
  | ChatMessage
  | { role: 'assistant'; content: string | null; tool_calls: ModelToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/** Token counts as the server reported them; null when it reported none (some local servers). */
export interface TokenUsage {
  prompt_tokens: number | null;
  completion_tokens: number | null;
}

/** What one model call answered. */
export interface ModelTurn {
  model: string;
  content: string;
  tool_calls: ModelToolCall[];
  /** The server's `finish_reason`: `stop`, `tool_calls`, `length`, … */
  finish_reason: string | null;
  usage: TokenUsage;
}

export interface ResponseFormat {
  type: 'json_schema';
  json_schema: { name: string; description?: string; schema: Record<string, unknown>; strict?: boolean };
}

export interface TurnRequest extends Omit<CompletionRequest, 'messages'> {
  messages: ModelMessage[];
  tools?: ToolSpec[];
  tool_choice?: ToolChoice;
  response_format?: ResponseFormat;
}

export interface CompletionRequest {
  messages: ChatMessage[];
  model?: string;
  temperature?: number | null;
  max_tokens?: number | null;
  signal?: AbortSignal;
  /** Called with each streamed token; when absent the request is not streamed. */
  onToken?: (token: string) => void;
}

export interface ModelProvider {
  /** False when nothing is configured: calls fail with `modelNotConfigured`. */
  readonly configured: boolean;
  /** The default model name (what `message_chunk` events carry in `node`). */
  readonly model: string;
  /** Default `maxSteps` of the tool loop. */
  readonly maxSteps: number;
  /** The price table runs are costed with; absent when the settings have none (usage.ts). */
  readonly pricing?: Pricing;
  complete(request: CompletionRequest): Promise<string>;
  turn(request: TurnRequest): Promise<ModelTurn>;
}

/**
 * Decision: an agent that needs a model when none is configured answers 503 — the server works,
 * this deployment is just not set up for that agent — with a detail naming both ways to set it.
 */
export function modelNotConfigured(agent?: string): HangarError {
  return fail('HANGAR_AGENT_MODEL_NOT_CONFIGURED', { who: agent ? `agent '${agent}' needs a chat model` : 'a chat model is needed' });
}

/** Raised when the run's signal aborts a model call; the engine reports the run as cancelled. */
export class ModelCallAborted extends Error {
  constructor() {
    super('model call aborted');
    this.name = 'AbortError';
  }
}

/** The setting's default; see `model.maxSteps` in core/kernel/settings.ts. */
export const DEFAULT_MAX_STEPS = 20;

export class UnconfiguredProvider implements ModelProvider {
  readonly configured = false;
  readonly model = 'none';
  readonly maxSteps = DEFAULT_MAX_STEPS;

  async complete(): Promise<string> {
    throw modelNotConfigured();
  }

  async turn(): Promise<ModelTurn> {
    throw modelNotConfigured();
  }
}

export class OpenAICompatibleProvider implements ModelProvider {
  readonly configured = true;
  readonly model: string;
  readonly maxSteps: number;
  readonly pricing?: Pricing;

  constructor(
    private readonly settings: ModelSettings & { baseUrl: string },
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.model = settings.model;
    this.maxSteps = settings.maxSteps ?? DEFAULT_MAX_STEPS;
    if (settings.prices && Object.keys(settings.prices).length)
      this.pricing = { prices: settings.prices, currency: settings.currency ?? 'USD' };
  }

  async complete(request: CompletionRequest): Promise<string> {
    return (await this.turn(request)).content;
  }

  async turn(request: TurnRequest): Promise<ModelTurn> {
    const openai = await loadOpenAI();
    // The key is resolved on every call, so a changed `${ENV}` secret takes effect at once.
    const client = await endpointClient({
      baseUrl: this.settings.baseUrl,
      apiKey: this.apiKey(),
      timeoutMs: this.settings.timeoutMs,
      retries: this.settings.retries,
    });
    const model = request.model ?? this.settings.model;
    const body = {
      model,
      messages: request.messages.map(toWireMessage),
      ...(request.temperature != null ? { temperature: request.temperature } : {}),
      ...(request.max_tokens != null ? { max_tokens: request.max_tokens } : {}),
      ...(request.tools?.length
        ? {
            tools: toWireTools(request.tools),
            ...(request.tool_choice ? { tool_choice: toolChoiceWire(request.tool_choice) } : {}),
          }
        : {}),
      ...(request.response_format ? { response_format: request.response_format } : {}),
    };
    const options = { signal: request.signal };
    try {
      if (!request.onToken) {
        const completion = await client.chat.completions.create({ ...body, stream: false }, options);
        const choice = completion.choices[0];
        return {
          model,
          content: choice?.message?.content ?? '',
          tool_calls: toolCallsOf(choice?.message),
          finish_reason: choice?.finish_reason ?? null,
          usage: usageOf(completion.usage),
        };
      }
      // include_usage: the last chunk then carries the call's token counts (OpenAI, vLLM, Ollama,
      // llama.cpp and LM Studio all send it); without it a streamed call reports no usage.
      const stream = await client.chat.completions.create({ ...body, stream: true, stream_options: { include_usage: true } }, options);
      let text = '';
      let finish: string | null = null;
      let usage: TokenUsage = { prompt_tokens: null, completion_tokens: null };
      // Streamed tool calls arrive as deltas keyed by `index`: the first names the call, later
      // ones append to its arguments.
      const calls: ModelToolCall[] = [];
      for await (const chunk of stream) {
        if (chunk.usage) usage = usageOf(chunk.usage);
        const choice = chunk.choices[0];
        if (!choice) continue;
        if (choice.finish_reason) finish = choice.finish_reason;
        for (const delta of choice.delta?.tool_calls ?? []) {
          const call = (calls[delta.index] ??= { id: '', name: '', arguments: '' });
          if (delta.id) call.id = delta.id;
          if (delta.function?.name) call.name += delta.function.name;
          if (delta.function?.arguments) call.arguments += delta.function.arguments;
        }
        const token = choice.delta?.content;
        if (!token) continue;
        text += token;
        request.onToken(token);
      }
      // The client's stream iterator ends quietly when aborted mid-body; a partial answer must not
      // pass for a whole one.
      if (request.signal?.aborted) throw new ModelCallAborted();
      return { model, content: text, tool_calls: calls.filter(Boolean), finish_reason: finish, usage };
    } catch (err) {
      throw mapModelError(err, openai, request.signal);
    }
  }

  private apiKey(): string {
    let key: string | undefined;
    try {
      key = resolveSecret(this.settings.apiKey, this.env);
    } catch (err) {
      throw fail('HANGAR_AGENT_MODEL_API_KEY', { problem: errorMessage(err) });
    }
    return key ?? '';
  }
}

const usageOf = (usage: OpenAI.CompletionUsage | null | undefined): TokenUsage => ({
  prompt_tokens: usage?.prompt_tokens ?? null,
  completion_tokens: usage?.completion_tokens ?? null,
});

function toolChoiceWire(choice: ToolChoice): OpenAI.Chat.ChatCompletionToolChoiceOption {
  return typeof choice === 'string' ? choice : { type: 'function', function: { name: choice.name } };
}

/**
 * The model endpoint refused or failed a call: a 502 that keeps the status it answered, so
 * structured output can tell a refused response format (400, 422) from a failure.
 */
export class ModelEndpointError extends HangarError {
  constructor(
    problem: string,
    /** The endpoint's HTTP status; null when it never answered. */
    readonly upstream: number | null,
  ) {
    const { status, detail, code } =
      upstream === null ? fail('HANGAR_AGENT_MODEL_UNREACHABLE', { problem }) : fail('HANGAR_AGENT_MODEL_REFUSED', { upstream, problem });
    super(status, detail, {}, {}, code);
  }
}

/** Library errors mapped onto ours: an upstream failure is a 502 naming the status it gave. */
function mapModelError(err: unknown, openai: OpenAISdk, signal?: AbortSignal): Error {
  if (err instanceof HangarError) return err;
  if (err instanceof openai.APIUserAbortError || signal?.aborted) return new ModelCallAborted();
  if (err instanceof openai.APIConnectionTimeoutError) return fail('HANGAR_AGENT_MODEL_TIMEOUT', {});
  if (err instanceof openai.APIError) return new ModelEndpointError(err.message, err.status || null);
  return fail('HANGAR_AGENT_MODEL_FAILED', { problem: errorMessage(err) });
}

export function createModelProvider(settings: ModelSettings | undefined, env: NodeJS.ProcessEnv = process.env): ModelProvider {
  if (!settings?.baseUrl) return new UnconfiguredProvider();
  return new OpenAICompatibleProvider({ ...settings, baseUrl: settings.baseUrl }, env);
}
