/**
 * Ingestion as the server wires it: the `ingestor` drop-in kind (folder `ingestors/`), the service,
 * the task kinds for /run/async and /run/batch (tasks.ts), and the routes.
 */
import { mountRoutes } from '../http/route.js';
import type { Subsystem } from '../kernel/context.js';
import { ingestorKind } from './kind.js';
import { ingestionRoutes } from './routes.js';
import { IngestionService } from './service.js';
import { registerIngestionTasks } from './tasks.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    ingestion: IngestionService;
  }
}

export const ingestionSubsystem: Subsystem = {
  name: 'ingestion',
  provides: ['ingestion'],
  depends: ['tasks'],
  uses: ['invocations'],
  kinds: [ingestorKind],
  setup(ctx) {
    const service = new IngestionService({
      registry: ctx.registry,
      store: ctx.store,
      workspace: ctx.paths.root,
      invocations: () => ctx.services.find('invocations'),
    });
    ctx.services.provide('ingestion', service);
    registerIngestionTasks(ctx.services.get('tasks'), service);
  },
  routes: (app, ctx) => mountRoutes(app, ingestionRoutes(ctx.services.get('ingestion'), ctx.services.get('tasks'))),
};
