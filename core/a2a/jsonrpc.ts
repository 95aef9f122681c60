/**
 * The public A2A protocol (v0.3) JSON-RPC binding of every agent, over the same task board as
 * the spec's /a2a/tasks routes: `POST /api/v1/{agent}/a2a` with message/send, message/stream,
 * tasks/get, tasks/cancel and tasks/resubscribe, and a standard A2A agent card at
 * `/api/v1/{agent}/.well-known/agent-card.json` (and `agent.json`) whose `url` points there.
 *
 * Decisions:
 * - Protocol versions 0.3 (the JSON-RPC method names above) and 1.0 (`SendMessage`, …) on the
 *   same endpoint: v1.ts translates a v1.0 call to its v0.3 method and the answer back, so the
 *   official SDK's default (v1.0) client and its `legacyCompat` (v0.3) client both work.
 * - message/send blocks until the task finishes unless `configuration.blocking` is false, as the
 *   reference servers do.
 * - `contextId` is the agent's thread: a message naming one continues that thread; without one a
 *   new context id is minted and the run is stateless.
 * - Task states map one to one. A task waiting for a human approval is `input-required`; its
 *   status message carries the prompt as text and the approval (id, thread id, node, links) as a
 *   data part. The client answers by sending a message with the same `taskId` (and no or the same
 *   `contextId`), which continues the same task:
 *     - a data part `{"approved": true, "context": {...}}` or `{"approved": false, "reason": "..."}`
 *       decides it (a data part wins over text), or
 *     - text whose first word is approve / approved / yes / y / ok, or reject / rejected / no / n /
 *       deny (any case); the rest of a rejecting text is the reason, the rest of an approving text
 *       goes into the approval context as `comment`.
 *   Approved, the task works again and ends completed (or input-required at the next approval);
 *   rejected, it ends `canceled` with the reason. A reply to a task that waits for nothing is
 *   UnsupportedOperation (-32004), as the SDK's own server answers a reply to a finished task; an
 *   unknown or foreign task is TaskNotFound; a reply that decides nothing is InvalidParams.
 * - Protocol streams carry JSON-RPC responses only, so unlike the spec's own event routes they
 *   end by closing the stream after the `final: true` status update, not with `[DONE]`.
 * - tasks/cancel on a finished task answers the protocol's TaskNotCancelable error (-32002); the
 *   board's cancel answers a no-op instead, as the spec's routes do.
 * - Without the task subsystem, message/send and message/stream run the agent and answer with a
 *   plain `Message` (the protocol allows that); tasks/get, tasks/cancel and tasks/resubscribe
 *   answer UnsupportedOperation saying task tracking needs a storage backend.
 *
 * The JSON-RPC plumbing is `rpc.ts`, a task's wire shape `wire.ts`, the agent cards `cards.ts`.
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { findAgent } from '../agents/kind.js';
import { InvokeRequest } from '../agents/schemas.js';
import type { ApprovalDecision } from '../agents/service.js';
import { formatFrame, openSse } from '../http/sse.js';
import { formatIssues } from '../http/validate.js';
import type { HangarContext } from '../kernel/context.js';
import { fail, HangarError } from '../kernel/errors.js';
import { isSettled, isTerminal, type Task, type TaskEvent, TaskStatus } from '../tasks/schemas.js';
import type { TaskScope, TaskService } from '../tasks/service.js';
import { Envelope, invalidRequestMessage, params, RpcCode, RpcError, type RpcId, type RpcResponse, sendJson, toRpcError } from './rpc.js';
import { messageText } from './schemas.js';
import { AGENT_TASK_KIND, awaitedApproval, continueTask, TRACKING_NEEDS_STORAGE } from './service.js';
import { boardStatusOf, isV1Method, paramsFromV1, resultToV1, V1_METHODS } from './v1.js';
import { contextOf, toWireTask, type WireMessage, type WireTask } from './wire.js';

/** A streamed call: its request id, how a result goes on the wire (v0.3 or v1.0), and the last frame written (for the log). */
interface StreamNote {
  id: RpcId;
  toWire: (result: unknown) => unknown;
  last?: RpcResponse;
}

