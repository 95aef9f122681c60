/**
 * Thread routes under /api/v1/:agent/threads (spec: Threads). The agent must exist; handlers call
 * `ThreadService` and send.
 *
 * The spec's "storage not configured → 400": a server always has a store, so the 400 is reached
 * only on a server without the agents runtime, which owns the thread storage.
 */
import type { FastifyRequest } from 'fastify';
import { findAgent } from '../agents/kind.js';
import { AgentParams, AgentThreadParams } from '../agents/schemas.js';
import { type AnyRoute, defineRoute, type ResponseSpec } from '../http/route.js';
import type { HangarContext } from '../kernel/context.js';
import { fail } from '../kernel/errors.js';
import { viewerOf } from '../kernel/ownership.js';
import * as S from './schemas.js';
import type { ThreadService } from './service.js';

const TAGS = ['threads'];
const UNKNOWN_THREAD = 'unknown thread, or a thread of another principal';
const found = (schema: ResponseSpec) => ({ 200: schema, 404: UNKNOWN_THREAD });

export function threadRoutes(ctx: HangarContext): AnyRoute[] {
  const runtime = ctx.services.find('agents');
  const threads = (): ThreadService => {
    if (!runtime) throw fail('HANGAR_THREAD_STORAGE_UNCONFIGURED', {});
    return runtime.threads;
  };
  const agentOf = (params: { agent: string }) => findAgent(ctx.registry, params.agent).name;
  const viewer = (req: FastifyRequest) => viewerOf(req, ctx.settings);

  // Each handler finds the agent before it reads the body or query: an unknown agent is a 404
  // whatever else is wrong with the request.
  return [
    defineRoute({
      method: 'POST',
      url: '/api/v1/:agent/threads',
      summary: 'Create a thread',
      tags: TAGS,
      schema: {
        params: AgentParams,
        body: S.CreateThreadRequest,
        response: { 200: { description: 'created', schema: S.Thread }, 409: 'thread id taken' },
      },
      handler: async (input) => {
        const agent = agentOf(input.params);
        return threads().create(agent, input.body, viewer(input.req));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/threads',
      summary: 'List threads (newest first), optionally of one user',
      tags: TAGS,
      schema: { params: AgentParams, querystring: S.ListThreadsQuery, response: { 200: S.ThreadList } },
      handler: async (input) => {
        const agent = agentOf(input.params);
        const { user_id, limit, offset } = input.query;
        const page = await threads().list(agent, user_id, viewer(input.req), { limit, offset });
        return { threads: page.threads, count: page.threads.length, ...(limit === undefined ? {} : { total: page.total }) };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/threads/:thread_id',
      summary: 'Get a thread',
      tags: TAGS,
      schema: { params: AgentThreadParams, response: found(S.Thread) },
      handler: async ({ params, req }) => threads().get(agentOf(params), params.thread_id, viewer(req)),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/api/v1/:agent/threads/:thread_id',
      summary: 'Update title and/or metadata (metadata is replaced)',
      tags: TAGS,
      schema: { params: AgentThreadParams, body: S.UpdateThreadRequest, response: { ...found(S.Thread), 400: 'no fields to update' } },
      handler: async (input) => {
        const { params } = input;
        const agent = agentOf(params);
        return threads().update(agent, params.thread_id, input.body, viewer(input.req));
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v1/:agent/threads/:thread_id',
      summary: 'Delete a thread with its messages, checkpoints, pending approvals and studio runs',
      tags: TAGS,
      schema: { params: AgentThreadParams, response: { ...found(S.DeleteResponse), 409: 'a studio run is executing on the thread' } },
      handler: async ({ params, req }) => {
        await threads().delete(agentOf(params), params.thread_id, viewer(req));
        return { status: 'deleted', thread_id: params.thread_id };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/threads/:thread_id/messages',
      summary: 'Messages, oldest first, paged',
      tags: TAGS,
      schema: { params: AgentThreadParams, querystring: S.MessagesQuery, response: found(S.MessagesResponse) },
      handler: async (input) => {
        const { params } = input;
        const agent = agentOf(params);
        const { limit, offset } = input.query;
        return threads().messages(agent, params.thread_id, limit, offset, viewer(input.req));
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v1/:agent/threads/:thread_id/messages',
      summary: 'Clear the messages (the thread is kept)',
      tags: TAGS,
      schema: { params: AgentThreadParams, response: found(S.ClearResponse) },
      handler: async ({ params, req }) => {
        await threads().clear(agentOf(params), params.thread_id, viewer(req));
        return { status: 'cleared', thread_id: params.thread_id };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/threads/:thread_id/summary',
      summary: 'Summary (model when configured, else extractive; cached until messages change)',
      tags: TAGS,
      schema: { params: AgentThreadParams, response: found(S.SummaryResponse) },
      handler: async ({ params, req }) => threads().summary(agentOf(params), params.thread_id, viewer(req)),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/:agent/threads/:thread_id/fork',
      summary: 'Fork with messages 0..message_index',
      tags: TAGS,
      schema: {
        params: AgentThreadParams,
        body: S.ForkThreadRequest,
        response: { 200: { description: 'created', schema: S.Thread }, 404: 'unknown thread', 422: 'message_index out of range' },
      },
      handler: async (input) => {
        const { params } = input;
        const agent = agentOf(params);
        return threads().fork(agent, params.thread_id, input.body, viewer(input.req));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/:agent/threads/:thread_id/lineage',
      summary: 'Ancestors (root first) and all descendants',
      tags: TAGS,
      schema: { params: AgentThreadParams, response: found(S.LineageResponse) },
      handler: async ({ params, req }) => threads().lineage(agentOf(params), params.thread_id, viewer(req)),
    }),
  ];
}
