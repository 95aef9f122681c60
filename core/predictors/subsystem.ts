/**
 * ML plugins as the server wires them: the `plugin` drop-in kind (folder `plugins/`), one shared
 * worker pool sized by `plugins.threads`, the service, the `plugin.predict` task kind for
 * /predict/async, and the routes. Mounted after the task subsystem, whose service it uses.
 */
import os from 'node:os';
import { Counter, Histogram } from 'prom-client';
import path from 'node:path';
import { unprocessable } from '../http/errors.js';
import { formatIssues } from '../http/validate.js';
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { pluginKind } from './kind.js';
import { PluginPool } from './pool.js';
import { PLUGIN_DOCS, PLUGIN_TASK_KIND, pluginRoutes } from './routes.js';
import { AsyncPredictRequest } from './schemas.js';
import { PluginService } from './service.js';

const services = new WeakMap<HangarContext, { service: PluginService; pool: PluginPool }>();

/** The plugin service of a running server (benchmarks and tests reach it through here). */
export function pluginServiceOf(ctx: HangarContext): PluginService {
  const held = services.get(ctx);
  if (!held) throw new Error('the plugins subsystem is not set up on this server');
  return held.service;
}

export const pluginsSubsystem: Subsystem = {
  name: 'plugins',
  kinds: [pluginKind],
  setup(ctx) {
    // One core stays for the HTTP thread: predictions must never starve it.
    const threads = ctx.settings.plugins.threads ?? Math.max(1, os.availableParallelism() - 1);
    const pool = new PluginPool({ threads, maxHeapMb: ctx.settings.plugins.maxHeapMb });
    const predictions = new Counter({
      name: 'plugin_predictions_total',
      help: 'ML plugin predictions (items, batch items included) by plugin and outcome',
      labelNames: ['plugin', 'outcome'],
      registers: [ctx.metrics.registry],
    });
    const calls = new Histogram({
      name: 'plugin_call_duration_seconds',
      help: 'ML plugin calls (predict, batch, async) by plugin and operation',
      labelNames: ['plugin', 'operation'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [ctx.metrics.registry],
    });
    const service = new PluginService({
      registry: ctx.registry,
      pool,
      root: ctx.paths.root,
      buildDir: path.join(ctx.paths.state, 'build', 'plugins'),
      log: ctx.log,
      invocations: () => ctx.invocations,
      observe: ({ plugin, operation, items, failed, seconds }) => {
        if (items > failed) predictions.inc({ plugin, outcome: 'ok' }, items - failed);
        if (failed) predictions.inc({ plugin, outcome: 'error' }, failed);
        calls.observe({ plugin, operation }, seconds);
      },
    });
    services.set(ctx, { service, pool });
    ctx.tasks?.registerKind(PLUGIN_TASK_KIND, {
      // Predictions have no side effects: a task interrupted by a restart is simply run again.
      idempotent: true,
      prepare(submission) {
        service.health(submission.target);
        const parsed = AsyncPredictRequest.safeParse(submission.input);
        if (!parsed.success) throw unprocessable(formatIssues(parsed.error.issues, 'body.input'));
        return { input: parsed.data };
      },
      run: async (task) => {
        const body = task.task.input as { input?: unknown; inputs?: unknown[] };
        const call = { principal: task.task.principal, taskId: task.task.id };
        if (body.inputs) {
          return service.batch(task.task.target, body.inputs, {
            ...call,
            // The invocation log tells the two doors apart: /predict/batch and /predict/async {inputs}.
            operation: task.task.metadata?.source === 'predict/batch' ? 'batch' : 'batch.async',
            onProgress: (done, total) => task.progress((100 * done) / total, `${done}/${total} predicted`),
          });
        }
        return service.predict(task.task.target, body.input, { ...call, operation: 'predict.async' });
      },
    });
    ctx.openapi.add(...PLUGIN_DOCS);
  },
  routes: (app, ctx) => pluginRoutes(app, ctx, pluginServiceOf(ctx)),
  async close(ctx) {
    const held = services.get(ctx);
    if (!held) return;
    held.service.close();
    await held.pool.close();
  },
};
