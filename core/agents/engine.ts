/**
 * The graph engine: runs an agent's compiled graph over its JSON state, one node per step.
 *
 * Per step: check cancellation → stop at a breakpoint if the node is one → `node_start` → run the
 * node → merge its returned keys into the state → write a checkpoint → `node_end` → follow the
 * first matching edge. A node that calls `ctx.interrupt()` (approval nodes do) suspends the run: a
 * checkpoint with the pending interrupt is written and the caller gets status `interrupted`.
 * `resume` continues from any checkpoint; from an interrupt it re-runs the interrupted node, whose
 * `interrupt()` call now returns the supplied value (LangGraph's model).
 *
 * Preconditions: one engine call per thread at a time is the caller's job (the HITL service
 * deletes a pending approval before resuming, so two approvals cannot resume the same snapshot).
 * Merge rule: a node's returned keys replace the state's keys (no reducers); `steps_taken` gets
 * the node name (graph agents) and the node's `ctx.step()` names appended.
 *
 * Why one file past 600 lines: `Engine.run` is one loop whose order is the contract above (a
 * checkpoint after the merge and before `node_end`, an interrupt written before the caller hears
 * of it), and its exits (cancel, deadline, breakpoint, interrupt, error) share the loop's state.
 * What stands apart already does: compiling the graph (graph.ts), the tool journal (journal.ts),
 * checkpoints (checkpointer.ts), events (events.ts). Split further, the loop would be read across
 * files that must change together.
 */
import { randomUUID } from 'node:crypto';
import { isoNow } from '../kernel/clock.js';
import { errorMessage, HangarError } from '../kernel/errors.js';
import { NO_TRACING, type TraceSpan } from '../lib/telemetry.js';
import { timeOrderedId } from '../storage/ids.js';
import { type Checkpoint, type Checkpointer, type CheckpointMetadata, type PendingInterrupt, UNRETAINED } from './checkpointer.js';
import { type EventSink, type RunEvent, type RunEventBody, type RunStatus, summariseOutput } from './events.js';
import { type CompiledGraph, type CompiledNode, compileGraph, GraphDefinitionError, type GraphFunction, nextNode } from './graph.js';
import { NodeJournal, type ToolJournal } from './journal.js';
import { resolveListedTools } from './listed-tools.js';
import { ModelCallAborted, type ModelProvider } from './model.js';
import { createModelClient } from './model-client.js';
import { isToolApproval, type ToolApprovalAnswer } from './tool-approval.js';
import type { AnyTool } from './tools.js';
import { type AgentTracing, nodeSpan, runAttributes } from './tracing.js';
import type {
  AgentDefinition,
  AgentInput,
  AgentResult,
  AgentState,
  ChatMessage,
  RunContext,
  ToolCall,
  WorkspaceDocument,
} from './types.js';
import { type RunUsage, UsageMeter } from './usage.js';

export interface AgentRef {
  name: string;
  definition: AgentDefinition;
}

export interface EngineOptions {
  /** Looks up agents for subagent nodes and `ctx.callAgent`. */
  resolveAgent: (name: string) => AgentRef | undefined;
  provider: ModelProvider;
  workspace: string;
  /** Reads a workspace collection for `ctx.documents` (empty when none is wired). */
  documents?: (collection: string) => Promise<WorkspaceDocument[]>;
  /** Runs longer than this many steps fail (a cycle that never exits). */
  maxSteps?: number;
  /** Looks up `tools/` drop-ins an agent lists by name. */
  resolveTool?: (name: string) => AnyTool | undefined;
  /** Spans of runs, nodes, model and tool calls (tracing.ts); none by default. */
  tracing?: AgentTracing;
  /** The tools an agent's `mcp:<server>/…` entry names (mcp-servers.ts). */
  resolveMcpTools?: (ref: string, agent: string) => Promise<AnyTool[]>;
  /** Runs function nodes of the agents it supervises outside this thread (host/supervisor.ts); none: all inline. */
  host?: NodeHost;
}

/**
 * Where a function node runs when not on this thread. The engine keeps the graph (edges, state,
 * checkpoints, events); only the node's own function crosses, with a `ctx` whose methods come back.
 */
