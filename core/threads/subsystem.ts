/**
 * Thread routes. The service belongs to the agent runtime (chat writes threads too); without it the
 * routes answer the spec's 400 "thread storage is not configured".
 */

import { mountRoutes } from '../http/route.js';
import type { Subsystem } from '../kernel/context.js';
import { threadRoutes } from './routes.js';

export const threadsSubsystem: Subsystem = {
  name: 'threads',
  uses: ['agents'],
  routes: (app, ctx) => mountRoutes(app, threadRoutes(ctx)),
};
