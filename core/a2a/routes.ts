/**
 * The A2A surface of every agent, declared once as `/api/v1/{agent}/...`: asynchronous execution
 * (POST /invoke/async), the spec's task routes under /a2a/tasks, the public A2A JSON-RPC binding
 * (jsonrpc.ts) with its agent cards, the workspace's card and endpoint at the host root, and MCP
 * at /mcp (mcp.ts). Logic is in `service.ts`; events go through the board's SSE.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AgentParams, InvokeRequest } from '../agents/schemas.js';
import { type AnyRoute, defineRoute, mountRoutes } from '../http/route.js';
import type { HangarContext } from '../kernel/context.js';
import { fail, HangarError } from '../kernel/errors.js';
import { streamTaskEvents } from '../tasks/events.js';
import { TaskEventsQuery } from '../tasks/schemas.js';
import { a2aAgentCard, workspaceAgentCard } from './cards.js';
import type { A2AJsonRpc } from './jsonrpc.js';
import { handleMcp, MCP_PATH, mcpHostValidation } from './mcp.js';
import { RpcCode } from './rpc.js';
import { A2ATaskRequest, AgentTaskParams, SubmitQuery } from './schemas.js';
import { A2AService } from './service.js';

/** Where generic A2A discovery looks for a host's card. */
export const ROOT_CARD_PATH = '/.well-known/agent-card.json';

const tags = ['a2a'];
const missing = 'unknown agent, unknown task, or a task of another agent or principal';
const disabled = 'the task subsystem is disabled';

/** Ends the wait of `?wait=true` when the client goes away (the task itself keeps running). */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  // The response's close, not the request's: a request closes as soon as its body has been read.
  const res = reply.raw;
  res.on('close', () => {
    // 499 (client closed request): a 4xx, so the error handler does not log it as a failure.
    if (!res.writableFinished) controller.abort(fail('HANGAR_A2A_CLIENT_CLOSED', {}));
  });
  return controller.signal;
}

const originOf = (req: FastifyRequest) => `${req.protocol}://${req.headers.host}`;

