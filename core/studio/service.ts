/**
 * The studio service: runs an agent for debugging on top of the agent runtime's engine (typed
 * events, per-step checkpoints, breakpoints, interrupts, resume) and keeps each run as a record
 * with all its events. Routes parse, call one method here and send; this file never sees the HTTP layer.
 *
 * How a run starts (decisions where the spec is silent):
 * - A thread with no checkpoint: a fresh run from the graph's entry.
 * - A thread whose latest checkpoint finished (no node to run next): a new turn. A checkpoint is
 *   written whose parent is that one and whose state keeps the conversation and the agent's own
 *   keys, with the previous answer and the new query appended to `messages` (`response`,
 *   `steps_taken` and `metadata` start afresh, as in a first run); the run starts from it.
 * - A thread paused at a node (breakpoint, interrupt, cancelled or failed run): 409 — resume it,
 *   or name a checkpoint.
 * - `checkpoint_id` (time travel): the run starts from that checkpoint. New checkpoints chain to
 *   it, so the thread's history forks; nothing is rewritten and the old branch stays readable.
 *   From a checkpoint with a node still to run, the run continues at that node with the
 *   checkpoint's state (edit it first with POST state to change it) while `ctx.input` is the new
 *   request; a checkpoint paused at a human approval asks again rather than approving. From a
 *   finished checkpoint, the run is a new turn as above.
 *
 * Resume: a thread is paused when its latest checkpoint has a node to run next; otherwise 409.
 * The continued events are appended to the run that wrote that checkpoint (same run id, sequence
 * continuing) when it is a studio run of this agent, else to a new run record. At an interrupt,
 * `approve` resumes the node with `value` (a plain object is also merged into state.metadata, as
 * the HITL approve route does); `reject` discards the run (status `rejected`). At a breakpoint,
 * `approve` continues and `reject` ends the run there as `rejected`; `value` has nothing to answer
 * at a breakpoint and is ignored (edit the state to change it). A pending HITL approval of
 * /invoke or /chat for the same checkpoint is taken, so it cannot resume the same snapshot again.
 *
 * Threads: the studio sees every thread whose checkpoints are persisted — studio runs, /chat, and
 * /invoke calls that named a `thread_id` (a stateless invoke keeps its checkpoints in memory only).
 * Studio runs share a thread's checkpoints but never write its chat messages; /chat does that.
 * A state edit merges top-level keys (`{"metadata": {...}}` replaces the whole metadata object).
 *
 * Ownership (core/kernel/ownership.ts): a thread of another principal answers every studio route
 * like an unknown thread, and starting a run on its id is the same 404. A run belongs to the owner
 * of its thread (the caller, for a new thread), so the owner sees runs `local` made on it; runs of
 * other principals are left out of lists and are 404s. Runs are a part of their thread
 * (`ThreadService.attach`): deleting the thread deletes them, and is refused (409) while one executes.
 *
 * Execution: one studio run per thread at a time (409 otherwise); state edits wait for it too. A run
 * keeps going when the client that started it disconnects (as invoke streams do): follow it again
 * with GET /runs/{run_id}/stream, stop it with POST /runs/{run_id}/cancel. Cancelling is
 * cooperative (between nodes, or through a model call's signal) and leaves the thread resumable.
 */
import { timeOrderedId } from '../storage/ids.js';
import { buildResult, NodeError, type RunOutcome } from '../agents/engine.js';
import type { Checkpoint, Checkpointer } from '../agents/checkpointer.js';
import type { RunEvent } from '../agents/events.js';
import type { Agent } from '../agents/kind.js';
import { modelNotConfigured } from '../agents/model.js';
import { resolvePrompt } from '../agents/prompts.js';
import type { AgentRuntime } from '../agents/runtime.js';
import type { AgentInput, AgentState, ChatMessage } from '../agents/types.js';
import { EventLog } from '../http/event-log.js';
import { HttpError, badRequest, conflict, errorMessage, notFound, unprocessable } from '../http/errors.js';
import type { Logger } from '../kernel/log.js';
import { canSee, ownerFor } from '../kernel/ownership.js';
import { runEventSource, type DoneEvent, type StudioEvent, type StudioRunStatus } from './events.js';
import { agentConfig, agentEntry, agentGraph, agentSchemas, checkBreakpoints, graphOf } from './inspect.js';
import { publicRun, summarise, type RunStore, type StudioRun } from './run-store.js';
import type { StudioResumeRequest, StudioRunRequest } from './schemas.js';

