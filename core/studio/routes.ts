/**
 * The debug interface under /studio (spec: Debug interface routes). Handlers parse, call
 * `StudioService` and send; streams go through the one SSE implementation with the run id in
 * `X-Studio-Run-Id` (`serveSse` sets `X-Accel-Buffering: no`).
 *
 * Beyond the spec's table, for what a debugger needs: GET /runs/{run_id}/stream follows a run again
 * (stored events, then live ones; `since` / Last-Event-ID resume), POST /runs/{run_id}/cancel
 * stops one, and GET state takes `?checkpoint_id=` to read the state at any checkpoint.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type AnyRoute, defineRoute } from '../http/route.js';
import { resumePoint, serveSse } from '../http/sse.js';
import type { HangarContext } from '../kernel/context.js';
import { viewerOf } from '../kernel/ownership.js';
import { runEventSource } from './events.js';
import type { Execution } from './launch.js';
import * as S from './schemas.js';
import type { StudioService } from './service.js';

/** Stream one execution segment: the events it produces, then [DONE]. */
async function streamExecution(reply: FastifyReply, execution: Execution): Promise<void> {
  await serveSse(reply, runEventSource(execution.run.events, execution.live), {
    since: execution.fromSeq,
    headers: { 'X-Studio-Run-Id': execution.run.run_id },
  });
}

const tags = ['studio'];
const sse = {
  description: 'SSE of run events (see the event types in the description); the last data line is [DONE]',
  contentType: 'text/event-stream',
};
const EVENTS_DOC =
  "Each frame: `id:` = the run's event sequence, `data:` = JSON with `seq`, `type`, `run_id`, `thread_id`, `timestamp` and per type: " +
  'run_start (agent, input, resumed_from), node_start (node, step), node_end (node, step, output, checkpoint_id), message_chunk (node = model, content), ' +
  'subagent_start (node = subagent, query), subagent_end (node, output), task_update (node = planning:<tool>, tool, args), ' +
  'breakpoint_hit (node, reason breakpoint|interrupt, checkpoint_id, message, payload), run_complete (status, response, steps_taken, duration_ms), ' +
  'run_error (error, node), done (status). Headers: X-Studio-Run-Id, X-Accel-Buffering: no.';
const unknownAgent = 'unknown agent';
const unknownRun = 'unknown agent or run, or a run of another principal';
const unknownThread = 'unknown agent or thread, or a thread of another principal';

