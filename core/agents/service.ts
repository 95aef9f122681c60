/**
 * The agent service: every way of running an agent over HTTP — invoke, stream (with retained
 * replay), chat over stored threads, HITL approve/reject, optimize — on top of the engine.
 * Routes only parse, call one method here and shape nothing; this file never sees HTTP.
 * What a run is before it starts is `run-plan.ts`, its deadline `deadline.ts`, what it becomes for
 * the caller `run-results.ts`; workspace documents are `documents.ts`.
 *
 * Decisions where the spec is silent (also in the route docs):
 * - Checkpoints of a run that names a `thread_id` (and of every chat) are persisted; an invoke
 *   without one gets a generated id and in-memory checkpoints, so a stateless invoke costs no
 *   disk write. A suspension is persisted either way (the pending approval holds the snapshot).
 * - /invoke does not read or write thread messages; /chat is the conversation API.
 * - An agent that throws → 500 `agent '<name>' failed: <message>` (logged); errors the agent or
 *   runtime raise as `HangarError` (503 no model configured, 502 model endpoint failed) keep status.
 * - `approved: false` on approve is a rejection: the run is discarded, as with /reject.
 * - A suspension is findable whichever route started the run: the 202 body names the thread and
 *   links to approve and reject, the pending record keeps the route (`source`) and, for a run a
 *   board task made, the task, and `listApprovals()` lists them across threads. Deciding an approval
 *   of a task's run — by any route — continues the task (`routeTaskDecisions`), so the task and
 *   the thread never disagree about how the run ended.
 * - Deadlines: every run this service starts has one — the request's `timeout_ms`, else the agent's
 *   `timeout_ms`, else `agents.timeoutMs` (5 min). A request may ask for up to the larger of the
 *   agent's own deadline and the setting; more is capped, not refused. At the deadline the run's
 *   signal aborts and the caller is answered at once (504 `agent 'x' did not finish within N ms`,
 *   a stream's `error` frame, a task `failed`) even if the agent ignores its signal: what it
 *   does afterwards (events, result, a suspension) is discarded. A resumed approval gets a fresh
 *   deadline of the agent's own length: the person's thinking time is not the run's.
 *
 * Ownership (core/kernel/ownership.ts): every run knows the principal it runs for. The
 * checkpoints it starts and the approval it leaves belong to that principal; a run that names a
 * thread of another principal is refused with the thread's 404 before anything runs (so it can
 * neither read that thread's history nor write into it); pending approvals and approve/reject see
 * only the caller's records. The checkpoints and approvals are parts of the thread
 * (`ThreadService.attach`), so deleting a thread removes them.
 *
 * Why one file past 600 lines: each way of running an agent is a few short methods over the same
 * run plan, deadline and ownership rules written above; what has its own concept lives apart
 * (run-plan.ts, deadline.ts, run-results.ts, documents.ts). One file per way of running would
 * repeat those rules' wiring five times.
 */

import { ERROR_CATALOGUE } from '../kernel/error-catalogue.js';
import { fail, HangarError } from '../kernel/errors.js';
import type { Logger } from '../kernel/log.js';
import { ownerFor } from '../kernel/ownership.js';
import type { Store } from '../kernel/store.js';
import type { EventLog, ReplayableSource } from '../lib/event-log.js';
import { timeOrderedId } from '../storage/ids.js';
import type { ThreadService } from '../threads/service.js';
import { ApprovalStore, approvalLinks } from './approvals.js';
import { type Checkpoint, type Checkpointer, ownedBy, StoreCheckpointer, UNRETAINED } from './checkpointer.js';
import { runWithDeadline } from './deadline.js';
import { readDocuments } from './documents.js';
import { Engine, type NodeHost, type RunOutcome, type RunRequest } from './engine.js';
import { type RunEvent, toolFrame } from './events.js';
import type { Agent } from './kind.js';
import type { ModelProvider } from './model.js';
import { resolvePrompt } from './prompts.js';
import { RecordCheckpointer } from './record-checkpointer.js';
import { deadlineOf, planRun, type RunOrigin, type RunPlan } from './run-plan.js';
import { invokeResponse, retrievalContext, runFailure } from './run-results.js';
import type { ApproveRequest, ChatRequest, ChatResponse, InvokeRequest, InvokeResponse, RejectRequest } from './schemas.js';
import { type InvokeFrame, InvokeStreams, type SharedStreams, type StreamRetention } from './streams.js';
import { isToolApproval } from './tool-approval.js';
import type { AnyTool } from './tools.js';
import type { AgentTracing } from './tracing.js';
import type { ChatMessage, PendingApproval } from './types.js';
import type { RunUsage } from './usage.js';

