/**
 * The `tools/` drop-ins over HTTP: list them (what a model is told about each) and try one with
 * arguments, as a model's call would run it — validated by its schema, under its timeout, with
 * `{error}` instead of a failure status when the tool or its arguments are wrong.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { HangarContext } from '../kernel/context.js';
import { param } from '../http/request.js';
import { parseInput } from '../http/validate.js';
import { readDocuments } from './service.js';
import { callTool } from './tool-loop.js';
import { findTool } from './tool-kind.js';
import { toolSpec, type AnyTool } from './tools.js';

const ToolInfo = z.object({
  name: z.string(),
  description: z.string(),
  /** The JSON Schema of the arguments, as the model gets it. */
  parameters: z.record(z.string(), z.unknown()),
  file: z.string(),
  /** true, false, or `depends` when a function decides per call. */
  needs_approval: z.union([z.boolean(), z.literal('depends')]),
  timeout_ms: z.number().nullable(),
});
const ToolList = z.object({ tools: z.array(ToolInfo) });
const TryToolRequest = z.object({ arguments: z.record(z.string(), z.unknown()).default({}) });
const TryToolResponse = z.object({
  name: z.string(),
  arguments: z.unknown(),
  result: z.unknown().optional(),
  error: z.string().optional(),
  duration_ms: z.number(),
});

export function toolRoutes(app: FastifyInstance, ctx: HangarContext): void {
  app.get('/api/v1/tools', async () => ({
    tools: ctx.registry.list<AnyTool>('tool').map((entry) => {
      const tool = entry.definition;
      return {
        ...toolSpec(tool),
        file: entry.file,
        needs_approval: typeof tool.needsApproval === 'function' ? ('depends' as const) : (tool.needsApproval ?? false),
        timeout_ms: tool.timeout_ms ?? null,
      };
    }),
  }));

  app.post('/api/v1/tools/:name/try', async (req) => {
    const tool = findTool(ctx.registry, param(req, 'name'));
    const body = parseInput(TryToolRequest, req.body, 'body');
    const threadId = randomUUID();
    // The caller leaving stops the tool, as a cancelled run stops its calls.
    const controller = new AbortController();
    req.raw.once('close', () => req.raw.readableAborted && controller.abort());
    const result = await callTool(
      tool,
      body.arguments,
      {
        agent: 'try',
        input: { query: '', user_id: req.principal ?? 'local', context: {}, thread_id: threadId, metadata: {}, prompt_version: 'v1', temperature: null, max_tokens: null, history: [] },
        threadId,
        workspace: ctx.paths.root,
        documents: (collection) => readDocuments(ctx.store, collection),
      },
      controller.signal,
    );
    return {
      name: result.name,
      arguments: result.args,
      ...(result.error !== undefined ? { error: result.error } : { result: result.result ?? null }),
      duration_ms: result.duration_ms,
    };
  });

  ctx.openapi.add(
    {
      method: 'get',
      path: '/api/v1/tools',
      summary: 'The tools/ drop-ins: what a model is told about each (name, description, JSON Schema of the arguments)',
      tags: ['tools'],
      responses: { 200: { description: 'OK', schema: ToolList } },
    },
    {
      method: 'post',
      path: '/api/v1/tools/{name}/try',
      summary: "Run a tool with arguments as a model's call would run it",
      description: 'Arguments are validated by the tool\'s schema; a wrong argument, a failure, a timeout or a refused result is answered 200 with `error` (what a model would be told).',
      tags: ['tools'],
      body: TryToolRequest,
      responses: { 200: { description: 'OK', schema: TryToolResponse }, 404: { description: 'no tool of that name is loaded' } },
    },
  );
}