export interface NodeHost {
  supervises(agent: AgentRef): boolean;
  /**
   * `site` is the run's: what crosses with the call. `ctx` makes the node's context when the host
   * first needs it (the node calls back: a model call, a step, an interrupt): a context is some
   * fifteen closures, and most supervised nodes never call back.
   */
  runNode(
    agent: AgentRef,
    node: string,
    state: AgentState,
    ctx: () => RunContext,
    site: CallSite,
  ): Promise<Partial<AgentState> | undefined>;
  /**
   * The graph's other code (edge conditions, `result`, `message`, `query`): each call crosses with
   * the state and returns the function's value. They take no `ctx`, so only its run's fields go.
   */
  runFunction(agent: AgentRef, fn: GraphFunction, state: AgentState, site: CallSite): Promise<unknown>;
}

/** What a host call needs of its run besides the state: a node's `ctx` is one. */
export type CallSite = Pick<RunContext, 'input' | 'prompt' | 'signal' | 'threadId' | 'workspace'> & {
  model: Pick<RunContext['model'], 'configured' | 'name'>;
};

export interface ResumeRequest {
  checkpoint: Checkpoint;
  /** For a checkpoint paused at an interrupt: approve continues, reject discards. */
  action?: 'approve' | 'reject';
  /** What the interrupted `interrupt()` call returns; a plain object is also merged into `state.metadata`. */
  value?: unknown;
  reason?: string | null;
  /** For a gated tool call's interrupt: the arguments the person approved instead of the model's. */
  arguments?: unknown;
}

export interface RunRequest {
  agent: AgentRef;
  input: AgentInput;
  /** Text of the selected prompt version. */
  prompt: string;
  checkpointer?: Checkpointer;
  onEvent?: EventSink;
  signal?: AbortSignal;
  /** Node names to pause before. */
  breakpoints?: readonly string[];
  runId?: string;
  resume?: ResumeRequest;
}

export interface RunOutcome {
  run_id: string;
  thread_id: string;
  status: Exclude<RunStatus, 'error'>;
  state: AgentState;
  result: AgentResult;
  /** The newest checkpoint written by this run. */
  checkpoint: Checkpoint;
  /** Set when status is `interrupted` or `breakpoint`: where the run paused. */
  paused?: { node: string; message: string; payload: Record<string, unknown> };
  tool_calls: ToolCall[];
  /** Tokens of every model call this execution made (subagents' included). */
  usage: RunUsage;
  duration_ms: number;
}

/** Thrown by `ctx.interrupt()` to leave the node; caught by the engine loop. */
class InterruptSignal {
  constructor(
    readonly message: string,
    readonly payload: Record<string, unknown>,
    readonly resumeValues: unknown[],
  ) {}
}

/** A node error, carrying the node name for `run_error`. The original error is `cause`. */
export class NodeError extends Error {
  constructor(
    readonly node: string,
    override readonly cause: unknown,
  ) {
    super(errorMessage(cause));
    this.name = 'NodeError';
  }
}

/** Resume values shared by every `interrupt()` in one node execution (subagents included). */
interface InterruptScope {
  values: unknown[];
  next: number;
}

/**
 * A checkpoint of a run that keeps none (a stateless invoke), made only when something reads it:
 * an event's `checkpoint_id`, a pause's record, the outcome's `checkpoint`. Most such runs read
 * none, and its id, timestamp and metadata were most of a no-op run's allocations (#27). Its
 * `made` checkpoint has the id it gets when first read and the timestamp of when it was saved.
 * It holds its parent (for `parent_id`), so a run's unkept chain lives as long as the run.
 */
class Unkept {
  made: Checkpoint | undefined = undefined;
  constructor(
    readonly step: number,
    readonly state: AgentState,
    readonly source: CheckpointMetadata['source'],
    readonly node: string | null,
    readonly next: string | null,
    readonly extra: Partial<CheckpointMetadata> | undefined,
    readonly parent: Saved | null,
    readonly at: number,
  ) {}
}

/**
 * The outcome of a run whose last checkpoint was not kept: its `checkpoint` is made when read, an
 * own enumerable property still (spread, JSON and structuredClone read it), in the same place among
 * the keys. One getter shared by every instance: an object literal's getter is a new closure, and
 * V8 builds such a literal on its slow path (0.65 µs against 0.12 µs a run in a micro-benchmark).
 */