export interface StudioServiceOptions {
  /** The live agent by name, or the 404. */
  findAgent: (name: string) => Agent;
  listAgents: () => Agent[];
  runtime: AgentRuntime;
  runs: RunStore;
  log: Logger;
  version: string;
  platformTitle: string;
}

/** A run executing now: its live events and how to stop it. */
export interface Execution {
  run: StudioRun;
  live: EventLog<StudioEvent>;
  controller: AbortController;
  /** The sequence before this segment's first event (a resume stream starts after it). */
  fromSeq: number;
  /** Resolves with the run once this execution segment has ended and is stored. */
  finished: Promise<StudioRun>;
}

type Start =
  | { kind: 'fresh' }
  | { kind: 'resume'; checkpoint: Checkpoint; action?: 'approve' | 'reject'; value?: unknown; reason?: string | null }
  /** A breakpoint on the entry node of a new turn: the turn's first checkpoint is the pause. */
  | { kind: 'pause'; checkpoint: Checkpoint; node: string }
  /** `reject` at a breakpoint: the run ends there. */
  | { kind: 'reject'; checkpoint: Checkpoint; reason: string | null };

interface Plan {
  input: AgentInput;
  prompt: string;
  breakpoints: string[];
  start: Start;
}

type Segment = { status: Exclude<StudioRunStatus, 'running' | 'error'>; checkpoint: Checkpoint; paused?: RunOutcome['paused']; result?: RunOutcome['result'] };

/** What the studio can do, for GET /studio/info. */
export const STUDIO_CAPABILITIES = ['graph', 'runs', 'streaming', 'checkpoints', 'state', 'breakpoints', 'hitl', 'time_travel', 'subagents', 'planning'];

/** Live events kept in memory for a stream's subscribers; replay reads the run record instead. */
const LIVE_EVENTS = 1000;

const isPlainObject = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

export class StudioService {
  private readonly executions = new Map<string, Execution>();
  /** `agent/thread` keys with a run executing or a state edit being written. */
  private readonly busy = new Set<string>();

  constructor(private readonly options: StudioServiceOptions) {
    const { runs } = options;
    options.runtime.threads.attach({
      name: 'studio runs',
      // The thread's checkpoints already name its owner; runs never exist without them.
      owner: async () => undefined,
      beforeDelete: (agent, threadId) => {
        if (this.busy.has(`${agent}/${threadId}`)) {
          throw conflict(`thread '${threadId}' of agent '${agent}' has a studio run in progress; cancel it (POST …/runs/{run_id}/cancel), then delete the thread`);
        }
      },
      delete: (agent, threadId) => runs.deleteThread(agent, threadId),
    });
  }

  private get checkpoints(): Checkpointer {
    return this.options.runtime.service.checkpoints;
  }

  // ——— inspection ———

  info() {
    return {
      version: this.options.version,
      platform_title: this.options.platformTitle,
      agent_count: this.options.listAgents().length,
      capabilities: STUDIO_CAPABILITIES,
      model_configured: this.options.runtime.provider.configured,
    };
  }

  agents() {
    return this.options.listAgents().map(agentEntry);
  }

  graph(agentName: string) {
    return agentGraph(this.options.findAgent(agentName));
  }

  schemas(agentName: string) {
    return agentSchemas(this.options.findAgent(agentName));
  }

  config(agentName: string) {
    return agentConfig(this.options.findAgent(agentName), this.options.runtime.provider);
  }

  // ——— runs ———

