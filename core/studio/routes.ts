/**
 * The debug interface under /studio (spec: Debug interface routes). Handlers parse, call
 * `StudioService` and send; streams go through the one SSE implementation with the run id in
 * `X-Studio-Run-Id` (`serveSse` sets `X-Accel-Buffering: no`).
 *
 * Beyond the spec's table, for what a debugger needs: GET /runs/{run_id}/stream follows a run again
 * (stored events, then live ones; `since` / Last-Event-ID resume), POST /runs/{run_id}/cancel
 * stops one, and GET state takes `?checkpoint_id=` to read the state at any checkpoint.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import type { HangarContext } from '../kernel/context.js';
import type { RouteDoc } from '../http/openapi.js';
import { param, queryOf } from '../http/request.js';
import { resumePoint, serveSse } from '../http/sse.js';
import { parseInput } from '../http/validate.js';
import { viewerOf } from '../kernel/ownership.js';
import { runEventSource } from './events.js';
import type { Execution } from './launch.js';
import type { StudioService } from './service.js';
import * as S from './schemas.js';

const nameOf = (req: FastifyRequest) => param(req, 'name');
const threadOf = (req: FastifyRequest) => param(req, 'thread_id');
const runOf = (req: FastifyRequest) => param(req, 'run_id');

/** Stream one execution segment: the events it produces, then [DONE]. */
async function streamExecution(reply: FastifyReply, execution: Execution): Promise<void> {
  await serveSse(reply, runEventSource(execution.run.events, execution.live), {
    since: execution.fromSeq,
    headers: { 'X-Studio-Run-Id': execution.run.run_id },
  });
}

export function studioRoutes(app: FastifyInstance, service: StudioService, settings: HangarContext['settings']): void {
  const viewer = (req: FastifyRequest) => viewerOf(req, settings);
  app.get('/studio/info', async () => {
    return service.info();
  });

  app.get('/studio/agents', async () => {
    return service.agents();
  });

  app.get('/studio/agents/:name/graph', async (req) => {
    return service.graph(nameOf(req));
  });

  app.get('/studio/agents/:name/schemas', async (req) => {
    return service.schemas(nameOf(req));
  });

  app.get('/studio/agents/:name/config', async (req) => {
    return service.config(nameOf(req));
  });

  app.post('/studio/agents/:name/runs', async (req, reply) => {
    const body = parseInput(S.StudioRunRequest, req.body, 'body');
    const execution = await service.startRun(nameOf(req), body, viewer(req));
    reply.header('X-Studio-Run-Id', execution.run.run_id);
    return service.outcome(execution);
  });

  app.post('/studio/agents/:name/runs/stream', async (req, reply) => {
    const body = parseInput(S.StudioRunRequest, req.body, 'body');
    const execution = await service.startRun(nameOf(req), body, viewer(req));
    await streamExecution(reply, execution);
  });

  app.get('/studio/agents/:name/runs', async (req) => {
    const query = parseInput(S.RunsQuery, req.query, 'query');
    return service.listRuns(nameOf(req), query, viewer(req));
  });

  app.get('/studio/agents/:name/runs/:run_id', async (req) => {
    return service.getRun(nameOf(req), runOf(req), viewer(req));
  });

  app.get('/studio/agents/:name/runs/:run_id/stream', async (req, reply) => {
    const since = resumePoint(req, queryOf(req));
    const source = await service.runEvents(nameOf(req), runOf(req), viewer(req));
    await serveSse(reply, source, { since, headers: { 'X-Studio-Run-Id': runOf(req) } });
  });

  app.post('/studio/agents/:name/runs/:run_id/cancel', async (req) => {
    return service.cancel(nameOf(req), runOf(req), viewer(req));
  });

  app.get('/studio/agents/:name/threads/:thread_id/state', async (req) => {
    const query = parseInput(S.StateQuery, req.query, 'query');
    return service.threadState(nameOf(req), threadOf(req), query.checkpoint_id, viewer(req));
  });

  app.post('/studio/agents/:name/threads/:thread_id/state', async (req) => {
    const body = parseInput(S.StudioStateUpdate, req.body, 'body');
    return service.updateState(nameOf(req), threadOf(req), body.updates, viewer(req));
  });

  app.get('/studio/agents/:name/threads/:thread_id/history', async (req) => {
    const query = parseInput(S.HistoryQuery, req.query, 'query');
    return service.history(nameOf(req), threadOf(req), query.limit, viewer(req));
  });

  app.post('/studio/agents/:name/threads/:thread_id/resume', async (req, reply) => {
    const body = parseInput(S.StudioResumeRequest, req.body, 'body');
    const execution = await service.resume(nameOf(req), threadOf(req), body, viewer(req));
    // Only the continued events: the ones before were streamed (and stored) when the run paused.
    await streamExecution(reply, execution);
  });
}

const tags = ['studio'];
const sse = { description: 'SSE of run events (see the event types in the description); the last data line is [DONE]', contentType: 'text/event-stream' };
const EVENTS_DOC =
  'Each frame: `id:` = the run\'s event sequence, `data:` = JSON with `seq`, `type`, `run_id`, `thread_id`, `timestamp` and per type: ' +
  'run_start (agent, input, resumed_from), node_start (node, step), node_end (node, step, output, checkpoint_id), message_chunk (node = model, content), ' +
  'subagent_start (node = subagent, query), subagent_end (node, output), task_update (node = planning:<tool>, tool, args), ' +
  'breakpoint_hit (node, reason breakpoint|interrupt, checkpoint_id, message, payload), run_complete (status, response, steps_taken, duration_ms), ' +
  'run_error (error, node), done (status). Headers: X-Studio-Run-Id, X-Accel-Buffering: no.';