const RpcMessage = z
  .object({
    kind: z.literal('message').optional(),
    messageId: z.string().optional(),
    role: z.string(),
    parts: z.array(z.object({ kind: z.string().optional(), type: z.string().optional(), text: z.unknown().optional() }).loose()),
    // Proto-style clients send '' for an unset id; both mean none.
    contextId: z.string().optional(),
    taskId: z.string().optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .loose();

const SendParams = z.object({
  message: RpcMessage,
  configuration: z.object({ blocking: z.boolean().optional() }).loose().optional(),
  metadata: z.record(z.string(), z.unknown()).optional(),
});
const ListParams = z
  .object({
    contextId: z.string().optional(),
    status: z.union([z.string(), z.number()]).optional(),
    pageSize: z.number().int().min(1).max(100).optional(),
    pageToken: z.string().optional(),
    historyLength: z.number().int().min(0).optional(),
    includeArtifacts: z.boolean().optional(),
  })
  .loose();
const TaskIdParams = z.object({ id: z.string().min(1), historyLength: z.number().int().min(0).optional() }).loose();

export class A2AJsonRpc {
  constructor(private readonly ctx: HangarContext) {}

  private get tasks(): TaskService | undefined {
    const tasks = this.ctx.services.get('tasks');
    return tasks.enabled ? tasks : undefined;
  }

  private requireTasks(): TaskService {
    const tasks = this.tasks;
    if (!tasks) throw new RpcError(RpcCode.unsupported, TRACKING_NEEDS_STORAGE);
    return tasks;
  }

  private scope(agent: string, principal: string): TaskScope {
    return { principal, kind: AGENT_TASK_KIND, target: agent };
  }

  /**
   * Answer one JSON-RPC request on `reply`: a JSON body for the unary methods, an SSE stream of
   * JSON-RPC responses for message/stream and tasks/resubscribe. Errors are JSON-RPC errors with
   * HTTP 200, as the protocol wants; an unknown agent is the platform's 404 (no agent, no endpoint).
   */
  async handle(agentName: string, body: unknown, principal: string, reply: FastifyReply): Promise<void> {
    const agent = findAgent(this.ctx.registry, agentName).name;
    const started = Date.now();
    // Each call is one invocation-log record, as a REST call is: the method is the operation; a
    // stream is recorded when it closes, with its last frame.
    const record = (method: string, response: RpcResponse | undefined) => {
      const error = response?.error;
      this.ctx.services.find('invocations')?.record({
        resource: 'agent',
        name: agent,
        operation: `a2a:${method}`,
        principal,
        started,
        ok: response !== undefined && !error,
        http_status: 200,
        input: body,
        output: error ? undefined : response?.result,
        error: error ? `${error.code} ${error.message}` : response ? null : 'the client closed the stream before it ended',
      });
    };
    // A v1.0 call is served by its v0.3 method; what goes back is translated to v1.0 (v1.ts).
    let toWire = (result: unknown) => result;
    const answer = (method: string, response: RpcResponse) => {
      const sent = 'result' in response ? { ...response, result: toWire(response.result) } : response;
      record(method, sent);
      sendJson(reply, sent);
    };
    const envelope = Envelope.safeParse(body);
    if (!envelope.success) {
      const id = typeof body === 'object' && body !== null && !Array.isArray(body) ? ((body as { id?: RpcId }).id ?? null) : null;
      return answer('invalid', {
        jsonrpc: '2.0',
        id,
        error: { code: RpcCode.invalidRequest, message: invalidRequestMessage(body, envelope.error.issues) },
      });
    }
    const { id = null, method: called } = envelope.data;
    const v1 = isV1Method(called);
    const method = v1 ? V1_METHODS[called]! : called;
    const rawParams = v1 ? paramsFromV1(called, envelope.data.params) : envelope.data.params;
    if (v1) toWire = (result) => resultToV1(called, result);
    const stream: StreamNote = { id, toWire: (result) => toWire(result) };
    if (method === 'message/stream' || method === 'tasks/resubscribe') reply.raw.once('close', () => record(called, stream.last));
    try {
      switch (method) {
        case 'message/send':
          return answer(called, { jsonrpc: '2.0', id, result: await this.send(agent, rawParams, principal, reply.raw) });
        case 'message/stream':
          return await this.stream(agent, rawParams, principal, stream, reply);
        case 'tasks/get': {
          const { id: taskId, historyLength } = params(TaskIdParams, rawParams);
          const task = await this.find(agent, taskId, principal);
          return answer(called, { jsonrpc: '2.0', id, result: toWireTask(task, historyLength) });
        }
        case 'tasks/list':
          return answer(called, { jsonrpc: '2.0', id, result: await this.list(agent, rawParams, principal) });
        case 'tasks/cancel':
          return answer(called, { jsonrpc: '2.0', id, result: await this.cancel(agent, params(TaskIdParams, rawParams).id, principal) });
        case 'tasks/resubscribe': {
          const { id: taskId } = params(TaskIdParams, rawParams);
          const task = await this.find(agent, taskId, principal);
          // v1.0 refuses to subscribe to a finished task, as the SDK's server does; v0.3 clients
          // keep getting its final status at once.
          if (v1 && isTerminal(task.status))
            throw new RpcError(RpcCode.unsupported, `Task ${task.id} is in a terminal state (${task.status}) and cannot be subscribed to.`);
          return await this.follow(this.requireTasks(), task, this.scope(agent, principal), stream, reply);
        }
        case 'tasks/pushNotificationConfig/set':
        case 'tasks/pushNotificationConfig/get':
        case 'tasks/pushNotificationConfig/list':
        case 'tasks/pushNotificationConfig/delete':
          throw new RpcError(
            RpcCode.pushNotSupported,
            'push notifications are not supported; follow the task with message/stream or tasks/resubscribe',
          );
        case 'agent/getAuthenticatedExtendedCard':
          throw new RpcError(RpcCode.unsupported, 'there is no extended agent card');
        default:
          throw new RpcError(RpcCode.methodNotFound, `method "${called}" not found`);
      }
    } catch (err) {
      const error = toRpcError(err);
      const res = reply.raw;
      if (reply.sent || res.headersSent) {
        // Mid-stream (the reply is hijacked): report as a final JSON-RPC error frame and close.
        stream.last = { jsonrpc: '2.0', id, error };
        if (!res.writableEnded) res.end(formatFrame(undefined, stream.last));
        return;
      }
      if (method === 'message/stream' || method === 'tasks/resubscribe') {
        // Refused before any stream opened: a plain JSON answer, recorded by the close above.
        stream.last = { jsonrpc: '2.0', id, error };
        return sendJson(reply, stream.last);
      }
      answer(called, { jsonrpc: '2.0', id, error });
    }
  }

  private async find(agent: string, taskId: string, principal: string): Promise<Task> {
    try {
      return await this.requireTasks().get(taskId, this.scope(agent, principal));
    } catch (err) {
      if (err instanceof HangarError && err.status === 404) throw new RpcError(RpcCode.taskNotFound, `task ${taskId} not found`);
      throw err;
    }
  }

  /**
   * A message naming a `taskId`: the answer to the approval that task waits for. Takes the
   * approval and continues the task with the decision; resolves once it is working again.
   */
  private async reply(agent: string, message: z.output<typeof RpcMessage>, principal: string): Promise<Task> {
    const tasks = this.requireTasks();
    const task = await this.find(agent, message.taskId!, principal);
    if (message.contextId && message.contextId !== contextOf(task)) {
      throw new RpcError(
        RpcCode.invalidRequest,
        `contextId mismatch: message contextId '${message.contextId}' does not match task '${task.id}' contextId '${contextOf(task)}'`,
      );
    }
    const awaited = awaitedApproval(task);
    if (!awaited) {
      throw new RpcError(
        RpcCode.unsupported,
        isTerminal(task.status)
          ? `Task ${task.id} is in a terminal state (${task.status}) and cannot be modified.`
          : `Task ${task.id} is ${task.status}; it takes a reply only while input-required.`,
      );
    }
    const decision = decisionOf(message);
    const service = this.ctx.services.get('agents').service;
    let record;
    try {
      record = await service.takeApproval(agent, awaited.thread_id, awaited.approval_id, principal);
    } catch (err) {
      if (err instanceof HangarError && err.status === 404)
        throw new RpcError(RpcCode.unsupported, `approval ${awaited.approval_id} of task ${task.id} was already decided`);
      throw err;
    }
    const continued = await continueTask(this.ctx, record, decision);
    if (continued.task) return continued.task;
    // The task could not be continued (it went away meanwhile): the decision still ran.
    await continued.outcome.catch(() => {});
    return tasks.get(task.id, this.scope(agent, principal));
  }

  /** Check the message and build the invoke input; the agent never runs on an empty query. */
  private prepare(agent: string, raw: unknown, principal: string) {
    const { message, configuration, metadata } = params(SendParams, raw);
    const text = messageText(message);
    if (text === undefined) throw new RpcError(RpcCode.invalidParams, 'params.message: no readable text (expected a text part)');
    const named = message.contextId || undefined;
    const contextId = named ?? randomUUID();
    const input = InvokeRequest.parse({
      query: text,
      // A context the client named is a conversation to continue; a minted one starts none.
      thread_id: named ?? null,
      metadata: { ...metadata, ...message.metadata, a2a: true },
    });
    const taskMetadata = { source: 'a2a-jsonrpc', context_id: contextId, message_id: message.messageId ?? randomUUID(), principal };
    return { input, contextId, blocking: configuration?.blocking !== false, taskMetadata, agent };
  }

  private async send(agent: string, raw: unknown, principal: string, res: ServerResponse): Promise<WireTask | WireMessage> {
    const { message, configuration } = params(SendParams, raw);
    if (message.taskId) {
      const tasks = this.requireTasks();
      let task = await this.reply(agent, message, principal);
      if (configuration?.blocking !== false) task = await tasks.waitFor(task.id, this.scope(agent, principal), closedSignal(res));
      return toWireTask(task);
    }
    const plan = this.prepare(agent, raw, principal);
    const tasks = this.tasks;
    if (!tasks) return this.runUntracked(agent, plan.input, plan.contextId, principal);
    let task = await tasks.submit({ kind: AGENT_TASK_KIND, target: agent, input: plan.input, principal, metadata: plan.taskMetadata });
    if (plan.blocking) task = await tasks.waitFor(task.id, this.scope(agent, principal), closedSignal(res));
    return toWireTask(task);
  }

  private async runUntracked(agent: string, input: InvokeRequest, contextId: string, principal: string): Promise<WireMessage> {
    const response = await this.ctx.services.get('agents').service.invoke(agent, input, undefined, undefined, principal);
    return {
      kind: 'message',
      messageId: randomUUID(),
      role: 'agent',
      parts: [
        { kind: 'text', text: response.response },
        { kind: 'data', data: response },
      ],
      contextId,
    };
  }

  private async stream(agent: string, raw: unknown, principal: string, note: StreamNote, reply: FastifyReply): Promise<void> {
    const { id } = note;
    const { message } = params(SendParams, raw);
    if (message.taskId) {
      const task = await this.reply(agent, message, principal);
      return this.follow(this.requireTasks(), task, this.scope(agent, principal), note, reply);
    }
    const plan = this.prepare(agent, raw, principal);
    const tasks = this.tasks;
    if (!tasks) {
      const message = await this.runUntracked(agent, plan.input, plan.contextId, principal);
      const connection = openSse(reply);
      note.last = { jsonrpc: '2.0', id, result: note.toWire(message) };
      connection.write(formatFrame(undefined, note.last));
      connection.close();
      return;
    }
    const task = await tasks.submit({ kind: AGENT_TASK_KIND, target: agent, input: plan.input, principal, metadata: plan.taskMetadata });
    await this.follow(tasks, task, this.scope(agent, principal), note, reply);
  }

  /**
   * The caller's tasks of this agent, newest first (v1.0 ListTasks): filtered by `contextId` and
   * `status` (a v1.0 state or a v0.3 one), `pageSize` (default 50, at most 100) per page,
   * `pageToken` the opaque offset of the next page.
   */
  async list(agent: string, raw: unknown, principal: string) {
    const query = params(ListParams, raw);
    const tasks = this.requireTasks();
    const status =
      query.status === undefined || query.status === '' || query.status === 'TASK_STATE_UNSPECIFIED'
        ? undefined
        : (boardStatusOf(query.status) ?? query.status);
    if (status !== undefined && !TaskStatus.safeParse(status).success)
      throw new RpcError(RpcCode.invalidParams, `params.status: unknown task state "${query.status}"`);
    const offset = query.pageToken ? Number(query.pageToken) : 0;
    if (!Number.isInteger(offset) || offset < 0)
      throw new RpcError(RpcCode.invalidParams, 'params.pageToken: not a token this server gave out');
    const pageSize = query.pageSize ?? 50;
    // The context filter reads task metadata, so it pages over the agent's whole list.
    const all = (
      await tasks.list({ status: status ? [status as TaskStatus] : undefined, limit: 500, offset: 0 }, this.scope(agent, principal))
    ).tasks;
    const matching = query.contextId ? all.filter((t) => contextOf(t) === query.contextId) : all;
    const page = matching.slice(offset, offset + pageSize).map((t) => {
      const wire = toWireTask(t, query.historyLength);
      return query.includeArtifacts === false ? { ...wire, artifacts: [] } : wire;
    });
    const next = offset + page.length;
    return { tasks: page, nextPageToken: next < matching.length ? String(next) : '', pageSize, totalSize: matching.length };
  }

  async cancel(agent: string, taskId: string, principal: string): Promise<WireTask> {
    await this.find(agent, taskId, principal);
    const outcome = await this.requireTasks().cancel(taskId, this.scope(agent, principal));
    if (!outcome.canceled)
      throw new RpcError(RpcCode.taskNotCancelable, `task ${taskId} is already ${outcome.task.status} and cannot be canceled`);
    return toWireTask(outcome.task);
  }

  /**
   * Stream a task as protocol events: the task itself, then a status-update per status change
   * (and an artifact-update with the answer before the final one), closing after `final: true`.
   * A finished task gets its final status at once.
   */
  private async follow(tasks: TaskService, task: Task, scope: TaskScope, note: StreamNote, reply: FastifyReply): Promise<void> {
    const { id } = note;
    const connection = openSse(reply);
    const finish = connection.close;
    let unsubscribe = () => {};
    connection.onClose(() => unsubscribe());
    const emit = (result: unknown) => {
      note.last = { jsonrpc: '2.0', id, result: note.toWire(result) };
      connection.write(formatFrame(undefined, note.last));
    };

    emit(toWireTask(task));
    const contextId = contextOf(task);
    const sendFinal = async () => {
      // The stored task holds the result or error the terminal event refers to.
      const done = await tasks.get(task.id, scope);
      const wire = toWireTask(done);
      for (const artifact of wire.artifacts) emit({ kind: 'artifact-update', taskId: done.id, contextId, artifact, lastChunk: true });
      emit({ kind: 'status-update', taskId: done.id, contextId, status: wire.status, final: true });
      finish();
    };
    if (isSettled(task.status)) return sendFinal();

    let lastSeq = task.last_sequence;
    const onEvent = async (event: TaskEvent) => {
      if (event.sequence <= lastSeq || connection.closed) return;
      lastSeq = event.sequence;
      if (event.type === 'output' && isToolFrame(event.data)) return emit(toolProgress(task.id, contextId, event));
      if (event.type !== 'status') return;
      if (isSettled(event.status)) return sendFinal();
      emit({
        kind: 'status-update',
        taskId: task.id,
        contextId,
        status: { state: event.status, timestamp: event.timestamp },
        final: false,
      });
    };
    // Events are handled one after another (the final one reads the store), in sequence order.
    let chain = Promise.resolve();
    const handle = (work: () => Promise<void> | void) => {
      chain = chain.then(work).catch((err: unknown) => {
        note.last = { jsonrpc: '2.0', id, error: toRpcError(err) };
        connection.write(formatFrame(undefined, note.last));
        finish();
      });
    };
    // Subscribe first, then catch up from the snapshot's sequence, so nothing falls in between.
    const source = await tasks.events(task.id, scope);
    const pending: TaskEvent[] = [];
    let replaying = true;
    let endedWhileReplaying = false;
    unsubscribe = source.subscribe(
      (frame) => (replaying ? pending.push(frame.data) : handle(() => onEvent(frame.data))),
      // The log ended: normally just after the terminal event (handled by then), or the task was
      // deleted. During the catch-up it waits until the replayed events are out.
      () => (replaying ? (endedWhileReplaying = true) : handle(finish)),
    );
    const replay = await source.replay(lastSeq);
    for (const frame of replay.events) handle(() => onEvent(frame.data));
    for (const event of pending) handle(() => onEvent(event));
    replaying = false;
    if (endedWhileReplaying) handle(finish);
    await chain;
  }
}

const APPROVE_WORDS = new Set(['approve', 'approved', 'yes', 'y', 'ok']);
const REJECT_WORDS = new Set(['reject', 'rejected', 'no', 'n', 'deny']);

const DataDecision = z.object({
  approved: z.boolean(),
  context: z.record(z.string(), z.unknown()).optional(),
  reason: z.string().nullish(),
});

/** The decision a reply carries: its data part, else the first word of its text (see the header). */
function decisionOf(message: z.output<typeof RpcMessage>): ApprovalDecision {
  for (const part of message.parts) {
    if ((part.kind ?? part.type) !== 'data') continue;
    const parsed = DataDecision.safeParse((part as { data?: unknown }).data);
    if (!parsed.success)
      throw new RpcError(
        RpcCode.invalidParams,
        `params.message.parts: a data part must be {"approved": boolean, "context"?: object, "reason"?: string}; ${formatIssues(parsed.error.issues, 'data')}`,
      );
    const { approved, context, reason } = parsed.data;
    return approved ? { approved: true, context: context ?? {} } : { approved: false, reason: reason ?? null };
  }
  const text = (messageText(message) ?? '').trim();
  const [, word = '', rest = ''] = /^([A-Za-z]+)\b[\s:,.!-]*([\s\S]*)$/.exec(text) ?? [];
  const keyword = word.toLowerCase();
  if (APPROVE_WORDS.has(keyword)) return { approved: true, context: rest ? { comment: rest } : {} };
  if (REJECT_WORDS.has(keyword)) return { approved: false, reason: rest || null };
  throw new RpcError(
    RpcCode.invalidParams,
    'params.message: the task waits for an approval; answer with a data part {"approved": true|false} or text starting with approve/yes or reject/no',
  );
}

/** Aborts when the client goes away, to stop waiting on its behalf (the task itself goes on). */
function closedSignal(res: ServerResponse): AbortSignal {
  const controller = new AbortController();
  // The response's close, not the request's: a request closes as soon as its body has been read.
  res.on('close', () => {
    if (!res.writableFinished) controller.abort(fail('HANGAR_A2A_CLIENT_CLOSED', {}));
  });
  return controller.signal;
}

/** A tool call's frame in a task's output (`tool_start` / `tool_end` of the model's tool loop). */
function isToolFrame(data: unknown): data is { event: 'tool_start' | 'tool_end' } & Record<string, unknown> {
  const event = (data as { event?: unknown } | null)?.event;
  return event === 'tool_start' || event === 'tool_end';
}

/**
 * A tool call as A2A progress: a `working` status-update whose message carries the call (name,
 * call_id, arguments, then result or error and duration_ms) as a data part, the protocol's place
 * for structured content in a message. The frame's running `response` and `steps_taken` are
 * left out: the artifact carries the answer.
 */
function toolProgress(taskId: string, contextId: string, event: TaskEvent) {
  const { response: _response, steps_taken: _steps, ...call } = event.data as Record<string, unknown>;
  return {
    kind: 'status-update',
    taskId,
    contextId,
    status: {
      state: 'working',
      timestamp: event.timestamp,
      message: {
        kind: 'message',
        role: 'agent',
        messageId: `${taskId}:${event.sequence}`,
        taskId,
        contextId,
        parts: [{ kind: 'data', data: call }],
      },
    },
    final: false,
  };
}
