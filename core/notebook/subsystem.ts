/**
 * The notebook subsystem of the main server: the `notebooks` service (shared with the
 * data-intelligence subsystem and notebook pipeline steps), session routes under `/api/notebooks`,
 * the live ws channel at `/api/notebooks/ws`, and every kernel stopped on shutdown.
 *
 * Provided at setup, not lazily: the service only resolves the notebooks folder when built, and
 * each kernel (a worker thread) starts when its notebook is first opened, so start-up pays nothing.
 * The routes and the ws channel (routes.ts) are loaded by the first request or socket
 * (core/http/on-first-use.ts): their module and 23 routes were a start's work for a page most
 * starts never open.
 */
import { mountOnFirstUse } from '../http/on-first-use.js';
import type { Subsystem } from '../kernel/context.js';
import type { notebookUpgradeHandler } from './routes.js';
import { NOTEBOOK_WS_PATH } from './schemas.js';
import { NotebookService } from './service.js';
import { NotebookSteps } from './steps.js';

declare module '../kernel/services.js' {
  interface ServiceMap {
    notebooks: NotebookService;
    /** Notebook cells as pipeline steps (core/notebook/steps.ts), for the pipelines subsystem. */
    notebookSteps: NotebookSteps;
  }
}

export const notebookSubsystem: Subsystem = {
  name: 'notebook',
  provides: ['notebooks', 'notebookSteps'],
  setup(ctx) {
    // Open sessions follow edits made on disk when the server watches files (marimo's --watch).
    const service = new NotebookService({ root: ctx.paths.root, watch: ctx.settings.watch });
    ctx.services.provide('notebooks', service);
    ctx.services.provideLazy('notebookSteps', () => new NotebookSteps(service));
    // The first socket loads the routes module too; a load that failed is tried again by the next.
    let upgrade: Promise<ReturnType<typeof notebookUpgradeHandler>> | undefined;
    ctx.upgrades.set(NOTEBOOK_WS_PATH, (req, socket, head) => {
      upgrade ??= import('./routes.js').then((routes) => routes.notebookUpgradeHandler(service));
      upgrade.then(
        (handle) => handle(req, socket, head),
        () => {
          upgrade = undefined;
          socket.destroy();
        },
      );
    });
  },
  routes: (app, ctx) =>
    mountOnFirstUse(app, ctx.services.get('openapi'), {
      prefixes: ['/api/notebooks'],
      load: async () => ({ routes: (await import('./routes.js')).notebookRoutes(ctx.services.get('notebooks')) }),
    }),
  async close(ctx) {
    await ctx.services.find('notebooks')?.closeAll();
  },
};
