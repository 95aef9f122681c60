/**
 * A run as OpenTelemetry spans, named and attributed by the GenAI semantic conventions so Jaeger,
 * Langfuse and Phoenix read them as agent traces:
 *
 *   invoke_agent <agent>            gen_ai.operation.name=invoke_agent, gen_ai.agent.name, gen_ai.conversation.id
 *   └ node <name>                   a graph node (hangar.graph.node, hangar.graph.step)
 *     ├ chat <model>                client span: gen_ai.request.*, gen_ai.response.*, gen_ai.usage.*
 *     ├ execute_tool <tool>         gen_ai.tool.name, gen_ai.tool.call.id, gen_ai.tool.type
 *     └ invoke_agent <subagent>     a subagent's run, inside the node that called it
 *
 * Decisions: `gen_ai.provider.name` is `openai` (the protocol spoken, whichever server answers)
 * and the older `gen_ai.system` is set beside it, since viewers still read it. Content
 * (messages, answers, tool arguments and results) is opt-in (`telemetry.captureContent`), as the
 * conventions ask, since it may hold personal data. A model answer replayed from the journal
 * after a resume made no call, so it has no span.
 */
import type { Settings } from '../kernel/settings.js';
import { expandEnvRefs } from '../lib/env-refs.js';
import type { SpanAttributes, TraceSpan, Tracing } from '../lib/telemetry.js';
import { NO_TRACING, startTracing } from '../lib/telemetry.js';
import type { ModelTurn, TurnRequest } from './model.js';
import type { ToolCallResult } from './tool-loop.js';

export interface AgentTracing {
  tracing: Tracing;
  /** Prompts, answers, tool arguments and results on the spans. */
  captureContent: boolean;
}

export const NO_AGENT_TRACING: AgentTracing = { tracing: NO_TRACING, captureContent: false };

/** Tracing as the settings ask (`telemetry`): none without an endpoint, and then no OpenTelemetry import either. */
export async function tracingFromSettings(settings: Settings['telemetry'], version?: string): Promise<AgentTracing> {
  const { otlp } = settings;
  if (!otlp.endpoint) return NO_AGENT_TRACING;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(otlp.headers)) {
    try {
      headers[name] = expandEnvRefs(value);
    } catch (err) {
      throw new Error(`setting telemetry.otlp.headers.${name}: ${(err as Error).message}`);
    }
  }
  const tracing = await startTracing({
    endpoint: otlp.endpoint,
    protocol: otlp.protocol,
    headers,
    serviceName: settings.serviceName,
    serviceVersion: version,
    batchDelayMs: otlp.batchDelayMs,
  });
  return { tracing, captureContent: settings.captureContent };
}

const PROVIDER = { 'gen_ai.provider.name': 'openai', 'gen_ai.system': 'openai' } as const;

const json = (value: unknown) => {
  try {
    return JSON.stringify(value ?? null);
  } catch {
    return String(value);
  }
};

export function runAttributes(agent: string, runId: string, threadId: string | null | undefined): SpanAttributes {
  return {
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.name': agent,
    'gen_ai.conversation.id': threadId,
    'hangar.run.id': runId,
  };
}

export function nodeSpan(run: TraceSpan, node: string, step: number): TraceSpan {
  return run.child(`node ${node}`, { 'hangar.graph.node': node, 'hangar.graph.step': step });
}

export function modelCallSpan(
  parent: TraceSpan,
  model: string,
  request: Pick<TurnRequest, 'messages' | 'temperature' | 'max_tokens' | 'tools'>,
  capture: boolean,
): TraceSpan {
  return parent.child(
    `chat ${model}`,
    {
      ...PROVIDER,
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': model,
      'gen_ai.request.temperature': request.temperature ?? undefined,
      'gen_ai.request.max_tokens': request.max_tokens ?? undefined,
      'hangar.request.tools': request.tools?.length ? request.tools.map((t) => t.name) : undefined,
      ...(capture ? { 'gen_ai.input.messages': json(request.messages) } : {}),
    },
    'client',
  );
}

export function endModelCall(span: TraceSpan, turn: ModelTurn, capture: boolean): void {
  span.set({
    'gen_ai.response.model': turn.model,
    'gen_ai.response.finish_reasons': turn.finish_reason ? [turn.finish_reason] : undefined,
    'gen_ai.usage.input_tokens': turn.usage.prompt_tokens,
    'gen_ai.usage.output_tokens': turn.usage.completion_tokens,
    ...(capture
      ? {
          'gen_ai.output.messages': json([
            { role: 'assistant', content: turn.content, ...(turn.tool_calls.length ? { tool_calls: turn.tool_calls } : {}) },
          ]),
        }
      : {}),
  });
  span.end();
}

export function toolCallSpan(parent: TraceSpan, call: { id: string; name: string; args: unknown }, capture: boolean): TraceSpan {
  return parent.child(`execute_tool ${call.name}`, {
    'gen_ai.operation.name': 'execute_tool',
    'gen_ai.tool.name': call.name,
    'gen_ai.tool.call.id': call.id,
    'gen_ai.tool.type': 'function',
    ...(capture ? { 'gen_ai.tool.call.arguments': json(call.args) } : {}),
  });
}

export function endToolCall(span: TraceSpan, result: ToolCallResult, capture: boolean): void {
  if (result.approval) span.set({ 'hangar.tool.approval': result.approval });
  if (result.error !== undefined) span.fail(new Error(result.error), 'tool_error');
  else if (capture) span.set({ 'gen_ai.tool.call.result': json(result.result) });
  span.end();
}
