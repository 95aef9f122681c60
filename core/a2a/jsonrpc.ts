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
 */
import { randomUUID } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { FastifyReply } from 'fastify';
import { z } from 'zod';
import { HttpError, errorMessage } from '../http/errors.js';
import { formatFrame, openSse } from '../http/sse.js';
import { formatIssues } from '../http/validate.js';
import path from 'node:path';
import { findAgent, type Agent } from '../agents/kind.js';
import { InvokeRequest, type InvokeResponse } from '../agents/schemas.js';
import type { HangarContext } from '../kernel/context.js';
import type { ApprovalDecision } from '../agents/service.js';
import { TaskStatus, isSettled, isTerminal, type Task, type TaskEvent } from '../tasks/schemas.js';
import type { TaskScope, TaskService } from '../tasks/service.js';
import { messageText } from './schemas.js';
import { V1_METHODS, boardStatusOf, isV1Method, paramsFromV1, resultToV1, supportedInterfaces } from './v1.js';
import { AGENT_TASK_KIND, TRACKING_NEEDS_STORAGE, awaitedApproval, continueTask } from './service.js';

export const A2A_PROTOCOL_VERSION = '0.3.0';

/** JSON-RPC and A2A error codes (A2A v0.3 §8). */
export const RpcCode = {
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
  internal: -32603,
  taskNotFound: -32001,
  taskNotCancelable: -32002,
  pushNotSupported: -32003,
  unsupported: -32004,
} as const;

export class RpcError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly data?: unknown,
  ) {
    super(message);
    this.name = 'RpcError';
  }
}

type RpcId = string | number | null;

