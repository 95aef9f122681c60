/**
 * Agents on the task board: the `agent` task kind (used by POST /api/v1/{agent}/invoke/async, the
 * board's own submit, and A2A), and the A2A task surface under /api/v1/{agent}/a2a/tasks.
 *
 * Decisions the spec leaves open:
 * - An A2A submit answers at once with status `submitted` and an empty `result`; the answer is
 *   collected from status, events or the board. `?wait=true` answers once the task has finished.
 * - With the task subsystem off, an A2A submit runs the agent synchronously and answers
 *   `completed` with the result (there is nothing to track it with); status answers `unknown` with
 *   a message saying tracking needs a storage backend; events and cancel answer 501.
 * - A HITL suspension inside an agent task settles the task `input-required` with the spec's
 *   suspension body as its result (`{detail: {status: 'suspended', approval_id, thread_id,
 *   node_name, message, links}}`), so a client polling the board or A2A learns what to approve
 *   where. Deciding the approval — on the thread's approve/reject routes, or by replying to the
 *   A2A task — continues the same task (`continueTask`): approved, it works again and ends
 *   completed (or input-required at the next approval); rejected, it ends `canceled` with the
 *   reason. Cancelling the waiting task rejects its approval.
 * - An agent task is not idempotent (agents call tools and models), so a restart fails the ones
 *   that were running and re-queues only those that had not started.
 * - A2A metadata `thread_id`, `user_id` and `context` are passed to the agent as the invoke fields
 *   of the same names, so A2A conversations can continue a thread.
 */
import { randomUUID } from 'node:crypto';
import { type RunEvent, toolFrame } from '../agents/events.js';
import { findAgent } from '../agents/kind.js';
import { InvokeRequest, type InvokeResponse } from '../agents/schemas.js';
import { type ApprovalDecision, isSuspension, type RejectedRun, type SuspensionDetail, suspended } from '../agents/service.js';
import type { PendingApproval } from '../agents/types.js';
import { formatIssues } from '../http/validate.js';
import type { HangarContext } from '../kernel/context.js';
import { errorMessage, fail, HangarError } from '../kernel/errors.js';
import type { Task } from '../tasks/schemas.js';
import { type TaskKind, type TaskScope, type TaskService, tasksDisabled } from '../tasks/service.js';
import { SettleAs, type TaskContext } from '../tasks/types.js';
import { type A2AStatusResponse, type A2ASubmitResponse, type A2ATaskRequest, messageText } from './schemas.js';

export const AGENT_TASK_KIND = 'agent';

/** What an agent task waiting in `input-required` holds as its result: the spec's HTTP 202 body. */
export interface SuspendedResult {
  detail: SuspensionDetail;
}

export const isSuspended = (result: unknown): result is SuspendedResult =>
  typeof result === 'object' && result !== null && (result as SuspendedResult).detail?.status === 'suspended';

/** The approval an agent task waits for, when it waits for one. */
export const awaitedApproval = (task: Task): SuspensionDetail | undefined =>
  task.status === 'input-required' && isSuspended(task.result) ? task.result.detail : undefined;

/** Run agent work for a task; a suspension settles the task `input-required` with its 202 body. */
async function asTaskWork<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (err) {
    if (isSuspension(err)) throw new SettleAs('input-required', { result: { detail: err.detail } });
    throw err;
  }
}

/**
 * Turns the run's events into the frames /invoke/stream sends — every frame carries the response
 * so far and the steps — so a client follows an async task the way it follows a stream.
 */
export function agentFrameEmitter(emit: (frame: unknown) => void): (event: RunEvent) => void {
  let response = '';
  let steps: string[] = [];
  return (event) => {
    switch (event.type) {
      case 'message_chunk':
        response += event.content;
        emit({ event: 'token', delta: event.content, response, steps_taken: steps });
        break;
      case 'node_end': {
        const output = event.output as { response?: unknown; steps_taken?: unknown } | null;
        if (typeof output?.response === 'string') response = output.response;
        if (Array.isArray(output?.steps_taken)) steps = output.steps_taken as string[];
        emit({ event: 'step', node: event.node, response, steps_taken: steps });
        break;
      }
      case 'tool_start':
      case 'tool_end':
        emit(toolFrame(event, response, steps));
        break;
      default:
        // Node starts, subagent and planning events are studio detail, not stream frames.
        break;
    }
  };
}

