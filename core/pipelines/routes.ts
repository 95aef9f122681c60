/**
 * /api/v1/pipelines routes (parse, call the service, shape the answer). Saving and validating
 * pass the body as sent: the service lists every problem of a definition with its step and field.
 * Runs are stamped with the exact principal (their task-board tasks are that principal's); who may
 * read them follows `viewerOf`.
 */
import type { FastifyRequest } from 'fastify';
import { queryOf } from '../http/request.js';
import { defineRoute, type ResourceConfig } from '../http/route.js';
import { fail } from '../kernel/errors.js';
import { viewerOf } from '../kernel/ownership.js';
import type { Settings } from '../kernel/settings.js';
import { accepted } from '../tasks/events.js';
import {
  BatchRunBody,
  GraphQuery,
  PipelineDraft,
  PipelineParams,
  PipelineRunParams,
  PipelineTaskView,
  ValidationReportView,
} from './schemas.js';
import type { PipelineService } from './service.js';
import type { PipelineJobs } from './tasks.js';

const PREFIX = '/api/v1/pipelines';
const tags = ['pipelines'];
const principalOf = (req: FastifyRequest) => req.principal || 'local';

/** What a route under `/pipelines/:name` does, for the invocation log and the control plane. */
const call = (operation: ResourceConfig['operation'], invocation = false) => ({
  resource: { kind: 'pipeline', param: 'name', operation, invocation } satisfies ResourceConfig,
});

/**
 * @param jobs the task-board side (async and batch); undefined when `tasks.enabled` is off, and
 * those routes then answer 501.
 */
export function pipelineRoutes(service: PipelineService, jobs: PipelineJobs | undefined, settings: Pick<Settings, 'auth'>) {
  const viewer = (req: FastifyRequest) => viewerOf(req, settings);
  const board = () => {
    if (!jobs) throw fail('HANGAR_PIPELINE_TASKS_DISABLED', {});
    return jobs;
  };
  const noBoard = 'no task board';

  return [
    defineRoute({
      method: 'GET',
      url: PREFIX,
      summary: 'List pipelines (with their validation state)',
      tags,
      handler: async () => ({ pipelines: await service.list() }),
    }),
    defineRoute({
      method: 'POST',
      url: PREFIX,
      summary: 'Save a pipeline definition as pipelines/<name>.json',
      tags,
      schema: { body: PipelineDraft, response: { 201: 'created', 200: 'replaced', 422: 'invalid; every problem with its step and field' } },
      handler: async ({ req, reply }) => {
        const saved = await service.save(req.body);
        reply.code(saved.created ? 201 : 200).header('Location', `${PREFIX}/${saved.definition.name}`);
        return saved;
      },
    }),
    defineRoute({
      method: 'POST',
      url: `${PREFIX}/validate`,
      summary: 'Validate a draft without saving it',
      tags,
      schema: { body: PipelineDraft, response: { 200: { description: 'report', schema: ValidationReportView } } },
      handler: ({ req }) => service.validate(req.body),
    }),
    defineRoute({
      method: 'GET',
      url: `${PREFIX}/:name`,
      summary: 'Inspect a pipeline: definition, validation, graph',
      tags,
      schema: { params: PipelineParams },
      config: call('info'),
      handler: ({ params }) => service.inspect(params.name),
    }),
    defineRoute({
      method: 'DELETE',
      url: `${PREFIX}/:name`,
      summary: 'Delete a pipeline definition',
      tags,
      schema: { params: PipelineParams },
      config: call('info'),
      handler: async ({ params }) => {
        await service.delete(params.name);
        return { status: 'deleted', name: params.name };
      },
    }),
    defineRoute({
      method: 'GET',
      url: `${PREFIX}/:name/graph`,
      summary: 'Step graph as JSON (nodes, edges, waves, mermaid); ?format=mermaid for text',
      tags,
      schema: { params: PipelineParams, querystring: GraphQuery },
      config: call('graph'),
      // Any other `format` is JSON, as it always was: the query is read as sent.
      handler: async ({ params, req, reply }) => {
        const graph = await service.graph(params.name);
        if (queryOf(req).format === 'mermaid') return reply.type('text/plain; charset=utf-8').send(graph.mermaid + '\n');
        return graph;
      },
    }),
    defineRoute({
      method: 'POST',
      url: `${PREFIX}/:name/run`,
      summary: 'Run and wait for the run record',
      tags,
      schema: {
        params: PipelineParams,
        response: {
          200: 'completed run record',
          502: 'a step failed; the body names it and holds the run record',
          504: 'a step ran out of time (its timeout_ms, or an upstream or model that did not answer in time); the same body',
        },
      },
      config: call('run', true),
      handler: ({ params, req }) => service.run(params.name, req.body, { principal: principalOf(req) }),
    }),
    defineRoute({
      method: 'POST',
      url: `${PREFIX}/:name/run/async`,
      summary: 'Run on the task board',
      tags,
      schema: { params: PipelineParams, response: { 202: { description: 'task', schema: PipelineTaskView }, 501: noBoard } },
      config: call('run.async', true),
      handler: async ({ params, req, reply }) => {
        const task = await board().submitRun(params.name, req.body, principalOf(req));
        return accepted(reply, task);
      },
    }),
    defineRoute({
      method: 'POST',
      url: `${PREFIX}/:name/run/batch`,
      summary: 'Run once per input on the task board',
      tags,
      schema: {
        params: PipelineParams,
        body: BatchRunBody,
        response: { 202: { description: 'task', schema: PipelineTaskView }, 501: noBoard },
      },
      config: call('run.batch', true),
      handler: async ({ params, req, reply }) => {
        const task = await board().submitBatch(params.name, req.body, principalOf(req));
        return accepted(reply, task);
      },
    }),
    defineRoute({
      method: 'GET',
      url: `${PREFIX}/:name/runs`,
      summary: 'Recent runs, newest first',
      tags,
      schema: { params: PipelineParams },
      config: call('runs'),
      handler: async ({ params, req }) => ({ runs: await service.runs(params.name, 50, viewer(req)) }),
    }),
    defineRoute({
      method: 'GET',
      url: `${PREFIX}/:name/runs/:id`,
      summary: 'One run record: every step with its input, output and duration',
      tags,
      schema: { params: PipelineRunParams },
      config: call((req) => `runs/${(req.params as { id: string }).id}`),
      handler: ({ params, req }) => service.getRun(params.name, params.id, viewer(req)),
    }),
  ];
}
