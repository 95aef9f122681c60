/**
 * The shared task board at /api/v1/tasks: submit, list, get, follow events (SSE), collect the
 * result, cancel, delete. Cross-agent: every kind of task shows here, scoped to the caller's
 * principal. Logic lives in `service.ts`; these handlers parse, call and shape.
 */
import type { FastifyRequest } from 'fastify';
import { defineRoute } from '../http/route.js';
import { LOCAL_PRINCIPAL, viewerOf } from '../kernel/ownership.js';
import type { Settings } from '../kernel/settings.js';
import { accepted, streamTaskEvents } from './events.js';
import { ListTasksQuery, SubmitTaskRequest, TaskEventsQuery, TaskParams, TaskView } from './schemas.js';
import { type TaskScope, type TaskService, tasksDisabled } from './service.js';

/**
 * Serve a task's events as SSE: replay after `since` / Last-Event-ID, then live, `[DONE]` at the
 * end; the `truncated` marker is followed by the current task. Shared with the A2A routes.
 */
const tags = ['tasks'];
const disabled = 'the task subsystem is disabled (tasks.enabled = false)';
const missing = 'unknown task, or a task of another principal';

export function taskRoutes(service: TaskService, settings: Pick<Settings, 'auth'>) {
  /** The board, or 501 when `tasks.enabled` is off. */
  const board = (): TaskService => {
    if (!service.enabled) throw tasksDisabled();
    return service;
  };
  /**
   * Whose tasks a request sees: its own on a server with tokens; every task without tokens, where
   * every caller — curl, the desktop window, a login-link tab — is the one local user (the rule of
   * core/kernel/ownership.ts). A task still records who submitted it.
   */
  const scope = (req: FastifyRequest): TaskScope => ({
    principal: viewerOf(req, settings) === LOCAL_PRINCIPAL ? undefined : req.principal,
  });

  return [
    defineRoute({
      method: 'POST',
      url: '/api/v1/tasks',
      summary: 'Submit a task of a registered kind',
      tags,
      schema: {
        body: SubmitTaskRequest,
        response: { 202: { description: 'queued', schema: TaskView }, 422: 'invalid body (names the field)', 501: disabled },
      },
      // The board is checked before the body is parsed (read): 501 before 422.
      handler: async (input) => {
        const tasks = board();
        const task = await tasks.submit({ ...input.body, principal: input.req.principal });
        return accepted(input.reply, task);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/tasks',
      summary: 'List tasks, newest first, filtered by status, kind, target',
      tags,
      schema: { querystring: ListTasksQuery, response: { 200: 'a page of tasks', 501: disabled } },
      handler: (input) => {
        const tasks = board();
        return tasks.list(input.query, scope(input.req));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/tasks/:id',
      summary: 'Get a task',
      tags,
      schema: { params: TaskParams, response: { 200: { description: 'the task', schema: TaskView }, 404: missing } },
      handler: ({ params, req }) => board().get(params.id, scope(req)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/tasks/:id/events',
      summary: 'Follow a task: SSE replay after since / Last-Event-ID, then live; ends with [DONE]',
      tags,
      schema: {
        params: TaskParams,
        querystring: TaskEventsQuery,
        response: { 200: { description: 'event stream', contentType: 'text/event-stream' }, 404: missing },
      },
      handler: ({ params, req, reply }) => streamTaskEvents(board(), req, reply, params.id, scope(req)),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/tasks/:id/result',
      summary: 'Result of a finished task',
      tags,
      schema: { params: TaskParams, response: { 200: 'status, result and error', 404: missing, 409: 'not finished yet (Retry-After)' } },
      handler: ({ params, req }) => board().result(params.id, scope(req)),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/tasks/:id/cancel',
      summary: 'Cancel cooperatively; a finished task is left as it is (canceled: false)',
      tags,
      schema: { params: TaskParams, response: { 200: 'canceled, message and the task', 404: missing } },
      handler: ({ params, req }) => board().cancel(params.id, scope(req)),
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/v1/tasks/:id',
      summary: 'Cancel if running, then delete the task and its events',
      tags,
      schema: { params: TaskParams, response: { 200: 'deleted', 404: missing } },
      handler: async ({ params, req }) => {
        const id = params.id;
        await board().delete(id, scope(req));
        return { status: 'deleted', id };
      },
    }),
  ];
}