class UnkeptOutcome implements RunOutcome {
  static readonly #checkpoint: PropertyDescriptor = {
    get(this: UnkeptOutcome) {
      return this.#make();
    },
    enumerable: true,
    configurable: true,
  };
  declare readonly run_id: string;
  declare readonly thread_id: string;
  declare readonly status: RunOutcome['status'];
  declare readonly state: AgentState;
  declare readonly result: AgentResult;
  declare readonly checkpoint: Checkpoint;
  declare readonly paused: RunOutcome['paused'];
  declare readonly tool_calls: ToolCall[];
  declare readonly usage: RunUsage;
  declare readonly duration_ms: number;
  readonly #make: () => Checkpoint;

  constructor(
    runId: string,
    threadId: string,
    status: RunOutcome['status'],
    state: AgentState,
    result: AgentResult,
    make: () => Checkpoint,
    paused: RunOutcome['paused'],
    toolCalls: ToolCall[],
    usage: RunUsage,
    duration_ms: number,
  ) {
    this.#make = make;
    const self = this as { -readonly [K in keyof RunOutcome]: RunOutcome[K] };
    self.run_id = runId;
    self.thread_id = threadId;
    self.status = status;
    self.state = state;
    self.result = result;
    Object.defineProperty(this, 'checkpoint', UnkeptOutcome.#checkpoint);
    self.paused = paused;
    self.tool_calls = toolCalls;
    self.usage = usage;
    self.duration_ms = duration_ms;
  }
}

/** What `save` wrote: a checkpoint, or one not kept and not yet made. */
type Saved = Checkpoint | Unkept;

/** The span of a run nobody traces: every child of it is itself. */
const NOOP_SPAN: TraceSpan = NO_TRACING.start('');

/** The signal of a run nobody can cancel, and the breakpoints of a run that has none: shared, since a run is cheap. */
const NEVER_ABORTED = new AbortController().signal;
const NO_BREAKPOINTS: ReadonlySet<string> = new Set();

const isPlainObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);
const isAbort = (err: unknown) =>
  err instanceof ModelCallAborted || (err instanceof Error && (err.name === 'AbortError' || err.name === 'APIUserAbortError'));

export function initialState(input: AgentInput): AgentState {
  const messages: ChatMessage[] = [...input.history, { role: 'user', content: input.query }];
  return { messages, response: '', steps_taken: [], metadata: { ...input.metadata } };
}

/** The result a finished state stands for: the graph's `result()` or the standard keys. */
export function buildResult(definition: AgentDefinition, state: AgentState): AgentResult {
  return resultFrom(definition.graph?.result?.(state), state);
}

/** The result of a state, given what the graph's `result()` returned for it (undefined: none). */
function resultFrom(custom: AgentResult | undefined, state: AgentState): AgentResult {
  if (custom) return { ...custom, steps_taken: custom.steps_taken ?? state.steps_taken };
  // Built in one literal: this runs for every invoke.
  return {
    response: typeof state.response === 'string' ? state.response : String(state.response ?? ''),
    output: state.output ?? null,
    suggestions: Array.isArray(state.suggestions) ? (state.suggestions as string[]) : [],
    citations: Array.isArray(state.citations) ? (state.citations as AgentResult['citations']) : [],
    context: state.context ?? null,
    metadata: isPlainObject(state.result_metadata) ? state.result_metadata : {},
    reasoning: typeof state.reasoning === 'string' ? state.reasoning : undefined,
    steps_taken: state.steps_taken,
  };
}

export class Engine {
  private readonly maxSteps: number;

  constructor(private readonly options: EngineOptions) {
    this.maxSteps = options.maxSteps ?? 100;
  }

  /**
   * Run (or resume) an agent. Resolves for every way a run can stop except a failure: a node that
   * throws makes it emit `run_error` and reject with the node's own error (a `HangarError` keeps
   * its status; anything else is the agent's failure, a 500 at the route).
   */
  run(request: RunRequest): Promise<RunOutcome> {
    return this.execute(request, null);
  }

  /**
   * A run (or a subagent's, inside `parentSpan`), in its `invoke_agent` span when tracing is on.
   * Not async itself: an async function returning the run's promise adds a promise and two turns
   * of the microtask queue to every run.
   */
  private execute(request: RunRequest, parentScope: InterruptScope | null, parentSpan?: TraceSpan): Promise<RunOutcome> {
    const tracing = this.options.tracing?.tracing;
    if (!tracing?.enabled) return this.executeRun(request, parentScope, NOOP_SPAN);
    return this.executeTraced(tracing, request, parentScope, parentSpan);
  }

