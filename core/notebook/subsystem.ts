/**
 * The notebook subsystem of the main server: the `notebooks` service (shared with the
 * data-intelligence subsystem and notebook pipeline steps), session routes under `/api/notebooks`,
 * the live ws channel at `/api/notebooks/ws`, and every kernel stopped on shutdown.
 *
 * Provided at setup, not lazily: the service only resolves the notebooks folder when built, and
 * each kernel (a worker thread) starts when its notebook is first opened, so start-up pays nothing.
 */
import { mountRoutes } from '../http/route.js';
import type { Subsystem } from '../kernel/context.js';
import { NOTEBOOK_WS_PATH, notebookRoutes, notebookUpgradeHandler } from './routes.js';
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
    ctx.upgrades.set(NOTEBOOK_WS_PATH, notebookUpgradeHandler(service));
  },
  routes: (app, ctx) => mountRoutes(app, notebookRoutes(ctx.services.get('notebooks'))),
  async close(ctx) {
    await ctx.services.find('notebooks')?.closeAll();
  },
};
