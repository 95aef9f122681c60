/**
 * Model providers: the one way agents reach a chat model. The runtime wraps a provider into the
 * `ModelClient` an agent sees (`ctx.model`), adding token events and the request's overrides.
 *
 * The OpenAI-compatible provider speaks /v1/chat/completions through the `openai` client, so it
 * works with OpenAI, Ollama, llama.cpp server, vLLM and LM Studio. The client supplies timeouts,
 * retries with exponential backoff (on connection errors, 408/409/429 and 5xx) and cancellation.
 */
import type OpenAI from 'openai';

type OpenAISdk = typeof import('openai');
let sdk: Promise<OpenAISdk> | undefined;
/** The client library is loaded by the first model call, not at every start (~60 ms of it). */
export const loadOpenAI = (): Promise<OpenAISdk> => (sdk ??= import('openai'));
import { HttpError, badGateway, errorMessage, gatewayTimeout } from '../http/errors.js';
import { resolveSecret } from '../kernel/settings.js';
import type { ChatMessage } from './types.js';

export interface ModelSettings {
  baseUrl?: string;
  /** A literal key or a `${ENV_NAME}` reference, resolved on every call and never logged. */
  apiKey?: string;
  model: string;
  timeoutMs: number;
  retries: number;
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
  complete(request: CompletionRequest): Promise<string>;
}

/**
 * Decision: an agent that needs a model when none is configured answers 503 — the server works,
 * this deployment is just not set up for that agent — with a detail naming both ways to set it.
 */
export function modelNotConfigured(agent?: string): HttpError {
  const who = agent ? `agent '${agent}' needs a chat model` : 'a chat model is needed';
  return new HttpError(
    503,
    `${who} but none is configured: set model.baseUrl (and model.model, model.apiKey) in hangar.config.json, ` +
      'or the environment variables HANGAR_MODEL__BASE_URL, HANGAR_MODEL__MODEL and HANGAR_MODEL__API_KEY ' +
      '(e.g. http://127.0.0.1:11434/v1 for Ollama)',
  );
}

/** Raised when the run's signal aborts a model call; the engine reports the run as cancelled. */
export class ModelCallAborted extends Error {
  constructor() {
    super('model call aborted');
    this.name = 'AbortError';
  }
}

export class UnconfiguredProvider implements ModelProvider {
  readonly configured = false;
  readonly model = 'none';

  async complete(): Promise<string> {
    throw modelNotConfigured();
  }
}

export class OpenAICompatibleProvider implements ModelProvider {
  readonly configured = true;
  readonly model: string;

  constructor(
    private readonly settings: ModelSettings & { baseUrl: string },
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {
    this.model = settings.model;
  }

  async complete(request: CompletionRequest): Promise<string> {
    const openai = await loadOpenAI();
    const client = new openai.default({
      baseURL: this.settings.baseUrl,
      // Local servers (Ollama, llama.cpp) need no key, but the client insists on one; a dummy
      // value is sent as the bearer token and ignored by them.
      apiKey: this.apiKey(),
      timeout: this.settings.timeoutMs,
      maxRetries: this.settings.retries,
    });
    const body = {
      model: request.model ?? this.settings.model,
      messages: request.messages.map((m) => ({ role: m.role, content: m.content })) as OpenAI.Chat.ChatCompletionMessageParam[],
      ...(request.temperature != null ? { temperature: request.temperature } : {}),
      ...(request.max_tokens != null ? { max_tokens: request.max_tokens } : {}),
    };
    const options = { signal: request.signal };
    try {
      if (!request.onToken) {
        const completion = await client.chat.completions.create({ ...body, stream: false }, options);
        return completion.choices[0]?.message?.content ?? '';
      }
      const stream = await client.chat.completions.create({ ...body, stream: true }, options);
      let text = '';
      for await (const chunk of stream) {
        const token = chunk.choices[0]?.delta?.content;
        if (!token) continue;
        text += token;
        request.onToken(token);
      }
      // The client's stream iterator ends quietly when aborted mid-body; a partial answer must not
      // pass for a whole one.
      if (request.signal?.aborted) throw new ModelCallAborted();
      return text;
    } catch (err) {
      throw mapModelError(err, openai, request.signal);
    }
  }

  private apiKey(): string {
    let key: string | undefined;
    try {
      key = resolveSecret(this.settings.apiKey, this.env);
    } catch (err) {
      throw new HttpError(503, `model.apiKey: ${errorMessage(err)}`);
    }
    return key || 'not-needed';
  }
}

/** Library errors mapped onto ours: an upstream failure is a 502 naming the status it gave. */
function mapModelError(err: unknown, openai: OpenAISdk, signal?: AbortSignal): Error {
  if (err instanceof HttpError) return err;
  if (err instanceof openai.APIUserAbortError || signal?.aborted) return new ModelCallAborted();
  if (err instanceof openai.APIConnectionTimeoutError) return gatewayTimeout('model endpoint timed out');
  if (err instanceof openai.APIError) {
    return badGateway(
      err.status ? `model endpoint answered ${err.status}: ${err.message}` : `model endpoint unreachable: ${err.message}`,
    );
  }
  return badGateway(`model call failed: ${errorMessage(err)}`);
}

export function createModelProvider(settings: ModelSettings | undefined, env: NodeJS.ProcessEnv = process.env): ModelProvider {
  if (!settings?.baseUrl) return new UnconfiguredProvider();
  return new OpenAICompatibleProvider({ ...settings, baseUrl: settings.baseUrl }, env);
}
