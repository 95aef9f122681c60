/**
 * Pipelines as the server wires them: the `pipeline` drop-in kind (discovery loads and reloads
 * `<root>/pipelines/*.json`), the service over the registry, the step runner that reaches
 * endpoints, agents, ML plugins and notebook cells, the task kinds for async and batch runs, and
 * the routes.
 *
 * Endpoints, agents and plugins are looked up when a step runs: a server may run without them, and
 * a pipeline that names one then fails at that step.
 */
import { InvokeRequest } from '../agents/schemas.js';
import { mountRoutes } from '../http/route.js';
import { parseInput } from '../http/validate.js';
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { pipelineKind } from './kind.js';
import { pipelineRoutes } from './routes.js';
import { PipelineService, type StepRunner } from './service.js';
import { PipelineJobs } from './tasks.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    pipelines: PipelineService;
  }
}

/** How a step reaches the platform's resources. */
function stepRunner(ctx: HangarContext): StepRunner {
  const endpoints = () => ctx.services.get('endpoints');
  // The notebook service is the notebook subsystem's (one per server), so notebook steps and the
  // editor agree on which folder holds the workspace's notebooks.
  const notebooks = ctx.services.get('notebookSteps');
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
          const plugins = ctx.services.find('predictors');
          if (!plugins) throw new Error('the plugins subsystem is not running');
          const response = await plugins.predict(target, input, { principal, operation: 'pipeline' });
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

export const pipelinesSubsystem: Subsystem = {
  name: 'pipelines',
  provides: ['pipelines'],
  depends: ['tasks', 'notebookSteps'],
  uses: ['endpoints', 'predictors', 'agents'],
  kinds: [pipelineKind],
  setup(ctx) {
    const service = new PipelineService({ root: ctx.paths.root, store: ctx.store, steps: stepRunner(ctx), registry: ctx.registry });
    ctx.services.provide('pipelines', service);
  },
  routes(app, ctx) {
    const service = ctx.services.get('pipelines');
    const tasks = ctx.services.get('tasks');
    // The async and batch task kinds, registered when the board is on.
    const jobs = tasks.enabled ? new PipelineJobs(tasks, service) : undefined;
    mountRoutes(app, pipelineRoutes(service, jobs, ctx.settings));
  },
};
