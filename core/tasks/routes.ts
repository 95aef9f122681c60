/**
 * The shared task board at /api/v1/tasks: submit, list, get, follow events (SSE), collect the
 * result, cancel, delete. Cross-agent: every kind of task shows here, scoped to the caller's
 * principal. Logic lives in `service.ts`; these handlers parse, call and shape.
 */
import type { FastifyInstance, FastifyRequest, FastifyReply } from 'fastify';
import { z } from 'zod';
import type { HangarContext } from '../kernel/context.js';
import { LOCAL_PRINCIPAL, viewerOf } from '../kernel/ownership.js';
import type { RouteDoc } from '../http/openapi.js';
import { param, queryOf } from '../http/request.js';
import { resumePoint, serveSse } from '../http/sse.js';
import { parseInput } from '../http/validate.js';
import { ListTasksQuery, SubmitTaskRequest } from './schemas.js';
import { tasksDisabled, type TaskService } from './service.js';

/** The service of a running server, or 501 when the subsystem is switched off. */
export function requireTasks(ctx: HangarContext): TaskService {
  const tasks = ctx.tasks;
  if (!tasks || !tasks.enabled) throw tasksDisabled();
  return tasks;
}

/** Parameters every task route shares. */
const idOf = (req: FastifyRequest): string => param(req, 'id');

/**
 * Serve a task's events as SSE: replay after `since` / Last-Event-ID, then live, `[DONE]` at the
 * end; the `truncated` marker is followed by the current task. Shared with the A2A routes.
 */
export async function streamTaskEvents(tasks: TaskService, req: FastifyRequest, reply: FastifyReply, id: string, scope: Parameters<TaskService['get']>[1]): Promise<void> {
  const since = resumePoint(req, queryOf(req));
  const source = await tasks.events(id, scope);
  await serveSse(reply, source, {
    since,
    toWire: tasks.wire,
    snapshot: () => tasks.get(id, scope),
    headers: { 'X-Task-Id': id },
  });
}

export function taskRoutes(app: FastifyInstance, ctx: HangarContext): void {
  /**
   * Whose tasks a request sees: its own on a server with tokens; every task without tokens, where
   * every caller — curl, the desktop window, a login-link tab — is the one local user (the rule of
   * core/kernel/ownership.ts). A task still records who submitted it.
   */
  const scope = (req: FastifyRequest) => ({ principal: viewerOf(req, ctx.settings) === LOCAL_PRINCIPAL ? undefined : req.principal });

  app.post('/api/v1/tasks', async (req, reply) => {
    const tasks = requireTasks(ctx);
    const body = parseInput(SubmitTaskRequest, req.body, 'body');
    const task = await tasks.submit({ ...body, principal: req.principal });
    reply.code(202).header('Location', `/api/v1/tasks/${task.id}`);
    return task;
  });

  app.get('/api/v1/tasks', async (req) => {
    const tasks = requireTasks(ctx);
    const query = parseInput(ListTasksQuery, req.query, 'query');
    return tasks.list(query, scope(req));
  });

  app.get('/api/v1/tasks/:id', async (req) => {
    return requireTasks(ctx).get(idOf(req), scope(req));
  });

  app.get('/api/v1/tasks/:id/events', async (req, reply) => {
    await streamTaskEvents(requireTasks(ctx), req, reply, idOf(req), scope(req));
  });

  app.get('/api/v1/tasks/:id/result', async (req) => {
    return requireTasks(ctx).result(idOf(req), scope(req));
  });

  app.post('/api/v1/tasks/:id/cancel', async (req) => {
    return requireTasks(ctx).cancel(idOf(req), scope(req));
  });

  app.delete('/api/v1/tasks/:id', async (req) => {
    const id = idOf(req);
    await requireTasks(ctx).delete(id, scope(req));
    return { status: 'deleted', id };
  });

  ctx.openapi.add(...taskRouteDocs());
}

const TaskDoc = z.object({
  id: z.string(),
  kind: z.string(),
  target: z.string(),
  status: z.enum(['submitted', 'working', 'completed', 'failed', 'canceled']),
  progress: z.object({ percent: z.number(), message: z.string() }),
  result: z.unknown(),
  error: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
  last_sequence: z.number().int(),
});

function taskRouteDocs(): RouteDoc[] {
  const tags = ['tasks'];
  const disabled = { description: 'the task subsystem is disabled (tasks.enabled = false)' };
  const missing = { description: 'unknown task, or a task of another principal' };
  return [
    {
      method: 'post',
      path: '/api/v1/tasks',
      summary: 'Submit a task of a registered kind',
      tags,
      body: SubmitTaskRequest,
      responses: { '202': { description: 'queued', schema: TaskDoc }, '422': { description: 'invalid body (names the field)' }, '501': disabled },
    },
    {
      method: 'get',
      path: '/api/v1/tasks',
      summary: 'List tasks, newest first, filtered by status, kind, target',
      tags,
      query: ListTasksQuery,
      responses: { '200': { description: 'a page of tasks' }, '501': disabled },
    },
    { method: 'get', path: '/api/v1/tasks/{id}', summary: 'Get a task', tags, responses: { '200': { description: 'the task', schema: TaskDoc }, '404': missing } },
    {
      method: 'get',
      path: '/api/v1/tasks/{id}/events',
      summary: 'Follow a task: SSE replay after since / Last-Event-ID, then live; ends with [DONE]',
      tags,
      query: z.object({ since: z.coerce.number().int().min(0).optional() }),
      responses: { '200': { description: 'event stream', contentType: 'text/event-stream' }, '404': missing },
    },
    {
      method: 'get',
      path: '/api/v1/tasks/{id}/result',
      summary: 'Result of a finished task',
      tags,
      responses: { '200': { description: 'status, result and error' }, '404': missing, '409': { description: 'not finished yet (Retry-After)' } },
    },
    {
      method: 'post',
      path: '/api/v1/tasks/{id}/cancel',
      summary: 'Cancel cooperatively; a finished task is left as it is (canceled: false)',
      tags,
      responses: { '200': { description: 'canceled, message and the task' }, '404': missing },
    },
    { method: 'delete', path: '/api/v1/tasks/{id}', summary: 'Cancel if running, then delete the task and its events', tags, responses: { '200': { description: 'deleted' }, '404': missing } },
  ];
}