  /**
   * Validate the request and start the run; resolves as soon as it is executing (a bad request
   * throws before any run exists, so it is an ordinary JSON error, never a stream).
   */
  async startRun(agentName: string, request: StudioRunRequest, principal?: string): Promise<Execution> {
    const agent = this.options.findAgent(agentName);
    const graph = graphOf(agent);
    checkBreakpoints(agent, request.breakpoints);
    if (request.checkpoint_id && !request.thread_id) {
      throw unprocessable('body.thread_id: required when checkpoint_id is given (a checkpoint belongs to a thread)');
    }
    const prompt = resolvePrompt(agent, request.prompt_version);
    if (agent.definition.requiresModel && !this.options.runtime.provider.configured) throw modelNotConfigured(agent.name);
    const threadId = request.thread_id ?? timeOrderedId();
    if (request.thread_id) await this.options.runtime.service.claimThread(agent.name, threadId, principal);
    const owner = (await this.options.runtime.threads.owner(agent.name, threadId)) ?? ownerFor(principal);
    const release = this.lock(agent.name, threadId);
    try {
      const base = request.checkpoint_id
        ? await this.checkpoint(agent.name, threadId, request.checkpoint_id)
        : await this.checkpoints.latest(agent.name, threadId);
      if (base && !request.checkpoint_id && base.metadata.next !== null) {
        throw conflict(
          `thread '${threadId}' of agent '${agent.name}' is paused before node '${base.metadata.next}'; ` +
            'resume it (POST …/threads/{thread_id}/resume) or start from a checkpoint with checkpoint_id',
        );
      }
      const finishedBase = base && base.metadata.next === null ? base : undefined;
      const input: AgentInput = {
        query: request.query,
        user_id: request.user_id,
        context: request.context,
        thread_id: threadId,
        metadata: request.metadata,
        prompt_version: prompt.version,
        temperature: request.temperature ?? null,
        max_tokens: request.max_tokens ?? null,
        history: finishedBase ? conversation(finishedBase.state) : (base?.metadata.input.history ?? []),
      };
      const run = this.newRun(agent, input, request.breakpoints, request.checkpoint_id ?? null, owner);
      let start: Start;
      if (!base) start = { kind: 'fresh' };
      else if (finishedBase) {
        const turn = await this.newTurn(agent.name, finishedBase, input, run.run_id, graph.entry, owner);
        run.last_checkpoint_id = turn.id;
        // The engine does not stop at the node it resumes at, so a breakpoint on the entry of a
        // new turn is honoured here: the turn's first checkpoint already points at that node.
        start = request.breakpoints.includes(graph.entry) ? { kind: 'pause', checkpoint: turn, node: graph.entry } : { kind: 'resume', checkpoint: turn };
      } else {
        // Re-running from a paused point must ask the person again, not replay their old answer.
        const { interrupt: _interrupt, ...metadata } = base.metadata;
        start = { kind: 'resume', checkpoint: { ...base, metadata } };
      }
      await this.options.runs.create(run);
      return this.launch(agent, run, { input, prompt: prompt.text, breakpoints: request.breakpoints, start }, release);
    } catch (err) {
      release();
      throw err;
    }
  }

  /** Continue a paused thread; resolves once it is executing. */
  async resume(agentName: string, threadId: string, request: StudioResumeRequest, principal?: string): Promise<Execution> {
    const agent = this.options.findAgent(agentName);
    graphOf(agent);
    await this.visibleThread(agent.name, threadId, principal);
    const owner = (await this.options.runtime.threads.owner(agent.name, threadId)) ?? ownerFor(principal);
    const release = this.lock(agent.name, threadId);
    try {
      const latest = await this.latest(agent.name, threadId);
      if (latest.metadata.next === null) {
        throw conflict(
          `thread '${threadId}' of agent '${agent.name}' is not paused: its latest checkpoint (step ${latest.step}, ${latest.metadata.source}) ` +
            'ended the run; start a new run on the thread, or re-run from an earlier checkpoint with checkpoint_id',
        );
      }
      const previous = await this.options.runs.get(latest.metadata.run_id);
      const own = previous && previous.agent_name === agent.name && previous.thread_id === threadId ? structuredClone(previous) : undefined;
      const breakpoints = request.breakpoints ?? own?.breakpoints ?? [];
      checkBreakpoints(agent, breakpoints);
      const input = latest.metadata.input;
      const prompt = resolvePrompt(agent, input.prompt_version);
      await this.takeApprovals(agent.name, threadId, latest.id);

      let run: StudioRun;
      if (own) {
        run = own;
        Object.assign(run, { status: 'running', paused: null, error: null, error_node: null, resumes: run.resumes + 1, breakpoints, updated_at: new Date().toISOString() });
        await this.options.runs.save(run);
      } else {
        run = this.newRun(agent, input, breakpoints, latest.id, owner);
        run.last_checkpoint_id = latest.id;
        await this.options.runs.create(run);
      }
      const start: Start =
        latest.metadata.interrupt || request.action === 'approve'
          ? { kind: 'resume', checkpoint: latest, action: request.action, value: request.value, reason: request.reason }
          : { kind: 'reject', checkpoint: latest, reason: request.reason };
      return this.launch(agent, run, { input, prompt: prompt.text, breakpoints, start }, release);
    } catch (err) {
      release();
      throw err;
    }
  }

