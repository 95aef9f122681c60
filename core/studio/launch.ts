/**
 * Starting a studio run and running one execution segment of it to its end: the run record it
 * begins with, the first checkpoint of a new turn, and the segment itself — the engine's run, a
 * pause at a new turn's entry breakpoint, or a rejection at a breakpoint — with every event stored
 * on the run and sent live. Which start a request gets, and the one-run-per-thread lock, are
 * decided by `service.ts`.
 */

import type { Checkpoint, Checkpointer } from '../agents/checkpointer.js';
import { NodeError, type RunOutcome } from '../agents/engine.js';
import type { RunEvent } from '../agents/events.js';
import type { Agent } from '../agents/kind.js';
import type { AgentRuntime } from '../agents/runtime.js';
import type { AgentInput, AgentState, ChatMessage } from '../agents/types.js';
import { errorMessage, HangarError } from '../kernel/errors.js';
import type { Logger } from '../kernel/log.js';
import { EventLog } from '../lib/event-log.js';
import { timeOrderedId } from '../storage/ids.js';
import type { DoneEvent, StudioEvent, StudioRunStatus } from './events.js';
import type { RunStore, StudioRun } from './run-store.js';

/** What running a studio run needs of the service's options. */
export interface LaunchContext {
  runtime: AgentRuntime;
  runs: RunStore;
  log: Logger;
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

export type Start =
  | { kind: 'fresh' }
  | {
      kind: 'resume';
      checkpoint: Checkpoint;
      action?: 'approve' | 'reject';
      value?: unknown;
      reason?: string | null;
      /** A gated tool call's arguments as the person edited them. */
      arguments?: unknown;
    }
  /** A breakpoint on the entry node of a new turn: the turn's first checkpoint is the pause. */
  | { kind: 'pause'; checkpoint: Checkpoint; node: string }
  /** `reject` at a breakpoint: the run ends there. */
  | { kind: 'reject'; checkpoint: Checkpoint; reason: string | null };

export interface Plan {
  input: AgentInput;
  prompt: string;
  breakpoints: string[];
  start: Start;
}

type Segment = {
  status: Exclude<StudioRunStatus, 'running' | 'error'>;
  checkpoint: Checkpoint;
  paused?: RunOutcome['paused'];
  result?: RunOutcome['result'];
};

/** Live events kept in memory for a stream's subscribers; replay reads the run record instead. */
const LIVE_EVENTS = 1000;

/**
 * The execution of `run` before it starts: its live event log continues the run's sequence. The
 * caller registers it, then sets `finished` from `executeRun`.
 */
export function newExecution(run: StudioRun): Execution {
  const fromSeq = run.events.at(-1)?.seq ?? 0;
  const live = new EventLog<StudioEvent>(LIVE_EVENTS, fromSeq);
  const controller = new AbortController();
  return { run, live, controller, fromSeq } as Execution;
}

/** Run one execution segment to its end; never rejects (a failure is the run's `error`). */
export async function executeRun(ctx: LaunchContext, agent: Agent, execution: Execution, plan: Plan): Promise<StudioRun> {
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
    ctx.runs.touch(run);
  };
  const base = () => ({ run_id: run.run_id, thread_id: run.thread_id, timestamp: new Date().toISOString() });