  private async executeTraced(
    tracing: NonNullable<EngineOptions['tracing']>['tracing'],
    request: RunRequest,
    parentScope: InterruptScope | null,
    parentSpan?: TraceSpan,
  ): Promise<RunOutcome> {
    const runId = request.runId ?? randomUUID();
    const attributes = runAttributes(request.agent.name, runId, request.input.thread_id);
    const name = `invoke_agent ${request.agent.name}`;
    const span = parentSpan ? parentSpan.child(name, attributes) : tracing.start(name, attributes);
    try {
      const outcome = await this.executeRun({ ...request, runId }, parentScope, span);
      span.set({ 'gen_ai.conversation.id': outcome.thread_id, 'hangar.run.status': outcome.status });
      return outcome;
    } catch (err) {
      if (err instanceof InterruptSignal) span.set({ 'hangar.run.status': 'interrupted' });
      else span.fail(err);
      throw err;
    } finally {
      span.end();
    }
  }

  private async executeRun(request: RunRequest, parentScope: InterruptScope | null, runSpan: TraceSpan): Promise<RunOutcome> {
    const started = performance.now();
    const { agent, input } = request;
    const nested = parentScope !== null;
    const graph = compileGraph(agent.definition);
    // Nested (subagent) runs are internal, never resumed on their own: their checkpoints are not kept.
    const checkpointer = request.checkpointer ?? UNRETAINED;
    const runId = request.runId ?? randomUUID();
    const threadId = input.thread_id ?? timeOrderedId();
    const signal = request.signal ?? NEVER_ABORTED;
    const breakpoints: ReadonlySet<string> = request.breakpoints?.length ? new Set(request.breakpoints) : NO_BREAKPOINTS;
    const toolCalls: ToolCall[] = [];
    const meter = new UsageMeter(this.options.provider.pricing);

    const emit = (body: RunEventBody) => {
      if (!request.onEvent) return;
      request.onEvent({ ...body, run_id: runId, thread_id: threadId, timestamp: isoNow() } as RunEvent);
    };

    const runInput = { ...input, thread_id: threadId };
    const metadataFor = (source: CheckpointMetadata['source'], node: string | null, next: string | null): CheckpointMetadata => ({
      run_id: runId,
      agent: agent.name,
      source,
      node,
      next,
      input: runInput,
    });

    let parent: Saved | null = null;
    let step = 0;
    let state: AgentState;
    let current: string | null;
    let resumeScope: InterruptScope | null = null;
    // The journal a resumed node replays (journal.ts): from a `tool` or interrupt checkpoint of that node.
    let resumeJournal: ToolJournal | null = null;
    let skipBreakpointAt: string | null = null;

    const keeps = checkpointer.retains !== false;
    // Synchronous when nothing is kept: it runs after every step of every run.
    const save = (
      source: CheckpointMetadata['source'],
      node: string | null,
      next: string | null,
      extra?: Partial<CheckpointMetadata>,
    ): Saved | Promise<Checkpoint> => {
      // Every checkpoint after the input one is a step of its own (pauses included), so steps are
      // unique and increasing along a thread's chain.
      if (source !== 'input') step++;
      if (!keeps) return (parent = new Unkept(step, state, source, node, next, extra, parent, Date.now()));
      const checkpoint: Checkpoint = {
        id: randomUUID(),
        thread_id: threadId,
        step,
        // A deep copy of what is kept: later nodes may mutate objects they were handed.
        state: structuredClone(state),
        metadata: extra ? { ...metadataFor(source, node, next), ...extra } : metadataFor(source, node, next),
        parent_id: parent ? checkpointOf(parent).id : null,
        timestamp: isoNow(),
      };
      return checkpointer.put(agent.name, checkpoint).then(() => (parent = checkpoint));
    };
    const checkpointOf = (saved: Saved): Checkpoint => {
      if (!(saved instanceof Unkept)) return saved;
      if (saved.made) return saved.made;
      const metadata = metadataFor(saved.source, saved.node, saved.next);
      saved.made = {
        id: randomUUID(),
        thread_id: threadId,
        step: saved.step,
        state: saved.state,
        metadata: saved.extra ? { ...metadata, ...saved.extra } : metadata,
        parent_id: saved.parent ? checkpointOf(saved.parent).id : null,
        timestamp: new Date(saved.at).toISOString(),
      };
      return saved.made;
    };

    const site: CallSite = {
      input: runInput,
      prompt: request.prompt,
      signal,
      threadId,
      workspace: this.options.workspace,
      model: { configured: this.options.provider.configured, name: this.options.provider.model },
    };
    const finish = async (status: RunOutcome['status'], saved: Saved, paused?: RunOutcome['paused']): Promise<RunOutcome> => {
      const result = await this.result(agent, state, site, status);
      const duration_ms = performance.now() - started;
      const usage = meter.summary();
      if (status === 'completed' || status === 'rejected') {
        if (!nested && request.onEvent)
          emit({
            type: 'run_complete',
            status,
            response: result.response,
            steps_taken: result.steps_taken ?? [],
            duration_ms,
            ...(usage.calls.length ? { usage } : {}),
          });
      }
      if (!(saved instanceof Unkept)) {
        return {
          run_id: runId,
          thread_id: threadId,
          status,
          state,
          result,
          checkpoint: saved,
          paused,
          tool_calls: toolCalls,
          usage,
          duration_ms,
        };
      }
      return new UnkeptOutcome(runId, threadId, status, state, result, () => checkpointOf(saved), paused, toolCalls, usage, duration_ms);
    };

    const resume = request.resume;
    if (resume) {
      parent = resume.checkpoint;
      step = resume.checkpoint.step;
      state = structuredClone(resume.checkpoint.state);
      current = resume.checkpoint.metadata.next;
      skipBreakpointAt = current;
      const recorded = resume.checkpoint.metadata.journal;
      if (recorded && recorded.node === current) resumeJournal = structuredClone(recorded);
      const pending = resume.checkpoint.metadata.interrupt;
      if (!nested)
        emit({
          type: 'run_start',
          agent: agent.name,
          input: { query: input.query, user_id: input.user_id },
          resumed_from: resume.checkpoint.id,
        });
      if (pending && isToolApproval(pending)) {
        // A gated tool call's decision goes to that call only (tool-approval.ts): a rejection is
        // the call's result and the run goes on; nothing joins the state.
        const answer: ToolApprovalAnswer =
          resume.action === 'reject'
            ? { approved: false, reason: resume.reason ?? null }
            : { approved: true, ...(resume.arguments !== undefined ? { arguments: resume.arguments } : {}) };
        resumeScope = { values: [...pending.resume_values, answer], next: 0 };
      } else if (pending) {
        if (resume.action === 'reject') {
          state = { ...state, metadata: { ...state.metadata, hitl_approved: false, hitl_rejection_reason: resume.reason ?? null } };
          const checkpoint = await save('rejected', pending.node, null);
          return finish('rejected', checkpoint);
        }
        // The approval's context joins the state before the node re-runs, so the node (and every
        // later one) sees it — the spec's "context merged into state.metadata".
        const merged = isPlainObject(resume.value) ? resume.value : {};
        state = { ...state, metadata: { ...state.metadata, ...merged, hitl_approved: true } };
        resumeScope = { values: [...pending.resume_values, resume.value ?? {}], next: 0 };
      }
    } else {
      state = initialState({ ...input, thread_id: threadId });
      current = graph.entry;
      if (!nested && request.onEvent)
        emit({ type: 'run_start', agent: agent.name, input: { query: input.query, user_id: input.user_id }, resumed_from: null });
    }
    let last: Saved = parent ?? (await save('input', null, current));

    let steps = 0;
    while (current !== null) {
      const node: CompiledNode = graph.nodes.get(current)!;
      if (signal.aborted) return this.cancelled(emit, nested, finish, last, current);
      if (breakpoints.has(current) && skipBreakpointAt !== current) {
        last = await save('breakpoint', parent ? checkpointOf(parent).metadata.node : null, current);
        emit({ type: 'breakpoint_hit', node: current, reason: 'breakpoint', checkpoint_id: checkpointOf(last).id });
        return finish('breakpoint', last, { node: current, message: `breakpoint before '${current}'`, payload: {} });
      }
      skipBreakpointAt = null;
      if (++steps > this.maxSteps) {
        const err = new GraphDefinitionError(`run exceeded ${this.maxSteps} steps at node '${current}' (a cycle that never exits?)`);
        emit({ type: 'run_error', error: err.message, node: current });
        throw err;
      }

      // Its body is only worth making for someone listening (as node_end's below).
      if (request.onEvent) emit({ type: 'node_start', node: current, step: step + 1 });
      // Only the first node after an interrupt resume gets the resume values.
      const scope: InterruptScope = parentScope ?? resumeScope ?? { values: [], next: 0 };
      resumeScope = null;
      const nodeSteps: string[] = [];
      const nodeName = current;
      const recorded = resumeJournal;
      // Made with the node's model client (its only writer), or at a pause that keeps it: a node
      // that never calls the model has none to settle or keep.
      let journal: NodeJournal | undefined;
      const journalOf = () =>
        (journal ??= new NodeJournal(recorded ?? { node: nodeName, turns: [], results: {} }, (record) =>
          save('tool', nodeName, nodeName, { journal: record }),
        ));
      if (recorded) journalOf();
      resumeJournal = null;
      const span = nodeSpan(runSpan, current, step + 1);
      let ctx: ReturnType<Engine['context']> | undefined;
      const ctxOf = () =>
        (ctx ??= this.context(request, threadId, signal, scope, nodeSteps, toolCalls, emit, nodeName, meter, journalOf, span));

      let output: Partial<AgentState> | void;
      try {
        output = await (node.kind === 'function'
          ? this.runFunction(agent, node, state, ctxOf, site)
          : this.runNode(agent, node, state, ctxOf(), scope));
        span.end();
      } catch (err) {
        if (err instanceof InterruptSignal) span.set({ 'hangar.graph.interrupted': true });
        else span.fail(err);
        span.end();
        // The checkpoints of calls that finished are written before the run reports how it stopped.
        await journal?.settled().catch(() => {});
        if (err instanceof InterruptSignal) {
          if (nested) throw err;
          const interrupt: PendingInterrupt = {
            node: current,
            message: err.message,
            payload: err.payload,
            resume_values: err.resumeValues,
          };
          // A gated tool call's resume must meet the model answer that asked for it, so its journal is kept even before any call finished.
          const keepJournal = !!journal?.hasResults || isToolApproval(interrupt);
          last = await save('interrupt', current, current, keepJournal ? { interrupt, journal: journalOf().snapshot() } : { interrupt });
          emit({
            type: 'breakpoint_hit',
            node: current,
            reason: 'interrupt',
            checkpoint_id: checkpointOf(last).id,
            message: err.message,
            payload: err.payload,
          });
          return finish('interrupted', last, { node: current, message: err.message, payload: err.payload });
        }
        if (signal.aborted || isAbort(err)) return this.cancelled(emit, nested, finish, last, current);
        if (!nested) emit({ type: 'run_error', error: errorMessage(err), node: current });
        throw err instanceof HangarError || err instanceof NodeError ? err : new NodeError(current, err);
      }

      const delta = output && typeof output === 'object' ? output : {};
      const stepsBefore = Array.isArray(delta.steps_taken) ? delta.steps_taken : state.steps_taken;
      // Object.assign, not `{ ...state, ...delta }`: V8 takes a slow path for the second spread,
      // ~30× slower, and this runs after every step of every run.
      state = Object.assign({}, state, delta, {
        steps_taken: graph.synthetic ? stepsBefore.concat(nodeSteps) : stepsBefore.concat(current, nodeSteps),
      });
      let next: string | null;
      try {
        const pending = this.next(agent, graph, current, state, site);
        next = pending instanceof Promise ? await pending : pending;
      } catch (err) {
        if (signal.aborted) return this.cancelled(emit, nested, finish, last, current);
        if (!nested) emit({ type: 'run_error', error: errorMessage(err), node: current });
        throw err;
      }
      last = await save('loop', current, next);
      // The JSON copy of the output is only worth making for someone listening.
      if (request.onEvent) {
        emit({
          type: 'node_end',
          node: current,
          step,
          output: summariseOutput({ ...delta, steps_taken: state.steps_taken }),
          checkpoint_id: checkpointOf(last).id,
        });
      }
      current = next;
    }
    return finish('completed', last);
  }

