/**
 * Feedback routes under /api/v1/{agent}/feedback (spec: Feedback and optimization). The
 * optimize route is an execution route and lives with the agent routes.
 */
import { Router, type Request } from 'express';
import type { HangarContext } from '../kernel/context.js';
import type { RouteDoc } from '../http/openapi.js';
import { parseInput } from '../http/validate.js';
import { findAgent } from '../agents/kind.js';
import { runtimeOf } from '../agents/runtime.js';
import { listAgents } from '../platform/service.js';
import * as S from './schemas.js';

export function feedbackRoutes(ctx: HangarContext): Router {
  const { feedback } = runtimeOf(ctx);
  const router = Router();
  const agentOf = (req: Request) => findAgent(ctx.registry, String(req.params.agent)).name;

  router.post('/api/v1/:agent/feedback', async (req, res) => {
    const agent = agentOf(req);
    const record = await feedback.record(agent, parseInput(S.FeedbackRequest, req.body, 'body'));
    res.json({ status: 'recorded', feedback_id: record.id });
  });
  router.get('/api/v1/:agent/feedback/export', async (req, res) => {
    res.json(await feedback.export(agentOf(req)));
  });
  router.get('/api/v1/:agent/feedback', async (req, res) => {
    const agent = agentOf(req);
    const { limit } = parseInput(S.FeedbackListQuery, req.query, 'query');
    const records = await feedback.list(agent, limit);
    res.json({ agent, feedback: records, count: records.length });
  });
  return router;
}

export function registerFeedbackDocs(ctx: HangarContext): void {
  ctx.openapi.addProvider(() =>
    listAgents(ctx).flatMap((agent): RouteDoc[] => {
      const base = `/api/v1/${agent.name}/feedback`;
      const tags = [`agent:${agent.name}`, 'feedback'];
      return [
        { method: 'post', path: base, summary: 'Record feedback on an answer', tags, body: S.FeedbackRequest, responses: { 200: { description: 'OK', schema: S.FeedbackResponse } } },
        { method: 'get', path: base, summary: 'Feedback records, newest first', tags, query: S.FeedbackListQuery, responses: { 200: { description: 'OK', schema: S.FeedbackList } } },
        { method: 'get', path: `${base}/export`, summary: 'All feedback as JSON Lines (`data`), oldest first', tags, responses: { 200: { description: 'OK', schema: S.FeedbackExport } } },
      ];
    }),
  );
}
