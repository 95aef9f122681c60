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
import { timingSafeEqual } from 'node:crypto';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { z } from 'zod';
import { serviceUnavailable, unauthorized } from '../http/errors.js';
import type { RouteDoc } from '../http/openapi.js';
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
  if (!presented) return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}

const RepoQuery = z.object({ repo: z.string().optional() });
const ActivityQuery = z.object({ team: z.string().optional(), query: z.string().optional(), run: z.string().optional() });

export function codeRoutes(ctx: HangarContext, service: CodeRunService): Router {
  const router = Router();

  router.use(CODE_PREFIXES, function requireSession(req: Request, _res: Response, next: NextFunction) {
    if (!sessionMatches(service.sessionToken, sessionTokenOf(req))) {
      return next(unauthorized(`coding-run routes need the session token (header X-Hangar-Session); it is printed at launch and stored in .hangar/code-session.json`));
    }
    next();
  });

  const repoOf = (req: Request) => service.repoOf(parseInput(RepoQuery, req.query, 'query').repo ?? (req.body as { repo?: string })?.repo);
  const id = (req: Request) => String(req.params.id);

  // ---- runs
  router.post('/api/runs', async (req, res) => {
    const body = parseInput(StartRunRequest, req.body);
    const run = await service.startRun(body);
    res.status(202).location(`/api/runs/${run.id}`).json(run);
  });
  router.get('/api/runs', async (_req, res) => res.json({ runs: await service.list() }));
  router.get('/api/runs/latest', async (_req, res) => res.json(await service.latest()));
  router.get('/api/runs/:id', async (req, res) => res.json(await service.get(id(req))));
  router.get('/api/runs/:id/events', async (req, res) => {
    const since = resumePoint(req, req.query as Record<string, unknown>);
    const source = await service.eventSource(id(req));
    await serveSse(req, res, source, { since, snapshot: () => service.get(id(req)), headers: { 'X-Run-Id': id(req) } });
  });
  router.get('/api/runs/:id/plan', (req, res) => void res.json(service.plan(id(req))));
  router.patch('/api/runs/:id/plan', (req, res) => void res.json(service.editPlan(id(req), req.body)));
  router.post('/api/runs/:id/approve', (req, res) => void res.json(service.approve(id(req))));
  router.post('/api/runs/:id/cancel', async (req, res) => res.json(await service.cancel(id(req))));

  // ---- teams (fixed paths before /api/teams/:id)
  router.get('/api/teams', async (req, res) => res.json(await service.listTeams(await repoOf(req))));
  router.post('/api/teams', async (req, res) => {
    const { repo: _r, ...team } = (req.body ?? {}) as Record<string, unknown>;
    const created = await service.library.create(await repoOf(req), team as never);
    res.status(201).json({ ...created.team, source: created.source });
  });
  router.post('/api/teams/preselect', async (req, res) => {
    const body = parseInput(PreselectRequest, req.body);
    res.json(await service.preselect(body.request, await service.repoOf(body.repo), body.teams));
  });
  router.post('/api/teams/activate', async (req, res) => {
    const body = parseInput(ActivateRequest, req.body);
    res.json(await service.activate(await service.repoOf(body.repo), body.teams));
  });
  router.get('/api/teams/activity', async (req, res) => {
    const q = parseInput(ActivityQuery, req.query, 'query');
    res.json(await service.activity({ team: q.team, run: q.query ?? q.run }));
  });
  router.get('/api/teams/:id', async (req, res) => {
    const { team, source } = await service.library.get(await repoOf(req), id(req));
    res.json({ ...team, source });
  });
  router.put('/api/teams/:id', async (req, res) => {
    const { repo: _r, ...patch } = (req.body ?? {}) as Record<string, unknown>;
    const updated = await service.library.update(await repoOf(req), id(req), patch);
    res.json({ ...updated.team, source: updated.source });
  });
  router.delete('/api/teams/:id', async (req, res) => res.json(await service.library.delete(await repoOf(req), id(req))));
  router.post('/api/teams/:id/manager', async (req, res) => {
    const body = parseInput(ManagerRequest, req.body);
    const updated = await service.createManager(await service.repoOf(body.repo), id(req), body.name);
    res.status(201).json({ ...updated.team, source: updated.source });
  });
  router.post('/api/composition/preview', async (req, res) => {
    const body = parseInput(PreselectRequest, req.body);
    res.json(await service.composition(body.request, await service.repoOf(body.repo), body.teams));
  });

  // ---- tasks, config, calibration
  router.patch('/api/tasks/:id', async (req, res) => res.json(await service.patchTask(id(req), req.body)));
  router.post('/api/tasks/:id/retry', async (req, res) => res.json(await service.retryTask(id(req), (req.body as { run?: string })?.run)));
  router.get('/api/config', async (_req, res) => res.json(await service.config()));
  router.put('/api/config', async (req, res) => res.json(await service.patchConfig(req.body)));
  router.get('/api/calibration', async (_req, res) => {
    try {
      res.json(await service.calibrate());
    } catch (err) {
      if (err instanceof ModelError) throw serviceUnavailable(err.message);
      throw err;
    }
  });

  ctx.openapi.add(...routeDocs());
  return router;
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
