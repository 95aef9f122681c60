/**
 * The notebook data-intelligence subsystem: smart preprocessing, algorithm match, patterns, the 13
 * built-in tools and scheduled runs, on top of the notebook subsystem's sessions (it must come
 * after `notebookSubsystem` in the list).
 */
import type { HangarContext, Subsystem } from '../../kernel/context.js';
import { serviceOf } from '../subsystem.js';
import { DataIntelligence } from './prep-and-match.js';
import { INTEL_DOCS } from './docs.js';
import { PatternService } from './patterns.js';
import { intelRoutes, type IntelServices } from './routes.js';
import { ScheduleService } from './scheduler.js';
import { NotebookTools } from './tools.js';

/** One set of services per running server (tests start several servers in one process). */
const services = new WeakMap<HangarContext, IntelServices>();

function servicesOf(ctx: HangarContext): IntelServices {
  let s = services.get(ctx);
  if (!s) {
    const notebooks = serviceOf(ctx);
    const intelligence = new DataIntelligence(notebooks);
    s = {
      intelligence,
      patterns: new PatternService(ctx.store, notebooks),
      tools: new NotebookTools(notebooks, intelligence, ctx.version),
      schedules: new ScheduleService(ctx.store, notebooks),
    };
    services.set(ctx, s);
  }
  return s;
}

export const notebookIntelSubsystem: Subsystem = {
  name: 'notebook-intel',
  async setup(ctx) {
    const s = servicesOf(ctx);
    ctx.openapi.add(...INTEL_DOCS);
    await s.patterns.seed();
    await s.schedules.start();
  },
  routes: (app, ctx) => intelRoutes(app, servicesOf(ctx)),
  async close(ctx) {
    await services.get(ctx)?.schedules.close();
    services.delete(ctx);
  },
};