  let status: Exclude<StudioRunStatus, 'running'>;
  try {
    const segment = await runSegment(ctx, agent, run, plan, execution.controller.signal, emit, base);
    status = segment.status;
    run.last_checkpoint_id = segment.checkpoint.id;
    run.paused =
      segment.paused && (status === 'breakpoint' || status === 'interrupted')
        ? { ...segment.paused, reason: status === 'breakpoint' ? 'breakpoint' : 'interrupt', checkpoint_id: segment.checkpoint.id }
        : null;
    run.result =
      segment.result && (status === 'completed' || status === 'rejected')
        ? (JSON.parse(JSON.stringify(segment.result)) as Record<string, unknown>)
        : null;
    if (status === 'cancelled') run.error = 'run cancelled';
  } catch (err) {
    status = 'error';
    const cause = err instanceof NodeError ? err.cause : err;
    run.error = errorMessage(cause);
    if (err instanceof NodeError) run.error_node = err.node;
    if (!(cause instanceof HangarError && cause.status < 500)) {
      ctx.log.warn(`studio run ${run.run_id} of agent ${agent.name} failed: ${run.error}`, { node: run.error_node });
    }
    // An error before the engine's first event (a graph that no longer compiles) has no
    // run_error yet; the stream must still say why it ended.
    if (!failed) emit({ ...base(), type: 'run_error', error: run.error, node: run.error_node });
  }
  run.status = status;
  run.duration_ms += performance.now() - started;
  emit({ ...base(), type: 'done', status });
  try {
    await ctx.runs.save(run);
  } catch (err) {
    ctx.log.error(`studio run ${run.run_id} could not be stored: ${errorMessage(err)}`);
  }
  live.end();
  return run;
}

async function runSegment(
  ctx: LaunchContext,
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
      const outcome = await ctx.runtime.service.runForStudio(
        {
          agent,
          input,
          prompt: plan.prompt,
          onEvent: emit,
          signal,
          breakpoints: plan.breakpoints,
          runId: run.run_id,
          resume:
            start.kind === 'resume'
              ? { checkpoint: start.checkpoint, action: start.action, value: start.value, reason: start.reason, arguments: start.arguments }
              : undefined,
        },
        run.principal,
      );
      return { status: outcome.status, checkpoint: outcome.checkpoint, paused: outcome.paused, result: outcome.result };
    }
    case 'pause': {
      emit({
        ...base(),
        type: 'run_start',
        agent: agent.name,
        input: { query: input.query, user_id: input.user_id },
        resumed_from: start.checkpoint.id,
      });
      emit({ ...base(), type: 'breakpoint_hit', node: start.node, reason: 'breakpoint', checkpoint_id: start.checkpoint.id });
      return {
        status: 'breakpoint',
        checkpoint: start.checkpoint,
        paused: { node: start.node, message: `breakpoint before '${start.node}'`, payload: {} },
      };
    }
    case 'reject': {
      const from = start.checkpoint;
      const began = performance.now();
      emit({
        ...base(),
        type: 'run_start',
        agent: agent.name,
        input: { query: input.query, user_id: input.user_id },
        resumed_from: from.id,
      });
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
      await ctx.runtime.service.checkpoints.put(agent.name, checkpoint, run.principal);
      // The engine's result step: a supervised agent's `result()` runs in its host, not on this thread.
      const result = await ctx.runtime.service.engine.resultOf(agent, state, {
        input: { ...input, thread_id: from.thread_id },
        prompt: plan.prompt,
        signal,
        threadId: from.thread_id,
      });
      emit({
        ...base(),
        type: 'run_complete',
        status: 'rejected',
        response: result.response,
        steps_taken: result.steps_taken ?? [],
        duration_ms: performance.now() - began,
      });
      return { status: 'rejected', checkpoint, result };
    }
  }
}

/** The first checkpoint of a new turn on a finished thread (see the doc comment of `service.ts`). */
export async function newTurn(
  checkpoints: Checkpointer,
  agentName: string,
  from: Checkpoint,
  input: AgentInput,
  runId: string,
  entry: string,
  principal: string,
): Promise<Checkpoint> {
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
  await checkpoints.put(agentName, checkpoint, principal);
  return checkpoint;
}

export function newRun(
  runs: RunStore,
  agent: Agent,
  input: AgentInput,
  breakpoints: string[],
  checkpointId: string | null,
  principal: string,
): StudioRun {
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
    order: runs.nextOrder(),
    principal,
  };
}

/** The conversation a finished state stands for: its messages plus the answer, if not in them yet. */
export function conversation(state: AgentState): ChatMessage[] {
  const messages = Array.isArray(state.messages) ? [...state.messages] : [];
  const answer = typeof state.response === 'string' ? state.response : '';
  const last = messages.at(-1);
  if (answer && !(last?.role === 'assistant' && last.content === answer)) messages.push({ role: 'assistant', content: answer });
  return messages;
}