export interface AgentServiceOptions {
  /** The live agent by name, or throw the 404. */
  findAgent: (name: string) => Agent;
  /** The live agent by name or undefined (subagents). */
  lookupAgent: (name: string) => Agent | undefined;
  /** The live `tools/` drop-in by name or undefined (agents list tools by name). */
  lookupTool?: (name: string) => AnyTool | undefined;
  store: Store;
  provider: ModelProvider;
  workspace: string;
  log: Logger;
  threads: ThreadService;
  streams: StreamRetention;
  /** Team mode: streams stored for every instance to replay (core/storage/team-streams.ts). */
  sharedStreams?: SharedStreams;
  /** `chat.max_history`: the newest messages a chat loads when the request names no limit (null: all). */
  defaultMaxHistory?: number | null;
  /** `checkpoints.keep`: the newest checkpoints kept per thread (undefined: all). */
  keepCheckpoints?: number;
  /** `agents.timeoutMs`: the deadline of a run whose agent and request name none (default 5 min). */
  defaultTimeoutMs?: number;
  /** Spans of runs, nodes, model and tool calls (tracing.ts); none when absent. */
  tracing?: AgentTracing;
  /** The tools an agent's `mcp:<server>/…` entry names (mcp-servers.ts). */
  resolveMcpTools?: (ref: string, agent: string) => Promise<AnyTool[]>;
  /** Told of every finished run (metrics: `agent_invocations_total`). */
  onRun?: (agent: string, route: RunRoute, outcome: string) => void;
  /** Told of the model calls of every run that made any (metrics: `model_tokens_total`). */
  onUsage?: (agent: string, usage: RunUsage) => void;
  /** Where supervised agents' functions run (host/supervisor.ts); none: every agent inline. */
  host?: NodeHost;
}

/** Which API a run came through, for metrics. */
export type RunRoute = 'invoke' | 'stream' | 'chat' | 'approve' | 'optimize' | 'studio';

export interface SuspensionDetail {
  status: 'suspended';
  approval_id: string;
  thread_id: string;
  node_name: string;
  message: string;
  links: ReturnType<typeof approvalLinks>;
}

/** A person's answer to a pending approval. */
export type ApprovalDecision =
  | { approved: true; context: Record<string, unknown> /** a gated tool call's edited arguments */; arguments?: Record<string, unknown> }
  | { approved: false; reason: string | null };

export interface RejectedRun {
  status: 'rejected';
  approval_id: string;
  reason: string | null;
}

/**
 * The spec's HITL suspension: HTTP 202 whose `detail` is an object (the one place it is). The body
 * is the spec's; `X-Thread-Id` names the thread the approve and reject routes need, which a caller
 * who sent no `thread_id` has no other way to learn.
 */
export const suspended = (detail: SuspensionDetail, threadId: string) =>
  new HangarError(
    ERROR_CATALOGUE.HANGAR_AGENT_SUSPENDED.status,
    detail as unknown as Record<string, unknown>,
    { 'X-Thread-Id': threadId },
    {},
    'HANGAR_AGENT_SUSPENDED',
  );

/** Whether a run's throw is the suspension above (which carries its approval, not a failure). */
export const isSuspension = (err: unknown): err is HangarError => err instanceof HangarError && err.code === 'HANGAR_AGENT_SUSPENDED';

