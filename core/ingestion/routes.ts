/**
 * Routes of ingestion: the ingestor registry and per-ingestor info, health and runs. Logic is in
 * `service.ts`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { errorMessage, HttpError } from '../http/errors.js';
import type { RouteDoc } from '../http/openapi.js';
import { param } from '../http/request.js';
import { parseInput } from '../http/validate.js';
import type { HangarContext } from '../kernel/context.js';
import { tasksDisabled } from '../tasks/service.js';
import { BatchRunRequest, BatchRunResult, IngestorHealthResponse, IngestorInfo, IngestorSummary, RunRequest, RunResult } from './schemas.js';
import type { IngestionService } from './service.js';

export const INGESTION_TASK_KIND = 'ingestion.run';

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

  app.post('/api/v1/ingestion/:name/run/batch', async (req) => {
    const ingestor = name(req);
    service.definition(ingestor);
    const body = parseInput(BatchRunRequest, req.body, 'body');
    const results = [];
    // One after another (runs of an ingestor never overlap anyway); one failing run does not stop the rest.
    for (const [index, run] of body.runs.entries()) {
      try {
        results.push({ index, ok: true as const, result: await service.run(ingestor, run, { principal: req.principal, operation: 'run.batch' }) });
      } catch (err) {
        results.push({ index, ok: false as const, status: err instanceof HttpError ? err.status : 500, error: errorMessage(err) });
      }
    }
    return { results };
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
  { method: 'post', path: '/api/v1/ingestion/{name}/run/batch', summary: 'Several runs (e.g. different folders or options) in one call, results per run', tags, body: BatchRunRequest, responses: { 200: { description: 'One result per run', schema: BatchRunResult } } },
];
