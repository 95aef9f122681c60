/**
 * Coding-run HTTP routes (spec 3, "Coding-run HTTP routes"), all behind the per-launch session
 * token: header `X-Hangar-Session: <token>` (or `?session=<token>` for EventSource and ws, which
 * cannot set headers). A separate header rather than `Authorization`, so it works whether or not
 * the server also has bearer tokens configured.
 *
 * Routes beyond the spec's table, for the approval gate and the live view: GET /api/runs,
 * GET /api/runs/{id}, GET /api/runs/{id}/events (SSE), GET|PATCH /api/runs/{id}/plan,
 * POST /api/runs/{id}/approve, POST /api/runs/{id}/cancel, GET /api/config.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { serviceUnavailable, unauthorized } from '../http/errors.js';
import type { RouteDoc } from '../http/openapi.js';
import { param, pathOf, queryOf } from '../http/request.js';
import { sameSecret } from '../http/security.js';
import { resumePoint, serveSse } from '../http/sse.js';
import { parseInput } from '../http/validate.js';
import type { HangarContext } from '../kernel/context.js';
import { ModelError } from './model.js';
import { ActivateRequest, ManagerRequest, PlanEdit, PreselectRequest, StartRunRequest, TaskPatch, TeamPatch, TeamSchema } from './schemas.js';
import type { CodeRunService } from './service.js';

export const SESSION_HEADER = 'x-hangar-session';
export const CODE_PREFIXES = ['/api/runs', '/api/teams', '/api/composition', '/api/tasks', '/api/config', '/api/calibration'];

export function sessionTokenOf(req: { headers: Record<string, string | string[] | undefined>; url?: string }): string | undefined {
  const header = req.headers[SESSION_HEADER];
  if (typeof header === 'string') return header.trim();
  const query = new URL(req.url ?? '/', 'http://local').searchParams.get('session');
  return query ?? undefined;
}

export function sessionMatches(expected: string, presented: string | undefined): boolean {
  return presented !== undefined && presented !== '' && sameSecret(presented, expected);
}

/**
 * Whether a request falls under CODE_PREFIXES: its path as sent matches a prefix (case-insensitive,
 * whole segments), or the route that answers it was registered under one (the router decodes `%XX`
 * before matching, so `/api/%72uns` reaches `/api/runs`).
 */
const CODE_PATH = new RegExp(`^(?:${CODE_PREFIXES.join('|')})(?:/|$)`, 'i'); // the prefixes are plain letters and slashes
export function isCodePath(req: FastifyRequest): boolean {
  const route = req.routeOptions.url;
  return CODE_PATH.test(pathOf(req)) || (route !== undefined && CODE_PATH.test(route));
}

const RepoQuery = z.object({ repo: z.string().optional() });
const ActivityQuery = z.object({ team: z.string().optional(), query: z.string().optional(), run: z.string().optional() });

export function codeRoutes(app: FastifyInstance, ctx: HangarContext, service: CodeRunService): void {
  // Every request under the prefixes, whichever route (or none: the 404 handler) answers it. A root
  // hook, so unknown paths and methods under a prefix answer 401 before 404 as a prefix guard should.
  app.addHook('preHandler', function requireSession(req, _reply, done) {
    if (isCodePath(req) && !sessionMatches(service.sessionToken, sessionTokenOf(req))) {
      return done(unauthorized(`coding-run routes need the session token (header X-Hangar-Session); it is printed at launch and stored in .hangar/code-session.json`));
    }
    done();
  });

  const repoOf = (req: FastifyRequest) => service.repoOf(parseInput(RepoQuery, req.query, 'query').repo ?? (req.body as { repo?: string })?.repo);
  const id = (req: FastifyRequest) => param(req, 'id');

  // ---- runs
  app.post('/api/runs', async (req, reply) => {
    const body = parseInput(StartRunRequest, req.body);
    const run = await service.startRun(body);
    reply.code(202).header('Location', `/api/runs/${run.id}`);
    return run;
  });
  app.get('/api/runs', async () => ({ runs: await service.list() }));
  app.get('/api/runs/latest', async () => service.latest());
  app.get('/api/runs/:id', async (req) => service.get(id(req)));
  app.get('/api/runs/:id/events', async (req, reply) => {
    const since = resumePoint(req, queryOf(req));
    const source = await service.eventSource(id(req));
    await serveSse(reply, source, { since, snapshot: () => service.get(id(req)), headers: { 'X-Run-Id': id(req) } });
  });
  app.get('/api/runs/:id/plan', async (req) => service.plan(id(req)));
  app.patch('/api/runs/:id/plan', async (req) => service.editPlan(id(req), req.body));
  app.post('/api/runs/:id/approve', async (req) => service.approve(id(req)));
  app.post('/api/runs/:id/cancel', async (req) => service.cancel(id(req)));

  // ---- teams (fixed paths before /api/teams/:id)
  app.get('/api/teams', async (req) => service.listTeams(await repoOf(req)));
  app.post('/api/teams', async (req, reply) => {
    const { repo: _r, ...team } = (req.body ?? {}) as Record<string, unknown>;
    const created = await service.library.create(await repoOf(req), team as never);
    reply.code(201);
    return { ...created.team, source: created.source };
  });
  app.post('/api/teams/preselect', async (req) => {
    const body = parseInput(PreselectRequest, req.body);
    return service.preselect(body.request, await service.repoOf(body.repo), body.teams);
  });
  app.post('/api/teams/activate', async (req) => {
    const body = parseInput(ActivateRequest, req.body);
    return service.activate(await service.repoOf(body.repo), body.teams);
  });
  app.get('/api/teams/activity', async (req) => {
    const q = parseInput(ActivityQuery, req.query, 'query');
    return service.activity({ team: q.team, run: q.query ?? q.run });
  });
  app.get('/api/teams/:id', async (req) => {
    const { team, source } = await service.library.get(await repoOf(req), id(req));
    return { ...team, source };
  });
  app.put('/api/teams/:id', async (req) => {
    const { repo: _r, ...patch } = (req.body ?? {}) as Record<string, unknown>;
    const updated = await service.library.update(await repoOf(req), id(req), patch);
    return { ...updated.team, source: updated.source };
  });
  app.delete('/api/teams/:id', async (req) => service.library.delete(await repoOf(req), id(req)));
  app.post('/api/teams/:id/manager', async (req, reply) => {
    const body = parseInput(ManagerRequest, req.body);
    const updated = await service.createManager(await service.repoOf(body.repo), id(req), body.name);
    reply.code(201);
    return { ...updated.team, source: updated.source };
  });
  app.post('/api/composition/preview', async (req) => {
    const body = parseInput(PreselectRequest, req.body);
    return service.composition(body.request, await service.repoOf(body.repo), body.teams);
  });

  // ---- tasks, config, calibration
  app.patch('/api/tasks/:id', async (req) => service.patchTask(id(req), req.body));
  app.post('/api/tasks/:id/retry', async (req) => service.retryTask(id(req), (req.body as { run?: string })?.run));
  app.get('/api/config', async () => service.config());
  app.put('/api/config', async (req) => service.patchConfig(req.body));
  app.get('/api/calibration', async () => {
    try {
      return await service.calibrate();
    } catch (err) {
      if (err instanceof ModelError) throw serviceUnavailable(err.message);
      throw err;
    }
  });

  ctx.openapi.add(...routeDocs());
}

