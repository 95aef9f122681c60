/**
 * The studio service: runs an agent for debugging on top of the agent runtime's engine (typed
 * events, per-step checkpoints, breakpoints, interrupts, resume) and keeps each run as a record
 * with all its events. Routes parse, call one method here and send; this file never sees the HTTP layer.
 * Running a run once its start is decided (the execution, its events, its record) is `launch.ts`.
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
import type { Checkpoint, Checkpointer } from '../agents/checkpointer.js';
import type { Agent } from '../agents/kind.js';
import { modelNotConfigured } from '../agents/model.js';
import { resolvePrompt } from '../agents/prompts.js';
import type { AgentRuntime } from '../agents/runtime.js';
import type { AgentInput, AgentState } from '../agents/types.js';
import { fail, type HangarError } from '../kernel/errors.js';
import type { Logger } from '../kernel/log.js';
import { canSee, ownerFor } from '../kernel/ownership.js';
import type { ReplayableSource } from '../lib/event-log.js';
import { timeOrderedId } from '../storage/ids.js';
import { runEventSource, type StudioEvent } from './events.js';
import { followedRun, type RunAnnouncements } from './followed-run.js';
import { agentConfig, agentEntry, agentGraph, agentSchemas, checkBreakpoints, graphOf } from './inspect.js';
import { conversation, type Execution, executeRun, newExecution, newRun, newTurn, type Plan, type Start } from './launch.js';
import { publicRun, type RunStore, type StudioRun, summarise } from './run-store.js';
import type { StudioResumeRequest, StudioRunRequest } from './schemas.js';

/** The routes a refusal points to (their `{placeholders}` are literal: the catalogue cannot spell braces). */
const CANCEL_ROUTE = 'POST …/runs/{run_id}/cancel';
const RESUME_ROUTE = 'POST …/threads/{thread_id}/resume';

export interface StudioServiceOptions {
  /** The live agent by name, or the 404. */
  findAgent: (name: string) => Agent;
  listAgents: () => Agent[];
  runtime: AgentRuntime;
  runs: RunStore;
  log: Logger;
  version: string;
  platformTitle: string;
  /** Team mode: runs other instances execute are followed through these (followed-run.ts). */
  announcements?: RunAnnouncements;
}

/** What the studio can do, for GET /studio/info. */
export const STUDIO_CAPABILITIES = [
  'graph',
  'runs',
  'streaming',
  'checkpoints',
  'state',
  'breakpoints',
  'hitl',
  'time_travel',
  'subagents',
  'planning',
];

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
          throw fail('HANGAR_STUDIO_THREAD_BUSY_DELETE', { thread: threadId, agent, cancel: CANCEL_ROUTE });
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
      throw fail('HANGAR_STUDIO_THREAD_REQUIRED', {});
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
        throw fail('HANGAR_STUDIO_THREAD_PAUSED', { thread: threadId, agent: agent.name, node: base.metadata.next, resume: RESUME_ROUTE });
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
      const run = newRun(this.options.runs, agent, input, request.breakpoints, request.checkpoint_id ?? null, owner);
      let start: Start;
      if (!base) start = { kind: 'fresh' };
      else if (finishedBase) {
        const turn = await newTurn(this.checkpoints, agent.name, finishedBase, input, run.run_id, graph.entry, owner);
        run.last_checkpoint_id = turn.id;
        // The engine does not stop at the node it resumes at, so a breakpoint on the entry of a
        // new turn is honoured here: the turn's first checkpoint already points at that node.
        start = request.breakpoints.includes(graph.entry)
          ? { kind: 'pause', checkpoint: turn, node: graph.entry }
          : { kind: 'resume', checkpoint: turn };
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
        throw fail('HANGAR_STUDIO_THREAD_NOT_PAUSED', {
          thread: threadId,
          agent: agent.name,
          step: latest.step,
          source: latest.metadata.source,
        });
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
        Object.assign(run, {
          status: 'running',
          paused: null,
          error: null,
          error_node: null,
          resumes: run.resumes + 1,
          breakpoints,
          updated_at: new Date().toISOString(),
        });
        await this.options.runs.save(run);
      } else {
        run = newRun(this.options.runs, agent, input, breakpoints, latest.id, owner);
        run.last_checkpoint_id = latest.id;
        await this.options.runs.create(run);
      }
      const start: Start =
        latest.metadata.interrupt || request.action === 'approve'
          ? {
              kind: 'resume',
              checkpoint: latest,
              action: request.action,
              value: request.value,
              reason: request.reason,
              arguments: request.arguments,
            }
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
    return (await this.options.runs.list(agent.name, { ...query, principal })).map(summarise);
  }

  async getRun(agentName: string, runId: string, principal?: string) {
    return publicRun(await this.run(agentName, runId, principal));
  }

  /**
   * The run's events as an SSE source: stored ones, then live ones while it executes — here, or
   * (team mode) on another instance, followed through its record's announced writes.
   */
  async runEvents(agentName: string, runId: string, principal?: string): Promise<ReplayableSource<StudioEvent>> {
    const run = await this.run(agentName, runId, principal);
    const execution = this.executions.get(run.run_id);
    if (execution) return runEventSource(execution.run.events, execution.live);
    const { announcements, runs, log } = this.options;
    if (run.status === 'running' && announcements)
      return followedRun(
        run,
        (id) => runs.get(id),
        announcements,
        (line) => log.warn(line),
      );
    return runEventSource(run.events);
  }

  /** Stop an executing run (cooperatively) and return it as stored; a run not executing → 409. */
  async cancel(agentName: string, runId: string, principal?: string) {
    const run = await this.run(agentName, runId, principal);
    const execution = this.executions.get(run.run_id);
    if (!execution) throw fail('HANGAR_STUDIO_RUN_NOT_EXECUTING', { run: runId, status: run.status });
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
    if (keys.length === 0) throw fail('HANGAR_STUDIO_STATE_EMPTY_UPDATE', {});
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
    // Without a limit, the newest 100: every checkpoint is kept by default (`checkpoints.keep`),
    // and 100 is what this route answered when only 100 were kept.
    const list = await this.checkpoints.list(agent.name, threadId, limit ?? 100);
    if (list.length === 0) throw this.unknownThread(agent.name, threadId);
    return list;
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
    const execution = newExecution(run);
    this.executions.set(run.run_id, execution);
    execution.finished = executeRun(this.options, agent, execution, plan).finally(() => {
      this.executions.delete(run.run_id);
      release();
    });
    return execution;
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
    if (!run || run.agent_name !== agent.name || !canSee(principal, run))
      throw fail('HANGAR_STUDIO_RUN_NOT_FOUND', { run: runId, agent: agent.name });
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
    if (!checkpoint) throw fail('HANGAR_STUDIO_CHECKPOINT_NOT_FOUND', { checkpoint: checkpointId, thread: threadId, agent });
    return checkpoint;
  }

  private unknownThread(agent: string, threadId: string): HangarError {
    return fail('HANGAR_STUDIO_THREAD_NOT_FOUND', { thread: threadId, agent });
  }

  private lock(agent: string, threadId: string): () => void {
    const key = `${agent}/${threadId}`;
    if (this.busy.has(key)) {
      throw fail('HANGAR_STUDIO_THREAD_BUSY', { thread: threadId, agent, cancel: CANCEL_ROUTE });
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
    interrupt: interrupt
      ? { node: interrupt.node, message: interrupt.message, payload: isPlainObject(interrupt.payload) ? interrupt.payload : {} }
      : null,
    run_id: typeof checkpoint.metadata.run_id === 'string' ? checkpoint.metadata.run_id : null,
  };
}