export class AgentService {
  readonly engine: Engine;
  readonly approvals: ApprovalStore;
  readonly streams: InvokeStreams;
  /** Persistent checkpoints (threads named by the caller, chats, studio runs). */
  readonly checkpoints: Checkpointer;
  /** Decides approvals of task-made runs through their task (set by the A2A subsystem). */
  private taskDecisions: ((record: PendingApproval, decision: ApprovalDecision) => Promise<InvokeResponse | RejectedRun>) | undefined;
  /** Ends the task of an approval taken without a decision (set by the A2A subsystem). */
  private taskRelease: ((record: PendingApproval, reason: string) => Promise<void>) | undefined;

  constructor(private readonly options: AgentServiceOptions) {
    this.engine = new Engine({
      resolveAgent: options.lookupAgent,
      resolveTool: options.lookupTool,
      provider: options.provider,
      workspace: options.workspace,
      documents: (collection) => readDocuments(options.store, collection),
      tracing: options.tracing,
      resolveMcpTools: options.resolveMcpTools,
      host: options.host,
    });
    this.approvals = new ApprovalStore(options.store);
    this.streams = new InvokeStreams(options.streams, options.sharedStreams);
    // The SQLite store lays checkpoints out in tables of its own; another store (PostgreSQL, team mode) keeps a record per step.
    const checkpoints =
      options.store.describe().backend === 'sqlite'
        ? new StoreCheckpointer(options.store, { keep: options.keepCheckpoints })
        : new RecordCheckpointer(options.store, options.keepCheckpoints);
    this.checkpoints = checkpoints;
    const approvals = this.approvals;
    options.threads.attach({
      name: 'checkpoints',
      owner: (agent, threadId) => checkpoints.owner(agent, threadId),
      beforeMessagesReplaced: (agent, threadId) => checkpoints.detachMessages(agent, threadId),
      delete: (agent, threadId) => checkpoints.delete(agent, threadId),
    });
    options.threads.attach({
      name: 'approvals',
      owner: (agent, threadId) => approvals.owner(agent, threadId),
      delete: async (agent, threadId) => void (await approvals.deleteThread(agent, threadId)),
    });
  }

  /**
   * Refuse a run on a thread id that belongs to another principal, with the 404 of an unknown
   * thread. An id nobody holds yet is free: the run makes it the caller's.
   */
  async claimThread(agentName: string, threadId: string, principal: string | undefined): Promise<void> {
    if ((await this.options.threads.access(agentName, threadId, principal)) === 'hidden') {
      throw fail('HANGAR_THREAD_NOT_FOUND', { thread: threadId, agent: agentName });
    }
  }

  /** Invoke and wait. Resolves to the response; a HITL suspension throws the 202 `suspended`. */
  async invoke(
    agentName: string,
    request: InvokeRequest,
    signal?: AbortSignal,
    onEvent?: (event: RunEvent) => void,
    principal?: string,
    origin: RunOrigin = { source: 'invoke' },
  ): Promise<InvokeResponse> {
    const plan = this.plan(agentName, request, [], principal, origin);
    if (request.thread_id) await this.claimThread(plan.agent.name, request.thread_id, principal);
    const outcome = await this.execute('invoke', plan, { signal, onEvent });
    return invokeResponse(plan.agent, plan.promptVersion, outcome);
  }