function routeDocs(): RouteDoc[] {
  const tags = ['coding runs'];
  const doc = (method: RouteDoc['method'], path: string, summary: string, extra: Partial<RouteDoc> = {}): RouteDoc => ({ method, path, summary, tags, ...extra });
  return [
    doc('post', '/api/runs', 'Start a coding run (team pins are run-scoped)', { body: StartRunRequest, responses: { 202: { description: 'Run started' } } }),
    doc('get', '/api/runs', 'List runs, newest first'),
    doc('get', '/api/runs/latest', 'The latest run'),
    doc('get', '/api/runs/{id}', 'One run with its board, gates, tickets and repairs'),
    doc('get', '/api/runs/{id}/events', 'Run events (SSE, replay with Last-Event-ID)', { responses: { 200: { description: 'event stream', contentType: 'text/event-stream' } } }),
    doc('get', '/api/runs/{id}/plan', 'The plan-approval card (up to 60 tasks)'),
    doc('patch', '/api/runs/{id}/plan', 'Edit the proposed plan at the approval gate', { body: PlanEdit }),
    doc('post', '/api/runs/{id}/approve', 'Approve the plan and start work'),
    doc('post', '/api/runs/{id}/cancel', 'Cancel a run (workers stopped, run branch left clean)'),
    doc('get', '/api/teams', 'Teams with default_manager, dynamic_enabled, running, effective_manager, manager_default', { query: RepoQuery }),
    doc('post', '/api/teams', 'Create a team (project definition in .hangar/teams)', { body: TeamSchema }),
    doc('get', '/api/teams/{id}', 'Read a team', { query: RepoQuery }),
    doc('put', '/api/teams/{id}', 'Edit a team (writes a project override)', { body: TeamPatch }),
    doc('delete', '/api/teams/{id}', 'Delete a project team or override (reveals the shipped team)'),
    doc('post', '/api/teams/preselect', 'Which teams a request selects and why (no model call)', { body: PreselectRequest }),
    doc('post', '/api/teams/activate', 'Write the org chart and pin it for the next run', { body: ActivateRequest }),
    doc('post', '/api/teams/{id}/manager', 'Create a manager agent for the team and point the team at it', { body: ManagerRequest }),
    doc('get', '/api/teams/activity', 'Classified team events; query=<run id> reads a past run', { query: ActivityQuery }),
    doc('post', '/api/composition/preview', 'Composition preview (honours per-run team pins)', { body: PreselectRequest }),
    doc('patch', '/api/tasks/{id}', 'Change task fields; squad assigns a team', { body: TaskPatch }),
    doc('post', '/api/tasks/{id}/retry', 'Retry a stuck task'),
    doc('get', '/api/config', 'The effective coding-run configuration'),
    doc('put', '/api/config', 'Patch the configuration (read-only keys refused)'),
    doc('get', '/api/calibration', 'Measured latency, throughput, useful parallelism and context window of the model endpoint'),
  ];
}
