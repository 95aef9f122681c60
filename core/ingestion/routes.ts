/**
 * Routes of ingestion: the ingestor registry and per-ingestor info, health and runs. Logic is in
 * `service.ts`.
 */
import { Router } from 'express';
import { z } from 'zod';
import { errorMessage, HttpError } from '../http/errors.js';
import type { RouteDoc } from '../http/openapi.js';
import { parseInput } from '../http/validate.js';
import type { HangarContext } from '../kernel/context.js';
import { tasksDisabled } from '../tasks/service.js';
import { BatchRunRequest, BatchRunResult, IngestorHealthResponse, IngestorInfo, IngestorSummary, RunRequest, RunResult } from './schemas.js';
import type { IngestionService } from './service.js';

export const INGESTION_TASK_KIND = 'ingestion.run';

export function ingestionRoutes(ctx: HangarContext, service: IngestionService): Router {
  const router = Router();
  const name = (raw: unknown) => String(raw);

  router.get('/api/v1/ingestors', (_req, res) => {
    res.json({ ingestors: service.list() });
  });

  router.get('/api/v1/ingestion/:name', async (req, res) => {
    res.json(await service.info(name(req.params.name)));
  });

  router.get('/api/v1/ingestion/:name/health', async (req, res) => {
    const health = await service.health(name(req.params.name));
    if (health.ok) res.json(health);
    else res.status(503).json({ ...health, detail: `ingestor ${health.name} is unhealthy: ${health.detail}` });
  });

  router.post('/api/v1/ingestion/:name/run', async (req, res) => {
    const ingestor = name(req.params.name);
    service.definition(ingestor);
    const body = parseInput(RunRequest, req.body, 'body');
    res.json(await service.run(ingestor, body, { principal: req.principal }));
  });

  router.post('/api/v1/ingestion/:name/run/async', async (req, res) => {
    const ingestor = name(req.params.name);
    if (!ctx.tasks?.enabled) throw tasksDisabled();
    service.definition(ingestor);
    const body = parseInput(RunRequest, req.body, 'body');
    const task = await ctx.tasks.submit({ kind: INGESTION_TASK_KIND, target: ingestor, input: body, principal: req.principal, metadata: { source: 'run/async' } });
    res.status(202).location(`/api/v1/tasks/${task.id}`).json(task);
  });

  router.post('/api/v1/ingestion/:name/run/batch', async (req, res) => {
    const ingestor = name(req.params.name);
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
    res.json({ results });
  });

  return router;
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
