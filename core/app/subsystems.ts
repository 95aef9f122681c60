import { a2aSubsystem } from '../a2a/subsystem.js';
import { agentsSubsystem } from '../agents/subsystem.js';
import { coderunSubsystem } from '../coderun/subsystem.js';
import { controlSubsystem } from '../control/subsystem.js';
import { endpointsSubsystem } from '../endpoints/subsystem.js';
import { feedbackSubsystem } from '../feedback/subsystem.js';
import { docsSubsystem } from '../http/subsystem.js';
import { ingestionSubsystem } from '../ingestion/subsystem.js';
import type { Subsystem } from '../kernel/context.js';
import { logsSubsystem } from '../logs/subsystem.js';
import { notebookIntelSubsystem } from '../notebook/intel/subsystem.js';
import { notebookSubsystem } from '../notebook/subsystem.js';
import { pipelinesSubsystem } from '../pipelines/subsystem.js';
import { platformSubsystem } from '../platform/subsystem.js';
import { pluginsSubsystem } from '../predictors/subsystem.js';
import { storageSubsystem } from '../storage/subsystem.js';
import { studioSubsystem } from '../studio/subsystem.js';
import { tasksSubsystem } from '../tasks/subsystem.js';
import { threadsSubsystem } from '../threads/subsystem.js';
import { uiSubsystem } from '../ui/subsystem.js';

/**
 * Every subsystem of the server. They are set up in the order core/app/plan.ts computes from what
 * each provides, depends on and uses (this list's order among equals), then add their routes and
 * hooks in that order. Route order does not decide matching — Fastify's router prefers static
 * segments, so `/api/v1/endpoints/health` is never taken for an agent named "endpoints" — but hook
 * order does: hooks run in the order added.
 */
export const SUBSYSTEMS: Subsystem[] = [
  controlSubsystem, // its gate (maintenance, drain, disable) is a preValidation hook: before every preHandler
  logsSubsystem, // its preHandler hook records calls to agents, endpoints and pipelines that pass the gate
  tasksSubsystem, // endpoints, pipelines, plugins, ingestion and A2A depend on it (their task kinds)
  endpointsSubsystem,
  pipelinesSubsystem, // looks up endpoints, agents and plugins when a step runs
  platformSubsystem,
  docsSubsystem,
  storageSubsystem,
  pluginsSubsystem, // /api/v1/plugins/... (its worker pool starts on first use)
  ingestionSubsystem, // /api/v1/ingestors, /api/v1/ingestion/...
  a2aSubsystem, // /api/v1/:agent/invoke/async and /api/v1/:agent/a2a/tasks
  agentsSubsystem, // per-agent execution + HITL: /api/v1/:agent/{invoke,chat,optimize,threads/:id/(pending|approve|reject)}
  threadsSubsystem,
  feedbackSubsystem,
  coderunSubsystem, // /api/runs, /api/teams, /api/tasks, /api/config, /api/calibration behind the session token
  studioSubsystem, // /studio/... debug interface, loaded on its first request
  uiSubsystem, // /ui/ (desktop/views) and the live channel /api/v1/events
  notebookSubsystem, // /api/notebooks/... and the live channel /api/notebooks/ws
  notebookIntelSubsystem, // /api/smartprep, /api/algorithm-match, /api/patterns, /api/tools, schedules (on the `notebooks` service)
];