/** OpenAPI docs of the studio routes. */
export function registerStudioDocs(ctx: HangarContext): void {
  const agent = '/studio/agents/{name}';
  const notFound = { description: 'unknown agent' };
  const docs: RouteDoc[] = [
    { method: 'get', path: '/studio/info', summary: 'Studio info', tags, responses: { 200: { description: 'OK', schema: S.Info } } },
    {
      method: 'get',
      path: '/studio/agents',
      summary: 'Agents with what each supports (graph, streaming, checkpoints, state, breakpoints, hitl, subagents, planning, model)',
      tags,
      responses: { 200: { description: 'OK', schema: S.AgentEntry.array() } },
    },
    {
      method: 'get',
      path: `${agent}/graph`,
      summary: "The agent's graph: start, its nodes (their own types), end; edges with conditions; entry and end points",
      description: 'A function agent is start → agent → end.',
      tags,
      responses: { 200: { description: 'OK', schema: S.Graph }, 404: notFound, 500: { description: 'the graph does not compile' } },
    },
    {
      method: 'get',
      path: `${agent}/schemas`,
      summary: 'JSON Schemas of the input and output models (platform defaults when the agent declares none) and of the state',
      tags,
      responses: { 200: { description: 'OK', schema: S.Schemas }, 404: notFound },
    },
    { method: 'get', path: `${agent}/config`, summary: 'Agent configuration, prompt versions and model', tags, responses: { 200: { description: 'OK', schema: S.Config }, 404: notFound } },
    {
      method: 'post',
      path: `${agent}/runs`,
      summary: 'Run synchronously; answers with the stored run record, events included',
      description:
        'A run that fails, pauses at a breakpoint or an approval, or is rejected still answers 200 with its record (status, error, paused). ' +
        'Errors before the run starts: 404 unknown agent/checkpoint/prompt version or a thread_id of another principal, 409 thread paused or busy, 422 bad body or a breakpoint naming no node.',
      tags,
      body: S.StudioRunRequest,
      responses: { 200: { description: 'the run', schema: S.StudioRunDoc }, 404: notFound, 409: { description: 'thread paused or busy' }, 422: { description: 'invalid request' } },
    },
    {
      method: 'post',
      path: `${agent}/runs/stream`,
      summary: 'Run with live events (SSE)',
      description: EVENTS_DOC,
      tags,
      body: S.StudioRunRequest,
      responses: { 200: sse, 404: notFound, 409: { description: 'thread paused or busy' }, 422: { description: 'invalid request' } },
    },
    {
      method: 'get',
      path: `${agent}/runs`,
      summary: 'Recent runs, newest first (without events)',
      tags,
      query: S.RunsQuery,
      responses: { 200: { description: 'OK', schema: S.RunSummary.array() }, 404: notFound },
    },
    {
      method: 'get',
      path: `${agent}/runs/{run_id}`,
      summary: 'A run with all its events',
      tags,
      responses: { 200: { description: 'OK', schema: S.StudioRunDoc }, 404: { description: 'unknown agent or run, or a run of another principal' } },
    },
    {
      method: 'get',
      path: `${agent}/runs/{run_id}/stream`,
      summary: "Follow a run: its stored events after `since` / Last-Event-ID, then live ones while it executes",
      description: EVENTS_DOC,
      tags,
      query: S.StreamQuery,
      responses: { 200: sse, 404: { description: 'unknown agent or run, or a run of another principal' } },
    },
    {
      method: 'post',
      path: `${agent}/runs/{run_id}/cancel`,
      summary: 'Cancel an executing run (cooperative); the thread stays resumable',
      tags,
      responses: { 200: { description: 'the run', schema: S.StudioRunDoc }, 404: { description: 'unknown agent or run, or a run of another principal' }, 409: { description: 'the run is not executing' } },
    },
    {
      method: 'get',
      path: `${agent}/threads/{thread_id}/state`,
      summary: 'Thread state at its latest checkpoint (or at `checkpoint_id`)',
      tags,
      query: S.StateQuery,
      responses: { 200: { description: 'OK', schema: S.ThreadState }, 404: { description: 'unknown agent, thread or checkpoint, or a thread of another principal' } },
    },
    {
      method: 'post',
      path: `${agent}/threads/{thread_id}/state`,
      summary: 'Merge `updates` into the state as a new checkpoint whose parent is the latest',
      tags,
      body: S.StudioStateUpdate,
      responses: {
        200: { description: 'the new state', schema: S.ThreadState.extend({ updated_keys: z.array(z.string()) }) },
        400: { description: 'no fields to update' },
        404: { description: 'unknown agent or thread, or a thread of another principal' },
        409: { description: 'a run is in progress on the thread' },
      },
    },
    {
      method: 'get',
      path: `${agent}/threads/{thread_id}/history`,
      summary: 'Checkpoints of the thread, newest first (forks included)',
      tags,
      query: S.HistoryQuery,
      responses: { 200: { description: 'OK', schema: S.Checkpoint.array() }, 404: { description: 'unknown agent or thread, or a thread of another principal' } },
    },
    {
      method: 'post',
      path: `${agent}/threads/{thread_id}/resume`,
      summary: 'Resume a paused thread (breakpoint or approval) with `value` and `action`; streams the continued events',
      description: EVENTS_DOC,
      tags,
      body: S.StudioResumeRequest,
      responses: { 200: sse, 404: { description: 'unknown agent or thread, or a thread of another principal' }, 409: { description: 'the thread is not paused, or busy' }, 422: { description: 'invalid request' } },
    },
  ];
  ctx.openapi.add(...docs);
}
