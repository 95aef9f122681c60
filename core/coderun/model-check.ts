/**
 * The model endpoint as the settings panel shows it, and its "test connection": one real chat
 * completion against the configured endpoint, its outcome said in words a person can act on.
 *
 * Decisions:
 * - A failed test answers 200 with `ok: false`: the test itself worked, and what it found is its
 *   result (as `/health` reports a degraded platform with a body, not an error).
 * - One request, no retries, at most 20 s: a person is waiting on the button, and a retry would
 *   hide exactly the flakiness the test is there to show.
 * - The key is never shown, nor whether its text looks right: only whether one is set, and the name
 *   of the environment variable it comes from.
 */
import { errorMessage } from '../kernel/errors.js';
import { resolveSecret } from '../kernel/settings.js';
import { endpointClient, loadOpenAI } from '../lib/model-client.js';
import type { EndpointSettings } from './model.js';
import type { ModelConnectionTest, ModelSettingsView } from './schemas.js';

const TEST_TIMEOUT_MS = 20_000;
const PROMPT = 'Reply with the single word: ok';
const ENV_REFERENCE = /^\$\{([A-Z0-9_]+)\}$/i;

export function modelSettingsView(endpoint: EndpointSettings): ModelSettingsView {
  const variable = endpoint.apiKey ? (ENV_REFERENCE.exec(endpoint.apiKey)?.[1] ?? null) : null;
  return {
    base_url: endpoint.baseUrl ?? null,
    model: endpoint.model,
    api_key: !endpoint.apiKey ? 'none' : variable ? 'environment' : 'literal',
    api_key_variable: variable,
    timeout_ms: endpoint.timeoutMs,
    retries: endpoint.retries,
  };
}

export async function testModelConnection(endpoint: EndpointSettings): Promise<ModelConnectionTest> {
  const base = endpoint.baseUrl ?? null;
  const outcome = (fields: Partial<ModelConnectionTest>): ModelConnectionTest => ({
    ok: false,
    base_url: base,
    model: endpoint.model,
    duration_ms: null,
    reply: null,
    error: null,
    ...fields,
  });
  if (!base) {
    return outcome({
      error:
        'no model endpoint is configured (set model.baseUrl in hangar.config.json or HANGAR_MODEL__BASE_URL, e.g. http://127.0.0.1:11434/v1 for Ollama)',
    });
  }
  let apiKey: string;
  try {
    apiKey = resolveSecret(endpoint.apiKey) ?? '';
  } catch (err) {
    return outcome({ error: `the API key cannot be read: ${errorMessage(err)} (set it, or change model.apiKey)` });
  }
  const timeoutMs = Math.min(endpoint.timeoutMs, TEST_TIMEOUT_MS);
  const started = performance.now();
  const openai = await loadOpenAI();
  try {
    const client = await endpointClient({ baseUrl: base, apiKey, timeoutMs, retries: 0 });
    const completion = await client.chat.completions.create({
      model: endpoint.model,
      messages: [{ role: 'user', content: PROMPT }],
      max_tokens: 8,
    });
    const duration_ms = Math.round(performance.now() - started);
    if (!Array.isArray(completion?.choices) || completion.choices.length === 0) {
      return outcome({ duration_ms, error: `${base} answered, but not with a chat completion (is this an OpenAI-compatible /v1 URL?)` });
    }
    return outcome({ ok: true, duration_ms, reply: (completion.choices[0]?.message?.content ?? '').slice(0, 200) });
  } catch (err) {
    const duration_ms = Math.round(performance.now() - started);
    return outcome({ duration_ms, error: describeFailure(err, openai, base, endpoint.model, timeoutMs) });
  }
}

/** The client library's error, as what went wrong and what to check. */
function describeFailure(
  err: unknown,
  openai: Awaited<ReturnType<typeof loadOpenAI>>,
  base: string,
  model: string,
  timeoutMs: number,
): string {
  if (err instanceof openai.APIConnectionTimeoutError)
    return `${base} did not answer within ${timeoutMs} ms (is the model server busy or loading?)`;
  if (err instanceof openai.APIConnectionError) {
    const cause = (err as { cause?: { code?: string; cause?: { code?: string } } }).cause;
    const code = cause?.code ?? cause?.cause?.code;
    return `could not reach ${base}${code ? ` (${code})` : ''}: is the model server running, and is model.baseUrl right?`;
  }
  if (err instanceof openai.APIError) {
    const said = `${base} answered HTTP ${err.status ?? '(no status)'}: ${err.message.replace(/^\d{3}\s*/, '')}`;
    if (err.status === 401 || err.status === 403) return `${said} (the endpoint refused the API key: check model.apiKey)`;
    if (err.status === 404) return `${said} (is model "${model}" served there, and does model.baseUrl end in /v1?)`;
    return said;
  }
  return `the request to ${base} failed: ${errorMessage(err)}`;
}
