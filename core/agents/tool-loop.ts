/**
 * The model's tool loop: call the model with the tools' JSON Schemas; when it asks for tool calls,
 * run them (a step's calls concurrently), hand the results back and call it again, until it answers
 * without asking for a tool or `maxSteps` model calls were made.
 *
 * A tool call never throws out of the loop: an unknown tool, arguments that are not JSON or do not
 * match the schema, a tool that throws, times out or returns what its `output` schema refuses — each
 * becomes the call's result `{"error": "…"}`, which the model reads and can correct, as the AI SDK
 * and Mastra do. Only a cancelled run or a failing model call ends the loop early.
 */
import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { errorMessage } from '../kernel/errors.js';
import type { ModelToolCall } from '../lib/model-client.js';
import { ModelCallAborted, type ModelMessage, type ModelTurn, type TokenUsage, type ToolChoice, type TurnRequest } from './model.js';
import { deniedResult, type ToolApprovalAnswer, type ToolApprovalRequest } from './tool-approval.js';
import { type AnyTool, type ToolContext, toolSpec } from './tools.js';
import type { ChatMessage } from './types.js';

export interface ToolLoopOptions {
  /** The tools the model may call; default the agent's own `tools`. */
  tools?: AnyTool[];
  toolChoice?: ToolChoice;
  /** Most model calls in this loop; default the setting `model.maxSteps`. */
  maxSteps?: number;
  temperature?: number | null;
  max_tokens?: number | null;
  model?: string;
  signal?: AbortSignal;
}

/** A finished tool call: what the model asked, and what it got back. */
export interface ToolCallResult {
  id: string;
  name: string;
  /** The parsed arguments; the raw text when it was not JSON. */
  args: unknown;
  /** Set when the call succeeded (the tool's return value, after its `output` schema). */
  result?: unknown;
  /** Set when it did not; the model was sent `{"error": error}`. */
  error?: string;
  duration_ms: number;
  /** Set on a call a person decided (`needsApproval`): approved (perhaps with edited `args`) or denied. */
  approval?: 'approved' | 'denied';
}

export interface LoopStep {
  /** The model's text in this step (often empty when it called tools). */
  text: string;
  toolCalls: Array<{ id: string; name: string; args: unknown }>;
  toolResults: ToolCallResult[];
  /** The server's finish reason for this model call. */
  finishReason: string | null;
  usage: TokenUsage;
}

/**
 * Why the loop stopped: `stop` (the model answered), `length` (it hit max_tokens), `max_steps`
 * (it was still calling tools after `maxSteps` model calls; `text` is the last step's).
 */
export type LoopFinishReason = 'stop' | 'length' | 'max_steps' | 'content_filter';

export interface ToolLoopResult {
  text: string;
  finishReason: LoopFinishReason;
  steps: LoopStep[];
  /** Every call of every step, in order. */
  toolCalls: Array<{ id: string; name: string; args: unknown }>;
  toolResults: ToolCallResult[];
  /** Summed over this loop's model calls. */
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number };
  /** The conversation as the model last saw it plus its answer (tool calls and results included). */
  messages: ModelMessage[];
}

/** What the loop needs from the run it is part of. */
export interface LoopHost {
  /** One model call with the run's defaults (model, sampling, signal, token events, usage). */
  turn(request: Omit<TurnRequest, 'signal' | 'onToken'> & { signal?: AbortSignal }): Promise<ModelTurn>;
  /** The context handed to a tool's `run`, without the per-call fields. */
  toolContext: Omit<ToolContext, 'toolCallId' | 'signal' | 'messages'>;
  signal: AbortSignal;
  defaultMaxSteps: number;
  onToolStart(call: { id: string; name: string; args: unknown }): void;
  onToolEnd(result: ToolCallResult): void;
  /** A step's finished calls, in the order the model made them (events come as calls end). */
  onStepCalls(results: readonly ToolCallResult[]): void;
  /** The result of a call that finished in an earlier execution of this node (journal.ts). */
  replayResult?(callId: string): ToolCallResult | undefined;
  /** Checkpoint a finished call; the loop goes on once it is written. */
  recordResult?(result: ToolCallResult): Promise<unknown>;
  /**
   * Ask a person to approve a gated call (tool-approval.ts): suspends the run until they decide,
   * then answers their decision. Absent where no one can be asked (a tool tried on its own).
   */
  approve?(request: Omit<ToolApprovalRequest, 'kind' | 'node'>): Promise<ToolApprovalAnswer>;
}