/** The REST routes: asynchronous execution, the spec's A2A tasks and the agent cards. */
export function a2aRoutes(ctx: HangarContext, a2a = new A2AService(ctx)): AnyRoute[] {
  return [
    defineRoute({
      method: 'POST',
      url: '/api/v1/:agent/invoke/async',
      summary: 'Run the agent as a task on the board; follow /api/v1/tasks/{id}/events',
      tags: ['agents', 'tasks'],
      schema: {
        params: AgentParams,
        body: InvokeRequest,
        response: { 202: 'the task (field id) and links', 404: missing, 422: 'invalid body', 501: disabled },
      },
      config: { resource: { kind: 'agent', param: 'agent', operation: 'invoke.async', invocation: true } },
      // The agent is looked up before the body is read: 404 before 422.
      handler: async (input) => {
        const agent = a2a.agent(input.params.agent);
        const task = await a2a.invokeAsync(agent, input.body, input.req.principal);
        input.reply.code(202).header('Location', task.links.self);
        return task;
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/:agent/a2a/tasks',
      summary: 'Submit an A2A task (message in protocol or simplified form)',
      tags,
      schema: {
        params: AgentParams,
        body: A2ATaskRequest,
        querystring: SubmitQuery,
        response: { 200: 'task_id, status, result, message', 404: missing, 422: 'the message has no readable text; the agent did not run' },
      },
      config: { resource: { kind: 'agent', param: 'agent', operation: 'a2a', invocation: true } },
      handler: async (input) => {
        const agent = a2a.agent(input.params.agent);
        const body = input.body;
        const { wait } = input.query;
        return a2a.submit(agent, body, input.req.principal, { wait, signal: wait ? clientGone(input.reply) : undefined });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/a2a/tasks/:task_id',
      summary: 'A2A task status',
      tags,
      schema: { params: AgentTaskParams, response: { 200: 'task_id, status, message (and result, progress when tracked)', 404: missing } },
      handler: ({ params, req }) => a2a.status(params.agent, params.task_id, req.principal),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/a2a/tasks/:task_id/events',
      summary: 'A2A task events: SSE replay after since / Last-Event-ID, then live, [DONE] at the end',
      tags,
      // `since` is read with Last-Event-ID by the board's stream (resumePoint).
      schema: {
        params: AgentTaskParams,
        querystring: TaskEventsQuery,
        response: { 200: { description: 'event stream', contentType: 'text/event-stream' }, 404: missing, 501: disabled },
      },
      handler: async ({ params, req, reply }) => {
        const { tasks, agent } = a2a.requireTasks(params.agent);
        await streamTaskEvents(tasks, req, reply, params.task_id, a2a.scope(agent, req.principal));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/:agent/a2a/tasks/:task_id/cancel',
      summary: 'Request cooperative cancellation',
      tags,
      schema: { params: AgentTaskParams, response: { 200: 'task_id, status, canceled, message', 404: missing, 501: disabled } },
      handler: ({ params, req }) => a2a.cancel(params.agent, params.task_id, req.principal),
    }),
    defineRoute({
      method: 'GET',
      url: ROOT_CARD_PATH,
      summary: "The workspace's A2A v1.0 agent card: a skill and an interface (tenant = agent name, on /a2a) per agent",
      tags,
      schema: { response: { 200: 'A2A AgentCard' } },
      // Discovery documents are public, as /.well-known/agent.json is.
      config: { public: true },
      handler: ({ req }) => workspaceAgentCard(ctx, originOf(req)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/.well-known/agent-card.json',
      summary:
        'Standard A2A agent card: v1.0 (supportedInterfaces lists the JSON-RPC binding in v1.0 and v0.3) with the v0.3 fields beside',
      tags,
      schema: { params: AgentParams, response: { 200: 'A2A AgentCard', 404: 'unknown agent' } },
      handler: ({ params, req }) => a2aAgentCard(ctx, params.agent, originOf(req), '1.0'),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/.well-known/agent.json',
      summary: 'The A2A v0.3 agent card',
      tags,
      schema: { params: AgentParams, response: { 200: 'A2A AgentCard (v0.3)', 404: 'unknown agent' } },
      handler: ({ params, req }) => a2aAgentCard(ctx, params.agent, originOf(req), '0.3'),
    }),
  ];
}

/**
 * The A2A JSON-RPC endpoints: one per agent, and the workspace's, which routes by `params.tenant`.
 * The binding (jsonrpc.ts, its ~85 zod schemas of A2A's messages) is imported by the first call,
 * not at start: most starts never speak A2A.
 */
export function a2aJsonRpcRoutes(ctx: HangarContext): AnyRoute[] {
  let binding: Promise<A2AJsonRpc> | undefined;
  const rpc = () => (binding ??= import('./jsonrpc.js').then(({ A2AJsonRpc }) => new A2AJsonRpc(ctx)));
  return [
    defineRoute({
      method: 'POST',
      url: '/api/v1/:agent/a2a',
      summary:
        'A2A JSON-RPC, v1.0 (SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask) and v0.3 (message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe), told apart by method name',
      tags,
      schema: {
        params: AgentParams,
        response: { 200: 'a JSON-RPC response, or an SSE stream of them for message/stream and tasks/resubscribe', 404: 'unknown agent' },
      },
      handler: async ({ params, req, reply }) => {
        await (await rpc()).handle(params.agent, req.body, req.principal, reply);
        return reply;
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/a2a',
      summary: 'A2A JSON-RPC (v1.0) for every agent of the workspace: params.tenant names the agent (optional with one agent)',
      tags,
      schema: { response: { 200: 'a JSON-RPC response, or an SSE stream of them' } },
      handler: async ({ req, reply }) => {
        const body = req.body as { id?: unknown; params?: { tenant?: unknown } } | undefined;
        const tenant = body?.params?.tenant;
        const agents = ctx.registry.list('agent').map((e) => e.name);
        const agent = typeof tenant === 'string' && tenant !== '' ? tenant : agents.length === 1 ? agents[0] : undefined;
        if (agent === undefined || !agents.includes(agent)) {
          const id = typeof body?.id === 'string' || typeof body?.id === 'number' ? body.id : null;
          const message = `params.tenant: ${agent === undefined ? 'name the agent' : `no agent "${agent}"`} (one of: ${agents.join(', ') || 'none'})`;
          return reply
            .code(200)
            .type('application/json; charset=utf-8')
            .send(JSON.stringify({ jsonrpc: '2.0', id, error: { code: RpcCode.invalidParams, message } }));
        }
        await (await rpc()).handle(agent, req.body, req.principal, reply);
        return reply;
      },
    }),
  ];
}

/** Model Context Protocol over streamable HTTP: every agent as a tool (see mcp.ts). */
export function mcpRoutes(ctx: HangarContext): AnyRoute[] {
  return [
    defineRoute({
      // POST carries requests; GET opens a session's server-to-client stream, DELETE ends it.
      method: ['GET', 'POST', 'DELETE'],
      url: MCP_PATH,
      summary:
        'Model Context Protocol (streamable HTTP): tools/list and tools/call, one tool per agent; sessions by Mcp-Session-Id, or stateless',
      tags: ['mcp'],
      schema: {
        response: { 200: 'a JSON-RPC response (JSON or SSE)', 403: 'Host header not allowed (DNS rebinding)', 404: 'unknown session' },
      },
      handler: async ({ req, reply }) => {
        await handleMcp(ctx, req, reply);
        return reply;
      },
    }),
  ];
}

/**
 * Mounts the routes above. The JSON-RPC endpoints and MCP answer an unreadable body in their
 * protocol (`rpcBodyErrors`), so each set is mounted in a scope of its own with that error handler;
 * MCP's scope checks the Host name (DNS rebinding) before the body is read.
 */
export function mountA2aRoutes(app: FastifyInstance, ctx: HangarContext): void {
  mountRoutes(app, a2aRoutes(ctx));
  app.register(async (scope) => {
    scope.setErrorHandler(rpcBodyErrors(app, ctx, 200));
    mountRoutes(scope, a2aJsonRpcRoutes(ctx));
  });
  app.register(async (scope) => {
    scope.setErrorHandler(rpcBodyErrors(app, ctx, 400));
    scope.addHook('onRequest', mcpHostValidation(ctx));
    mountRoutes(scope, mcpRoutes(ctx));
  });
}

/**
 * A body the JSON-RPC endpoint cannot read is answered as JSON-RPC says, not with `{detail}`:
 * HTTP 200 with `id: null` and -32700 (parse error) for JSON that does not parse, -32600 (invalid
 * request) naming the problem for another media type, a body nested past the depth limit or too
 * large — as the A2A SDK's own server answers (it sends -32005 for the media type; the issue asks
 * for -32600, which JSON-RPC itself defines). MCP gets the same errors with HTTP 400, the status
 * the MCP SDK's transport answers them with. Nothing runs either way. Refusals that are not about
 * the body (401, 403, 429, the unknown agent's 404) keep their HTTP answers: a JSON-RPC client
 * reports those as transport errors.
 */
function rpcBodyErrors(app: FastifyInstance, ctx: HangarContext, httpStatus: 200 | 400) {
  return function rpcBodyError(this: FastifyInstance, err: Error, req: FastifyRequest, reply: FastifyReply) {
    const status = err instanceof HangarError ? err.status : (err as { statusCode?: number }).statusCode;
    if (reply.sent || reply.raw.headersSent || (status !== 400 && status !== 413 && status !== 415 && status !== 422)) {
      return app.errorHandler.call(this, err as never, req, reply);
    }
    const detail = err instanceof HangarError && typeof err.detail === 'string' ? err.detail : err.message;
    const parse = status === 422 && detail.startsWith('request body is not valid JSON');
    const error = parse
      ? { code: -32700, message: `Parse error: ${detail}` }
      : { code: RpcCode.invalidRequest, message: status === 415 ? `${detail}; a JSON-RPC request is sent as application/json` : detail };
    const named = (req.params as { agent?: string }).agent;
    const agent = named === undefined ? undefined : (ctx.registry.get('agent', named)?.definition as { name: string } | undefined);
    if (agent) {
      ctx.services.find('invocations')?.record({
        resource: 'agent',
        name: agent.name,
        operation: 'a2a:invalid',
        principal: req.principal ?? 'anonymous',
        started: Date.now(),
        ok: false,
        http_status: httpStatus,
        error: `${error.code} ${error.message}`,
      });
    }
    reply
      .code(httpStatus)
      .type('application/json; charset=utf-8')
      .send(JSON.stringify({ jsonrpc: '2.0', id: null, error }));
  };
}