/** The `agent` task kind: input is an AgentInvokeRequest, target the agent, result the response. */
export function agentTaskKind(ctx: HangarContext): TaskKind {
  return {
    idempotent: false,
    prepare({ target, input }) {
      const agent = findAgent(ctx.registry, target);
      const parsed = InvokeRequest.safeParse(input ?? {});
      if (!parsed.success) throw fail('HANGAR_A2A_TASK_INPUT_INVALID', { problem: formatIssues(parsed.error.issues, 'body.input') });
      // Refuse now rather than queue work that can only fail.
      if (agent.definition.requiresModel && !ctx.services.get('agents').provider.configured)
        throw fail('HANGAR_AGENT_MODEL_NOT_CONFIGURED', { who: `agent '${agent.name}' needs a chat model` });
      return { target: agent.name, input: parsed.data };
    },
    run(task: TaskContext) {
      const request = InvokeRequest.parse(task.task.input);
      const source = typeof task.task.metadata.source === 'string' ? task.task.metadata.source : 'tasks';
      return asTaskWork(() =>
        ctx.services
          .get('agents')
          .service.invoke(task.task.target, request, task.signal, agentFrameEmitter(task.emit), task.task.principal, {
            source,
            task_id: task.task.id,
          }),
      );
    },
    async release(task) {
      // The task was canceled while it waited: its run is discarded, as a rejection would.
      const detail = isSuspended(task.result) ? task.result.detail : undefined;
      if (!detail) return;
      const service = ctx.services.get('agents').service;
      let record: PendingApproval;
      try {
        record = await service.takeApproval(task.target, detail.thread_id, detail.approval_id);
      } catch (err) {
        if (err instanceof HangarError && err.status === 404) return; // decided meanwhile
        throw err;
      }
      await service.decide(record, { approved: false, reason: 'the task was canceled' });
    },
  };
}

/**
 * Decide a taken approval of a task-made run by continuing its task with the decision as work.
 * Resolves once the task is working again, with `outcome`: what the decision produced (the
 * response, the rejection, or the next suspension's 202 / an error, as a rejection), for the
 * caller that decided. A task that can no longer be continued (deleted, canceled) does not stop
 * the decision: the run is then decided without it.
 */
export async function continueTask(
  ctx: HangarContext,
  record: PendingApproval,
  decision: ApprovalDecision,
): Promise<{ task?: Task; outcome: Promise<InvokeResponse | RejectedRun> }> {
  const service = ctx.services.get('agents').service;
  const board = ctx.services.get('tasks');
  const tasks = board.enabled ? board : undefined;
  if (!tasks || !record.task_id) return { outcome: service.decide(record, decision) };
  let settle!: (value: InvokeResponse | RejectedRun) => void;
  let failOutcome!: (err: unknown) => void;
  const outcome = new Promise<InvokeResponse | RejectedRun>((resolve, reject) => {
    settle = resolve;
    failOutcome = reject;
  });
  // Nobody may be waiting for it (an A2A reply that does not block): never an unhandled rejection.
  outcome.catch(() => {});
  try {
    const { task } = await tasks.resume(record.task_id, {}, async (work) => {
      try {
        const body = await asTaskWork(() => service.decide(record, decision, agentFrameEmitter(work.emit)));
        settle(body);
        if ('status' in body && body.status === 'rejected') {
          throw new SettleAs('canceled', { error: `rejected at approval ${record.id}${body.reason ? `: ${body.reason}` : ''}` });
        }
        return body;
      } catch (err) {
        if (err instanceof SettleAs && err.status === 'input-required')
          failOutcome(suspended((err.fields.result as SuspendedResult).detail, record.thread_id));
        else if (!(err instanceof SettleAs)) failOutcome(err);
        throw err;
      }
    });
    return { task, outcome };
  } catch (err) {
    if (!(err instanceof HangarError) || (err.status !== 404 && err.status !== 409)) throw err;
    ctx.log.warn(`approval ${record.id} is decided without its task ${record.task_id}: ${errorMessage(err)}`);
    return { outcome: service.decide(record, decision) };
  }
}

/** The answer text of a finished agent task, or what a waiting one asks ('' until then). */
function resultText(task: Task): string {
  const awaited = awaitedApproval(task);
  if (awaited) return awaited.message;
  if (task.status !== 'completed') return '';
  const response = (task.result as Partial<InvokeResponse> | null)?.response;
  return typeof response === 'string' ? response : task.result == null ? '' : JSON.stringify(task.result);
}

function statusMessage(task: Task): string {
  switch (task.status) {
    case 'submitted':
    case 'working':
      return task.progress.message;
    case 'input-required': {
      const awaited = awaitedApproval(task);
      return awaited
        ? `waiting at node '${awaited.node_name}' for approval ${awaited.approval_id} on thread ${awaited.thread_id}: ${awaited.message}`
        : 'waiting for input';
    }
    case 'completed':
      return 'completed';
    case 'failed':
    case 'canceled':
      return task.error ?? task.status;
    default: {
      const never: never = task.status;
      return never;
    }
  }
}

