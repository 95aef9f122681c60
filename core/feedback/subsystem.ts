/** Feedback routes; the service belongs to the agent runtime. */
import type { Subsystem } from '../kernel/context.js';
import { feedbackRoutes, registerFeedbackDocs } from './routes.js';

export const feedbackSubsystem: Subsystem = {
  name: 'feedback',
  setup: registerFeedbackDocs,
  routes: feedbackRoutes,
};