export function studioRoutes(service: StudioService, settings: HangarContext['settings']): AnyRoute[] {
  const viewer = (req: FastifyRequest) => viewerOf(req, settings);
  return [
    defineRoute({
      method: 'GET',
      url: '/studio/info',
      summary: 'Studio info',
      tags,
      schema: { response: { 200: S.Info } },
      handler: () => service.info(),
    }),
    defineRoute({
      method: 'GET',
      url: '/studio/agents',
      summary: 'Agents with what each supports (graph, streaming, checkpoints, state, breakpoints, hitl, subagents, planning, model)',
      tags,
      schema: { response: { 200: S.AgentEntry.array() } },
      handler: () => service.agents(),
    }),
    defineRoute({
      method: 'GET',
      url: '/studio/agents/:name/graph',
      summary: "The agent's graph: start, its nodes (their own types), end; edges with conditions; entry and end points",
      description: 'A function agent is start → agent → end.',
      tags,
      schema: { response: { 200: S.Graph, 404: unknownAgent, 500: 'the graph does not compile' } },
      handler: ({ params }) => service.graph(params.name),
    }),
    defineRoute({
      method: 'GET',
      url: '/studio/agents/:name/schemas',
      summary: 'JSON Schemas of the input and output models (platform defaults when the agent declares none) and of the state',
      tags,
      schema: { response: { 200: S.Schemas, 404: unknownAgent } },
      handler: ({ params }) => service.schemas(params.name),
    }),
    defineRoute({
      method: 'GET',
      url: '/studio/agents/:name/config',
      summary: 'Agent configuration, prompt versions and model',
      tags,
      schema: { response: { 200: S.Config, 404: unknownAgent } },
      handler: ({ params }) => service.config(params.name),
    }),
    defineRoute({
      method: 'POST',
      url: '/studio/agents/:name/runs',
      summary: 'Run synchronously; answers with the stored run record, events included',
      description:
        'A run that fails, pauses at a breakpoint or an approval, or is rejected still answers 200 with its record (status, error, paused). ' +
        'Errors before the run starts: 404 unknown agent/checkpoint/prompt version or a thread_id of another principal, 409 thread paused or busy, 422 bad body or a breakpoint naming no node.',
      tags,
      schema: {
        body: S.StudioRunRequest,
        response: {
          200: { description: 'the run', schema: S.StudioRunDoc },
          404: unknownAgent,
          409: 'thread paused or busy',
          422: 'invalid request',
        },
      },
      handler: async ({ params, body, req, reply }) => {
        const execution = await service.startRun(params.name, body, viewer(req));
        reply.header('X-Studio-Run-Id', execution.run.run_id);
        return service.outcome(execution);
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/studio/agents/:name/runs/stream',
      summary: 'Run with live events (SSE)',
      description: EVENTS_DOC,
      tags,
      schema: { body: S.StudioRunRequest, response: { 200: sse, 404: unknownAgent, 409: 'thread paused or busy', 422: 'invalid request' } },
      handler: async ({ params, body, req, reply }) => {
        await streamExecution(reply, await service.startRun(params.name, body, viewer(req)));
      },
    }),
    defineRoute({
      method: 'GET',
      url: '/studio/agents/:name/runs',
      summary: 'Recent runs, newest first (without events)',
      tags,
      schema: { querystring: S.RunsQuery, response: { 200: S.RunSummary.array(), 404: unknownAgent } },
      handler: ({ params, query, req }) => service.listRuns(params.name, query, viewer(req)),
    }),
    defineRoute({
      method: 'GET',
      url: '/studio/agents/:name/runs/:run_id',
      summary: 'A run with all its events',
      tags,
      schema: { response: { 200: S.StudioRunDoc, 404: unknownRun } },
      handler: ({ params, req }) => service.getRun(params.name, params.run_id, viewer(req)),
    }),
    defineRoute({
      method: 'GET',
      url: '/studio/agents/:name/runs/:run_id/stream',
      summary: 'Follow a run: its stored events after `since` / Last-Event-ID, then live ones while it executes',
      description: EVENTS_DOC,
      tags,
      // `resumePoint` reads `since` itself, so its 422 names the parameter or the header it came from.
      schema: { querystring: S.StreamQuery, response: { 200: sse, 404: unknownRun } },
      handler: async ({ params, req, reply }) => {
        const since = resumePoint(req, req.query as Record<string, unknown>);
        const source = await service.runEvents(params.name, params.run_id, viewer(req));
        await serveSse(reply, source, { since, headers: { 'X-Studio-Run-Id': params.run_id } });
      },
    }),
    defineRoute({
      method: 'POST',
      url: '/studio/agents/:name/runs/:run_id/cancel',
      summary: 'Cancel an executing run (cooperative); the thread stays resumable',
      tags,
      schema: { response: { 200: { description: 'the run', schema: S.StudioRunDoc }, 404: unknownRun, 409: 'the run is not executing' } },
      handler: ({ params, req }) => service.cancel(params.name, params.run_id, viewer(req)),
    }),
    defineRoute({
      method: 'GET',
      url: '/studio/agents/:name/threads/:thread_id/state',
      summary: 'Thread state at its latest checkpoint (or at `checkpoint_id`)',
      tags,
      schema: {
        querystring: S.StateQuery,
        response: { 200: S.ThreadState, 404: 'unknown agent, thread or checkpoint, or a thread of another principal' },
      },
      handler: ({ params, query, req }) => service.threadState(params.name, params.thread_id, query.checkpoint_id, viewer(req)),
    }),
    defineRoute({
      method: 'POST',
      url: '/studio/agents/:name/threads/:thread_id/state',
      summary: 'Merge `updates` into the state as a new checkpoint whose parent is the latest',
      tags,
      schema: {
        body: S.StudioStateUpdate,
        response: {
          200: { description: 'the new state', schema: S.UpdatedState },
          400: 'no fields to update',
          404: unknownThread,
          409: 'a run is in progress on the thread',
        },
      },
      handler: ({ params, body, req }) => service.updateState(params.name, params.thread_id, body.updates, viewer(req)),
    }),
    defineRoute({
      method: 'GET',
      url: '/studio/agents/:name/threads/:thread_id/history',
      summary: 'Checkpoints of the thread, newest first (forks included)',
      tags,
      schema: { querystring: S.HistoryQuery, response: { 200: S.Checkpoint.array(), 404: unknownThread } },
      handler: ({ params, query, req }) => service.history(params.name, params.thread_id, query.limit, viewer(req)),
    }),
    defineRoute({
      method: 'POST',
      url: '/studio/agents/:name/threads/:thread_id/resume',
      summary: 'Resume a paused thread (breakpoint or approval) with `value` and `action`; streams the continued events',
      description: EVENTS_DOC,
      tags,
      schema: {
        body: S.StudioResumeRequest,
        response: { 200: sse, 404: unknownThread, 409: 'the thread is not paused, or busy', 422: 'invalid request' },
      },
      handler: async ({ params, body, req, reply }) => {
        // Only the continued events: the ones before were streamed (and stored) when the run paused.
        await streamExecution(reply, await service.resume(params.name, params.thread_id, body, viewer(req)));
      },
    }),
  ];
}
