/**
 * Coding-run HTTP routes (spec 3, "Coding-run HTTP routes"), all behind the session token
 * (core/coderun/session.ts): core/coderun/subsystem.ts mounts them in a Fastify scope of their own
 * whose `onRequest` hook checks it, so the guard covers exactly these routes and nothing else.
 * This module is imported by the first coding-run request (core/http/on-first-use.ts), not at start.
 *
 * Routes beyond the spec's table, for the approval gate and the live view: GET /api/runs,
 * GET /api/runs/{id}, GET /api/runs/{id}/events (SSE), GET|PATCH /api/runs/{id}/plan,
 * POST /api/runs/{id}/approve, POST /api/runs/{id}/cancel, GET /api/config.
 *
 * Handlers take the service from a getter: the service is built on the first coding-run request,
 * not at start-up (core/coderun/subsystem.ts).
 */
import { type AnyRoute, defineRoute } from '../http/route.js';
import { resumePoint, serveSse } from '../http/sse.js';
import {
  ActivateRequest,
  ActivityQuery,
  ManagerRequest,
  PlanEdit,
  PreselectRequest,
  RepoQuery,
  StartRunRequest,
  TaskPatch,
} from './schemas.js';
import type { CodeRunService } from './service.js';
import { TeamPatch, TeamSchema } from './team-schema.js';

const tags = ['coding runs'];

/**
 * Teams routes act on `?repo=`, else a body's `repo` (the service then falls back to `code.repo`,
 * then the workspace). Bodies the service validates itself (a team, a patch, a plan edit, the
 * configuration) are passed on as sent, so its 422s name the fields as before; their schemas here
 * document them.
 */
const repoOf = (code: CodeRunService, query: { repo?: string }, body: unknown) =>
  code.repoOf(query.repo ?? (body as { repo?: string } | undefined)?.repo);
const withoutRepo = (body: unknown) => {
  const { repo: _repo, ...rest } = (body ?? {}) as Record<string, unknown>;
  return rest;
};