  /**
   * Start a streamed invoke and return at once with the retained stream; the run continues in
   * the background whether or not anyone reads it (a client that disconnects stops nothing, and
   * the frames stay replayable). Validation errors (unknown agent, prompt, no model) throw before
   * any stream exists, so they are ordinary JSON errors.
   */
  async startStream(
    agentName: string,
    request: InvokeRequest,
    principal: string,
    owner: string = principal,
  ): Promise<{ id: string; log: EventLog<InvokeFrame> }> {
    const plan = this.plan(agentName, request, [], owner, { source: 'stream' });
    if (request.thread_id) await this.claimThread(plan.agent.name, request.thread_id, owner);
    const { id, log } = this.streams.open(plan.agent.name, principal);
    let response = '';
    let steps: string[] = [];
    log.append({ event: 'start', response, steps_taken: steps, thread_id: plan.input.thread_id, agent: plan.agent.name });
    const onEvent = (event: RunEvent) => {
      switch (event.type) {
        case 'message_chunk':
          response += event.content;
          log.append({ event: 'token', delta: event.content, response, steps_taken: steps });
          break;
        case 'tool_start':
        case 'tool_end':
          log.append(toolFrame(event, response, steps));
          break;
        case 'node_end': {
          const output = event.output as { response?: unknown; steps_taken?: unknown } | null;
          if (typeof output?.response === 'string') response = output.response;
          if (Array.isArray(output?.steps_taken)) steps = output.steps_taken as string[];
          log.append({ event: 'step', node: event.node, response, steps_taken: steps });
          break;
        }
        default:
          break;
      }
    };
    void (async () => {
      try {
        const outcome = await this.execute('stream', plan, { onEvent });
        const body = await invokeResponse(plan.agent, plan.promptVersion, outcome);
        log.append({ event: 'complete', ...body });
      } catch (err) {
        if (isSuspension(err)) {
          log.append({ event: 'suspended', response, steps_taken: steps, ...(err.detail as object) });
        } else {
          const error = runFailure(plan.agent.name, err, this.options.log);
          log.append({ event: 'error', response, steps_taken: steps, status: error.status, detail: error.detail });
        }
      } finally {
        this.streams.finish(id);
      }
    })();
    // Team mode: the stream id goes out once another instance can replay it.
    const stored = this.streams.stored(id);
    if (stored) await stored;
    return { id, log };
  }

  /**
   * The retained stream for replay, from this instance or (team mode) from the store wherever it
   * ran; unknown, evicted, another agent's or principal's → 404.
   */
  replay(agentName: string, streamId: string, principal: string): Promise<ReplayableSource<InvokeFrame>> {
    this.options.findAgent(agentName);
    return this.streams.find(streamId, agentName, principal);
  }

  /**
   * Chat: load history (caller's `messages` override the store; `include_history`, `max_history`),
   * run, and save the user message and the answer together (`persist`), so concurrent chats on
   * one thread never interleave a question with another's answer.
   *
   * Decision: `history_loaded` counts the history messages the agent received, from the store or
   * from the caller; `max_history` trims either to the newest N. Without it, history from the store
   * is the newest `chat.max_history` (default 100) — caller-supplied `messages` are not trimmed.
   */
  async chat(agentName: string, request: ChatRequest, signal?: AbortSignal, principal?: string): Promise<ChatResponse> {
    const threads = this.options.threads;
    const agent = this.options.findAgent(agentName);
    const threadId = request.thread_id ?? timeOrderedId();
    // Before the history is read: someone else's thread must not reach the model as context.
    if (request.thread_id) await this.claimThread(agent.name, threadId, principal);
    let history: ChatMessage[] = [];
    if (request.messages) history = request.messages;
    else if (request.include_history && request.thread_id) {
      // Bounded by default (chat.max_history): only the newest messages are read from the store.
      history = await threads.history(agent.name, threadId, request.max_history ?? this.options.defaultMaxHistory ?? null);
    }
    if (request.max_history != null) history = request.max_history === 0 ? [] : history.slice(-request.max_history);
    const plan = this.plan(agentName, { ...request, query: request.content, thread_id: threadId }, history, principal, { source: 'chat' });
    // A chat's thread is addressable (the response names it), so its checkpoints are kept —
    // unless nothing about it is stored and the caller named no thread.
    plan.persistent = request.persist || request.thread_id !== null;
    if (request.persist) await threads.ensure(agent.name, threadId, request.user_id, principal);
    const userMessage: ChatMessage = { role: 'user', content: request.content, timestamp: new Date().toISOString() };

    let outcome: RunOutcome;
    try {
      outcome = await this.execute('chat', plan, { signal }, { persist: request.persist, history_loaded: history.length });
    } catch (err) {
      // A suspended chat keeps the question; the answer is saved when the approval completes it.
      if (request.persist && isSuspension(err)) await threads.append(agent.name, threadId, [userMessage]);
      throw err;
    }
    const body = await invokeResponse(plan.agent, plan.promptVersion, outcome);
    if (request.persist) {
      await threads.append(agent.name, threadId, [
        userMessage,
        { role: 'assistant', content: body.response, timestamp: new Date().toISOString() },
      ]);
    }
    const { output: _output, ...rest } = body;
    return { ...rest, thread_id: threadId, history_loaded: history.length };
  }

