/**
 * Ingestion as the server wires it: the `ingestor` drop-in kind (folder `ingestors/`), the service,
 * the `ingestion.run` task kind for /run/async, and the routes. Mounted after the task subsystem.
 */
import type { HangarContext, Subsystem } from '../kernel/context.js';
import { ingestorKind } from './kind.js';
import { INGESTION_DOCS, INGESTION_TASK_KIND, ingestionRoutes } from './routes.js';
import { RunRequest } from './schemas.js';
import { IngestionService } from './service.js';
import { unprocessable } from '../http/errors.js';
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
    ctx.openapi.add(...INGESTION_DOCS);
  },
  routes: (app, ctx) => ingestionRoutes(app, ctx, ingestionServiceOf(ctx)),
};