  /**
   * The agent's tools, names resolved to the live `tools/` drop-ins (a clear error for one that is
   * not loaded) and `mcp:` entries to their servers' tools (starting a server on first use).
   */
  private toolsOf(agent: AgentRef): Promise<AnyTool[]> {
    return resolveListedTools(agent, this.options);
  }

  private cancelled(
    emit: (body: RunEventBody) => void,
    nested: boolean,
    finish: (status: RunOutcome['status'], saved: Saved) => Promise<RunOutcome>,
    last: Saved,
    node: string,
  ): Promise<RunOutcome> {
    // Decision: cancellation is reported as run_error (the run did not finish) flagged `cancelled`;
    // the newest checkpoint stays, so a studio can resume from it.
    if (!nested) emit({ type: 'run_error', error: 'run cancelled', node, cancelled: true });
    return finish('cancelled', last);
  }

  private runFunction(
    agent: AgentRef,
    node: CompiledNode & { kind: 'function' },
    state: AgentState,
    ctx: () => RunContext,
    site: CallSite,
  ): Promise<Partial<AgentState> | void> | Partial<AgentState> | void {
    const host = this.options.host;
    return host?.supervises(agent) ? host.runNode(agent, node.name, state, ctx, site) : node.run(state, ctx());
  }

  /**
   * The node after `from`: the edges' conditions are the agent's code, so a supervised agent's are
   * asked in its host (one crossing per step); a node whose edges have none is followed here.
   */
  private next(
    agent: AgentRef,
    graph: CompiledGraph,
    from: string,
    state: AgentState,
    ctx: CallSite,
  ): string | null | Promise<string | null> {
    const host = this.options.host;
    if (host && graph.outgoing.get(from)?.some((edge) => edge.when) && host.supervises(agent)) {
      return host.runFunction(agent, { kind: 'next', from }, state, ctx) as Promise<string | null>;
    }
    return nextNode(graph, from, state);
  }

