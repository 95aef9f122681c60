/** The store's statistics route; the store itself is opened by the server (core/app/server.ts), before any subsystem. */
import { mountRoutes } from '../http/route.js';
import type { Subsystem } from '../kernel/context.js';
import { storageRoutes } from './routes.js';

export const storageSubsystem: Subsystem = {
  name: 'storage',
  routes: (app, ctx) => mountRoutes(app, storageRoutes(ctx.store)),
};
