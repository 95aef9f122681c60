/** Feedback routes; the service belongs to the agent runtime. */
import type { Subsystem } from '../kernel/context.js';
import { mountRoutes } from '../http/route.js';
import { feedbackRoutes } from './routes.js';

export const feedbackSubsystem: Subsystem = {
  name: 'feedback',
  depends: ['agents'],
  routes: (app, ctx) => mountRoutes(app, feedbackRoutes(ctx)),
};
