/**
 * Routes of the ML plugins: parse, call the service, shape the response. Logic is in `service.ts`.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { RouteDoc } from '../http/openapi.js';
import { param } from '../http/request.js';
import { parseInput } from '../http/validate.js';
import type { HangarContext } from '../kernel/context.js';
import { tasksDisabled } from '../tasks/service.js';
import {
  AsyncPredictRequest,
  BatchRequest,
  BatchResponse,
  ModelCard,
  PluginHealth,
  PluginSummary,
  PredictRequest,
  PredictResponse,
  ReloadResponse,
} from './schemas.js';
import type { PluginService } from './service.js';

export const PLUGIN_TASK_KIND = 'plugin.predict';

export function pluginRoutes(app: FastifyInstance, ctx: HangarContext, service: PluginService): void {
  const name = (req: FastifyRequest) => param(req, 'name');

  app.get('/api/v1/plugins', () => {
    return { plugins: service.list() };
  });

  app.post('/api/v1/plugins/reload', async () => {
    return { reloaded: await service.reloadAll() };
  });

  app.get('/api/v1/plugins/:name', async (req) => {
    return service.describe(name(req));
  });

  app.get('/api/v1/plugins/:name/health', async (req, reply) => {
    const health = service.health(name(req));
    if (health.status === 'ready') return health;
    // Unhealthy is a 503 (what probes act on) with the same record, plus `detail` like every error.
    reply.code(503);
    if (health.status === 'loading') reply.header('Retry-After', '1');
    return { detail: `plugin ${health.name} is ${health.status}${health.error ? `: ${health.error}` : ''}`, ...health };
  });

  app.get('/api/v1/plugins/:name/model_card', async (req) => {
    return service.card(name(req));
  });

  app.post('/api/v1/plugins/:name/predict', async (req) => {
    const plugin = name(req);
    service.health(plugin); // 404 before a body error for an unknown plugin
    const body = parseInput(PredictRequest, req.body, 'body');
    return service.predict(plugin, body.input, { principal: req.principal });
  });

  // Like every `…/batch` route: a task on the board (202, Location), its result the BatchResponse.
  app.post('/api/v1/plugins/:name/predict/batch', async (req, reply) => {
    const plugin = name(req);
    if (!ctx.tasks?.enabled) throw tasksDisabled();
    service.health(plugin);
    const body = parseInput(BatchRequest, req.body, 'body');
    const task = await ctx.tasks.submit({ kind: PLUGIN_TASK_KIND, target: plugin, input: body, principal: req.principal, metadata: { source: 'predict/batch' } });
    reply.code(202).header('Location', `/api/v1/tasks/${task.id}`);
    return task;
  });

  app.post('/api/v1/plugins/:name/predict/async', async (req, reply) => {
    const plugin = name(req);
    if (!ctx.tasks?.enabled) throw tasksDisabled();
    service.health(plugin);
    const body = parseInput(AsyncPredictRequest, req.body, 'body');
    const task = await ctx.tasks.submit({ kind: PLUGIN_TASK_KIND, target: plugin, input: body, principal: req.principal, metadata: { source: 'predict/async' } });
    reply.code(202).header('Location', `/api/v1/tasks/${task.id}`);
    return task;
  });

  app.post('/api/v1/plugins/:name/reload', async (req, reply) => {
    const health = await service.load(name(req));
    if (health.status === 'ready') return health;
    reply.code(503);
    return { detail: `plugin ${health.name} failed to load: ${health.error}`, ...health };
  });
}

const tags = ['plugins'];
const NotReady = { description: 'The plugin failed to load (or is loading): `{detail}` with the reason' };

export const PLUGIN_DOCS: RouteDoc[] = [
  { method: 'get', path: '/api/v1/plugins', summary: 'List ML plugins with their load status (broken drop-ins included, with their error)', tags, responses: { 200: { description: 'Plugins', schema: z.object({ plugins: z.array(PluginSummary) }) } } },
  { method: 'post', path: '/api/v1/plugins/reload', summary: 'Reload every plugin model', tags, responses: { 200: { description: 'Health of each plugin after its reload', schema: ReloadResponse } } },
  { method: 'get', path: '/api/v1/plugins/{name}', summary: 'One plugin: its list entry and health', tags, responses: { 200: { description: 'Plugin', schema: PluginSummary.extend({ health: PluginHealth }) }, 404: { description: 'Unknown plugin' } } },
  { method: 'get', path: '/api/v1/plugins/{name}/health', summary: 'Plugin health: 200 when ready, 503 while loading or after a failed load', tags, responses: { 200: { description: 'Ready', schema: PluginHealth }, 503: NotReady, 404: { description: 'Unknown plugin' } } },
  { method: 'get', path: '/api/v1/plugins/{name}/model_card', summary: 'Model card: task, input/output JSON Schemas, metrics (computed at load on held-out data), training data, limitations', tags, responses: { 200: { description: 'Model card', schema: ModelCard }, 404: { description: 'Unknown plugin' } } },
  { method: 'post', path: '/api/v1/plugins/{name}/predict', summary: 'Predict one input (runs in the plugin pool, off the HTTP thread)', tags, body: PredictRequest, responses: { 200: { description: 'Prediction', schema: PredictResponse }, 422: { description: 'Input does not match the plugin input model; detail names the field' }, 503: NotReady, 504: { description: 'The prediction timed out; its worker was replaced' }, 500: { description: 'The plugin threw or crashed its worker (only this request fails)' } } },
  { method: 'post', path: '/api/v1/plugins/{name}/predict/batch', summary: 'Predict many inputs as one task on the board; follow /api/v1/tasks/{id}. Its result reports failures per item (status and error) while the rest succeed', tags, body: BatchRequest, responses: { 202: { description: `The task (Location: /api/v1/tasks/{id}). Once completed its result is {${Object.keys(BatchResponse.shape).join(', ')}}, one entry of results per input, in order` }, 422: { description: 'The body is not {inputs: [...]} (1 to the limit)' }, 503: NotReady, 501: { description: 'The task subsystem is disabled' } } },
  { method: 'post', path: '/api/v1/plugins/{name}/predict/async', summary: 'Predict in the background on the task board: body `{input}` or `{inputs}`; follow /api/v1/tasks/{id}', tags, body: AsyncPredictRequest, responses: { 202: { description: 'The task (Location: /api/v1/tasks/{id})' }, 501: { description: 'The task subsystem is disabled' } } },
  { method: 'post', path: '/api/v1/plugins/{name}/reload', summary: 'Reload one plugin model (also clears a failed load once the cause is fixed)', tags, responses: { 200: { description: 'Ready', schema: PluginHealth }, 503: NotReady } },
];
