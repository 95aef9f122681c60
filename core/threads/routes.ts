/**
 * Thread routes under /api/v1/{agent}/threads (spec: Threads). The agent must exist; handlers
 * parse, call `ThreadService` and send.
 *
 * The spec's "storage not configured → 400": a server always has a store, so the 400 is reached
 * only when the agents runtime was built without thread storage (`threads` absent).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { HangarContext } from '../kernel/context.js';
import { badRequest } from '../http/errors.js';
import type { RouteDoc } from '../http/openapi.js';
import { param } from '../http/request.js';
import { parseInput } from '../http/validate.js';
import { viewerOf } from '../kernel/ownership.js';
import { findAgent } from '../agents/kind.js';
import { runtimeOf } from '../agents/runtime.js';
import { listAgents } from '../platform/service.js';
import * as S from './schemas.js';
import type { ThreadService } from './service.js';

export function threadRoutes(app: FastifyInstance, ctx: HangarContext): void {
  const threads = (): ThreadService => {
    const service = runtimeOf(ctx).threads as ThreadService | undefined;
    if (!service) throw badRequest('thread storage is not configured');
    return service;
  };
  const agentOf = (req: FastifyRequest) => findAgent(ctx.registry, param(req, 'agent')).name;
  const idOf = (req: FastifyRequest) => param(req, 'thread_id');
  const viewer = (req: FastifyRequest) => viewerOf(req, ctx.settings);

  app.post('/api/v1/:agent/threads', async (req) => {
    const agent = agentOf(req);
    return threads().create(agent, parseInput(S.CreateThreadRequest, req.body, 'body'), viewer(req));
  });
  app.get('/api/v1/:agent/threads', async (req) => {
    const agent = agentOf(req);
    const query = parseInput(S.ListThreadsQuery, req.query, 'query');
    const list = await threads().list(agent, query.user_id, viewer(req));
    return { threads: list, count: list.length };
  });
  app.get('/api/v1/:agent/threads/:thread_id', async (req) => {
    return threads().get(agentOf(req), idOf(req), viewer(req));
  });
  app.patch('/api/v1/:agent/threads/:thread_id', async (req) => {
    const agent = agentOf(req);
    return threads().update(agent, idOf(req), parseInput(S.UpdateThreadRequest, req.body, 'body'), viewer(req));
  });
  app.delete('/api/v1/:agent/threads/:thread_id', async (req) => {
    await threads().delete(agentOf(req), idOf(req), viewer(req));
    return { status: 'deleted', thread_id: idOf(req) };
  });
  app.get('/api/v1/:agent/threads/:thread_id/messages', async (req) => {
    const agent = agentOf(req);
    const { limit, offset } = parseInput(S.MessagesQuery, req.query, 'query');
    return threads().messages(agent, idOf(req), limit, offset, viewer(req));
  });
  app.delete('/api/v1/:agent/threads/:thread_id/messages', async (req) => {
    await threads().clear(agentOf(req), idOf(req), viewer(req));
    return { status: 'cleared', thread_id: idOf(req) };
  });
  app.get('/api/v1/:agent/threads/:thread_id/summary', async (req) => {
    return threads().summary(agentOf(req), idOf(req), viewer(req));
  });
  app.post('/api/v1/:agent/threads/:thread_id/fork', async (req) => {
    const agent = agentOf(req);
    const fork = await threads().fork(agent, idOf(req), parseInput(S.ForkThreadRequest, req.body, 'body'), viewer(req));
    return fork;
  });
  app.get('/api/v1/:agent/threads/:thread_id/lineage', async (req) => {
    return threads().lineage(agentOf(req), idOf(req), viewer(req));
  });
}

export function registerThreadDocs(ctx: HangarContext): void {
  ctx.openapi.addProvider(() =>
    listAgents(ctx).flatMap((agent): RouteDoc[] => {
      const base = `/api/v1/${agent.name}/threads`;
      const tags = [`agent:${agent.name}`, 'threads'];
      const ok = (schema: RouteDoc['body']) => ({ 200: { description: 'OK', schema }, 404: { description: 'unknown thread, or a thread of another principal' } });
      return [
        { method: 'post', path: base, summary: 'Create a thread', tags, body: S.CreateThreadRequest, responses: { 200: { description: 'created', schema: S.Thread }, 409: { description: 'thread id taken' } } },
        { method: 'get', path: base, summary: 'List threads (newest first), optionally of one user', tags, query: S.ListThreadsQuery, responses: { 200: { description: 'OK', schema: S.ThreadList } } },
        { method: 'get', path: `${base}/{thread_id}`, summary: 'Get a thread', tags, responses: ok(S.Thread) },
        { method: 'patch', path: `${base}/{thread_id}`, summary: 'Update title and/or metadata (metadata is replaced)', tags, body: S.UpdateThreadRequest, responses: { ...ok(S.Thread), 400: { description: 'no fields to update' } } },
        {
          method: 'delete',
          path: `${base}/{thread_id}`,
          summary: 'Delete a thread with its messages, checkpoints, pending approvals and studio runs',
          tags,
          responses: { ...ok(S.DeleteResponse), 409: { description: 'a studio run is executing on the thread' } },
        },
        { method: 'get', path: `${base}/{thread_id}/messages`, summary: 'Messages, oldest first, paged', tags, query: S.MessagesQuery, responses: ok(S.MessagesResponse) },
        { method: 'delete', path: `${base}/{thread_id}/messages`, summary: 'Clear the messages (the thread is kept)', tags, responses: ok(S.ClearResponse) },
        { method: 'get', path: `${base}/{thread_id}/summary`, summary: 'Summary (model when configured, else extractive; cached until messages change)', tags, responses: ok(S.SummaryResponse) },
        { method: 'post', path: `${base}/{thread_id}/fork`, summary: 'Fork with messages 0..message_index', tags, body: S.ForkThreadRequest, responses: { 200: { description: 'created', schema: S.Thread }, 404: { description: 'unknown thread' }, 422: { description: 'message_index out of range' } } },
        { method: 'get', path: `${base}/{thread_id}/lineage`, summary: 'Ancestors (root first) and all descendants', tags, responses: ok(S.LineageResponse) },
      ];
    }),
  );
}