export async function runToolLoop(
  host: LoopHost,
  messages: readonly ModelMessage[],
  tools: readonly AnyTool[],
  options: ToolLoopOptions = {},
): Promise<ToolLoopResult> {
  const maxSteps = options.maxSteps ?? host.defaultMaxSteps;
  if (!Number.isInteger(maxSteps) || maxSteps < 1) throw new Error(`maxSteps must be a positive integer (got ${maxSteps})`);
  const byName = new Map(tools.map((t) => [t.name, t]));
  if (byName.size !== tools.length) throw new Error('two tools given to the model have the same name');
  if (typeof options.toolChoice === 'object' && !byName.has(options.toolChoice.name)) {
    throw new Error(`toolChoice names '${options.toolChoice.name}', which is not one of the tools given`);
  }
  const specs = tools.map(toolSpec);
  const conversation: ModelMessage[] = [...messages];
  const steps: LoopStep[] = [];
  let finishReason: LoopFinishReason = 'max_steps';
  let text = '';

  for (let n = 1; n <= maxSteps; n++) {
    const turn = await host.turn({
      messages: conversation,
      ...(specs.length ? { tools: specs, ...(options.toolChoice ? { tool_choice: options.toolChoice } : {}) } : {}),
      model: options.model,
      temperature: options.temperature,
      max_tokens: options.max_tokens,
      signal: options.signal,
    });
    text = turn.content;
    if (!turn.tool_calls.length) {
      conversation.push({ role: 'assistant', content: turn.content });
      steps.push({ text, toolCalls: [], toolResults: [], finishReason: turn.finish_reason, usage: turn.usage });
      finishReason = turn.finish_reason === 'length' || turn.finish_reason === 'content_filter' ? turn.finish_reason : 'stop';
      break;
    }
    // Ids are the model's; a server that sends none still needs each result matched to its call.
    const calls = turn.tool_calls.map((c, i) => (c.id ? c : { ...c, id: `call_${n}_${i}` }));
    conversation.push({ role: 'assistant', content: turn.content || null, tool_calls: calls });
    const seen = conversation.filter((m): m is ChatMessage => typeof m.content === 'string' && !('tool_calls' in m) && m.role !== 'tool');
    const results = await runCalls(host, byName, calls, seen, options.signal);
    host.onStepCalls(results);
    for (const result of results) {
      conversation.push({ role: 'tool', tool_call_id: result.id, content: toolMessage(result) });
    }
    steps.push({
      text,
      toolCalls: results.map(({ id, name, args }) => ({ id, name, args })),
      toolResults: results,
      finishReason: turn.finish_reason,
      usage: turn.usage,
    });
  }

  let prompt = 0;
  let completion = 0;
  for (const step of steps) {
    prompt += step.usage.prompt_tokens ?? 0;
    completion += step.usage.completion_tokens ?? 0;
  }
  const toolResults = steps.flatMap((s) => s.toolResults);
  return {
    text,
    finishReason,
    steps,
    toolCalls: steps.flatMap((s) => s.toolCalls),
    toolResults,
    usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion },
    messages: conversation,
  };
}

/**
 * One call of `tool` outside a model's loop (POST /api/v1/tools/{name}/try): the same validation,
 * timeout and output check, the same `{error}` instead of a throw.
 */
export function callTool(tool: AnyTool, args: unknown, toolContext: LoopHost['toolContext'], signal: AbortSignal): Promise<ToolCallResult> {
  const host: LoopHost = {
    turn: () => Promise.reject(new Error('a tool tried on its own makes no model call')),
    toolContext,
    signal,
    defaultMaxSteps: 1,
    onToolStart: () => {},
    onToolEnd: () => {},
    onStepCalls: () => {},
  };
  const call = { id: `try_${randomUUID()}`, name: tool.name, arguments: JSON.stringify(args ?? {}) };
  return runCalls(host, new Map([[tool.name, tool]]), [call], [], undefined).then(([result]) => result!);
}

/** The text the model reads as a call's result: a string as is, anything else as JSON. */
function toolMessage(result: ToolCallResult): string {
  if (result.error !== undefined) return JSON.stringify({ error: result.error });
  if (typeof result.result === 'string') return result.result;
  return JSON.stringify(result.result ?? null);
}

class ToolTimeout extends Error {}

