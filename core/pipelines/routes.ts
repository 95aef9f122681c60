/**
 * /api/v1/pipelines routes (parse, call the service, shape the answer):
 *
 *   GET    /api/v1/pipelines                      → { pipelines: PipelineSummary[] }
 *   POST   /api/v1/pipelines                      save a definition (body) → 201 created / 200 replaced; 422 lists every problem
 *   POST   /api/v1/pipelines/validate             validate a draft → { valid, errors: [{step, field, message}], waves }
 *   GET    /api/v1/pipelines/{name}               inspect: definition, validation, graph
 *   DELETE /api/v1/pipelines/{name}
 *   GET    /api/v1/pipelines/{name}/graph         { nodes, edges, waves, mermaid }; `?format=mermaid` → text/plain
 *   POST   /api/v1/pipelines/{name}/run           run and wait → run record; 502 names the failed step
 *   POST   /api/v1/pipelines/{name}/run/async     → 202 task (501 without the task board)
 *   POST   /api/v1/pipelines/{name}/run/batch     body {"inputs": [...]} → 202 task
 *   GET    /api/v1/pipelines/{name}/runs          the caller's runs, newest first (50)
 *   GET    /api/v1/pipelines/{name}/runs/{id}     another principal's run → 404, as an unknown id
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { notImplemented } from '../http/errors.js';
import { param, queryOf } from '../http/request.js';
import { viewerOf } from '../kernel/ownership.js';
import type { PipelineService } from './service.js';
import type { PipelineJobs } from './tasks.js';

const PREFIX = '/api/v1/pipelines';
const principalOf = (req: FastifyRequest) => req.principal || 'local';

export function pipelineRoutes(
  app: FastifyInstance,
  service: PipelineService,
  jobs: () => PipelineJobs | undefined,
  settings: { auth: { tokens: Record<string, string> } },
): void {
  // Runs are stamped with the exact principal (their task-board tasks are that principal's);
  // who may read them follows `viewerOf`.
  const viewer = (req: FastifyRequest) => viewerOf(req, settings);
  const board = () => {
    const found = jobs();
    if (!found) throw notImplemented('async and batch runs need the task subsystem (tasks.enabled)');
    return found;
  };

  app.get(PREFIX, async () => {
    return { pipelines: await service.list() };
  });
  app.post(PREFIX, async (req, reply) => {
    const saved = await service.save(req.body);
    reply.code(saved.created ? 201 : 200).header('Location', `${PREFIX}/${saved.definition.name}`);
    return saved;
  });
  app.post(`${PREFIX}/validate`, async (req) => {
    return service.validate(req.body);
  });
  app.get(`${PREFIX}/:name`, async (req) => {
    return service.inspect(param(req, 'name'));
  });
  app.delete(`${PREFIX}/:name`, async (req) => {
    const name = param(req, 'name');
    await service.delete(name);
    return { status: 'deleted', name };
  });
  app.get(`${PREFIX}/:name/graph`, async (req, reply) => {
    const graph = await service.graph(param(req, 'name'));
    if (queryOf(req).format === 'mermaid') return reply.type('text/plain; charset=utf-8').send(graph.mermaid + '\n');
    return graph;
  });
  app.post(`${PREFIX}/:name/run`, async (req) => {
    return service.run(param(req, 'name'), req.body, { principal: principalOf(req) });
  });
  app.post(`${PREFIX}/:name/run/async`, async (req, reply) => {
    const task = await board().submitRun(param(req, 'name'), req.body, principalOf(req));
    reply.code(202).header('Location', `/api/v1/tasks/${task.id}`);
    return task;
  });
  app.post(`${PREFIX}/:name/run/batch`, async (req, reply) => {
    const task = await board().submitBatch(param(req, 'name'), req.body, principalOf(req));
    reply.code(202).header('Location', `/api/v1/tasks/${task.id}`);
    return task;
  });
  app.get(`${PREFIX}/:name/runs`, async (req) => {
    return { runs: await service.runs(param(req, 'name'), 50, viewer(req)) };
  });
  app.get(`${PREFIX}/:name/runs/:id`, async (req) => {
    return service.getRun(param(req, 'name'), param(req, 'id'), viewer(req));
  });
}
