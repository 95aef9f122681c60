/** Feedback routes; the service belongs to the agent runtime. */

import { mountRoutes } from '../http/route.js';
import type { Subsystem } from '../kernel/context.js';
import { feedbackRoutes } from './routes.js';

export const feedbackSubsystem: Subsystem = {
  name: 'feedback',
  depends: ['agents'],
  routes: (app, ctx) => mountRoutes(app, feedbackRoutes(ctx)),
};
