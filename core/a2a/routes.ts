/**
 * Per-agent asynchronous execution: POST /api/v1/{agent}/invoke/async and the A2A task routes
 * under /api/v1/{agent}/a2a/tasks. Logic is in `service.ts`; events go through the board's SSE.
 */
import type { FastifyInstance, FastifyRequest, FastifyReply } from 'fastify';
import { z } from 'zod';
import { InvokeRequest } from '../agents/schemas.js';
import { HttpError } from '../http/errors.js';
import type { RouteDoc } from '../http/openapi.js';
import { param, queryOf } from '../http/request.js';
import { parseInput } from '../http/validate.js';
import type { HangarContext } from '../kernel/context.js';
import { streamTaskEvents } from '../tasks/routes.js';
import { A2ATaskRequest, SubmitQuery } from './schemas.js';
import { A2AJsonRpc, RpcCode, a2aAgentCard, workspaceAgentCard } from './jsonrpc.js';

/** Where generic A2A discovery looks for a host's card. */
export const ROOT_CARD_PATH = '/.well-known/agent-card.json';
import { MCP_PATH, handleMcp, mcpHostValidation } from './mcp.js';
import { A2AService } from './service.js';

const agentOf = (req: FastifyRequest): string => param(req, 'agent');
const taskOf = (req: FastifyRequest): string => param(req, 'task_id');

/** Ends the wait of `?wait=true` when the client goes away (the task itself keeps running). */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  // The response's close, not the request's: a request closes as soon as its body has been read.
  const res = reply.raw;
  res.on('close', () => {
    // 499 (client closed request): a 4xx, so the error handler does not log it as a failure.
    if (!res.writableFinished) controller.abort(new HttpError(499, 'client closed the request'));
  });
  return controller.signal;
}

export function a2aRoutes(app: FastifyInstance, ctx: HangarContext, a2a = new A2AService(ctx), rpc = new A2AJsonRpc(ctx)): void {
  // The public A2A protocol binding (JSON-RPC) and its standard card; see jsonrpc.ts.
  app.post('/api/v1/:agent/a2a', { errorHandler: rpcBodyErrors(app, ctx, 200) }, async (req, reply) => {
    await rpc.handle(agentOf(req), req.body, req.principal, reply);
    return reply;
  });
  // The host-root card and endpoint of the workspace (A2A v1.0, one tenant per agent).
  app.get(ROOT_CARD_PATH, async (req) => workspaceAgentCard(ctx, `${req.protocol}://${req.headers.host}`));
  app.post('/a2a', { errorHandler: rpcBodyErrors(app, ctx, 200) }, async (req, reply) => {
    const body = req.body as { id?: unknown; params?: { tenant?: unknown } } | undefined;
    const tenant = body?.params?.tenant;
    const agents = ctx.registry.list('agent').map((e) => e.name);
    const agent = typeof tenant === 'string' && tenant !== '' ? tenant : agents.length === 1 ? agents[0] : undefined;
    if (agent === undefined || !agents.includes(agent)) {
      const id = typeof body?.id === 'string' || typeof body?.id === 'number' ? body.id : null;
      const message = `params.tenant: ${agent === undefined ? 'name the agent' : `no agent "${agent}"`} (one of: ${agents.join(', ') || 'none'})`;
      return reply.code(200).type('application/json; charset=utf-8').send(JSON.stringify({ jsonrpc: '2.0', id, error: { code: RpcCode.invalidParams, message } }));
    }
    await rpc.handle(agent, req.body, req.principal, reply);
    return reply;
  });
  for (const [file, version] of [['agent-card.json', '1.0'], ['agent.json', '0.3']] as const) {
    app.get(`/api/v1/:agent/.well-known/${file}`, async (req) => {
      return a2aAgentCard(ctx, agentOf(req), `${req.protocol}://${req.headers.host}`, version);
    });
  }

  // Model Context Protocol: every agent as a tool (see mcp.ts). The DNS-rebinding guard runs
  // before the body is read.
  app.all(MCP_PATH, { onRequest: mcpHostValidation(ctx), errorHandler: rpcBodyErrors(app, ctx, 400) }, async (req, reply) => {
    await handleMcp(ctx, req, reply);
    return reply;
  });

  app.post('/api/v1/:agent/invoke/async', async (req, reply) => {
    const agent = a2a.agent(agentOf(req));
    const body = parseInput(InvokeRequest, req.body, 'body');
    const task = await a2a.invokeAsync(agent, body, req.principal);
    reply.code(202).header('Location', task.links.self);
    return task;
  });

  app.post('/api/v1/:agent/a2a/tasks', async (req, reply) => {
    const agent = a2a.agent(agentOf(req));
    const body = parseInput(A2ATaskRequest, req.body, 'body');
    const { wait } = parseInput(SubmitQuery, queryOf(req), 'query');
    return a2a.submit(agent, body, req.principal, { wait, signal: wait ? clientGone(reply) : undefined });
  });

  app.get('/api/v1/:agent/a2a/tasks/:task_id', async (req) => {
    return a2a.status(agentOf(req), taskOf(req), req.principal);
  });

  app.get('/api/v1/:agent/a2a/tasks/:task_id/events', async (req, reply) => {
    const { tasks, agent } = a2a.requireTasks(agentOf(req));
    await streamTaskEvents(tasks, req, reply, taskOf(req), a2a.scope(agent, req.principal));
  });

  app.post('/api/v1/:agent/a2a/tasks/:task_id/cancel', async (req) => {
    return a2a.cancel(agentOf(req), taskOf(req), req.principal);
  });

  ctx.openapi.add(...a2aRouteDocs());
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
    const status = err instanceof HttpError ? err.status : (err as { statusCode?: number }).statusCode;
    if (reply.sent || reply.raw.headersSent || (status !== 400 && status !== 413 && status !== 415 && status !== 422)) {
      return app.errorHandler.call(this, err as never, req, reply);
    }
    const detail = err instanceof HttpError && typeof err.detail === 'string' ? err.detail : err.message;
    const parse = status === 422 && detail.startsWith('request body is not valid JSON');
    const error = parse
      ? { code: -32700, message: `Parse error: ${detail}` }
      : { code: RpcCode.invalidRequest, message: status === 415 ? `${detail}; a JSON-RPC request is sent as application/json` : detail };
    const named = (req.params as { agent?: string }).agent;
    const agent = named === undefined ? undefined : (ctx.registry.get('agent', named)?.definition as { name: string } | undefined);
    if (agent) {
      ctx.invocations?.record({ resource: 'agent', name: agent.name, operation: 'a2a:invalid', principal: req.principal ?? 'anonymous', started: Date.now(), ok: false, http_status: httpStatus, error: `${error.code} ${error.message}` });
    }
    reply.code(httpStatus).type('application/json; charset=utf-8').send(JSON.stringify({ jsonrpc: '2.0', id: null, error }));
  };
}

