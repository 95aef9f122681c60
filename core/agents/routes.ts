/**
 * Per-agent execution routes under /api/v1/:agent: invoke, invoke/stream and its replay, chat,
 * optimize/invoke, and the human-in-the-loop routes (pending, approve, reject), plus the approvals
 * of every agent. Handlers call `AgentService` and send; the 202 HITL suspension and every error
 * travel as `HangarError`s to the one error handler.
 *
 * Each route is written once for every agent (`{agent}` in /openapi.json, its values the agents'
 * names). The routes that run an agent say so in `config.resource`, which the invocation log and
 * the control plane read.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { OptimizeInvokeRequest, OptimizeInvokeResponse } from '../feedback/schemas.js';
import { type AnyRoute, defineRoute } from '../http/route.js';
import { resumePoint, serveSse } from '../http/sse.js';
import type { HangarContext } from '../kernel/context.js';
import { viewerOf } from '../kernel/ownership.js';
import {
  AgentParams,
  AgentStreamParams,
  AgentThreadParams,
  ApprovalList,
  ApprovalListQuery,
  ApproveRequest,
  ChatRequest,
  ChatResponse,
  InvokeRequest,
  InvokeResponse,
  PendingList,
  RejectOrContinued,
  RejectRequest,
  ReplayQuery,
  SuspensionBody,
} from './schemas.js';

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

const TAGS = ['agents'];
const SUSPENDED = {
  description: 'suspended at a human-approval step; the X-Thread-Id header names the thread to approve or reject on',
  schema: SuspensionBody,
};
const PAST_DEADLINE = {
  description: "the run passed its deadline (`timeout_ms`, the agent's, or agents.timeoutMs): `agent 'x' did not finish within N ms`",
};
const SSE = { description: 'SSE stream', contentType: 'text/event-stream' };
const UNKNOWN_APPROVAL = 'unknown approval id, or one of another principal';

/** A call that runs (or resumes) the agent: logged, drained and disabled by the control plane. */
const runs = (operation: string) => ({ resource: { kind: 'agent' as const, param: 'agent', operation, invocation: true } });

export function agentRoutes(ctx: HangarContext): AnyRoute[] {
  const { service } = ctx.services.get('agents');
  // Records (threads, checkpoints, approvals) are owned per `viewerOf`; replayable streams stay
  // bound to the exact principal, as before.
  const viewer = (req: FastifyRequest) => viewerOf(req, ctx.settings);

  return [
    defineRoute({
      method: 'POST',
      url: '/api/v1/:agent/invoke',
      summary: 'Invoke an agent',
      tags: TAGS,
      schema: { params: AgentParams, body: InvokeRequest, response: { 200: InvokeResponse, 202: SUSPENDED, 504: PAST_DEADLINE } },
      config: runs('invoke'),
      handler: async ({ body, params, req, reply }) => service.invoke(params.agent, body, clientGone(reply), undefined, viewer(req)),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/:agent/invoke/stream',
      summary: 'Invoke an agent as an SSE stream',
      description:
        'Frames carry `response` (so far) and `steps_taken`; the last data line is [DONE]. X-Stream-Id names the stream for replay. ' +
        'Events: `start`, `token` (`delta`), `step` (`node`), `tool_start` (`name`, `call_id`, `arguments`, `node`), ' +
        '`tool_end` (the same plus `result` or `error`, and `duration_ms`), then `complete` (the invoke response; `metadata.usage` holds the token counts of a run that called a model), `suspended` or `error`. ' +
        'Finished streams are retained for replay per `streams.retain` (count) and `streams.ttlSeconds` (age). ' +
        'In team mode (`storage.url` on PostgreSQL) any instance replays and follows the stream.',
      tags: TAGS,
      schema: { params: AgentParams, body: InvokeRequest, response: { 200: SSE } },
      config: runs('stream'),
      handler: async ({ body, params, req, reply }) => {
        const { id, log } = await service.startStream(params.agent, body, req.principal, viewer(req));
        await serveSse(reply, log, { headers: { 'X-Agent': params.agent, 'X-Stream-Id': id } });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/invoke/stream/:stream_id',
      summary: 'Replay a retained invoke stream after `since` / Last-Event-ID (never re-runs the agent)',
      tags: TAGS,
      // `since` is read with the Last-Event-ID header by `resumePoint`; the schema documents it.
      schema: {
        params: AgentStreamParams,
        querystring: ReplayQuery,
        response: { 200: SSE, 404: 'not retained, or another agent or caller' },
      },
      handler: async ({ params, req, reply }) => {
        const since = resumePoint(req, req.query as Record<string, unknown>);
        const log = await service.replay(params.agent, params.stream_id, req.principal);
        await serveSse(reply, log, { since, headers: { 'X-Agent': params.agent, 'X-Stream-Id': params.stream_id } });
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/:agent/chat',
      summary: 'Chat with an agent over a stored thread',
      tags: TAGS,
      schema: { params: AgentParams, body: ChatRequest, response: { 200: ChatResponse, 202: SUSPENDED, 504: PAST_DEADLINE } },
      config: runs('chat'),
      handler: async ({ body, params, req }) => service.chat(params.agent, body, undefined, viewer(req)),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/:agent/optimize/invoke',
      summary: 'Invoke with retrieval context, tool calls, steps and reasoning (for prompt optimization)',
      tags: TAGS,
      schema: { params: AgentParams, body: OptimizeInvokeRequest, response: { 200: OptimizeInvokeResponse } },
      config: runs('optimize'),
      handler: async ({ body, params, req }) => service.optimize(params.agent, body, viewer(req)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/threads/:thread_id/pending',
      summary: 'Pending human approvals of a thread',
      tags: TAGS,
      schema: { params: AgentThreadParams, response: { 200: PendingList } },
      handler: async ({ params, req }) => service.pending(params.agent, params.thread_id, viewer(req)),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/:agent/threads/:thread_id/approve',
      summary: 'Approve a suspended run and resume it',
      tags: TAGS,
      schema: { params: AgentThreadParams, body: ApproveRequest, response: { 200: InvokeResponse, 202: SUSPENDED, 404: UNKNOWN_APPROVAL } },
      // Approving a suspended run resumes the agent's work, so it counts as a call too.
      config: runs('approve'),
      handler: async ({ body, params, req }) => service.approve(params.agent, params.thread_id, body, viewer(req)),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/:agent/threads/:thread_id/reject',
      summary: 'Reject a suspended run (it is discarded; a rejected tool call is told to the model and the run goes on)',
      tags: TAGS,
      schema: {
        params: AgentThreadParams,
        body: RejectRequest,
        response: { 200: RejectOrContinued, 202: SUSPENDED, 404: UNKNOWN_APPROVAL },
      },
      config: runs('reject'),
      handler: async ({ body, params, req }) => service.reject(params.agent, params.thread_id, body, viewer(req)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/approvals',
      summary: 'Pending human approvals of every agent the caller may see, newest first, with links to approve and reject',
      description:
        'Runs started by any route (invoke, chat, streams, /invoke/async, A2A, MCP) are listed; `task_id` names the board task waiting in input-required.',
      tags: TAGS,
      schema: { querystring: ApprovalListQuery, response: { 200: ApprovalList } },
      handler: async ({ query, req }) => service.listApprovals(viewer(req), query),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/approvals',
      summary: 'Pending human approvals of an agent across threads, newest first',
      tags: TAGS,
      schema: { params: AgentParams, querystring: ApprovalListQuery, response: { 200: ApprovalList } },
      handler: async ({ query, params, req }) => service.listApprovals(viewer(req), { ...query, agent: params.agent }),
    }),
  ];
}