  /** The caller's pending approvals of the thread; none (as for an unknown thread) on another principal's. */
  async pending(agentName: string, threadId: string, principal?: string) {
    const agent = this.options.findAgent(agentName);
    const records = await this.approvals.list(agent.name, threadId, principal);
    return {
      thread_id: threadId,
      pending: records.map((r) => ({
        id: r.id,
        node_name: r.node_name,
        message: r.message,
        payload: r.payload,
        state_snapshot: r.state_snapshot,
        created_at: r.created_at,
      })),
      count: records.length,
    };
  }

  /**
   * The caller's pending approvals across threads, newest first (of one agent when named), each
   * with where it is decided.
   */
  async listApprovals(principal: string | undefined, options: { agent?: string; limit: number; offset: number }) {
    const agent = options.agent === undefined ? undefined : this.options.findAgent(options.agent).name;
    const records = await this.approvals.listAll(principal, agent);
    const page = records.slice(options.offset, options.offset + options.limit).map((r) => ({
      id: r.id,
      agent: r.agent,
      thread_id: r.thread_id,
      node_name: r.node_name,
      message: r.message,
      payload: r.payload,
      source: r.source ?? 'invoke',
      task_id: r.task_id ?? null,
      created_at: r.created_at,
      links: { ...approvalLinks(r), ...(r.task_id ? { task: `/api/v1/tasks/${r.task_id}` } : {}) },
    }));
    return { approvals: page, count: page.length, total: records.length, limit: options.limit, offset: options.offset };
  }

  /**
   * Approve a suspended run: the pending record is taken (deleted), the context merged into
   * `state.metadata` with `hitl_approved: true`, and the run resumed from its snapshot. It may
   * suspend again (a new 202 with a new id).
   */
  async approve(agentName: string, threadId: string, request: ApproveRequest, principal?: string): Promise<InvokeResponse | RejectedRun> {
    const record = await this.takeApproval(agentName, threadId, request.approval_id, principal);
    return this.settle(
      record,
      request.approved
        ? { approved: true, context: request.context, ...(request.arguments ? { arguments: request.arguments } : {}) }
        : { approved: false, reason: null },
    );
  }

  /** Discard the suspended run; for a gated tool call, the model is told of the denial and the run goes on. */
  async reject(agentName: string, threadId: string, request: RejectRequest, principal?: string): Promise<InvokeResponse | RejectedRun> {
    const record = await this.takeApproval(agentName, threadId, request.approval_id, principal);
    return this.settle(record, { approved: false, reason: request.reason ?? null });
  }

  /** Take (delete) a pending approval the caller may see; anything else is the 404 of an unknown id. */
  takeApproval(agentName: string, threadId: string, approvalId: string, principal?: string): Promise<PendingApproval> {
    const agent = this.options.findAgent(agentName);
    return this.approvals.take(agent.name, threadId, approvalId, principal);
  }

  /**
   * Have the approvals of task-made runs decided through their task by `route`, and the task of
   * an approval used up otherwise (a studio resume from its checkpoint) ended by `release`.
   */
  routeTaskDecisions(
    route: (record: PendingApproval, decision: ApprovalDecision) => Promise<InvokeResponse | RejectedRun>,
    release: (record: PendingApproval, reason: string) => Promise<void>,
  ): void {
    this.taskDecisions = route;
    this.taskRelease = release;
  }

  /** A taken approval whose run continues elsewhere: its task, if any, stops waiting for it. */
  async releaseTask(record: PendingApproval, reason: string): Promise<void> {
    if (record.task_id) await this.taskRelease?.(record, reason);
  }

  /** Decide a taken approval: through its task when a task made the run, else here. */
  settle(record: PendingApproval, decision: ApprovalDecision): Promise<InvokeResponse | RejectedRun> {
    if (record.task_id && this.taskDecisions) return this.taskDecisions(record, decision);
    return this.decide(record, decision);
  }

