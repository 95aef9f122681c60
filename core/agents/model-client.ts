/**
 * `ctx.model`: the configured provider as one run's agent sees it. Every call gets the run's
 * defaults (the agent's model pin, the request's sampling overrides, the run's signal), streams its
 * tokens as `message_chunk` events and adds its token usage to the run's meter.
 *
 * Decision: the tool loop is `ctx.model.run(messages, options)`, beside `chat`, rather than an
 * option of `chat`: `chat` keeps answering a string (every existing agent keeps its types) and
 * `run` answers what the AI SDK's `generateText` and Mastra's `agent.generate` answer — text,
 * steps, tool calls and results, finish reason and usage.
 */
import type { TraceSpan } from '../lib/telemetry.js';
import type { RunEventBody } from './events.js';
import type { NodeJournal } from './journal.js';
import { type ModelProvider, type ModelTurn, modelNotConfigured, type TurnRequest } from './model.js';
import { generateObject } from './structured.js';
import { approvalMessage, TOOL_APPROVAL, type ToolApprovalAnswer, type ToolApprovalRequest } from './tool-approval.js';
import { type LoopHost, runToolLoop, type ToolCallResult, type ToolLoopOptions } from './tool-loop.js';
import type { AnyTool, ToolContext } from './tools.js';
import { endModelCall, endToolCall, modelCallSpan, toolCallSpan } from './tracing.js';
import type { AgentConfig, AgentInput, ChatMessage, ModelCallOptions, ModelClient, ToolCall } from './types.js';
import type { UsageMeter } from './usage.js';

export interface ModelClientOptions {
  provider: ModelProvider;
  agent: string;
  config: AgentConfig;
  input: AgentInput;
  signal: AbortSignal;
  /** The graph node the calls are made in (named by tool events). */
  node: string;
  emit: (body: RunEventBody) => void;
  meter: UsageMeter;
  /** The agent's declared tools (resolved when first used): what `run` offers when the call names none. */
  tools: () => Promise<readonly AnyTool[]>;
  /** Default `maxSteps` (setting `model.maxSteps`). */
  maxSteps: number;
  toolContext: Omit<ToolContext, 'toolCallId' | 'signal' | 'messages'>;
  /** Each finished tool call, for /optimize/invoke's `tool_calls` and `steps_taken`. */
  onToolCall: (call: ToolCall) => void;
  /** The node execution's journal: replays what an earlier execution recorded, checkpoints each finished call. */
  journal?: NodeJournal;
  /** The node's span: model and tool calls are traced inside it (tracing.ts). */
  span?: TraceSpan;
  /** Prompts, answers and tool arguments and results on the spans (`telemetry.captureContent`). */
  captureContent?: boolean;
  /** The run's `ctx.interrupt`: how a call to a tool with `needsApproval` asks a person (tool-approval.ts). */
  interrupt?: <T>(message: string, payload: Record<string, unknown>) => Promise<T>;
}

export function createModelClient(options: ModelClientOptions): ModelClient {
  const { provider, agent, config, input, signal, emit, meter } = options;
  const capture = options.captureContent ?? false;
  /** Open tool-call spans by call id (a step's calls run concurrently). */
  const toolSpans = new Map<string, TraceSpan>();

  const turn = async (
    request: Omit<TurnRequest, 'signal' | 'onToken'> & { signal?: AbortSignal | undefined },
    quiet = false,
  ): Promise<ModelTurn> => {
    if (!provider.configured) throw modelNotConfigured(agent);
    const recorded = options.journal?.replayTurn();
    if (recorded) return recorded;
    const modelName = request.model ?? config.model ?? provider.model;
    const temperature = request.temperature ?? input.temperature ?? config.temperature ?? null;
    const max_tokens = request.max_tokens ?? input.max_tokens ?? config.max_tokens ?? null;
    const span = options.span && modelCallSpan(options.span, modelName, { ...request, temperature, max_tokens }, capture);
    let answer: ModelTurn;
    try {
      answer = await provider.turn({
        ...request,
        model: modelName,
        temperature,
        max_tokens,
        signal: request.signal ? AbortSignal.any([request.signal, signal]) : signal,
        ...(quiet ? {} : { onToken: (token: string) => emit({ type: 'message_chunk', node: modelName, content: token }) }),
      });
    } catch (err) {
      span?.fail(err);
      span?.end();
      throw err;
    }
    if (span) endModelCall(span, answer, capture);
    meter.add(answer.model, answer.usage);
    options.journal?.recordTurn(answer);
    return answer;
  };

  const host: LoopHost = {
    turn,
    toolContext: options.toolContext,
    signal,
    defaultMaxSteps: options.maxSteps,
    onToolStart: (call) => {
      if (options.span) toolSpans.set(call.id, toolCallSpan(options.span, call, capture));
      emit({ type: 'tool_start', node: options.node, call_id: call.id, name: call.name, arguments: call.args });
    },
    onToolEnd: (result: ToolCallResult) => {
      const span = toolSpans.get(result.id);
      if (span) {
        toolSpans.delete(result.id);
        endToolCall(span, result, capture);
      }
      emit({
        type: 'tool_end',
        node: options.node,
        call_id: result.id,
        name: result.name,
        arguments: result.args,
        ...(result.error !== undefined ? { error: result.error } : { result: jsonSafe(result.result) }),
        duration_ms: result.duration_ms,
      });
    },
    ...(options.journal
      ? {
          replayResult: (id: string) => options.journal!.replayResult(id),
          recordResult: (result: ToolCallResult) => options.journal!.recordResult(result),
        }
      : {}),
    ...(options.interrupt
      ? {
          approve: (request: Omit<ToolApprovalRequest, 'kind' | 'node'>) => {
            const payload: ToolApprovalRequest = { kind: TOOL_APPROVAL, node: options.node, ...request };
            return options.interrupt!<ToolApprovalAnswer>(approvalMessage(request.tool, request.arguments), { ...payload });
          },
        }
      : {}),
    onStepCalls: (results) => {
      for (const result of results) {
        options.onToolCall({
          name: result.name,
          args: result.args,
          ...(result.error !== undefined ? { error: result.error } : { result: jsonSafe(result.result) }),
        });
      }
    },
  };

  return {
    configured: provider.configured,
    name: config.model ?? provider.model,
    chat: async (messages: ChatMessage[], callOptions: ModelCallOptions = {}) => (await turn({ messages, ...callOptions })).content,
    run: async (messages: ChatMessage[], loopOptions: ToolLoopOptions = {}) =>
      runToolLoop(host, messages, loopOptions.tools ?? (await options.tools()), loopOptions),
    object: (schema, messages, objectOptions = {}) => {
      if (!provider.configured) throw modelNotConfigured(agent);
      const modelName = objectOptions.model ?? config.model ?? provider.model;
      return generateObject(provider, modelName, (request) => turn(request, true), schema, messages, objectOptions);
    },
  };
}

/** A tool's result as events and responses carry it: JSON, so a Map or a class instance shows as JSON would. */
function jsonSafe(value: unknown): unknown {
  if (value === undefined) return null;
  try {
    return JSON.parse(JSON.stringify(value)) as unknown;
  } catch {
    return String(value);
  }
}
