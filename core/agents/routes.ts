/**
 * Per-agent execution routes under /api/v1/{agent}: invoke, invoke/stream and its replay, chat,
 * optimize/invoke, and the human-in-the-loop routes (pending, approve, reject). Handlers parse,
 * call `AgentService` and send; the 202 HITL suspension and every error travel as `HttpError`s to
 * the one error handler.
 */
import { Router, type Request, type Response } from 'express';
import type { HangarContext } from '../kernel/context.js';
import type { RouteDoc } from '../http/openapi.js';
import { resumePoint, serveSse } from '../http/sse.js';
import { parseInput } from '../http/validate.js';
import { OptimizeInvokeRequest, OptimizeInvokeResponse } from '../feedback/schemas.js';
import { listAgents } from '../platform/service.js';
import { runtimeOf } from './runtime.js';
import {
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

const agentOf = (req: Request) => String(req.params.agent);

/**
 * Aborted when the client goes away before its answer is sent, so a plain /invoke stops working
 * (and stops spending model tokens) for nobody. Streams are different: a stream keeps running for
 * replay, and /chat runs to the end so the conversation it persists stays whole.
 */
function clientGone(res: Response): AbortSignal {
  const controller = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) controller.abort(new Error('the client closed the connection'));
  });
  return controller.signal;
}
const threadOf = (req: Request) => String(req.params.thread_id);

export function agentRoutes(ctx: HangarContext): Router {
  const { service } = runtimeOf(ctx);
  const router = Router();

  router.post('/api/v1/:agent/invoke', async (req, res) => {
    const body = parseInput(InvokeRequest, req.body, 'body');
    res.json(await service.invoke(agentOf(req), body, clientGone(res)));
  });

  router.post('/api/v1/:agent/invoke/stream', async (req, res) => {
    const body = parseInput(InvokeRequest, req.body, 'body');
    const { id, log } = service.startStream(agentOf(req), body, req.principal);
    await serveSse(req, res, log, { headers: { 'X-Agent': agentOf(req), 'X-Stream-Id': id } });
  });

  router.get('/api/v1/:agent/invoke/stream/:stream_id', async (req, res) => {
    const since = resumePoint(req, req.query as Record<string, unknown>);
    const log = service.replay(agentOf(req), String(req.params.stream_id), req.principal);
    await serveSse(req, res, log, { since, headers: { 'X-Agent': agentOf(req), 'X-Stream-Id': String(req.params.stream_id) } });
  });

  router.post('/api/v1/:agent/chat', async (req, res) => {
    const body = parseInput(ChatRequest, req.body, 'body');
    res.json(await service.chat(agentOf(req), body));
  });

  router.post('/api/v1/:agent/optimize/invoke', async (req, res) => {
    const body = parseInput(OptimizeInvokeRequest, req.body, 'body');
    res.json(await service.optimize(agentOf(req), body));
  });

  router.get('/api/v1/:agent/threads/:thread_id/pending', async (req, res) => {
    res.json(await service.pending(agentOf(req), threadOf(req)));
  });

  router.post('/api/v1/:agent/threads/:thread_id/approve', async (req, res) => {
    const body = parseInput(ApproveRequest, req.body, 'body');
    res.json(await service.approve(agentOf(req), threadOf(req), body));
  });

  router.post('/api/v1/:agent/threads/:thread_id/reject', async (req, res) => {
    const body = parseInput(RejectRequest, req.body, 'body');
    res.json(await service.reject(agentOf(req), threadOf(req), body));
  });

  return router;
}

/** OpenAPI docs of the routes above, for every registered agent. */
export function registerAgentDocs(ctx: HangarContext): void {
  ctx.openapi.addProvider(() =>
    listAgents(ctx).flatMap((agent): RouteDoc[] => {
      const base = `/api/v1/${agent.name}`;
      const tags = [`agent:${agent.name}`];
      const suspendedDoc = { description: 'suspended at a human-approval step', schema: SuspensionBody };
      return [
        {
          method: 'post',
          path: `${base}/invoke`,
          summary: `Invoke ${agent.name}`,
          description: agent.description,
          tags,
          body: InvokeRequest,
          responses: { 200: { description: 'OK', schema: InvokeResponse }, 202: suspendedDoc },
        },
        {
          method: 'post',
          path: `${base}/invoke/stream`,
          summary: `Invoke ${agent.name} as an SSE stream`,
          description:
            'Frames carry `response` (so far) and `steps_taken`; the last data line is [DONE]. X-Stream-Id names the stream for replay. ' +
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
          responses: { 200: { description: 'OK', schema: ChatResponse }, 202: suspendedDoc },
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
          method: 'post',
          path: `${base}/threads/{thread_id}/approve`,
          summary: 'Approve a suspended run and resume it',
          tags,
          body: ApproveRequest,
          responses: { 200: { description: 'OK', schema: InvokeResponse }, 202: suspendedDoc, 404: { description: 'unknown approval id' } },
        },
        {
          method: 'post',
          path: `${base}/threads/{thread_id}/reject`,
          summary: 'Reject a suspended run (it is discarded)',
          tags,
          body: RejectRequest,
          responses: { 200: { description: 'OK', schema: RejectResponse }, 404: { description: 'unknown approval id' } },
        },
      ];
    }),
  );
}
