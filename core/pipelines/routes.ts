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
 *   GET    /api/v1/pipelines/{name}/runs          newest first (50)
 *   GET    /api/v1/pipelines/{name}/runs/{id}
 */
import { Router, type Request } from 'express';
import { notImplemented } from '../http/errors.js';
import type { PipelineService } from './service.js';
import type { PipelineJobs } from './tasks.js';

const PREFIX = '/api/v1/pipelines';
const principalOf = (req: Request) => (req as { principal?: string }).principal ?? 'local';

export function pipelineRoutes(service: PipelineService, jobs: () => PipelineJobs | undefined = () => undefined): Router {
  const router = Router();
  const board = () => {
    const found = jobs();
    if (!found) throw notImplemented('async and batch runs need the task subsystem (tasks.enabled)');
    return found;
  };

  router.get(PREFIX, async (_req, res) => {
    res.json({ pipelines: await service.list() });
  });
  router.post(PREFIX, async (req, res) => {
    const saved = await service.save(req.body);
    res.status(saved.created ? 201 : 200).location(`${PREFIX}/${saved.definition.name}`).json(saved);
  });
  router.post(`${PREFIX}/validate`, (req, res) => {
    res.json(service.validate(req.body));
  });
  router.get(`${PREFIX}/:name`, async (req, res) => {
    res.json(await service.inspect(String(req.params.name)));
  });
  router.delete(`${PREFIX}/:name`, async (req, res) => {
    const name = String(req.params.name);
    await service.delete(name);
    res.json({ status: 'deleted', name });
  });
  router.get(`${PREFIX}/:name/graph`, async (req, res) => {
    const graph = await service.graph(String(req.params.name));
    if (req.query.format === 'mermaid') res.type('text/plain').send(graph.mermaid + '\n');
    else res.json(graph);
  });
  router.post(`${PREFIX}/:name/run`, async (req, res) => {
    res.json(await service.run(String(req.params.name), req.body, { principal: principalOf(req) }));
  });
  router.post(`${PREFIX}/:name/run/async`, async (req, res) => {
    const task = await board().submitRun(String(req.params.name), req.body, principalOf(req));
    res.status(202).location(`/api/v1/tasks/${task.id}`).json(task);
  });
  router.post(`${PREFIX}/:name/run/batch`, async (req, res) => {
    const task = await board().submitBatch(String(req.params.name), req.body, principalOf(req));
    res.status(202).location(`/api/v1/tasks/${task.id}`).json(task);
  });
  router.get(`${PREFIX}/:name/runs`, async (req, res) => {
    res.json({ runs: await service.runs(String(req.params.name)) });
  });
  router.get(`${PREFIX}/:name/runs/:id`, async (req, res) => {
    res.json(await service.getRun(String(req.params.name), String(req.params.id)));
  });
  return router;
}