  /** The run as stored once this execution segment has ended (the synchronous run's answer). */
  async outcome(execution: Execution) {
    return publicRun(await execution.finished);
  }

  /** Newest first, the caller's runs only. */
  async listRuns(agentName: string, query: { limit: number; thread_id?: string }, principal?: string) {
    const agent = this.options.findAgent(agentName);
    const all = await this.options.runs.list(agent.name, { ...query, limit: Number.MAX_SAFE_INTEGER });
    return all.filter((run) => canSee(principal, run)).slice(0, query.limit).map(summarise);
  }

  async getRun(agentName: string, runId: string, principal?: string) {
    return publicRun(await this.run(agentName, runId, principal));
  }

  /** The run's events as an SSE source: stored ones, then live ones while it executes. */
  async runEvents(agentName: string, runId: string, principal?: string) {
    const run = await this.run(agentName, runId, principal);
    const execution = this.executions.get(run.run_id);
    return execution ? runEventSource(execution.run.events, execution.live) : runEventSource(run.events);
  }

  /** Stop an executing run (cooperatively) and return it as stored; a run not executing → 409. */
  async cancel(agentName: string, runId: string, principal?: string) {
    const run = await this.run(agentName, runId, principal);
    const execution = this.executions.get(run.run_id);
    if (!execution) throw conflict(`run '${runId}' is not executing (status '${run.status}')`);
    execution.controller.abort();
    return publicRun(await execution.finished);
  }

  // ——— thread state ———

  /** The latest checkpoint of the thread, or the named one. */
  async threadState(agentName: string, threadId: string, checkpointId?: string, principal?: string) {
    const agent = this.options.findAgent(agentName);
    await this.visibleThread(agent.name, threadId, principal);
    const checkpoint = checkpointId ? await this.checkpoint(agent.name, threadId, checkpointId) : await this.latest(agent.name, threadId);
    return stateView(agent.name, checkpoint);
  }

  /**
   * Merge `updates` into the latest state as a new checkpoint whose parent is the latest one. The
   * checkpoint keeps the node to run next (and a pending interrupt), so editing a paused thread
   * and then resuming runs on the edited state.
   */
  async updateState(agentName: string, threadId: string, updates: Record<string, unknown>, principal?: string) {
    const agent = this.options.findAgent(agentName);
    const keys = Object.keys(updates);
    if (keys.length === 0) throw badRequest('no fields to update');
    await this.visibleThread(agent.name, threadId, principal);
    const release = this.lock(agent.name, threadId);
    try {
      const latest = await this.latest(agent.name, threadId);
      const checkpoint: Checkpoint = {
        id: timeOrderedId(),
        thread_id: threadId,
        step: latest.step + 1,
        state: { ...structuredClone(latest.state), ...structuredClone(updates) } as AgentState,
        metadata: { ...latest.metadata, source: 'update', node: latest.metadata.node, updated_keys: keys },
        parent_id: latest.id,
        timestamp: new Date().toISOString(),
      };
      await this.checkpoints.put(agent.name, checkpoint);
      return { ...stateView(agent.name, checkpoint), updated_keys: keys };
    } finally {
      release();
    }
  }