  /**
   * The result a state ends a run with, computed as the engine's own runs do (a supervised agent's
   * `result()` in its host): for a caller that ends a thread without running the graph — the
   * studio's rejection at a pause — so the agent's code never runs on the server's thread there either.
   */
  resultOf(agent: AgentRef, state: AgentState, run: Pick<CallSite, 'input' | 'prompt' | 'signal' | 'threadId'>): Promise<AgentResult> {
    const site: CallSite = {
      ...run,
      workspace: this.options.workspace,
      model: { configured: this.options.provider.configured, name: this.options.provider.model },
    };
    return Promise.resolve(this.result(agent, state, site, 'rejected'));
  }

  /**
   * What a run stopped with stands for: a supervised agent's `result()` runs in its host. A run
   * cancelled or past its deadline gets the standard keys instead: its signal has ended the time
   * its code may run, and a result function stuck in a loop must not outlive it.
   */
  private result(agent: AgentRef, state: AgentState, site: CallSite, status: RunOutcome['status']): AgentResult | Promise<AgentResult> {
    const host = this.options.host;
    if (!agent.definition.graph?.result || !host?.supervises(agent)) return buildResult(agent.definition, state);
    if (status === 'cancelled' || site.signal.aborted) return resultFrom(undefined, state);
    return host.runFunction(agent, { kind: 'result' }, state, site).then((custom) => resultFrom(custom as AgentResult | undefined, state));
  }

