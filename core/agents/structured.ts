/**
 * Structured output: `ctx.model.object(schema, messages)` answers a value of the zod schema's type.
 *
 * The model is asked for the schema's JSON Schema through the protocol's response format
 * (`response_format: {type: 'json_schema'}`, what OpenAI, vLLM, Ollama, llama.cpp and LM Studio
 * accept) or, for a server that refuses it, through one forced tool call whose arguments are the
 * value (the AI SDK's `tool` mode). The answer is validated by zod; a wrong one gets one repair
 * round — the model is shown what was wrong and asked again — and a second wrong one is a 502
 * naming the problem, since the model endpoint failed to give a usable answer.
 *
 * Decisions: `mode: 'auto'` (the default) tries the response format and, when the endpoint answers
 * 400 or 422 to it, switches to the tool call and remembers that for the provider's model for the
 * server's lifetime. A schema whose root is not an object (an array, a string) is sent wrapped as
 * `{value: …}` — both ways need an object at the root — and unwrapped before it is returned. The
 * model's JSON is not streamed as tokens: it is not the run's answer text.
 */
import { z } from 'zod';
import { errorMessage, fail } from '../kernel/errors.js';
import { ModelEndpointError, type ModelMessage, type ModelProvider, type ModelTurn, type TurnRequest } from './model.js';

export interface ObjectOptions {
  /** The schema's name as the model sees it (letters, digits, `_`, `-`); default `response`. */
  name?: string;
  /** What the value is, for the model. */
  description?: string;
  /** `json_schema` (the response format), `tool` (a forced tool call) or `auto` (the first, else the second). */
  mode?: 'auto' | 'json_schema' | 'tool';
  temperature?: number | null;
  max_tokens?: number | null;
  model?: string;
  signal?: AbortSignal;
}

type Turn = (request: Omit<TurnRequest, 'signal' | 'onToken'> & { signal?: AbortSignal }) => Promise<ModelTurn>;

/** Models (per provider) whose endpoint refused the response format: `auto` goes to the tool call. */
const refusesFormat = new WeakMap<ModelProvider, Set<string>>();

export async function generateObject<S extends z.ZodType>(
  provider: ModelProvider,
  modelName: string,
  turn: Turn,
  schema: S,
  messages: readonly ModelMessage[],
  options: ObjectOptions = {},
): Promise<z.output<S>> {
  if (!(schema instanceof z.ZodType)) throw new TypeError('ctx.model.object: the first argument must be a zod schema');
  const name = options.name ?? 'response';
  if (!/^[a-zA-Z0-9_-]{1,64}$/.test(name)) throw new Error(`ctx.model.object: name '${name}' must be letters, digits, _ and -, at most 64`);
  let json: Record<string, unknown>;
  try {
    json = z.toJSONSchema(schema, { io: 'input' }) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`ctx.model.object: the schema cannot be sent to a model as JSON Schema: ${errorMessage(err)}`);
  }
  delete json.$schema;
  const wrapped = json.type !== 'object';
  const parameters = wrapped ? { type: 'object', properties: { value: json }, required: ['value'], additionalProperties: false } : json;

  const refused = refusesFormat.get(provider) ?? new Set<string>();
  refusesFormat.set(provider, refused);
  let mode: 'json_schema' | 'tool' =
    options.mode === 'tool' || (options.mode !== 'json_schema' && refused.has(modelName)) ? 'tool' : 'json_schema';
  const common = { model: options.model, temperature: options.temperature, max_tokens: options.max_tokens, signal: options.signal };

  const ask = async (conversation: ModelMessage[]): Promise<{ text: string; answer: ModelMessage; callId: string | null }> => {
    if (mode === 'json_schema') {
      try {
        const reply = await turn({
          ...common,
          messages: conversation,
          response_format: {
            type: 'json_schema',
            json_schema: { name, ...(options.description ? { description: options.description } : {}), schema: parameters, strict: false },
          },
        });
        return { text: reply.content, answer: { role: 'assistant', content: reply.content }, callId: null };
      } catch (err) {
        const refusedByServer = err instanceof ModelEndpointError && (err.upstream === 400 || err.upstream === 422);
        if (options.mode === 'json_schema' || !refusedByServer) throw err;
        refused.add(modelName);
        mode = 'tool';
      }
    }
    const reply = await turn({
      ...common,
      messages: conversation,
      tools: [{ name, description: options.description ?? "Give the answer as this tool call's arguments.", parameters }],
      tool_choice: { name },
    });
    const call = reply.tool_calls.find((c) => c.name === name) ?? reply.tool_calls[0];
    // A server that ignores tool_choice may answer in prose: its text is read as the JSON.
    if (!call) return { text: reply.content, answer: { role: 'assistant', content: reply.content }, callId: null };
    return { text: call.arguments, answer: { role: 'assistant', content: reply.content || null, tool_calls: [call] }, callId: call.id };
  };

  const conversation: ModelMessage[] = [...messages];
  for (let attempt = 1; ; attempt++) {
    const { text, answer, callId } = await ask(conversation);
    const checked = check(schema, text, wrapped);
    if (checked.ok) return checked.value;
    if (attempt === 2) throw fail('HANGAR_AGENT_MODEL_SCHEMA_MISMATCH', { problem: checked.problem });
    const repair = `That answer does not match the required JSON Schema: ${checked.problem}\nAnswer again with the corrected JSON only.`;
    conversation.push(answer);
    // A tool call is answered by its id (the protocol needs it), a text answer by a user turn.
    conversation.push(
      callId ? { role: 'tool', tool_call_id: callId, content: JSON.stringify({ error: repair }) } : { role: 'user', content: repair },
    );
  }
}

function check<S extends z.ZodType>(
  schema: S,
  text: string,
  wrapped: boolean,
): { ok: true; value: z.output<S> } | { ok: false; problem: string } {
  let value: unknown;
  try {
    value = JSON.parse(stripFence(text));
  } catch (err) {
    return { ok: false, problem: `it is not JSON (${errorMessage(err)})` };
  }
  if (wrapped) {
    if (!value || typeof value !== 'object' || !('value' in value))
      return { ok: false, problem: 'expected an object with the answer under "value"' };
    value = (value as { value: unknown }).value;
  }
  const parsed = schema.safeParse(value);
  return parsed.success ? { ok: true, value: parsed.data } : { ok: false, problem: z.prettifyError(parsed.error) };
}

/** Models that were told to answer JSON still wrap it in a ```json fence now and then. */
function stripFence(text: string): string {
  const fenced = /^\s*```(?:json)?\s*([\s\S]*?)```\s*$/.exec(text);
  return fenced ? fenced[1]! : text;
}
