import { a2aSubsystem } from '../a2a/subsystem.js';
import { agentKind } from '../agents/kind.js';
import { agentsSubsystem } from '../agents/subsystem.js';
import { endpointsSubsystem } from '../endpoints/subsystem.js';
import { feedbackSubsystem } from '../feedback/subsystem.js';
import { docsRoutes } from '../http/docs.js';
import { platformRoutes, registerPlatformDocs } from '../platform/routes.js';
import { storageRoutes } from '../storage/routes.js';
import { tasksSubsystem } from '../tasks/subsystem.js';
import { threadsSubsystem } from '../threads/subsystem.js';
import type { Subsystem } from './context.js';

/**
 * Every subsystem of the server, in mount order. Routers with fixed paths come before the
 * per-agent ones (`/api/v1/:agent/...`), so `/api/v1/status` is never taken for an agent.
 */
export const SUBSYSTEMS: Subsystem[] = [
  endpointsSubsystem, // before platform: /api/v1/:agent/health would shadow /api/v1/endpoints/health
  {
    name: 'platform',
    kinds: [agentKind],
    setup: (ctx) => {
      registerPlatformDocs(ctx);
      Object.assign(ctx.agentSurface.endpoints, { health: '/api/v1/{agent}/health', card: '/api/v1/{agent}/card' });
    },
    routes: platformRoutes,
  },
  { name: 'docs', routes: (ctx) => docsRoutes(ctx.openapi) },
  { name: 'storage', routes: storageRoutes },
  tasksSubsystem,
  a2aSubsystem, // /api/v1/:agent/invoke/async and /api/v1/:agent/a2a/tasks (needs ctx.tasks)
  agentsSubsystem, // per-agent execution + HITL: /api/v1/:agent/{invoke,chat,optimize,threads/:id/(pending|approve|reject)}
  threadsSubsystem,
  feedbackSubsystem,
];