function a2aRouteDocs(): RouteDoc[] {
  const tags = ['a2a'];
  const missing = { description: 'unknown agent, unknown task, or a task of another agent or principal' };
  const disabled = { description: 'the task subsystem is disabled' };
  return [
    {
      method: 'post',
      path: MCP_PATH,
      summary: 'Model Context Protocol (streamable HTTP, stateless): tools/list and tools/call, one tool per agent',
      tags: ['mcp'],
      responses: { '200': { description: 'a JSON-RPC response (JSON or SSE)' }, '403': { description: 'Host header not allowed (DNS rebinding)' } },
    },
    {
      method: 'post',
      path: '/api/v1/{agent_name}/a2a',
      summary:
        'A2A JSON-RPC, v1.0 (SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask) and v0.3 (message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe), told apart by method name',
      tags,
      responses: { '200': { description: 'a JSON-RPC response, or an SSE stream of them for message/stream and tasks/resubscribe' }, '404': { description: 'unknown agent' } },
    },
    {
      method: 'get',
      path: ROOT_CARD_PATH,
      summary: "The workspace's A2A v1.0 agent card: a skill and an interface (tenant = agent name, on /a2a) per agent",
      tags,
      responses: { '200': { description: 'A2A AgentCard' } },
    },
    {
      method: 'post',
      path: '/a2a',
      summary: 'A2A JSON-RPC (v1.0) for every agent of the workspace: params.tenant names the agent (optional with one agent)',
      tags,
      responses: { '200': { description: 'a JSON-RPC response, or an SSE stream of them' } },
    },
    {
      method: 'get',
      path: '/api/v1/{agent_name}/.well-known/agent-card.json',
      summary: 'Standard A2A agent card: v1.0 (supportedInterfaces lists the JSON-RPC binding in v1.0 and v0.3) with the v0.3 fields beside; agent.json is the v0.3 card',
      tags,
      responses: { '200': { description: 'A2A AgentCard' }, '404': { description: 'unknown agent' } },
    },
    {
      method: 'post',
      path: '/api/v1/{agent_name}/invoke/async',
      summary: 'Run the agent as a task on the board; follow /api/v1/tasks/{id}/events',
      tags: ['agents', 'tasks'],
      body: InvokeRequest,
      responses: { '202': { description: 'the task (field id) and links' }, '404': missing, '422': { description: 'invalid body' }, '501': disabled },
    },
    {
      method: 'post',
      path: '/api/v1/{agent_name}/a2a/tasks',
      summary: 'Submit an A2A task (message in protocol or simplified form)',
      tags,
      body: A2ATaskRequest,
      query: SubmitQuery,
      responses: {
        '200': { description: 'task_id, status, result, message' },
        '404': missing,
        '422': { description: 'the message has no readable text; the agent did not run' },
      },
    },
    {
      method: 'get',
      path: '/api/v1/{agent_name}/a2a/tasks/{task_id}',
      summary: 'A2A task status',
      tags,
      responses: { '200': { description: 'task_id, status, message (and result, progress when tracked)' }, '404': missing },
    },
    {
      method: 'get',
      path: '/api/v1/{agent_name}/a2a/tasks/{task_id}/events',
      summary: 'A2A task events: SSE replay after since / Last-Event-ID, then live, [DONE] at the end',
      tags,
      query: z.object({ since: z.coerce.number().int().min(0).optional() }),
      responses: { '200': { description: 'event stream', contentType: 'text/event-stream' }, '404': missing, '501': disabled },
    },
    {
      method: 'post',
      path: '/api/v1/{agent_name}/a2a/tasks/{task_id}/cancel',
      summary: 'Request cooperative cancellation',
      tags,
      responses: { '200': { description: 'task_id, status, canceled, message' }, '404': missing, '501': disabled },
    },
  ];
}
