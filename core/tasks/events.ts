/**
 * A task's events as Server-Sent Events, with replay from `Last-Event-ID`/`since` and a snapshot of
 * the task when the resume point was evicted: the board's own route and the A2A task routes serve
 * them the same way, so this is the task board's public way to stream a task. `accepted` answers a
 * submission the way every route that puts work on the board does.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { queryOf } from '../http/request.js';
import { resumePoint, serveSse } from '../http/sse.js';
import type { TaskScope, TaskService } from './service.js';

export async function streamTaskEvents(
  tasks: TaskService,
  req: FastifyRequest,
  reply: FastifyReply,
  id: string,
  scope: TaskScope,
): Promise<void> {
  const since = resumePoint(req, queryOf(req));
  const source = await tasks.events(id, scope);
  await serveSse(reply, source, {
    since,
    toWire: tasks.wire,
    snapshot: () => tasks.get(id, scope),
    headers: { 'X-Task-Id': id },
  });
}

/** 202 Accepted with `Location` naming where the task is followed, as every async and batch route answers. */
export function accepted<T extends { id: string }>(reply: FastifyReply, task: T): T {
  reply.code(202).header('Location', `/api/v1/tasks/${task.id}`);
  return task;
}