interface RpcResponse {
  jsonrpc: '2.0';
  id: RpcId;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/** A streamed call: its request id, how a result goes on the wire (v0.3 or v1.0), and the last frame written (for the log). */
interface StreamNote {
  id: RpcId;
  toWire: (result: unknown) => unknown;
  last?: RpcResponse;
}

/**
 * Why a body is not a JSON-RPC request, naming the problem rather than zod's view of it: no body,
 * a batch (the A2A binding takes none), a non-object, or the field that is wrong.
 */
function invalidRequestMessage(body: unknown, issues: z.core.$ZodIssue[]): string {
  if (body === undefined || body === null || body === '') return 'the request has no body: expected a JSON-RPC 2.0 request object';
  if (Array.isArray(body)) return 'batch requests are not supported: send one JSON-RPC 2.0 request object';
  if (typeof body !== 'object') return `the request is a JSON ${typeof body}, not a JSON-RPC 2.0 request object`;
  return `not a JSON-RPC 2.0 request: ${formatIssues(issues, 'request')}`;
}

const Envelope = z.object({
  jsonrpc: z.literal('2.0'),
  id: z.union([z.string(), z.number(), z.null()]).optional(),
  method: z.string().min(1),
  params: z.unknown().optional(),
});

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

function params<S extends z.ZodType>(schema: S, value: unknown): z.output<S> {
  const parsed = schema.safeParse(value ?? {});
  if (!parsed.success) throw new RpcError(RpcCode.invalidParams, formatIssues(parsed.error.issues, 'params'));
  return parsed.data;
}

// ---- wire shapes (A2A v0.3) --------------------------------------------------------------------

type WirePart = { kind: 'text'; text: string } | { kind: 'data'; data: unknown };
interface WireMessage {
  kind: 'message';
  messageId: string;
  role: 'user' | 'agent';
  parts: WirePart[];
  contextId: string;
  taskId?: string;
}
interface WireStatus {
  state: string;
  timestamp: string;
  message?: WireMessage;
}
interface WireTask {
  kind: 'task';
  id: string;
  contextId: string;
  status: WireStatus;
  artifacts: Array<{ artifactId: string; name: string; parts: WirePart[] }>;
  history: WireMessage[];
  metadata: Record<string, unknown>;
}

function contextOf(task: Task): string {
  const context = task.metadata.context_id;
  return typeof context === 'string' ? context : task.id;
}

function agentMessage(task: Task, text: string): WireMessage {
  return { kind: 'message', messageId: `${task.id}:${task.status}`, role: 'agent', parts: [{ kind: 'text', text }], contextId: contextOf(task), taskId: task.id };
}

function wireStatus(task: Task): WireStatus {
  const status: WireStatus = { state: task.status, timestamp: task.updated_at };
  const awaited = awaitedApproval(task);
  if (awaited) {
    const { status: _suspended, ...approval } = awaited;
    status.message = agentMessage(task, awaited.message);
    status.message.parts.push({ kind: 'data', data: { approval } });
  } else if (task.status === 'completed') {
    status.message = agentMessage(task, (task.result as InvokeResponse).response);
  } else if (task.status === 'failed' || task.status === 'canceled') {
    status.message = agentMessage(task, task.error ?? task.status);
  }
  return status;
}

function artifacts(task: Task): WireTask['artifacts'] {
  if (task.status !== 'completed') return [];
  const result = task.result as InvokeResponse;
  return [{ artifactId: `${task.id}:response`, name: 'response', parts: [{ kind: 'text', text: result.response }, { kind: 'data', data: result }] }];
}

export function toWireTask(task: Task, historyLength?: number): WireTask {
  const query = (task.input as { query?: string }).query ?? '';
  const messageId = typeof task.metadata.message_id === 'string' ? task.metadata.message_id : `${task.id}:input`;
  const history: WireMessage[] = [
    { kind: 'message', messageId, role: 'user', parts: [{ kind: 'text', text: query }], contextId: contextOf(task), taskId: task.id },
  ];
  return {
    kind: 'task',
    id: task.id,
    contextId: contextOf(task),
    status: wireStatus(task),
    artifacts: artifacts(task),
    history: historyLength === undefined ? history : history.slice(history.length - historyLength),
    metadata: { agent: task.target, progress: task.progress },
  };
}

// ---- the binding -------------------------------------------------------------------------------

/**
 * The standard A2A agent card of one agent; `origin` is how the caller reached this server. The
 * v1.0 card (`agent-card.json`) lists the JSON-RPC binding in both versions in
 * `supportedInterfaces` and keeps the v0.3 fields (`url`, `preferredTransport`,
 * `protocolVersion`) beside them, so a client of either version reads it; `agent.json`, the v0.3
 * name of the file, is the v0.3 card alone.
 */
export function a2aAgentCard(ctx: HangarContext, agentName: string, origin: string, version: '1.0' | '0.3' = '1.0') {
  const agent = findAgent(ctx.registry, agentName);
  const url = `${origin}/api/v1/${agent.name}/a2a`;
  return {
    ...(version === '1.0' ? { supportedInterfaces: supportedInterfaces(url) } : {}),
    protocolVersion: A2A_PROTOCOL_VERSION,
    name: agent.name,
    description: agent.description || `Hangar agent ${agent.name}`,
    version: agent.version,
    url,
    preferredTransport: 'JSONRPC',
    additionalInterfaces: [{ url, transport: 'JSONRPC' }],
    provider: { organization: 'Hangar', url: origin },
    capabilities: { streaming: true, pushNotifications: false, stateTransitionHistory: ctx.settings.tasks.enabled, ...(version === '1.0' ? { extendedAgentCard: false } : {}) },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: [{ id: agent.name, name: agent.slug, description: agent.description || agent.name, tags: [agent.framework] }],
  };
}

/**
 * The workspace's v1.0 agent card at the host root (`/.well-known/agent-card.json`), where generic
 * A2A discovery looks. A card describes one agent, so the workspace is described as one: a skill
 * per agent, and per agent an interface on the host-root endpoint `/a2a` whose `tenant` is the
 * agent's name (v1.0 requests carry the tenant; that endpoint routes by it). A client that picks
 * an interface by its own rule reaches one of them (the SDK takes the last 1.0 entry); to address
 * a given agent choose its interface, or use the agent's own card under /api/v1/{agent}/.
 */
export function workspaceAgentCard(ctx: HangarContext, origin: string) {
  const agents = ctx.registry.list<Agent>('agent').map((e) => e.definition);
  return {
    name: `Hangar workspace ${path.basename(ctx.paths.root)}`,
    description: agents.length
      ? `Hangar agents, one interface each (tenant = agent name): ${agents.map((a) => a.name).join(', ')}`
      : 'A Hangar workspace with no agents yet',
    version: ctx.version,
    supportedInterfaces: agents.map((agent) => ({ url: `${origin}/a2a`, protocolBinding: 'JSONRPC', protocolVersion: '1.0', tenant: agent.name })),
    provider: { organization: 'Hangar', url: origin },
    capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: false },
    defaultInputModes: ['text/plain'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills: agents.map((agent) => ({ id: agent.name, name: agent.slug, description: agent.description || agent.name, tags: [agent.framework] })),
  };
}

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
      return answer('invalid', { jsonrpc: '2.0', id, error: { code: RpcCode.invalidRequest, message: invalidRequestMessage(body, envelope.error.issues) } });
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
          if (v1 && isTerminal(task.status)) throw new RpcError(RpcCode.unsupported, `Task ${task.id} is in a terminal state (${task.status}) and cannot be subscribed to.`);
          return await this.follow(this.requireTasks(), task, this.scope(agent, principal), stream, reply);
        }
        case 'tasks/pushNotificationConfig/set':
        case 'tasks/pushNotificationConfig/get':
        case 'tasks/pushNotificationConfig/list':
        case 'tasks/pushNotificationConfig/delete':
          throw new RpcError(RpcCode.pushNotSupported, 'push notifications are not supported; follow the task with message/stream or tasks/resubscribe');
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
      if (err instanceof HttpError && err.status === 404) throw new RpcError(RpcCode.taskNotFound, `task ${taskId} not found`);
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
      throw new RpcError(RpcCode.invalidRequest, `contextId mismatch: message contextId '${message.contextId}' does not match task '${task.id}' contextId '${contextOf(task)}'`);
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
      if (err instanceof HttpError && err.status === 404) throw new RpcError(RpcCode.unsupported, `approval ${awaited.approval_id} of task ${task.id} was already decided`);
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
    return { kind: 'message', messageId: randomUUID(), role: 'agent', parts: [{ kind: 'text', text: response.response }, { kind: 'data', data: response }], contextId };
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
    const status = query.status === undefined || query.status === '' || query.status === 'TASK_STATE_UNSPECIFIED' ? undefined : (boardStatusOf(query.status) ?? query.status);
    if (status !== undefined && !TaskStatus.safeParse(status).success) throw new RpcError(RpcCode.invalidParams, `params.status: unknown task state "${query.status}"`);
    const offset = query.pageToken ? Number(query.pageToken) : 0;
    if (!Number.isInteger(offset) || offset < 0) throw new RpcError(RpcCode.invalidParams, 'params.pageToken: not a token this server gave out');
    const pageSize = query.pageSize ?? 50;
    // The context filter reads task metadata, so it pages over the agent's whole list.
    const all = (await tasks.list({ status: status ? [status as TaskStatus] : undefined, limit: 500, offset: 0 }, this.scope(agent, principal))).tasks;
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
    if (!outcome.canceled) throw new RpcError(RpcCode.taskNotCancelable, `task ${taskId} is already ${outcome.task.status} and cannot be canceled`);
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
      if (event.type !== 'status') return;
      if (isSettled(event.status)) return sendFinal();
      emit({ kind: 'status-update', taskId: task.id, contextId, status: { state: event.status, timestamp: event.timestamp }, final: false });
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
    if (!parsed.success) throw new RpcError(RpcCode.invalidParams, `params.message.parts: a data part must be {"approved": boolean, "context"?: object, "reason"?: string}; ${formatIssues(parsed.error.issues, 'data')}`);
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
    if (!res.writableFinished) controller.abort(new HttpError(499, 'client closed the request'));
  });
  return controller.signal;
}

function sendJson(reply: FastifyReply, body: unknown): void {
  reply.code(200).type('application/json; charset=utf-8').send(JSON.stringify(body));
}

/** Everything thrown ends up as a JSON-RPC error: ours keep their code, HTTP errors map by status. */
export function toRpcError(err: unknown): { code: number; message: string; data?: unknown } {
  if (err instanceof RpcError) return { code: err.code, message: err.message, ...(err.data === undefined ? {} : { data: err.data }) };
  if (err instanceof HttpError) {
    const message = typeof err.detail === 'string' ? err.detail : JSON.stringify(err.detail);
    if (err.status === 422) return { code: RpcCode.invalidParams, message };
    if (err.status === 404) return { code: RpcCode.taskNotFound, message };
    if (err.status === 501) return { code: RpcCode.unsupported, message };
    return { code: RpcCode.internal, message, data: { status: err.status } };
  }
  return { code: RpcCode.internal, message: errorMessage(err) };
}
