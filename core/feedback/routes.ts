/**
 * Feedback routes under /api/v1/:agent/feedback (spec: Feedback and optimization). The optimize
 * route is an execution route and lives with the agent routes.
 */
import type { FastifyRequest } from 'fastify';
import { findAgent } from '../agents/kind.js';
import { AgentParams } from '../agents/schemas.js';
import { type AnyRoute, defineRoute } from '../http/route.js';
import type { HangarContext } from '../kernel/context.js';
import { viewerOf } from '../kernel/ownership.js';
import * as S from './schemas.js';

const TAGS = ['feedback'];

export function feedbackRoutes(ctx: HangarContext): AnyRoute[] {
  const { feedback } = ctx.services.get('agents');
  const agentOf = (params: { agent: string }) => findAgent(ctx.registry, params.agent).name;
  const viewer = (req: FastifyRequest) => viewerOf(req, ctx.settings);

  // Each handler finds the agent before it reads the body or query: an unknown agent is a 404
  // whatever else is wrong with the request.
  return [
    defineRoute({
      method: 'POST',
      url: '/api/v1/:agent/feedback',
      summary: 'Record feedback on an answer',
      tags: TAGS,
      schema: { params: AgentParams, body: S.FeedbackRequest, response: { 200: S.FeedbackResponse } },
      handler: async (input) => {
        const agent = agentOf(input.params);
        const record = await feedback.record(agent, input.body, viewer(input.req));
        return { status: 'recorded', feedback_id: record.id };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/feedback/export',
      summary: "All of the caller's feedback as JSON Lines (`data`), oldest first",
      tags: TAGS,
      schema: { params: AgentParams, response: { 200: S.FeedbackExport } },
      handler: async ({ params, req }) => feedback.export(agentOf(params), viewer(req)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/feedback',
      summary: "The caller's feedback records, newest first",
      tags: TAGS,
      schema: { params: AgentParams, querystring: S.FeedbackListQuery, response: { 200: S.FeedbackList } },
      handler: async (input) => {
        const agent = agentOf(input.params);
        const { limit } = input.query;
        const records = await feedback.list(agent, limit, viewer(input.req));
        return { agent, feedback: records, count: records.length };
      },
    }),
  ];
}
