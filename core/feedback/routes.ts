/**
 * Feedback routes under /api/v1/{agent}/feedback (spec: Feedback and optimization). The
 * optimize route is an execution route and lives with the agent routes.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { HangarContext } from '../kernel/context.js';
import type { RouteDoc } from '../http/openapi.js';
import { param } from '../http/request.js';
import { parseInput } from '../http/validate.js';
import { viewerOf } from '../kernel/ownership.js';
import { findAgent } from '../agents/kind.js';
import { runtimeOf } from '../agents/runtime.js';
import { listAgents } from '../platform/service.js';
import * as S from './schemas.js';

export function feedbackRoutes(app: FastifyInstance, ctx: HangarContext): void {
  const { feedback } = runtimeOf(ctx);
  const agentOf = (req: FastifyRequest) => findAgent(ctx.registry, param(req, 'agent')).name;

  app.post('/api/v1/:agent/feedback', async (req) => {
    const agent = agentOf(req);
    const record = await feedback.record(agent, parseInput(S.FeedbackRequest, req.body, 'body'), viewerOf(req, ctx.settings));
    return { status: 'recorded', feedback_id: record.id };
  });
  app.get('/api/v1/:agent/feedback/export', async (req) => {
    return feedback.export(agentOf(req), viewerOf(req, ctx.settings));
  });
  app.get('/api/v1/:agent/feedback', async (req) => {
    const agent = agentOf(req);
    const { limit } = parseInput(S.FeedbackListQuery, req.query, 'query');
    const records = await feedback.list(agent, limit, viewerOf(req, ctx.settings));
    return { agent, feedback: records, count: records.length };
  });
}

export function registerFeedbackDocs(ctx: HangarContext): void {
  ctx.openapi.addProvider(() =>
    listAgents(ctx).flatMap((agent): RouteDoc[] => {
      const base = `/api/v1/${agent.name}/feedback`;
      const tags = [`agent:${agent.name}`, 'feedback'];
      return [
        { method: 'post', path: base, summary: 'Record feedback on an answer', tags, body: S.FeedbackRequest, responses: { 200: { description: 'OK', schema: S.FeedbackResponse } } },
        { method: 'get', path: base, summary: "The caller's feedback records, newest first", tags, query: S.FeedbackListQuery, responses: { 200: { description: 'OK', schema: S.FeedbackList } } },
        { method: 'get', path: `${base}/export`, summary: "All of the caller's feedback as JSON Lines (`data`), oldest first", tags, responses: { 200: { description: 'OK', schema: S.FeedbackExport } } },
      ];
    }),
  );
}
