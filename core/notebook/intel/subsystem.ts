/**
 * The notebook data-intelligence subsystem: smart preprocessing, algorithm match, patterns, the 13
 * built-in tools and scheduled runs, on top of the `notebooks` service's sessions. Set up at start,
 * not lazily: the starter patterns are seeded and the stored schedules armed before the server
 * listens.
 */
import { mountRoutes } from '../../http/route.js';
import type { Subsystem } from '../../kernel/context.js';
import { intelRoutes } from './routes.js';
import { createNotebookIntel, type NotebookIntel } from './service.js';

declare module '../../kernel/services.js' {
  interface ServiceMap {
    notebookIntel: NotebookIntel;
  }
}

export const notebookIntelSubsystem: Subsystem = {
  name: 'notebook-intel',
  provides: ['notebookIntel'],
  depends: ['notebooks'],
  async setup(ctx) {
    const intel = createNotebookIntel(ctx.store, ctx.services.get('notebooks'), ctx.version);
    ctx.services.provide('notebookIntel', intel);
    await intel.patterns.seed();
    await intel.schedules.start();
  },
  routes: (app, ctx) => mountRoutes(app, intelRoutes(ctx.services.get('notebookIntel'))),
  async close(ctx) {
    await ctx.services.find('notebookIntel')?.schedules.close();
  },
};
