/**
 * Ingestion as the server wires it: the `ingestor` drop-in kind (folder `ingestors/`), the service,
 * the task kinds for /run/async and /run/batch (tasks.ts), and the routes.
 */
import { mountRoutes } from '../http/route.js';
import type { Subsystem } from '../kernel/context.js';
import { hostReports } from '../kernel/dropin-host.js';
import { IngestorHosts } from './hosts.js';
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
    // Started by an ingestor's first call, not ahead of it: runs are rare and long, so a thread
    // per ingestor held from start-up would cost more than the 100-300 ms it saves once.
    const hosts = new IngestorHosts({
      registry: ctx.registry,
      root: ctx.paths.root,
      maxHeapMb: ctx.settings.ingestors.maxHeapMb,
      watchdogMs: ctx.settings.dropins.watchdogMs,
      ...hostReports(ctx, 'ingestor'),
    });
    ctx.registry.on('change', (change) => {
      if (change.kind === 'ingestor' && change.type === 'removed') hosts.forget(change.name);
    });
    const service = new IngestionService({
      registry: ctx.registry,
      store: ctx.store,
      workspace: ctx.paths.root,
      invocations: () => ctx.services.find('invocations'),
      hosts,
      timeoutMs: ctx.settings.ingestors.timeoutMs,
    });
    ctx.services.provide('ingestion', service);
    registerIngestionTasks(ctx.services.get('tasks'), service);
  },
  routes: (app, ctx) => mountRoutes(app, ingestionRoutes(ctx.services.get('ingestion'), ctx.services.get('tasks'))),
  // The ingestors' host threads stop with the server.
  close: (ctx) => ctx.services.find('ingestion')?.close(),
};
