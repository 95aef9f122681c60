/**
 * Per-agent execution routes under /api/v1/{agent}: invoke, invoke/stream and its replay, chat,
 * optimize/invoke, and the human-in-the-loop routes (pending, approve, reject). Handlers parse,
 * call `AgentService` and send; the 202 HITL suspension and every error travel as `HttpError`s to
 * the one error handler.
 */
import type { FastifyInstance, FastifyRequest, FastifyReply } from 'fastify';
import type { HangarContext } from '../kernel/context.js';
import type { RouteDoc } from '../http/openapi.js';
import { resumePoint, serveSse } from '../http/sse.js';
import { param, queryOf } from '../http/request.js';
import { parseInput } from '../http/validate.js';
import { viewerOf } from '../kernel/ownership.js';
import { OptimizeInvokeRequest, OptimizeInvokeResponse } from '../feedback/schemas.js';
import { listAgents } from '../platform/service.js';
import { runtimeOf } from './runtime.js';
import {
  ApprovalList,
  ApprovalListQuery,
  ApproveRequest,
  ChatRequest,
  ChatResponse,
  InvokeRequest,
  InvokeResponse,
  PendingList,
  RejectRequest,
  RejectResponse,
  SuspensionBody,
} from './schemas.js';

const agentOf = (req: FastifyRequest) => param(req, 'agent');

/**
 * Aborted when the client goes away before its answer is sent, so a plain /invoke stops working
 * (and stops spending model tokens) for nobody. Streams are different: a stream keeps running for
 * replay, and /chat runs to the end so the conversation it persists stays whole.
 */
function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  const gone = () => controller.abort(new Error('the client closed the connection'));
  // A client can leave while its body is still being read, before this listener exists.
  if (reply.raw.destroyed || reply.request.raw.socket.destroyed) gone();
  else reply.raw.on('close', () => reply.raw.writableFinished || gone());
  return controller.signal;
}
const threadOf = (req: FastifyRequest) => param(req, 'thread_id');

export function agentRoutes(app: FastifyInstance, ctx: HangarContext): void {
  const { service } = runtimeOf(ctx);
  // Records (threads, checkpoints, approvals) are owned per `viewerOf`; replayable streams stay
  // bound to the exact principal, as before.
  const viewer = (req: FastifyRequest) => viewerOf(req, ctx.settings);

  app.post('/api/v1/:agent/invoke', async (req, reply) => {
    const body = parseInput(InvokeRequest, req.body, 'body');
    return service.invoke(agentOf(req), body, clientGone(reply), undefined, viewer(req));
  });

  app.post('/api/v1/:agent/invoke/stream', async (req, reply) => {
    const body = parseInput(InvokeRequest, req.body, 'body');
    const { id, log } = await service.startStream(agentOf(req), body, req.principal, viewer(req));
    await serveSse(reply, log, { headers: { 'X-Agent': agentOf(req), 'X-Stream-Id': id } });
  });

  app.get('/api/v1/:agent/invoke/stream/:stream_id', async (req, reply) => {
    const since = resumePoint(req, queryOf(req));
    const log = service.replay(agentOf(req), param(req, 'stream_id'), req.principal);
    await serveSse(reply, log, { since, headers: { 'X-Agent': agentOf(req), 'X-Stream-Id': param(req, 'stream_id') } });
  });

  app.post('/api/v1/:agent/chat', async (req) => {
    const body = parseInput(ChatRequest, req.body, 'body');
    return service.chat(agentOf(req), body, undefined, viewer(req));
  });

  app.post('/api/v1/:agent/optimize/invoke', async (req) => {
    const body = parseInput(OptimizeInvokeRequest, req.body, 'body');
    return service.optimize(agentOf(req), body, viewer(req));
  });

  app.get('/api/v1/:agent/threads/:thread_id/pending', async (req) => {
    return service.pending(agentOf(req), threadOf(req), viewer(req));
  });

  app.post('/api/v1/:agent/threads/:thread_id/approve', async (req) => {
    const body = parseInput(ApproveRequest, req.body, 'body');
    return service.approve(agentOf(req), threadOf(req), body, viewer(req));
  });

  app.post('/api/v1/:agent/threads/:thread_id/reject', async (req) => {
    const body = parseInput(RejectRequest, req.body, 'body');
    return service.reject(agentOf(req), threadOf(req), body, viewer(req));
  });

  // Every pending approval the caller may see, whichever route started its run.
  app.get('/api/v1/approvals', async (req) => {
    const query = parseInput(ApprovalListQuery, queryOf(req), 'query');
    return service.listApprovals(viewer(req), query);
  });

  app.get('/api/v1/:agent/approvals', async (req) => {
    const query = parseInput(ApprovalListQuery, queryOf(req), 'query');
    return service.listApprovals(viewer(req), { ...query, agent: agentOf(req) });
  });

  ctx.openapi.add({
    method: 'get',
    path: '/api/v1/approvals',
    summary: 'Pending human approvals of every agent the caller may see, newest first, with links to approve and reject',
    description: 'Runs started by any route (invoke, chat, streams, /invoke/async, A2A, MCP) are listed; `task_id` names the board task waiting in input-required.',
    tags: ['agents'],
    query: ApprovalListQuery,
    responses: { 200: { description: 'OK', schema: ApprovalList } },
  });
}

