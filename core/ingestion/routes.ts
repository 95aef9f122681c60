/**
 * Routes of ingestion: the ingestor registry and per-ingestor info, health and runs. Logic is in
 * `service.ts`; an unknown ingestor is a 404 before a body error.
 */
import { z } from 'zod';
import { defineRoute, type ResourceConfig } from '../http/route.js';
import { accepted } from '../tasks/events.js';
import { type TaskService, tasksDisabled } from '../tasks/service.js';
import { BatchRunRequest, IngestorHealthResponse, IngestorInfo, IngestorList, IngestorParams, RunRequest, RunResult } from './schemas.js';
import type { IngestionService } from './service.js';
import { INGESTION_BATCH_TASK_KIND, INGESTION_TASK_KIND } from './tasks.js';

const tags = ['ingestion'];
const unknown = 'Unknown ingestor';
const noBoard = 'The task subsystem is disabled';

/** What a route under `/ingestion/:name` does, for the invocation log and the control plane. */
const call = (operation: string, invocation = false) => ({
  resource: { kind: 'ingestor', param: 'name', operation, invocation } satisfies ResourceConfig,
});

export function ingestionRoutes(service: IngestionService, tasks: TaskService) {
  const requireBoard = () => {
    if (!tasks.enabled) throw tasksDisabled();
    return tasks;
  };

  return [
    defineRoute({
      method: 'GET',
      url: '/api/v1/ingestors',
      summary: 'List ingestors (broken drop-ins included, with their error)',
      tags,
      schema: { response: { 200: { description: 'Ingestors', schema: IngestorList } } },
      handler: () => ({ ingestors: service.list() }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/ingestion/:name',
      summary: 'Ingestor info: target collection, discovered resources, stored document count, last run',
      tags,
      schema: {
        params: IngestorParams,
        response: { 200: { description: 'Info', schema: IngestorInfo }, 404: unknown, 503: 'Discovery failed' },
      },
      config: call('info'),
      handler: ({ params }) => service.info(params.name),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/ingestion/:name/health',
      summary: 'Ingestor health: 200 when its source is reachable, 503 otherwise',
      tags,
      schema: {
        params: IngestorParams,
        response: { 200: { description: 'Healthy', schema: IngestorHealthResponse }, 503: 'Unhealthy, with the reason', 404: unknown },
      },
      config: call('health'),
      handler: async ({ params, reply }) => {
        const health = await service.health(params.name);
        if (health.ok) return health;
        reply.code(503);
        return { ...health, detail: `ingestor ${health.name} is unhealthy: ${health.detail}` };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/ingestion/:name/run',
      summary: 'Run an ingestor now: upserts documents under stable ids (re-running never duplicates); per-resource failures are reported',
      tags,
      schema: {
        params: IngestorParams,
        body: RunRequest,
        response: {
          200: { description: 'What the run did', schema: RunResult },
          404: 'Unknown ingestor or resource id',
          422: 'Bad body or options (field named)',
        },
      },
      config: call('run', true),
      handler: (input) => {
        const ingestor = input.params.name;
        service.definition(ingestor);
        return service.run(ingestor, input.body, { principal: input.req.principal });
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/ingestion/:name/run/async',
      summary: 'Run an ingestor in the background on the task board; follow /api/v1/tasks/{id}',
      tags,
      schema: { params: IngestorParams, body: RunRequest, response: { 202: 'The task (Location: /api/v1/tasks/{id})', 501: noBoard } },
      config: call('run.async', true),
      handler: async (input) => {
        const ingestor = input.params.name;
        const board = requireBoard();
        service.definition(ingestor);
        const task = await board.submit({
          kind: INGESTION_TASK_KIND,
          target: ingestor,
          input: input.body,
          principal: input.req.principal,
          metadata: { source: 'run/async' },
        });
        return accepted(input.reply, task);
      },
    }),
    // Like every `…/batch` route: a task on the board (202, Location), its result one entry per run.
    defineRoute({
      method: 'POST',
      url: '/api/v1/ingestion/:name/run/batch',
      summary:
        'Several runs (e.g. different folders or options) as one task on the board, run one after another; follow /api/v1/tasks/{id}',
      tags,
      schema: {
        params: IngestorParams,
        body: BatchRunRequest,
        response: {
          202: {
            description:
              'The task (Location: /api/v1/tasks/{id}). Once completed its result is {total, succeeded, failed, results}: per run, in order, {index, ok: true, result} or {index, ok: false, status, error}',
            schema: z.object({ id: z.string(), kind: z.literal(INGESTION_BATCH_TASK_KIND), status: z.string() }).loose(),
          },
          422: 'A run fails the request model or its options (body.runs.<i>.<field>)',
          404: unknown,
          501: noBoard,
        },
      },
      config: call('run.batch', true),
      handler: async (input) => {
        const ingestor = input.params.name;
        const board = requireBoard();
        service.definition(ingestor);
        const task = await board.submit({
          kind: INGESTION_BATCH_TASK_KIND,
          target: ingestor,
          input: input.body,
          principal: input.req.principal,
          metadata: { source: 'run/batch' },
        });
        return accepted(input.reply, task);
      },
    }),
  ];
}