  /**
   * Continue (approved) or discard (rejected) the run of a taken approval. The continued run
   * keeps its origin, so a further suspension is again its task's.
   */
  async decide(
    record: PendingApproval,
    decision: ApprovalDecision,
    onEvent?: (event: RunEvent) => void,
  ): Promise<InvokeResponse | RejectedRun> {
    const agent = this.options.findAgent(record.agent);
    const toolCall = isToolApproval(record.checkpoint.metadata.interrupt);
    if (!decision.approved && !toolCall) return this.discard(agent, record, decision.reason);
    const plan: RunPlan = {
      agent,
      input: record.checkpoint.metadata.input,
      promptVersion: record.prompt_version,
      prompt: resolvePrompt(agent, record.prompt_version).text,
      persistent: record.persistent,
      // The resumed run stays the suspended run's owner's, even when `local` approves it.
      principal: ownerFor(record.principal),
      origin: { source: record.source ?? 'invoke', ...(record.task_id ? { task_id: record.task_id } : {}) },
      timeoutMs: this.deadlineOf(agent),
    };
    const outcome = await this.execute(
      'approve',
      plan,
      {
        onEvent,
        resume: decision.approved
          ? { checkpoint: record.checkpoint, action: 'approve', value: decision.context, arguments: decision.arguments }
          : { checkpoint: record.checkpoint, action: 'reject', reason: decision.reason },
      },
      record.chat,
    );
    const body = await invokeResponse(plan.agent, plan.promptVersion, outcome);
    if (record.chat?.persist) {
      await this.options.threads.append(agent.name, record.thread_id, [
        { role: 'assistant', content: body.response, timestamp: new Date().toISOString() },
      ]);
    }
    return body;
  }

  /**
   * The run behind /optimize/invoke: the same agent with an optional system-prompt override,
   * reporting what an optimizer needs — retrieved passages, tool calls, steps and reasoning.
   */
  async optimize(
    agentName: string,
    request: {
      query: string;
      system_prompt_override: string | null;
      user_id: string;
      context: Record<string, unknown>;
      include_retrieval_context: boolean;
      include_steps: boolean;
    },
    principal?: string,
  ) {
    const plan = this.plan(agentName, { query: request.query, user_id: request.user_id, context: request.context }, [], principal, {
      source: 'optimize',
    });
    if (request.system_prompt_override != null) plan.prompt = request.system_prompt_override;
    const outcome = await this.execute('optimize', plan, {});
    const body = await invokeResponse(plan.agent, plan.promptVersion, outcome);
    const steps = body.steps_taken;
    return {
      response: body.response,
      retrieval_context: request.include_retrieval_context ? retrievalContext(outcome.result) : [],
      tool_calls: outcome.tool_calls,
      steps_taken: request.include_steps ? steps : [],
      reasoning: outcome.result.reasoning ?? (steps.length ? `Steps: ${steps.join(' → ')}` : 'The agent reported no steps.'),
      citations: body.citations,
      duration_ms: body.duration_ms,
      metadata: { ...body.metadata, system_prompt_overridden: request.system_prompt_override != null },
    };
  }

  /**
   * Run with the studio's knobs (breakpoints, events, a checkpoint to continue from); new checkpoint
   * chains are `principal`'s. Each segment (up to a pause) has the agent's own deadline: time spent
   * paused at a breakpoint is the person's, not the run's.
   */
  runForStudio(request: Omit<RunRequest, 'checkpointer'>, principal?: string): Promise<RunOutcome> {
    return this.run('studio', { ...request, checkpointer: ownedBy(this.checkpoints, principal) }, this.deadlineOf(request.agent));
  }

  /**
   * The one place runs start: counts each finished run by agent, route and outcome. With a
   * deadline, the run's signal aborts at `timeoutMs` and the returned promise rejects with the 504
   * at that moment, whatever the agent does; a run that ignored its signal is not counted twice.
   */
  private run(route: RunRoute, request: RunRequest, timeoutMs?: number): Promise<RunOutcome> {
    if (timeoutMs === undefined) return this.counted(route, request, this.engine.run(request));
    return runWithDeadline(this.engine, request, timeoutMs, (running) => this.counted(route, request, running));
  }

