/**
 * The one way Hangar reaches an OpenAI-compatible chat-completions endpoint (OpenAI, Ollama,
 * llama.cpp server, vLLM, LM Studio): the `openai` client, which supplies timeouts, retries with
 * exponential backoff (on connection errors, 408/409/429 and 5xx) and cancellation, plus the
 * conversions between our flat messages and tool calls and the protocol's nested ones.
 *
 * Agents and coding runs each map the library's errors onto their own (a 502 for an HTTP caller, a
 * retryable `ModelError` for the harness), so that stays with them.
 */
import type OpenAI from 'openai';

export type OpenAISdk = typeof import('openai');
let sdk: Promise<OpenAISdk> | undefined;
/** The client library is loaded by the first model call, not at every start (~60 ms of it). */
export const loadOpenAI = (): Promise<OpenAISdk> => (sdk ??= import('openai'));

/** Everything that makes one client differ from another. */
export interface EndpointClientSettings {
  baseUrl: string;
  /**
   * The resolved key. Local servers (Ollama, llama.cpp) need none, but the client insists on one:
   * an empty key is sent as a dummy bearer token, which they ignore.
   */
  apiKey: string;
  timeoutMs: number;
  /** Retries after the first attempt. */
  retries: number;
  /** Sent with every request (a gateway's routing or tenant header). */
  headers?: Readonly<Record<string, string>>;
}

/** Clients kept at once; settings rarely change, so a handful covers every endpoint in use. */
const CACHED_CLIENTS = 16;
const clients = new Map<string, Promise<OpenAI>>();

/**
 * The client for these settings, made by the first call that needs it and shared by every later
 * one with the same settings (its connection pool included). A change of any setting, a rotated
 * key for one, gets a client of its own; the least recently used one is dropped past `CACHED_CLIENTS`.
 */
export function endpointClient(settings: EndpointClientSettings): Promise<OpenAI> {
  const apiKey = settings.apiKey || 'not-needed';
  const key = JSON.stringify([settings.baseUrl, apiKey, settings.timeoutMs, settings.retries, settings.headers ?? null]);
  let client = clients.get(key);
  if (client) {
    clients.delete(key);
  } else {
    client = loadOpenAI().then(
      (openai) =>
        new openai.default({
          baseURL: settings.baseUrl,
          apiKey,
          timeout: settings.timeoutMs,
          maxRetries: settings.retries,
          ...(settings.headers ? { defaultHeaders: { ...settings.headers } } : {}),
        }),
    );
    if (clients.size >= CACHED_CLIENTS) clients.delete(clients.keys().next().value!);
  }
  clients.set(key, client);
  return client;
}

/** A tool as the model sees it: a name, what it does, and the JSON Schema of its arguments. */
export interface ToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

/** A tool call as the model sent it; `arguments` is raw JSON text (maybe malformed: the caller parses). */
export interface ModelToolCall {
  id: string;
  name: string;
  arguments: string;
}

/** A message in our flat shape: an assistant's tool calls beside its text, a tool's answer naming its call. */
export interface FlatMessage {
  role: 'system' | 'user' | 'assistant' | 'tool';
  content: string | null;
  tool_calls?: readonly ModelToolCall[];
  tool_call_id?: string;
}

/** Our flat message in the protocol's shape (tool calls nested under `function`); other fields are not sent. */
export function toWireMessage(message: FlatMessage): OpenAI.Chat.ChatCompletionMessageParam {
  if (message.role === 'tool') return { role: 'tool', tool_call_id: message.tool_call_id ?? '', content: message.content ?? '' };
  if (message.role === 'assistant' && message.tool_calls?.length) {
    return {
      role: 'assistant',
      content: message.content,
      tool_calls: message.tool_calls.map((c) => ({
        id: c.id,
        type: 'function' as const,
        function: { name: c.name, arguments: c.arguments },
      })),
    };
  }
  return { role: message.role, content: message.content ?? '' };
}

export function toWireTools(tools: readonly ToolSpec[]): OpenAI.Chat.ChatCompletionFunctionTool[] {
  return tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: t.parameters } }));
}

/** The function calls of a completion's message, flat (other kinds of tool call are not ours). */
export function toolCallsOf(message: OpenAI.Chat.ChatCompletionMessage | undefined): ModelToolCall[] {
  return (message?.tool_calls ?? [])
    .filter((c): c is OpenAI.Chat.ChatCompletionMessageFunctionToolCall => c.type === 'function')
    .map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments ?? '' }));
}
