/**
 * Ingestion as the server wires it: the `ingestor` drop-in kind (folder `ingestors/`), the service,
 * the `ingestion.run` task kind for /run/async, and the routes. Mounted after the task subsystem.
 */
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { ingestorKind } from './kind.js';
import { INGESTION_BATCH_TASK_KIND, INGESTION_DOCS, INGESTION_TASK_KIND, ingestionRoutes } from './routes.js';
import { BatchRunRequest, RunRequest, type BatchRunResult } from './schemas.js';
import { IngestionService } from './service.js';
import { errorMessage, HttpError, unprocessable } from '../http/errors.js';
import { formatIssues } from '../http/validate.js';

const services = new WeakMap<HangarContext, IngestionService>();

export function ingestionServiceOf(ctx: HangarContext): IngestionService {
  const service = services.get(ctx);
  if (!service) throw new Error('the ingestion subsystem is not set up on this server');
  return service;
}

export const ingestionSubsystem: Subsystem = {
  name: 'ingestion',
  kinds: [ingestorKind],
  setup(ctx) {
    const service = new IngestionService({ registry: ctx.registry, store: ctx.store, workspace: ctx.paths.root, invocations: () => ctx.invocations });
    services.set(ctx, service);
    ctx.tasks?.registerKind(INGESTION_TASK_KIND, {
      // Runs upsert under stable ids, so a run interrupted by a restart is simply run again.
      idempotent: true,
      prepare(submission) {
        const parsed = RunRequest.safeParse(submission.input);
        if (!parsed.success) throw unprocessable(formatIssues(parsed.error.issues, 'body'));
        service.check(submission.target, parsed.data.options);
        return { input: parsed.data };
      },
      run: (task) =>
        service.run(task.task.target, task.task.input as RunRequest, {
          principal: task.task.principal,
          signal: task.signal,
          taskId: task.task.id,
          operation: 'run.async',
          onProgress: (done, total) => task.progress((100 * done) / total, `${done}/${total} resources`),
        }),
    });
    ctx.tasks?.registerKind(INGESTION_BATCH_TASK_KIND, {
      // Each run upserts under stable ids, so replaying the whole batch after a restart is safe.
      idempotent: true,
      prepare(submission) {
        const parsed = BatchRunRequest.safeParse(submission.input);
        if (!parsed.success) throw unprocessable(formatIssues(parsed.error.issues, 'body'));
        // Every run's options up front, as the other batches check every item before a task exists.
        parsed.data.runs.forEach((run, i) => service.check(submission.target, run.options, `body.runs.${i}.options`));
        return { input: parsed.data };
      },
      run: async (task): Promise<BatchRunResult> => {
        const { runs } = task.task.input as BatchRunRequest;
        const results: BatchRunResult['results'] = [];
        // One after another (runs of an ingestor never overlap anyway); a failing run does not stop
        // the rest, a cancelled task does (the board discards the outcome then).
        for (const [index, run] of runs.entries()) {
          if (task.signal.aborted) break;
          try {
            const result = await service.run(task.task.target, run, { principal: task.task.principal, signal: task.signal, taskId: task.task.id, operation: 'run.batch' });
            results.push({ index, ok: true, result });
          } catch (err) {
            results.push({ index, ok: false, status: err instanceof HttpError ? err.status : 500, error: errorMessage(err) });
          }
          task.progress((100 * (index + 1)) / runs.length, `${index + 1}/${runs.length} runs`);
        }
        const succeeded = results.filter((r) => r.ok).length;
        return { total: runs.length, succeeded, failed: results.length - succeeded, results };
      },
    });
    ctx.openapi.add(...INGESTION_DOCS);
  },
  routes: (app, ctx) => ingestionRoutes(app, ctx, ingestionServiceOf(ctx)),
};
