/**
 * Pipelines as the server wires them: the `pipeline` drop-in kind (discovery loads and reloads
 * `<root>/pipelines/*.json`), the service over the registry, the step runner that reaches
 * endpoints, agents, ML plugins and notebook cells, the task kinds for async and batch runs, the
 * routes and their OpenAPI entries.
 *
 * Mounted next to the endpoints, before the platform's per-agent routes (`/api/v1/:agent/health`
 * would otherwise answer for a pipeline called `health`). The agents, plugins and task board are set
 * up later in the list, so they are looked up when a step runs, not at setup.
 */
import { z } from 'zod';
import { InvokeRequest } from '../agents/schemas.js';
import { endpointServiceOf } from '../endpoints/subsystem.js';
import { parseInput } from '../http/validate.js';
import type { RouteDoc } from '../http/openapi.js';
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { pluginServiceOf } from '../predictors/subsystem.js';
import { pipelineKind } from './kind.js';
import { NotebookSteps } from './notebook.js';
import { pipelineRoutes } from './routes.js';
import { PipelineService, type StepRunner } from './service.js';
import { PipelineJobs } from './tasks.js';

const services = new WeakMap<HangarContext, PipelineService>();
const jobs = new WeakMap<HangarContext, PipelineJobs>();

export function pipelineServiceOf(ctx: HangarContext): PipelineService {
  const service = services.get(ctx);
  if (!service) throw new Error('the pipelines subsystem is not set up on this server');
  return service;
}

/** Created once the task board exists (see the endpoints subsystem for the same timing rule). */
function jobsOf(ctx: HangarContext): PipelineJobs | undefined {
  let found = jobs.get(ctx);
  if (!found && ctx.services.get('tasks').enabled) {
    found = new PipelineJobs(ctx.services.get('tasks'), pipelineServiceOf(ctx));
    jobs.set(ctx, found);
  }
  return found;
}

/** How a step reaches the platform's resources. */
function stepRunner(ctx: HangarContext): StepRunner {
  const endpoints = () => endpointServiceOf(ctx);
  // The notebook service is the notebook subsystem's (one per server), so notebook steps and the
  // editor agree on which folder holds the workspace's notebooks.
  const notebooks = new NotebookSteps(ctx.services.get('notebooks'));
  return {
    exists(kind, name) {
      if (kind === 'endpoint') return endpoints().get(name) !== undefined;
      if (kind === 'notebook') return notebooks.exists(name);
      return ctx.registry.get(kind, name) !== undefined;
    },
    endpointMethods: (name) => endpoints().get(name)?.methods,
    notebookCellProblem: (notebook, cell) => notebooks.cellProblem(notebook, cell),
    async run(kind, target, input, { signal, principal, method, cell, run }) {
      switch (kind) {
        case 'endpoint': {
          const config = endpoints().require(target);
          const result = await endpoints().invoke(target, method ?? config.methods[0], input, { signal });
          return { value: result.aggregated, upstreams: result.upstreams };
        }
        case 'agent': {
          const agents = ctx.services.find('agents');
          if (!agents) throw new Error('the agents subsystem is not running');
          const request = parseInput(InvokeRequest, input, 'input');
          return { value: await agents.service.invoke(target, request, signal, undefined, principal) };
        }
        case 'plugin': {
          const response = await pluginServiceOf(ctx).predict(target, input, { principal, operation: 'pipeline' });
          return { value: response.output };
        }
        case 'notebook': {
          if (cell === undefined) throw new Error('a notebook step names the cell it runs');
          return { value: await notebooks.run(target, cell, input, { signal, run }) };
        }
        default: {
          const never: never = kind;
          throw new Error(`unknown step kind ${String(never)}`);
        }
      }
    },
  };
}

