/**
 * Thread routes. The service belongs to the agent runtime (chat writes threads too); without it the
 * routes answer the spec's 400 "thread storage is not configured".
 *
 * The routes and their schemas are loaded by the first request under /api/v1/:agent/threads
 * (core/http/on-first-use.ts), not at start: nothing else in a start reads them, and their module
 * and 10 routes were part of every start's module evaluation and route registration.
 */

import { mountOnFirstUse } from '../http/on-first-use.js';
import type { Subsystem } from '../kernel/context.js';

export const threadsSubsystem: Subsystem = {
  name: 'threads',
  uses: ['agents'],
  routes: (app, ctx) => {
    mountOnFirstUse(app, ctx.services.get('openapi'), {
      prefixes: ['/api/v1/:agent/threads'],
      load: async () => ({ routes: (await import('./routes.js')).threadRoutes(ctx) }),
    });
  },
};
