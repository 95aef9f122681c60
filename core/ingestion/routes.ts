/**
 * Routes of ingestion: the ingestor registry and per-ingestor info, health and runs. Logic is in
 * `service.ts`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { RouteDoc } from '../http/openapi.js';
import { param } from '../http/request.js';
import { parseInput } from '../http/validate.js';
import type { HangarContext } from '../kernel/context.js';
import { tasksDisabled } from '../tasks/service.js';
import { BatchRunRequest, IngestorHealthResponse, IngestorInfo, IngestorSummary, RunRequest, RunResult } from './schemas.js';
import type { IngestionService } from './service.js';

export const INGESTION_TASK_KIND = 'ingestion.run';
/** A `/run/batch` task: its input is `{runs: [...]}`, its result one entry per run (subsystem.ts). */
export const INGESTION_BATCH_TASK_KIND = 'ingestion.batch';

export function ingestionRoutes(app: FastifyInstance, ctx: HangarContext, service: IngestionService): void {
  const name = (req: FastifyRequest) => param(req, 'name');

  app.get('/api/v1/ingestors', () => {
    return { ingestors: service.list() };
  });

  app.get('/api/v1/ingestion/:name', async (req) => {
    return service.info(name(req));
  });

  app.get('/api/v1/ingestion/:name/health', async (req, reply) => {
    const health = await service.health(name(req));
    if (health.ok) return health;
    reply.code(503);
    return { ...health, detail: `ingestor ${health.name} is unhealthy: ${health.detail}` };
  });

  app.post('/api/v1/ingestion/:name/run', async (req) => {
    const ingestor = name(req);
    service.definition(ingestor);
    const body = parseInput(RunRequest, req.body, 'body');
    return service.run(ingestor, body, { principal: req.principal });
  });

  app.post('/api/v1/ingestion/:name/run/async', async (req, reply) => {
    const ingestor = name(req);
    if (!ctx.tasks?.enabled) throw tasksDisabled();
    service.definition(ingestor);
    const body = parseInput(RunRequest, req.body, 'body');
    const task = await ctx.tasks.submit({ kind: INGESTION_TASK_KIND, target: ingestor, input: body, principal: req.principal, metadata: { source: 'run/async' } });
    reply.code(202).header('Location', `/api/v1/tasks/${task.id}`);
    return task;
  });

  // Like every `…/batch` route: a task on the board (202, Location), its result one entry per run.
  app.post('/api/v1/ingestion/:name/run/batch', async (req, reply) => {
    const ingestor = name(req);
    if (!ctx.tasks?.enabled) throw tasksDisabled();
    service.definition(ingestor);
    const body = parseInput(BatchRunRequest, req.body, 'body');
    const task = await ctx.tasks.submit({ kind: INGESTION_BATCH_TASK_KIND, target: ingestor, input: body, principal: req.principal, metadata: { source: 'run/batch' } });
    reply.code(202).header('Location', `/api/v1/tasks/${task.id}`);
    return task;
  });
}

const tags = ['ingestion'];
const unknown = { description: 'Unknown ingestor' };

export const INGESTION_DOCS: RouteDoc[] = [
  { method: 'get', path: '/api/v1/ingestors', summary: 'List ingestors (broken drop-ins included, with their error)', tags, responses: { 200: { description: 'Ingestors', schema: z.object({ ingestors: z.array(IngestorSummary) }) } } },
  { method: 'get', path: '/api/v1/ingestion/{name}', summary: 'Ingestor info: target collection, discovered resources, stored document count, last run', tags, responses: { 200: { description: 'Info', schema: IngestorInfo }, 404: unknown, 503: { description: 'Discovery failed' } } },
  { method: 'get', path: '/api/v1/ingestion/{name}/health', summary: 'Ingestor health: 200 when its source is reachable, 503 otherwise', tags, responses: { 200: { description: 'Healthy', schema: IngestorHealthResponse }, 503: { description: 'Unhealthy, with the reason' }, 404: unknown } },
  { method: 'post', path: '/api/v1/ingestion/{name}/run', summary: 'Run an ingestor now: upserts documents under stable ids (re-running never duplicates); per-resource failures are reported', tags, body: RunRequest, responses: { 200: { description: 'What the run did', schema: RunResult }, 404: { description: 'Unknown ingestor or resource id' }, 422: { description: 'Bad body or options (field named)' } } },
  { method: 'post', path: '/api/v1/ingestion/{name}/run/async', summary: 'Run an ingestor in the background on the task board; follow /api/v1/tasks/{id}', tags, body: RunRequest, responses: { 202: { description: 'The task (Location: /api/v1/tasks/{id})' }, 501: { description: 'The task subsystem is disabled' } } },
  { method: 'post', path: '/api/v1/ingestion/{name}/run/batch', summary: 'Several runs (e.g. different folders or options) as one task on the board, run one after another; follow /api/v1/tasks/{id}', tags, body: BatchRunRequest, responses: { 202: { description: 'The task (Location: /api/v1/tasks/{id}). Once completed its result is {total, succeeded, failed, results}: per run, in order, {index, ok: true, result} or {index, ok: false, status, error}', schema: z.object({ id: z.string(), kind: z.literal(INGESTION_BATCH_TASK_KIND), status: z.string() }).loose() }, 422: { description: 'A run fails the request model or its options (body.runs.<i>.<field>)' }, 404: unknown, 501: { description: 'The task subsystem is disabled' } } },
];