  private async counted(route: RunRoute, request: RunRequest, running: Promise<RunOutcome>): Promise<RunOutcome> {
    try {
      const outcome = await running;
      this.options.onRun?.(request.agent.name, route, outcome.status);
      if (outcome.usage.calls.length) this.options.onUsage?.(request.agent.name, outcome.usage);
      return outcome;
    } catch (err) {
      this.options.onRun?.(request.agent.name, route, err instanceof HangarError && err.status === 504 ? 'timeout' : 'error');
      throw err;
    }
  }

  /** The agent's own deadline: its `timeout_ms`, else `agents.timeoutMs`. */
  private deadlineOf(agent: Pick<Agent, 'definition'>): number {
    return deadlineOf(agent, this.options.defaultTimeoutMs);
  }

  // ——— internals ———

  private plan(
    agentName: string,
    request: Partial<Omit<InvokeRequest, 'query'>> & { query: string },
    history: ChatMessage[],
    principal: string | undefined,
    origin: RunOrigin,
  ): RunPlan {
    const agent = this.options.findAgent(agentName);
    const settings = { modelConfigured: this.options.provider.configured, defaultTimeoutMs: this.options.defaultTimeoutMs };
    return planRun(agent, request, history, principal, origin, settings);
  }

  /** Run the engine; a suspension becomes a pending approval and the 202. */
  private async execute(
    route: RunRoute,
    plan: RunPlan,
    extra: Pick<RunRequest, 'onEvent' | 'signal' | 'resume'>,
    chat?: PendingApproval['chat'],
  ): Promise<RunOutcome> {
    let outcome: RunOutcome;
    try {
      outcome = await this.run(
        route,
        {
          agent: plan.agent,
          input: plan.input,
          prompt: plan.prompt,
          // Decision: a stateless invoke (no thread_id) keeps no checkpoint history — nothing could
          // address it. Pass a thread_id to keep one (the studio then shows it).
          checkpointer: plan.persistent ? ownedBy(this.checkpoints, plan.principal) : UNRETAINED,
          // Named rather than spread: a spread after other keys takes V8's slow path, on every run.
          signal: extra.signal,
          onEvent: extra.onEvent,
          resume: extra.resume,
        },
        plan.timeoutMs,
      );
    } catch (err) {
      throw runFailure(plan.agent.name, err, this.options.log);
    }
    if (outcome.status === 'interrupted') {
      const paused = outcome.paused!;
      const record = await this.approvals.create({
        agent: plan.agent.name,
        thread_id: outcome.thread_id,
        node_name: paused.node,
        message: paused.message,
        payload: paused.payload,
        state_snapshot: outcome.state,
        checkpoint: outcome.checkpoint,
        prompt_version: plan.promptVersion,
        persistent: plan.persistent,
        chat,
        principal: ownerFor(plan.principal),
        source: plan.origin.source,
        ...(plan.origin.task_id ? { task_id: plan.origin.task_id } : {}),
      });
      const detail: SuspensionDetail = {
        status: 'suspended',
        approval_id: record.id,
        thread_id: outcome.thread_id,
        node_name: paused.node,
        message: paused.message,
        links: approvalLinks(record),
      };
      throw suspended(detail, outcome.thread_id);
    }
    if (outcome.status === 'cancelled') throw fail('HANGAR_AGENT_CANCELLED', {});
    return outcome;
  }

  private async discard(agent: Agent, record: PendingApproval, reason: string | null): Promise<RejectedRun> {
    // Kept in the thread's checkpoint history so the studio can show how the run ended.
    const checkpoints = record.persistent ? ownedBy(this.checkpoints, ownerFor(record.principal)) : UNRETAINED;
    await this.engine.run({
      agent,
      input: record.checkpoint.metadata.input,
      prompt: '',
      checkpointer: checkpoints,
      resume: { checkpoint: record.checkpoint as Checkpoint, action: 'reject', reason },
    });
    return { status: 'rejected' as const, approval_id: record.id, reason };
  }
}