  /** One of the graph's functions of a built-in node (`message`, `query`): in the agent's host when it is supervised. */
  private graphFunction<T>(agent: AgentRef, fn: GraphFunction, local: () => T, state: AgentState, ctx: CallSite): T | Promise<T> {
    const host = this.options.host;
    return host?.supervises(agent) ? (host.runFunction(agent, fn, state, ctx) as Promise<T>) : local();
  }

  private async runNode(
    agent: AgentRef,
    node: CompiledNode,
    state: AgentState,
    ctx: RunContext,
    scope: InterruptScope,
  ): Promise<Partial<AgentState> | void> {
    switch (node.kind) {
      case 'function':
        return node.run(state, ctx);
      case 'approval': {
        const fn = node.message;
        const message =
          typeof fn === 'function'
            ? await this.graphFunction(agent, { kind: 'message', node: node.name }, () => fn(state), state, ctx)
            : fn;
        await ctx.interrupt(message, { node: node.name });
        // Approved: the context was merged into state.metadata when the run resumed.
        return {};
      }
      case 'subagent': {
        const fn = node.query;
        const query = fn
          ? await this.graphFunction(agent, { kind: 'query', node: node.name }, () => fn(state), state, ctx)
          : state.response || ctx.input.query;
        const result = await this.callSubagent(node.agent, query, {}, ctx, scope);
        const previous = isPlainObject(state.subagent_results) ? state.subagent_results : {};
        return { response: result.response, subagent_results: { ...previous, [node.name]: result } };
      }
    }
  }