  /**
   * Every checkpoint of the thread, newest first (most recently written; along one branch that is
   * descending step). A forked thread lists both branches.
   */
  async history(agentName: string, threadId: string, limit?: number, principal?: string) {
    const agent = this.options.findAgent(agentName);
    await this.visibleThread(agent.name, threadId, principal);
    const list = await this.checkpoints.list(agent.name, threadId);
    if (list.length === 0) throw this.unknownThread(agent.name, threadId);
    return limit ? list.slice(0, limit) : list;
  }

  /** Stop every executing run (they end `cancelled`, resumable) and write what is pending. */
  async close(timeoutMs = 3000): Promise<void> {
    const running = [...this.executions.values()];
    for (const execution of running) execution.controller.abort();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled(running.map((e) => e.finished)),
      new Promise((resolve) => (timer = setTimeout(resolve, timeoutMs))),
    ]);
    clearTimeout(timer);
    await this.options.runs.flush();
  }

  // ——— internals ———

  private launch(agent: Agent, run: StudioRun, plan: Plan, release: () => void): Execution {
    const fromSeq = run.events.at(-1)?.seq ?? 0;
    const live = new EventLog<StudioEvent>(LIVE_EVENTS, fromSeq);
    const controller = new AbortController();
    const execution = { run, live, controller, fromSeq } as Execution;
    this.executions.set(run.run_id, execution);
    execution.finished = this.execute(agent, execution, plan).finally(() => {
      this.executions.delete(run.run_id);
      release();
    });
    return execution;
  }

  /** Run one execution segment to its end; never rejects (a failure is the run's `error`). */
  private async execute(agent: Agent, execution: Execution, plan: Plan): Promise<StudioRun> {
    const { run, live } = execution;
    const started = performance.now();
    let failed = false;
    const emit = (event: RunEvent | DoneEvent) => {
      const stored = { ...event, seq: live.lastSeq + 1 } as StudioEvent;
      live.append(stored);
      run.events.push(stored);
      run.event_count = run.events.length;
      run.updated_at = stored.timestamp;
      if (stored.type === 'node_end') run.last_checkpoint_id = stored.checkpoint_id;
      if (stored.type === 'run_error') {
        failed = true;
        run.error_node = stored.node;
      }
      this.options.runs.touch(run);
    };
    const base = () => ({ run_id: run.run_id, thread_id: run.thread_id, timestamp: new Date().toISOString() });

    let status: Exclude<StudioRunStatus, 'running'>;
    try {
      const segment = await this.segment(agent, run, plan, execution.controller.signal, emit, base);
      status = segment.status;
      run.last_checkpoint_id = segment.checkpoint.id;
      run.paused =
        segment.paused && (status === 'breakpoint' || status === 'interrupted')
          ? { ...segment.paused, reason: status === 'breakpoint' ? 'breakpoint' : 'interrupt', checkpoint_id: segment.checkpoint.id }
          : null;
      run.result = segment.result && (status === 'completed' || status === 'rejected') ? (JSON.parse(JSON.stringify(segment.result)) as Record<string, unknown>) : null;
      if (status === 'cancelled') run.error = 'run cancelled';
    } catch (err) {
      status = 'error';
      const cause = err instanceof NodeError ? err.cause : err;
      run.error = errorMessage(cause);
      if (err instanceof NodeError) run.error_node = err.node;
      if (!(cause instanceof HttpError && cause.status < 500)) {
        this.options.log.warn(`studio run ${run.run_id} of agent ${agent.name} failed: ${run.error}`, { node: run.error_node });
      }
      // An error before the engine's first event (a graph that no longer compiles) has no
      // run_error yet; the stream must still say why it ended.
      if (!failed) emit({ ...base(), type: 'run_error', error: run.error, node: run.error_node });
    }
    run.status = status;
    run.duration_ms += performance.now() - started;
    emit({ ...base(), type: 'done', status });
    try {
      await this.options.runs.save(run);
    } catch (err) {
      this.options.log.error(`studio run ${run.run_id} could not be stored: ${errorMessage(err)}`);
    }
    live.end();
    return run;
  }

  private async segment(
    agent: Agent,
    run: StudioRun,
    plan: Plan,
    signal: AbortSignal,
    emit: (event: RunEvent | DoneEvent) => void,
    base: () => { run_id: string; thread_id: string; timestamp: string },
  ): Promise<Segment> {
    const { start, input } = plan;
    switch (start.kind) {
      case 'fresh':
      case 'resume': {
        const outcome = await this.options.runtime.service.runForStudio({
          agent,
          input,
          prompt: plan.prompt,
          onEvent: emit,
          signal,
          breakpoints: plan.breakpoints,
          runId: run.run_id,
          resume: start.kind === 'resume' ? { checkpoint: start.checkpoint, action: start.action, value: start.value, reason: start.reason } : undefined,
        }, run.principal);
        return { status: outcome.status, checkpoint: outcome.checkpoint, paused: outcome.paused, result: outcome.result };
      }
      case 'pause': {
        emit({ ...base(), type: 'run_start', agent: agent.name, input: { query: input.query, user_id: input.user_id }, resumed_from: start.checkpoint.id });
        emit({ ...base(), type: 'breakpoint_hit', node: start.node, reason: 'breakpoint', checkpoint_id: start.checkpoint.id });
        return { status: 'breakpoint', checkpoint: start.checkpoint, paused: { node: start.node, message: `breakpoint before '${start.node}'`, payload: {} } };
      }
      case 'reject': {
        const from = start.checkpoint;
        const began = performance.now();
        emit({ ...base(), type: 'run_start', agent: agent.name, input: { query: input.query, user_id: input.user_id }, resumed_from: from.id });
        const node = from.metadata.next;
        const state: AgentState = { ...from.state, metadata: { ...from.state.metadata, rejected_at: node, rejection_reason: start.reason } };
        const { interrupt: _interrupt, ...metadata } = from.metadata;
        const checkpoint: Checkpoint = {
          id: timeOrderedId(),
          thread_id: from.thread_id,
          step: from.step + 1,
          state,
          metadata: { ...metadata, run_id: run.run_id, source: 'rejected', node, next: null },
          parent_id: from.id,
          timestamp: new Date().toISOString(),
        };
        await this.checkpoints.put(agent.name, checkpoint, run.principal);
        const result = buildResult(agent.definition, state);
        emit({ ...base(), type: 'run_complete', status: 'rejected', response: result.response, steps_taken: result.steps_taken ?? [], duration_ms: performance.now() - began });
        return { status: 'rejected', checkpoint, result };
      }
    }
  }

  /** The first checkpoint of a new turn on a finished thread (see the file's doc comment). */
  private async newTurn(agentName: string, from: Checkpoint, input: AgentInput, runId: string, entry: string, principal: string): Promise<Checkpoint> {
    const state: AgentState = {
      ...structuredClone(from.state),
      messages: [...input.history, { role: 'user', content: input.query }],
      response: '',
      steps_taken: [],
      metadata: { ...input.metadata },
    };
    const checkpoint: Checkpoint = {
      id: timeOrderedId(),
      thread_id: from.thread_id,
      step: from.step + 1,
      state,
      metadata: { run_id: runId, agent: agentName, source: 'input', node: null, next: entry, input },
      parent_id: from.id,
      timestamp: new Date().toISOString(),
    };
    await this.checkpoints.put(agentName, checkpoint, principal);
    return checkpoint;
  }

  private newRun(agent: Agent, input: AgentInput, breakpoints: string[], checkpointId: string | null, principal: string): StudioRun {
    const now = new Date().toISOString();
    return {
      run_id: timeOrderedId(),
      agent_name: agent.name,
      thread_id: input.thread_id!,
      status: 'running',
      input: {
        query: input.query,
        user_id: input.user_id,
        context: input.context,
        metadata: input.metadata,
        prompt_version: input.prompt_version,
        temperature: input.temperature,
        max_tokens: input.max_tokens,
      },
      breakpoints: [...breakpoints],
      checkpoint_id: checkpointId,
      last_checkpoint_id: null,
      paused: null,
      result: null,
      error: null,
      error_node: null,
      resumes: 0,
      event_count: 0,
      duration_ms: 0,
      created_at: now,
      updated_at: now,
      events: [],
      order: this.options.runs.nextOrder(),
      principal,
    };
  }

  /**
   * Pending HITL approvals (from /invoke or /chat) parked on this checkpoint are used up by a studio
   * resume; a board task waiting for one ends (canceled, saying why), as the run goes on here.
   */
  private async takeApprovals(agent: string, threadId: string, checkpointId: string): Promise<void> {
    const service = this.options.runtime.service;
    for (const record of await service.approvals.list(agent, threadId)) {
      if (record.checkpoint.id !== checkpointId) continue;
      const taken = await service.approvals.take(agent, threadId, record.id).catch(() => undefined);
      if (taken) await service.releaseTask(taken, `approval ${taken.id} was used up by a studio resume of its checkpoint`);
    }
  }

  private async run(agentName: string, runId: string, principal?: string): Promise<StudioRun> {
    const agent = this.options.findAgent(agentName);
    const live = this.executions.get(runId)?.run;
    const run = live ?? (await this.options.runs.get(runId));
    if (!run || run.agent_name !== agent.name || !canSee(principal, run)) throw notFound(`run '${runId}' not found for agent '${agent.name}'`);
    return run;
  }

  /** Another principal's thread is, to the caller, a thread without checkpoints: the same 404. */
  private async visibleThread(agent: string, threadId: string, principal: string | undefined): Promise<void> {
    if ((await this.options.runtime.threads.access(agent, threadId, principal)) === 'hidden') throw this.unknownThread(agent, threadId);
  }

  private async latest(agent: string, threadId: string): Promise<Checkpoint> {
    const checkpoint = await this.checkpoints.latest(agent, threadId);
    if (!checkpoint) throw this.unknownThread(agent, threadId);
    return checkpoint;
  }

  private async checkpoint(agent: string, threadId: string, checkpointId: string): Promise<Checkpoint> {
    const checkpoint = await this.checkpoints.get(agent, threadId, checkpointId);
    if (!checkpoint) throw notFound(`checkpoint '${checkpointId}' not found in thread '${threadId}' of agent '${agent}'`);
    return checkpoint;
  }

  private unknownThread(agent: string, threadId: string): HttpError {
    return notFound(`thread '${threadId}' not found for agent '${agent}' (it has no checkpoints)`);
  }

  private lock(agent: string, threadId: string): () => void {
    const key = `${agent}/${threadId}`;
    if (this.busy.has(key)) {
      throw conflict(`thread '${threadId}' of agent '${agent}' has a run in progress; wait for it, or cancel it (POST …/runs/{run_id}/cancel)`);
    }
    this.busy.add(key);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.busy.delete(key);
    };
  }
}

/** The conversation a finished state stands for: its messages plus the answer, if not in them yet. */
function conversation(state: AgentState): ChatMessage[] {
  const messages = Array.isArray(state.messages) ? [...state.messages] : [];
  const answer = typeof state.response === 'string' ? state.response : '';
  const last = messages.at(-1);
  if (answer && !(last?.role === 'assistant' && last.content === answer)) messages.push({ role: 'assistant', content: answer });
  return messages;
}

function stateView(agentName: string, checkpoint: Checkpoint) {
  const interrupt = checkpoint.metadata.interrupt;
  return {
    thread_id: checkpoint.thread_id,
    agent_name: agentName,
    state: checkpoint.state,
    timestamp: checkpoint.timestamp,
    checkpoint_id: checkpoint.id,
    step: checkpoint.step,
    parent_id: checkpoint.parent_id,
    next: checkpoint.metadata.next,
    interrupt: interrupt ? { node: interrupt.node, message: interrupt.message, payload: isPlainObject(interrupt.payload) ? interrupt.payload : {} } : null,
    run_id: typeof checkpoint.metadata.run_id === 'string' ? checkpoint.metadata.run_id : null,
  };
}