/** The approval a waiting task names in the A2A REST answers: what to decide, and where. */
function approvalOf(task: Task) {
  const awaited = awaitedApproval(task);
  if (!awaited) return undefined;
  return {
    id: awaited.approval_id,
    thread_id: awaited.thread_id,
    node_name: awaited.node_name,
    message: awaited.message,
    links: awaited.links,
  };
}

export const TRACKING_NEEDS_STORAGE =
  'task tracking requires a storage backend: the task subsystem is disabled (setting tasks.enabled), so this task was not recorded';

export class A2AService {
  constructor(private readonly ctx: HangarContext) {}

  private get tasks(): TaskService | undefined {
    const tasks = this.ctx.services.get('tasks');
    return tasks.enabled ? tasks : undefined;
  }

  /** Only this agent's tasks of this principal: anything else is the same 404 as an unknown id. */
  scope(agent: string, principal: string): TaskScope {
    return { principal, kind: AGENT_TASK_KIND, target: agent };
  }

  /** Resolve the agent or throw its 404; returns the canonical name. */
  agent(name: string): string {
    return findAgent(this.ctx.registry, name).name;
  }

  async submit(
    agentName: string,
    body: A2ATaskRequest,
    principal: string,
    options: { wait?: boolean; signal?: AbortSignal } = {},
  ): Promise<A2ASubmitResponse> {
    const agent = this.agent(agentName);
    const text = messageText(body.message);
    if (text === undefined) {
      throw fail('HANGAR_A2A_MESSAGE_NO_TEXT', {});
    }
    const meta = body.metadata;
    const input = {
      query: text,
      ...(typeof meta.thread_id === 'string' ? { thread_id: meta.thread_id } : {}),
      ...(typeof meta.user_id === 'string' ? { user_id: meta.user_id } : {}),
      ...(meta.context && typeof meta.context === 'object' && !Array.isArray(meta.context) ? { context: meta.context } : {}),
      metadata: { ...meta, a2a: true },
    };

    const tasks = this.tasks;
    if (!tasks) {
      const response = await this.ctx.services
        .get('agents')
        .service.invoke(agent, InvokeRequest.parse(input), options.signal, undefined, principal);
      return { task_id: randomUUID(), status: 'completed', result: response.response, message: TRACKING_NEEDS_STORAGE };
    }
    let task = await tasks.submit({ kind: AGENT_TASK_KIND, target: agent, input, principal, metadata: { source: 'a2a' } });
    if (options.wait) task = await tasks.waitFor(task.id, this.scope(agent, principal), options.signal);
    const approval = approvalOf(task);
    return {
      task_id: task.id,
      status: task.status,
      result: resultText(task),
      message: statusMessage(task),
      ...(approval ? { approval } : {}),
    };
  }

  async status(agentName: string, id: string, principal: string): Promise<A2AStatusResponse> {
    const agent = this.agent(agentName);
    const tasks = this.tasks;
    if (!tasks) return { task_id: id, status: 'unknown', message: TRACKING_NEEDS_STORAGE };
    const task = await tasks.get(id, this.scope(agent, principal));
    const approval = approvalOf(task);
    return {
      task_id: task.id,
      status: task.status,
      message: statusMessage(task),
      result: resultText(task),
      ...(approval ? { approval } : {}),
      progress: task.progress,
      error: task.error,
      created_at: task.created_at,
      updated_at: task.updated_at,
    };
  }

  /** The board service for events and cancel, which have no meaning without it (501). */
  requireTasks(agentName: string): { tasks: TaskService; agent: string } {
    const agent = this.agent(agentName);
    const tasks = this.tasks;
    if (!tasks) throw tasksDisabled();
    return { tasks, agent };
  }

  async cancel(agentName: string, id: string, principal: string) {
    const { tasks, agent } = this.requireTasks(agentName);
    const outcome = await tasks.cancel(id, this.scope(agent, principal));
    return { task_id: id, status: outcome.task.status, canceled: outcome.canceled, message: outcome.message };
  }

  /** POST /invoke/async: the task for an AgentInvokeRequest, with where to follow it. */
  async invokeAsync(agentName: string, request: InvokeRequest, principal: string) {
    const agent = this.agent(agentName);
    const tasks = this.tasks;
    if (!tasks) throw tasksDisabled();
    const task = await tasks.submit({
      kind: AGENT_TASK_KIND,
      target: agent,
      input: request,
      principal,
      metadata: { source: 'invoke/async' },
    });
    const base = `/api/v1/tasks/${task.id}`;
    return { ...task, links: { self: base, events: `${base}/events`, result: `${base}/result`, cancel: `${base}/cancel` } };
  }
}
