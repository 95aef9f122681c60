/**
 * Routes of the ML plugins: parse, call the service, shape the response. Logic is in `service.ts`.
 */
import { Router } from 'express';
import { z } from 'zod';
import type { RouteDoc } from '../http/openapi.js';
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

export function pluginRoutes(ctx: HangarContext, service: PluginService): Router {
  const router = Router();
  const name = (raw: unknown) => String(raw);

  router.get('/api/v1/plugins', (_req, res) => {
    res.json({ plugins: service.list() });
  });

  router.post('/api/v1/plugins/reload', async (_req, res) => {
    res.json({ reloaded: await service.reloadAll() });
  });

  router.get('/api/v1/plugins/:name', (req, res) => {
    res.json(service.describe(name(req.params.name)));
  });

  router.get('/api/v1/plugins/:name/health', (req, res) => {
    const health = service.health(name(req.params.name));
    // Unhealthy is a 503 (what probes act on) with the same record, plus `detail` like every error.
    if (health.status !== 'ready') res.status(503).set(health.status === 'loading' ? { 'Retry-After': '1' } : {}).json({ detail: `plugin ${health.name} is ${health.status}${health.error ? `: ${health.error}` : ''}`, ...health });
    else res.json(health);
  });

  router.get('/api/v1/plugins/:name/model_card', (req, res) => {
    res.json(service.card(name(req.params.name)));
  });

  router.post('/api/v1/plugins/:name/predict', async (req, res) => {
    const plugin = name(req.params.name);
    service.health(plugin); // 404 before a body error for an unknown plugin
    const body = parseInput(PredictRequest, req.body, 'body');
    res.json(await service.predict(plugin, body.input, { principal: req.principal }));
  });

  router.post('/api/v1/plugins/:name/predict/batch', async (req, res) => {
    const plugin = name(req.params.name);
    service.health(plugin);
    const body = parseInput(BatchRequest, req.body, 'body');
    const { head, parts } = await service.batchEncoded(plugin, body.inputs, { principal: req.principal });
    // The items are JSON already (serialised in the workers): write them piece by piece instead of
    // building and stringifying one big object on the HTTP thread.
    res.status(200).type('json');
    res.write(`${JSON.stringify(head).slice(0, -1)},"results":[`);
    parts.forEach((part, i) => res.write(i === 0 || !part ? part : `,${part}`));
    res.end(']}');
  });

  router.post('/api/v1/plugins/:name/predict/async', async (req, res) => {
    const plugin = name(req.params.name);
    if (!ctx.tasks?.enabled) throw tasksDisabled();
    service.health(plugin);
    const body = parseInput(AsyncPredictRequest, req.body, 'body');
    const task = await ctx.tasks.submit({ kind: PLUGIN_TASK_KIND, target: plugin, input: body, principal: req.principal, metadata: { source: 'predict/async' } });
    res.status(202).location(`/api/v1/tasks/${task.id}`).json(task);
  });

  router.post('/api/v1/plugins/:name/reload', async (req, res) => {
    const health = await service.load(name(req.params.name));
    res.status(health.status === 'ready' ? 200 : 503).json(health.status === 'ready' ? health : { detail: `plugin ${health.name} failed to load: ${health.error}`, ...health });
  });

  return router;
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
  { method: 'post', path: '/api/v1/plugins/{name}/predict/batch', summary: 'Predict many inputs in one call; failures are reported per item (status and error) while the rest succeed', tags, body: BatchRequest, responses: { 200: { description: 'One result per input, in order', schema: BatchResponse }, 503: NotReady } },
  { method: 'post', path: '/api/v1/plugins/{name}/predict/async', summary: 'Predict in the background on the task board: body `{input}` or `{inputs}`; follow /api/v1/tasks/{id}', tags, body: AsyncPredictRequest, responses: { 202: { description: 'The task (Location: /api/v1/tasks/{id})' }, 501: { description: 'The task subsystem is disabled' } } },
  { method: 'post', path: '/api/v1/plugins/{name}/reload', summary: 'Reload one plugin model (also clears a failed load once the cause is fixed)', tags, responses: { 200: { description: 'Ready', schema: PluginHealth }, 503: NotReady } },
];