/**
 * A call after its arguments were read: finished already (`fresh` when refused just now, so its
 * result still has to be checkpointed; else replayed), or ready to run.
 */
type PreparedCall =
  | { done: ToolCallResult; fresh: boolean; started?: undefined }
  | { done?: undefined; call: ModelToolCall; tool: AnyTool; args: unknown; started: number; approval?: 'approved' };

/**
 * Run one step's calls. Arguments are read and validated first; then the calls that need a
 * person's approval ask for it one at a time in the model's order; then every call that may run
 * runs, concurrently. A resumed node's `interrupt()` answers are matched by position, so a
 * replayed call that was decided by a person asks again (and gets its recorded answer at once).
 */
async function runCalls(
  host: LoopHost,
  tools: Map<string, AnyTool>,
  calls: readonly ModelToolCall[],
  messages: readonly ChatMessage[],
  callSignal: AbortSignal | undefined,
): Promise<ToolCallResult[]> {
  const prepared = calls.map((call) => prepare(host, tools, call));
  for (let i = 0; i < prepared.length; i++) {
    const ready = prepared[i]!;
    if (ready.done) {
      if (!ready.fresh && ready.done.approval && host.approve)
        await host.approve({ call_id: ready.done.id, tool: ready.done.name, arguments: ready.done.args });
      continue;
    }
    const gate = await needsApproval(ready.tool, ready.args, host, ready.call.id, messages);
    if (gate === true) prepared[i] = await approved(host, ready.tool, ready);
    else if (gate !== false) {
      const { id, name } = ready.call;
      prepared[i] = {
        done: { id, name, args: ready.args, error: gate.error, duration_ms: performance.now() - ready.started },
        fresh: true,
      };
    }
  }
  // One pass in the model's order, so tool_start events come in the order the model made the calls.
  return Promise.all(
    prepared.map(async (ready) => {
      if (!ready.done) return start(host, ready, messages, callSignal);
      if (ready.fresh) {
        const { id, name, args } = ready.done;
        host.onToolStart({ id, name, args });
        host.onToolEnd(ready.done);
        await host.recordResult?.(ready.done);
      }
      return ready.done;
    }),
  );
}

/**
 * Whether the call needs a person. A `needsApproval` function is the tool's code, run where its
 * `run` runs (a supervised tool's host) and under the same `timeout_ms`: one that does not answer
 * in time makes the call's error result, as a `run` that does not, and the tool is not run.
 */
