/**
 * The platform subsystem: the `agent` drop-in kind, the root routes (info, probes, status, metrics,
 * discovery) and each agent's health, config, prompts and card. It reads the control plane, when
 * one runs, for held agents and maintenance.
 */
import { agentKind } from '../agents/kind.js';
import { mountRoutes } from '../http/route.js';
import type { Subsystem } from '../kernel/context.js';
import { platformRoutes } from './routes.js';
import { listAgents } from './service.js';

export const platformSubsystem: Subsystem = {
  name: 'platform',
  uses: ['control'],
  kinds: [agentKind],
  setup(ctx) {
    Object.assign(ctx.agentSurface.endpoints, { health: '/api/v1/{agent}/health', card: '/api/v1/{agent}/card' });
    // Agent routes are declared once, `/api/v1/{agent}/...`; /openapi.json lists the agents loaded
    // when it is built as the parameter's values, so a drop-in added a moment ago is among them.
    ctx.services.get('openapi').describeParam('agent', () => listAgents(ctx).map((agent) => agent.name));
  },
  routes: (app, ctx) => mountRoutes(app, platformRoutes(ctx)),
};