  private async callSubagent(
    name: string,
    query: string,
    context: Record<string, unknown>,
    ctx: RunContext & { emitEvent?: (body: RunEventBody) => void; meter?: UsageMeter; span?: TraceSpan },
    scope: InterruptScope,
  ): Promise<AgentResult> {
    const ref = this.options.resolveAgent(name);
    if (!ref) throw new Error(`subagent '${name}' is not a registered agent`);
    const emit = ctx.emitEvent!;
    emit({ type: 'subagent_start', node: name, query });
    const outcome = await this.execute(
      {
        agent: ref,
        input: { ...ctx.input, query, context: { ...ctx.input.context, ...context }, history: [] },
        prompt: '',
        signal: ctx.signal,
        // Tokens and planning updates of the subagent show in the parent's stream.
        onEvent: (event) => {
          if (event.type === 'message_chunk' || event.type === 'task_update' || event.type === 'tool_start' || event.type === 'tool_end')
            emit(event);
        },
      },
      scope,
      ctx.span,
    );
    ctx.meter?.absorb(outcome.usage);
    emit({ type: 'subagent_end', node: name, output: summariseOutput(outcome.result as Partial<AgentState>) });
    return outcome.result;
  }

  private context(
    request: RunRequest,
    threadId: string,
    signal: AbortSignal,
    scope: InterruptScope,
    nodeSteps: string[],
    toolCalls: ToolCall[],
    emit: (body: RunEventBody) => void,
    node: string,
    meter: UsageMeter,
    journalOf: () => NodeJournal,
    span: TraceSpan,
  ): RunContext & { emitEvent: (body: RunEventBody) => void; meter: UsageMeter; span: TraceSpan } {
    const { agent, input } = request;
    const documents = (collection: string) => this.options.documents?.(collection) ?? Promise.resolve([]);
    // Made on the node's first model call: a client is a dozen closures and a map, and most nodes
    // (every no-op, every supervised node whose code makes no model call) never use one.
    let client: RunContext['model'] | undefined;
    const modelClient = (): RunContext['model'] => {
      const provider = this.options.provider;
      return (client ??= createModelClient({
        provider,
        agent: agent.name,
        config: agent.definition.config ?? {},
        input,
        signal,
        node,
        emit,
        meter,
        journal: journalOf(),
        span,
        captureContent: this.options.tracing?.captureContent ?? false,
        tools: () => this.toolsOf(agent),
        maxSteps: provider.maxSteps,
        interrupt: (message, payload) => ctx.interrupt(message, payload),
        toolContext: {
          agent: agent.name,
          input: { ...input, thread_id: threadId },
          threadId,
          workspace: this.options.workspace,
          documents,
        },
        onToolCall: (call) => {
          toolCalls.push(call);
          nodeSteps.push(`tool:${call.name}`);
        },
      }));
    };
    const ctx: RunContext & { emitEvent: (body: RunEventBody) => void; meter: UsageMeter; span: TraceSpan } = {
      input: { ...input, thread_id: threadId },
      prompt: request.prompt,
      // Plain properties, no getter: V8 gives an object literal with a getter a hidden class of its
      // own in the old generation, and its getter closure would hold this node's objects through
      // every young collection (see the host's ctx, host/worker.ts). A node that spreads or
      // destructures `ctx` or `ctx.model` gets working methods.
      model: {
        configured: this.options.provider.configured,
        name: agent.definition.config?.model ?? this.options.provider.model,
        chat: (messages, options) => modelClient().chat(messages, options),
        run: (messages, options) => modelClient().run(messages, options),
        object: (schema, messages, options) => modelClient().object(schema, messages, options),
      },
      signal,
      workspace: this.options.workspace,
      documents,
      threadId,
      emitEvent: emit,
      meter,
      span,
      step: (name) => nodeSteps.push(String(name)),
      tool: (name, args) => toolCalls.push({ name, args }),
      plan: (tool, args) => {
        toolCalls.push({ name: tool, args });
        emit({ type: 'task_update', node: `planning:${tool}`, tool, args });
      },
      interrupt: async <T>(message: string, payload: Record<string, unknown> = {}): Promise<T> => {
        if (scope.next < scope.values.length) {
          const value = scope.values[scope.next++];
          return (value ?? {}) as T;
        }
        throw new InterruptSignal(message, payload, scope.values.slice(0, scope.next));
      },
      callAgent: (name, query, context = {}) => this.callSubagent(name, query, context, ctx, scope),
    };
    return ctx;
  }
}