async function needsApproval(
  tool: AnyTool,
  args: unknown,
  host: LoopHost,
  callId: string,
  messages: readonly ChatMessage[],
): Promise<boolean | { error: string }> {
  const rule = tool.needsApproval;
  if (typeof rule !== 'function') return rule === true;
  if (!tool.timeout_ms) {
    const context: ToolContext = { ...host.toolContext, toolCallId: callId, signal: host.signal, messages };
    return Boolean(await rule(args, context));
  }
  const controller = new AbortController();
  const context: ToolContext = {
    ...host.toolContext,
    toolCallId: callId,
    signal: AbortSignal.any([host.signal, controller.signal]),
    messages,
  };
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<{ error: string }>((resolve) => {
    timer = setTimeout(() => {
      // Answered before the abort, so a rule that settles on abort cannot win the race.
      resolve({ error: `'${tool.name}' timed out after ${tool.timeout_ms} ms deciding whether it needs approval` });
      controller.abort(new ToolTimeout(`'${tool.name}' timed out after ${tool.timeout_ms} ms`));
    }, tool.timeout_ms);
  });
  try {
    return await Promise.race([Promise.resolve(rule(args, context)).then(Boolean), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/** Ask the person (suspending the run until they answer); what they decided, as the call to run or its result. */
async function approved(host: LoopHost, tool: AnyTool, ready: Extract<PreparedCall, { call: ModelToolCall }>): Promise<PreparedCall> {
  const { call } = ready;
  const refused = (args: unknown, error: string, approval?: 'denied'): PreparedCall => {
    const result: ToolCallResult = { id: call.id, name: call.name, args, error, duration_ms: 0, ...(approval ? { approval } : {}) };
    return { done: result, fresh: true };
  };
  if (!host.approve) return refused(ready.args, `'${tool.name}' needs a person's approval, and this run has no one to ask: it was not run`);
  const answer = await host.approve({ call_id: call.id, tool: tool.name, arguments: ready.args });
  if (!answer.approved) return refused(ready.args, deniedResult(answer.reason), 'denied');
  if (answer.arguments === undefined) return { ...ready, started: performance.now(), approval: 'approved' };
  const edited = tool.input.safeParse(answer.arguments);
  if (!edited.success)
    return refused(
      answer.arguments,
      `the arguments the user approved are invalid for '${tool.name}':\n${z.prettifyError(edited.error)}`,
      'denied',
    );
  return { ...ready, args: edited.data, started: performance.now(), approval: 'approved' };
}

/** Read and validate a call's arguments; a replayed call is done already. */
function prepare(host: LoopHost, tools: Map<string, AnyTool>, call: ModelToolCall): PreparedCall {
  // Finished before a resume: its result stands, and the tool does not run again.
  const replayed = host.replayResult?.(call.id);
  if (replayed) return { done: replayed, fresh: false };
  const started = performance.now();
  let args: unknown = call.arguments;
  const refused = (error: string): PreparedCall => {
    const result: ToolCallResult = { id: call.id, name: call.name, args, error, duration_ms: performance.now() - started };
    return { done: result, fresh: true };
  };
  try {
    // An empty argument string is what some servers send for a tool without parameters.
    args = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (err) {
    return refused(`the arguments are not valid JSON (${errorMessage(err)}); send one JSON object matching the tool's parameters`);
  }
  const tool = tools.get(call.name);
  if (!tool) return refused(`there is no tool named '${call.name}'; the tools are: ${[...tools.keys()].join(', ') || 'none'}`);
  const parsed = tool.input.safeParse(args);
  if (!parsed.success) return refused(`invalid arguments for '${tool.name}':\n${z.prettifyError(parsed.error)}`);
  return { call, tool, args: parsed.data, started };
}

/** Run a validated (and, if it needed to be, approved) call and checkpoint its result. */
async function start(
  host: LoopHost,
  ready: Extract<PreparedCall, { call: ModelToolCall }>,
  messages: readonly ChatMessage[],
  callSignal: AbortSignal | undefined,
): Promise<ToolCallResult> {
  const { call, tool, args, started, approval } = ready;
  host.onToolStart({ id: call.id, name: call.name, args });
  const controller = new AbortController();
  const signal = AbortSignal.any([host.signal, controller.signal, ...(callSignal ? [callSignal] : [])]);
  const context: ToolContext = { ...host.toolContext, toolCallId: call.id, signal, messages };
  const base = { id: call.id, name: call.name, args, ...(approval ? { approval } : {}) };
  const result = await execute(
    tool,
    args,
    context,
    controller,
    host.signal,
    callSignal,
    (error) => ({ ...base, error, duration_ms: performance.now() - started }),
    (value) => ({ ...base, result: value, duration_ms: performance.now() - started }),
  );
  host.onToolEnd(result);
  await host.recordResult?.(result);
  return result;
}

/**
 * Run one validated call to its result. Kept apart from `runCall` so recording the result (a
 * checkpoint write that may fail) is outside the try that turns the tool's own failures into
 * results.
 */
async function execute(
  tool: AnyTool,
  args: unknown,
  context: ToolContext,
  controller: AbortController,
  runSignal: AbortSignal,
  callSignal: AbortSignal | undefined,
  failed: (error: string) => ToolCallResult,
  succeeded: (result: unknown) => ToolCallResult,
): Promise<ToolCallResult> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const running = Promise.resolve(tool.run(args, context));
    const raced = tool.timeout_ms
      ? Promise.race([
          running,
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => {
              // Rejected before the abort: a tool that settles on abort must not win the race.
              reject(new ToolTimeout(`'${tool.name}' timed out after ${tool.timeout_ms} ms`));
              controller.abort();
            }, tool.timeout_ms);
          }),
        ])
      : running;
    const result: unknown = await raced;
    if (!tool.output) return succeeded(result);
    const checked = tool.output.safeParse(result);
    if (!checked.success) return failed(`'${tool.name}' returned a result its output schema refuses:\n${z.prettifyError(checked.error)}`);
    return succeeded(checked.data);
  } catch (err) {
    // The run was cancelled: the loop ends as the run does, not with a tool error.
    if (runSignal.aborted || callSignal?.aborted) throw new ModelCallAborted();
    return failed(err instanceof ToolTimeout ? err.message : `'${tool.name}' failed: ${errorMessage(err)}`);
  } finally {
    if (timer) clearTimeout(timer);
  }
}