const TAGS = ['pipelines'];
const Problem = z.object({ step: z.string().nullable(), field: z.string(), message: z.string() });
const Definition = z
  .object({
    name: z.string(),
    description: z.string().optional(),
    version: z.string().optional(),
    steps: z.array(
      z
        .object({
          name: z.string(),
          endpoint: z.string().optional(),
          agent: z.string().optional(),
          plugin: z.string().optional(),
          notebook: z.string().optional().describe('A notebook path inside notebooks/; runs `cell` in a kernel of this run'),
          method: z.string().optional(),
          cell: z.string().optional().describe('Notebook steps: the code cell, by id or unique name'),
          input: z.unknown(),
          after: z.array(z.string()).optional().describe('Steps that must complete first without passing a value'),
        })
        .describe('One of endpoint, agent, plugin or notebook; input values may be references: $.input, $.input.<field>, $.steps.<step>.aggregated|output[.<field>]. A notebook step hands its input to its cells as `pipelineInput`.'),
    ),
    output: z.unknown().optional(),
  })
  .describe('A pipeline definition, saved as pipelines/<name>.json');
const Report = z.object({ valid: z.boolean(), errors: z.array(Problem), waves: z.array(z.array(z.string())) });
const Task = z.object({ id: z.string(), kind: z.string(), target: z.string(), status: z.string() }).loose();

const DOCS: RouteDoc[] = [
  { method: 'get', path: '/api/v1/pipelines', summary: 'List pipelines (with their validation state)', tags: TAGS },
  { method: 'post', path: '/api/v1/pipelines', summary: 'Save a pipeline definition as pipelines/<name>.json', tags: TAGS, body: Definition, responses: { 201: { description: 'created' }, 200: { description: 'replaced' }, 422: { description: 'invalid; every problem with its step and field' } } },
  { method: 'post', path: '/api/v1/pipelines/validate', summary: 'Validate a draft without saving it', tags: TAGS, body: Definition, responses: { 200: { description: 'report', schema: Report } } },
  { method: 'get', path: '/api/v1/pipelines/{name}', summary: 'Inspect a pipeline: definition, validation, graph', tags: TAGS },
  { method: 'delete', path: '/api/v1/pipelines/{name}', summary: 'Delete a pipeline definition', tags: TAGS },
  { method: 'get', path: '/api/v1/pipelines/{name}/graph', summary: 'Step graph as JSON (nodes, edges, waves, mermaid); ?format=mermaid for text', tags: TAGS },
  { method: 'post', path: '/api/v1/pipelines/{name}/run', summary: 'Run and wait for the run record', tags: TAGS, responses: { 200: { description: 'completed run record' }, 502: { description: 'a step failed; the body names it and holds the run record' }, 504: { description: 'a step ran out of time (its timeout_ms, or an upstream or model that did not answer in time); the same body' } } },
  { method: 'post', path: '/api/v1/pipelines/{name}/run/async', summary: 'Run on the task board', tags: TAGS, responses: { 202: { description: 'task', schema: Task }, 501: { description: 'no task board' } } },
  { method: 'post', path: '/api/v1/pipelines/{name}/run/batch', summary: 'Run once per input on the task board', tags: TAGS, body: z.object({ inputs: z.array(z.unknown()).min(1) }), responses: { 202: { description: 'task', schema: Task }, 501: { description: 'no task board' } } },
  { method: 'get', path: '/api/v1/pipelines/{name}/runs', summary: 'Recent runs, newest first', tags: TAGS },
  { method: 'get', path: '/api/v1/pipelines/{name}/runs/{id}', summary: 'One run record: every step with its input, output and duration', tags: TAGS },
];

export const pipelinesSubsystem: Subsystem = {
  name: 'pipelines',
  depends: ['tasks', 'notebooks'],
  kinds: [pipelineKind],
  setup(ctx) {
    services.set(ctx, new PipelineService({ root: ctx.paths.root, store: ctx.store, steps: stepRunner(ctx), registry: ctx.registry }));
    ctx.openapi.add(...DOCS);
    if (!jobsOf(ctx)) ctx.registry.once('change', () => jobsOf(ctx));
  },
  routes: (app, ctx) => pipelineRoutes(app, pipelineServiceOf(ctx), () => jobsOf(ctx), ctx.settings),
};