/** OpenAPI docs of the routes above, for every registered agent. */
export function registerAgentDocs(ctx: HangarContext): void {
  ctx.openapi.addProvider(() =>
    listAgents(ctx).flatMap((agent): RouteDoc[] => {
      const base = `/api/v1/${agent.name}`;
      const tags = [`agent:${agent.name}`];
      const suspendedDoc = { description: 'suspended at a human-approval step; the X-Thread-Id header names the thread to approve or reject on', schema: SuspensionBody };
      const deadlineDoc = { description: "the run passed its deadline (`timeout_ms`, the agent's, or agents.timeoutMs): `agent 'x' did not finish within N ms`" };
      return [
        {
          method: 'post',
          path: `${base}/invoke`,
          summary: `Invoke ${agent.name}`,
          description: agent.description,
          tags,
          body: InvokeRequest,
          responses: { 200: { description: 'OK', schema: InvokeResponse }, 202: suspendedDoc, 504: deadlineDoc },
        },
        {
          method: 'post',
          path: `${base}/invoke/stream`,
          summary: `Invoke ${agent.name} as an SSE stream`,
          description:
            'Frames carry `response` (so far) and `steps_taken`; the last data line is [DONE]. X-Stream-Id names the stream for replay. ' +
            'Events: `start`, `token` (`delta`), `step` (`node`), `tool_start` (`name`, `call_id`, `arguments`, `node`), ' +
            '`tool_end` (the same plus `result` or `error`, and `duration_ms`), then `complete` (the invoke response; `metadata.usage` holds the token counts of a run that called a model), `suspended` or `error`. ' +
            'Finished streams are retained for replay per `streams.retain` (count) and `streams.ttlSeconds` (age).',
          tags,
          body: InvokeRequest,
          responses: { 200: { description: 'SSE stream', contentType: 'text/event-stream' } },
        },
        {
          method: 'get',
          path: `${base}/invoke/stream/{stream_id}`,
          summary: 'Replay a retained invoke stream after `since` / Last-Event-ID (never re-runs the agent)',
          tags,
          responses: { 200: { description: 'SSE stream', contentType: 'text/event-stream' }, 404: { description: 'not retained, or another agent or caller' } },
        },
        {
          method: 'post',
          path: `${base}/chat`,
          summary: `Chat with ${agent.name} over a stored thread`,
          tags,
          body: ChatRequest,
          responses: { 200: { description: 'OK', schema: ChatResponse }, 202: suspendedDoc, 504: deadlineDoc },
        },
        {
          method: 'post',
          path: `${base}/optimize/invoke`,
          summary: 'Invoke with retrieval context, tool calls, steps and reasoning (for prompt optimization)',
          tags,
          body: OptimizeInvokeRequest,
          responses: { 200: { description: 'OK', schema: OptimizeInvokeResponse } },
        },
        {
          method: 'get',
          path: `${base}/threads/{thread_id}/pending`,
          summary: 'Pending human approvals of a thread',
          tags,
          responses: { 200: { description: 'OK', schema: PendingList } },
        },
        {
          method: 'get',
          path: `${base}/approvals`,
          summary: `Pending human approvals of ${agent.name} across threads, newest first`,
          tags,
          query: ApprovalListQuery,
          responses: { 200: { description: 'OK', schema: ApprovalList } },
        },
        {
          method: 'post',
          path: `${base}/threads/{thread_id}/approve`,
          summary: 'Approve a suspended run and resume it',
          tags,
          body: ApproveRequest,
          responses: { 200: { description: 'OK', schema: InvokeResponse }, 202: suspendedDoc, 404: { description: 'unknown approval id, or one of another principal' } },
        },
        {
          method: 'post',
          path: `${base}/threads/{thread_id}/reject`,
          summary: 'Reject a suspended run (it is discarded)',
          tags,
          body: RejectRequest,
          responses: { 200: { description: 'OK', schema: RejectResponse }, 404: { description: 'unknown approval id, or one of another principal' } },
        },
      ];
    }),
  );
}