export function codeRoutes(service: () => CodeRunService): AnyRoute[] {
  return [
    // ---- runs
    defineRoute({
      method: 'POST',
      url: '/api/runs',
      summary: 'Start a coding run (team pins are run-scoped)',
      tags,
      schema: { body: StartRunRequest, response: { 202: 'Run started' } },
      handler: async ({ body, reply }) => {
        const run = await service().startRun(body);
        reply.code(202).header('Location', `/api/runs/${run.id}`);
        return run;
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/runs',
      summary: 'List runs, newest first',
      tags,
      handler: async () => ({ runs: await service().list() }),
    }),
    defineRoute({ method: 'GET', url: '/api/runs/latest', summary: 'The latest run', tags, handler: () => service().latest() }),
    defineRoute({
      method: 'GET',
      url: '/api/runs/:id',
      summary: 'One run with its board, gates, tickets and repairs',
      tags,
      handler: ({ params }) => service().get(params.id),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/runs/:id/events',
      summary: 'Run events (SSE, replay with Last-Event-ID)',
      tags,
      schema: { response: { 200: { description: 'event stream', contentType: 'text/event-stream' } } },
      handler: async ({ params, req, reply }) => {
        const since = resumePoint(req, req.query as Record<string, unknown>);
        const code = service();
        const source = await code.eventSource(params.id);
        await serveSse(reply, source, { since, snapshot: () => code.get(params.id), headers: { 'X-Run-Id': params.id } });
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/runs/:id/plan',
      summary: 'The plan-approval card (up to 60 tasks)',
      tags,
      handler: ({ params }) => service().plan(params.id),
    }),
    defineRoute({
      method: 'PATCH',
      url: '/api/runs/:id/plan',
      summary: 'Edit the proposed plan at the approval gate',
      tags,
      schema: { body: PlanEdit },
      handler: ({ params, req }) => service().editPlan(params.id, req.body),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/runs/:id/approve',
      summary: 'Approve the plan and start work',
      tags,
      handler: ({ params }) => service().approve(params.id),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/runs/:id/cancel',
      summary: 'Cancel a run (workers stopped, run branch left clean)',
      tags,
      handler: ({ params }) => service().cancel(params.id),
    }),

    // ---- teams
    defineRoute({
      method: 'GET',
      url: '/api/teams',
      summary: 'Teams with default_manager, dynamic_enabled, running, effective_manager, manager_default',
      tags,
      schema: { querystring: RepoQuery },
      handler: async ({ query, req }) => {
        const code = service();
        return code.listTeams(await repoOf(code, query, req.body));
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/teams',
      summary: 'Create a team (project definition in .hangar/teams)',
      tags,
      schema: { querystring: RepoQuery, body: TeamSchema },
      handler: async ({ query, req, reply }) => {
        const code = service();
        const created = await code.library.create(await repoOf(code, query, req.body), withoutRepo(req.body) as never);
        reply.code(201);
        return { ...created.team, source: created.source };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/teams/preselect',
      summary: 'Which teams a request selects and why (no model call)',
      tags,
      schema: { body: PreselectRequest },
      handler: async ({ body }) => {
        const code = service();
        return code.preselect(body.request, await code.repoOf(body.repo), body.teams);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/teams/activate',
      summary: 'Write the org chart and pin it for the next run',
      tags,
      schema: { body: ActivateRequest },
      handler: async ({ body }) => {
        const code = service();
        return code.activate(await code.repoOf(body.repo), body.teams);
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/api/teams/activity',
      summary: 'Classified team events; query=<run id> reads a past run',
      tags,
      schema: { querystring: ActivityQuery },
      handler: ({ query }) => service().activity({ team: query.team, run: query.query ?? query.run }),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/teams/:id',
      summary: 'Read a team',
      tags,
      schema: { querystring: RepoQuery },
      handler: async ({ params, query, req }) => {
        const code = service();
        const { team, source } = await code.library.get(await repoOf(code, query, req.body), params.id);
        return { ...team, source };
      },
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/teams/:id',
      summary: 'Edit a team (writes a project override)',
      tags,
      schema: { querystring: RepoQuery, body: TeamPatch },
      handler: async ({ params, query, req }) => {
        const code = service();
        const updated = await code.library.update(await repoOf(code, query, req.body), params.id, withoutRepo(req.body));
        return { ...updated.team, source: updated.source };
      },
    }),
    defineRoute({
      method: 'DELETE',
      url: '/api/teams/:id',
      summary: 'Delete a project team or override (reveals the shipped team)',
      tags,
      schema: { querystring: RepoQuery },
      handler: async ({ params, query, req }) => {
        const code = service();
        return code.library.delete(await repoOf(code, query, req.body), params.id);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/teams/:id/manager',
      summary: 'Create a manager agent for the team and point the team at it',
      tags,
      schema: { body: ManagerRequest },
      handler: async ({ params, body, reply }) => {
        const code = service();
        const updated = await code.createManager(await code.repoOf(body.repo), params.id, body.name);
        reply.code(201);
        return { ...updated.team, source: updated.source };
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/api/composition/preview',
      summary: 'Composition preview (honours per-run team pins)',
      tags,
      schema: { body: PreselectRequest },
      handler: async ({ body }) => {
        const code = service();
        return code.composition(body.request, await code.repoOf(body.repo), body.teams);
      },
    }),

    // ---- tasks, config, calibration
    defineRoute({
      method: 'PATCH',
      url: '/api/tasks/:id',
      summary: 'Change task fields; squad assigns a team',
      tags,
      schema: { body: TaskPatch },
      handler: ({ params, req }) => service().patchTask(params.id, req.body),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/tasks/:id/retry',
      summary: 'Retry a stuck task',
      tags,
      handler: ({ params, req }) => service().retryTask(params.id, (req.body as { run?: string } | undefined)?.run),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/config',
      summary: 'The effective coding-run configuration',
      tags,
      handler: () => service().config(),
    }),
    defineRoute({
      method: 'PUT',
      url: '/api/config',
      summary: 'Patch the configuration (read-only keys refused)',
      tags,
      handler: ({ req }) => service().patchConfig(req.body),
    }),
    defineRoute({
      method: 'GET',
      url: '/api/calibration',
      summary: 'Measured latency, throughput, useful parallelism and context window of the model endpoint',
      tags,
      handler: () => service().calibrate(),
    }),
  ];
}
