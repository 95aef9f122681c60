/**
 * ML plugins as the server wires them: the `plugin` drop-in kind (folder `plugins/`), one shared
 * worker pool sized by `plugins.threads`, the service, the `plugin.predict` task kind for
 * /predict/async and /predict/batch, and the routes.
 *
 * The service is provided lazily: a workspace without plugins never builds it, so no worker pool
 * and no plugin builds. It is built by whichever comes first — discovery registering a plugin (its
 * model then loads at once, as before, so the first prediction finds it ready) or a use (a plugin
 * route, a pipeline's plugin step, a plugin task) — and then loads every plugin registered.
 */
import { readdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { mountRoutes } from '../http/route.js';
import { formatIssues } from '../http/validate.js';
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { fail } from '../kernel/errors.js';
import type { RegistryChange } from '../kernel/registry.js';
import { Counter, Histogram } from '../lib/prom.js';
import { handOverJson } from '../tasks/types.js';
import { pluginKind } from './kind.js';
import { PluginPool } from './pool.js';
import { PLUGIN_TASK_KIND, pluginRoutes } from './routes.js';
import { AsyncPredictRequest } from './schemas.js';
import { PluginService } from './service.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    predictors: PluginService;
  }
}

/** The metrics are registered at setup, so /metrics names them before the first prediction. */
function pluginMetrics(ctx: HangarContext) {
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
  return ({
    plugin,
    operation,
    items,
    failed,
    seconds,
  }: {
    plugin: string;
    operation: string;
    items: number;
    failed: number;
    seconds: number;
  }) => {
    if (items > failed) predictions.inc({ plugin, outcome: 'ok' }, items - failed);
    if (failed) predictions.inc({ plugin, outcome: 'error' }, failed);
    calls.observe({ plugin, operation }, seconds);
  };
}

export const pluginsSubsystem: Subsystem = {
  name: 'plugins',
  provides: ['predictors'],
  depends: ['tasks'],
  uses: ['invocations'],
  kinds: [pluginKind],
  setup(ctx) {
    const observe = pluginMetrics(ctx);
    ctx.services.provideLazy('predictors', () => {
      // One core stays for the HTTP thread: predictions must never starve it.
      const threads = ctx.settings.plugins.threads ?? Math.max(1, os.availableParallelism() - 1);
      return new PluginService({
        registry: ctx.registry,
        pool: new PluginPool({ threads, maxHeapMb: ctx.settings.plugins.maxHeapMb }),
        root: ctx.paths.root,
        buildDir: path.join(ctx.paths.state, 'build', 'plugins'),
        log: ctx.log,
        invocations: () => ctx.services.find('invocations'),
        observe,
      });
    });
    const plugins = () => ctx.services.get('predictors');
    const buildOnFirstPlugin = (change: RegistryChange) => {
      if (change.kind !== 'plugin' || (change.type !== 'added' && change.type !== 'updated')) return;
      ctx.registry.off('change', buildOnFirstPlugin);
      plugins();
    };
    ctx.registry.on('change', buildOnFirstPlugin);
    // A workspace with something in plugins/ starts its pool's first thread when discovery registers
    // its first drop-in of any kind, so the thread boots (a Node thread, the pool's bundle, zod) on
    // another core while the scan goes on, not after the scan has reached plugins/ (sorted after
    // agents/: at 1,000 agents the scan holds the server's thread a few hundred ms). Not at set-up:
    // the booting thread then shared the 2-core machine with routes, listen and the whole scan, and
    // the example workspace reached /readiness ~40 ms later (median of 8 alternating starts, 465
    // against 425 ms), while a thread started with the scan is still ready with the plugins.
    if (hasEntries(path.join(ctx.paths.root, pluginKind.folder))) {
      const warmWithTheScan = () => {
        ctx.registry.off('change', warmWithTheScan);
        plugins().warm();
      };
      ctx.registry.on('change', warmWithTheScan);
    }
    ctx.services.get('tasks').registerKind(PLUGIN_TASK_KIND, {
      // Predictions have no side effects: a task interrupted by a restart is simply run again.
      idempotent: true,
      prepare(submission) {
        plugins().health(submission.target);
        const parsed = AsyncPredictRequest.safeParse(submission.input);
        if (!parsed.success) throw fail('HANGAR_PLUGIN_INPUT_INVALID', { problems: formatIssues(parsed.error.issues, 'body.input') });
        // zod's output is a new object the route's parse made: the board keeps it without a copy.
        return { input: handOverJson(parsed.data) };
      },
      run: async (task) => {
        const body = task.task.input as { input?: unknown; inputs?: unknown[] };
        const call = { principal: task.task.principal, taskId: task.task.id };
        if (body.inputs) {
          // The results are parsed from the workers' JSON text just now (PredictorService.batch).
          return handOverJson(
            await plugins().batch(task.task.target, body.inputs, {
              ...call,
              // The invocation log tells the two doors apart: /predict/batch and /predict/async {inputs}.
              operation: task.task.metadata?.source === 'predict/batch' ? 'batch' : 'batch.async',
              onProgress: (done, total) => task.progress((100 * done) / total, `${done}/${total} predicted`),
            }),
          );
        }
        return plugins().predict(task.task.target, body.input, { ...call, operation: 'predict.async' });
      },
    });
  },
  routes: (app, ctx) =>
    mountRoutes(
      app,
      pluginRoutes(() => ctx.services.get('predictors'), ctx.services.get('tasks')),
    ),
  async close(ctx) {
    // Only a service that was used has a pool to stop.
    if (ctx.services.isBuilt('predictors')) await ctx.services.get('predictors').close();
  },
};

/** Whether `dir` holds anything that could be a drop-in (names starting with `_` or `.` are helpers). */
function hasEntries(dir: string): boolean {
  try {
    return readdirSync(dir).some((name) => !name.startsWith('_') && !name.startsWith('.'));
  } catch {
    return false;
  }
}
