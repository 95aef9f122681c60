/** Thread routes; the service itself belongs to the agent runtime (chat writes threads too). */
import type { Subsystem } from '../kernel/context.js';
import { registerThreadDocs, threadRoutes } from './routes.js';

export const threadsSubsystem: Subsystem = {
  name: 'threads',
  setup: registerThreadDocs,
  routes: threadRoutes,
};
