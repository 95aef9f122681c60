/**
 * Routes of the ML plugins: parse, call the service, shape the response. Logic is in `service.ts`.
 */
import { defineRoute, type ResourceConfig, type RouteInput } from '../http/route.js';
import { accepted } from '../tasks/events.js';
import { type TaskService, tasksDisabled } from '../tasks/service.js';
import {
  AsyncPredictRequest,
  BatchRequest,
  BatchResponse,
  ModelCard,
  PluginHealth,
  PluginList,
  PluginParams,
  PluginSummary,
  PredictRequest,
  PredictResponse,
  ReloadResponse,
} from './schemas.js';
import type { PluginService } from './service.js';

export const PLUGIN_TASK_KIND = 'plugin.predict';

const tags = ['plugins'];
const notReady = 'The plugin failed to load (or is loading): `{detail}` with the reason';
const unknown = 'Unknown plugin';
const noBoard = 'The task subsystem is disabled';

/** What a route under `/plugins/:name` does, for the invocation log and the control plane. */
const call = (operation: string, invocation = false) => ({
  resource: { kind: 'plugin', param: 'name', operation, invocation } satisfies ResourceConfig,
});

/** @param plugins the service, built on its first use (it starts the plugins' worker pool). */
export function pluginRoutes(plugins: () => PluginService, tasks: TaskService) {
  const board = () => {
    if (!tasks.enabled) throw tasksDisabled();
    return tasks;
  };

  /** /predict/batch and /predict/async: the plugin must be known and ready, then the board runs it. */
  const submitPrediction = async (input: RouteInput<{ name: string }, unknown, unknown>, source: string) => {
    const tasks = board();
    plugins().health(input.params.name);
    const task = await tasks.submit({
      kind: PLUGIN_TASK_KIND,
      target: input.params.name,
      input: input.body,
      principal: input.req.principal,
      metadata: { source },
    });
    return accepted(input.reply, task);
  };

  return [
    defineRoute({
      method: 'GET',
      url: '/api/v1/plugins',
      summary: 'List ML plugins with their load status (broken drop-ins included, with their error)',
      tags,
      schema: { response: { 200: { description: 'Plugins', schema: PluginList } } },
      handler: () => ({ plugins: plugins().list() }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/plugins/reload',
      summary: 'Reload every plugin model',
      tags,
      schema: { response: { 200: { description: 'Health of each plugin after its reload', schema: ReloadResponse } } },
      handler: async () => ({ reloaded: await plugins().reloadAll() }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/plugins/:name',
      summary: 'One plugin: its list entry and health',
      tags,
      schema: {
        params: PluginParams,
        response: { 200: { description: 'Plugin', schema: PluginSummary.extend({ health: PluginHealth }) }, 404: unknown },
      },
      config: call('info'),
      handler: ({ params }) => plugins().describe(params.name),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/plugins/:name/health',
      summary: 'Plugin health: 200 when ready, 503 while loading or after a failed load',
      tags,
      schema: { params: PluginParams, response: { 200: { description: 'Ready', schema: PluginHealth }, 503: notReady, 404: unknown } },
      config: call('health'),
      handler: ({ params, reply }) => {
        const health = plugins().health(params.name);
        if (health.status === 'ready') return health;
        // Unhealthy is a 503 (what probes act on) with the same record, plus `detail` like every error.
        reply.code(503);
        if (health.status === 'loading') reply.header('Retry-After', '1');
        return { detail: `plugin ${health.name} is ${health.status}${health.error ? `: ${health.error}` : ''}`, ...health };
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/v1/plugins/:name/model_card',
      summary: 'Model card: task, input/output JSON Schemas, metrics (computed at load on held-out data), training data, limitations',
      tags,
      schema: { params: PluginParams, response: { 200: { description: 'Model card', schema: ModelCard }, 404: unknown } },
      config: call('model_card'),
      handler: ({ params }) => plugins().card(params.name),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/plugins/:name/predict',
      summary: 'Predict one input (runs in the plugin pool, off the HTTP thread)',
      tags,
      schema: {
        params: PluginParams,
        body: PredictRequest,
        response: {
          200: { description: 'Prediction', schema: PredictResponse },
          422: 'Input does not match the plugin input model; detail names the field',
          503: notReady,
          504: 'The prediction timed out; its worker was replaced',
          500: 'The plugin threw or crashed its worker (only this request fails)',
        },
      },
      config: call('predict', true),
      handler: (input) => {
        const plugin = input.params.name;
        const service = plugins();
        service.health(plugin); // 404 before a body error for an unknown plugin
        return service.predict(plugin, input.body.input, { principal: input.req.principal });
      },
    }),
    // Like every `…/batch` route: a task on the board (202, Location), its result the BatchResponse.
    defineRoute({
      method: 'POST',
      url: '/api/v1/plugins/:name/predict/batch',
      summary:
        'Predict many inputs as one task on the board; follow /api/v1/tasks/{id}. Its result reports failures per item (status and error) while the rest succeed',
      tags,
      schema: {
        params: PluginParams,
        body: BatchRequest,
        response: {
          202: `The task (Location: /api/v1/tasks/{id}). Once completed its result is {${Object.keys(BatchResponse.shape).join(', ')}}, one entry of results per input, in order`,
          422: 'The body is not {inputs: [...]} (1 to the limit)',
          503: notReady,
          501: noBoard,
        },
      },
      config: call('batch', true),
      handler: (input) => submitPrediction(input, 'predict/batch'),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/plugins/:name/predict/async',
      summary: 'Predict in the background on the task board: body `{input}` or `{inputs}`; follow /api/v1/tasks/{id}',
      tags,
      schema: {
        params: PluginParams,
        body: AsyncPredictRequest,
        response: { 202: 'The task (Location: /api/v1/tasks/{id})', 501: noBoard },
      },
      config: call('async', true),
      handler: (input) => submitPrediction(input, 'predict/async'),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/plugins/:name/reload',
      summary: 'Reload one plugin model (also clears a failed load once the cause is fixed)',
      tags,
      schema: { params: PluginParams, response: { 200: { description: 'Ready', schema: PluginHealth }, 503: notReady } },
      config: call('reload'),
      handler: async ({ params, reply }) => {
        const health = await plugins().load(params.name);
        if (health.status === 'ready') return health;
        reply.code(503);
        return { detail: `plugin ${health.name} failed to load: ${health.error}`, ...health };
      },
    }),
  ];
}
