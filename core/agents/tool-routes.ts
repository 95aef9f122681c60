/**
 * The `tools/` drop-ins over HTTP: list them (what a model is told about each) and try one with
 * arguments, as a model's call would run it — validated by its schema, under its timeout, with
 * `{error}` instead of a failure status when the tool or its arguments are wrong.
 */
import { randomUUID } from 'node:crypto';
import { type AnyRoute, defineRoute } from '../http/route.js';
import type { HangarContext } from '../kernel/context.js';
import { readDocuments } from './documents.js';
import { ToolList, ToolParams, TryToolRequest, TryToolResponse } from './schemas.js';
import { findTool } from './tool-kind.js';
import { callTool } from './tool-loop.js';
import { type AnyTool, toolSpec } from './tools.js';

const TAGS = ['tools'];

export function toolRoutes(ctx: HangarContext): AnyRoute[] {
  return [
    defineRoute({
      method: 'GET',
      url: '/api/v1/tools',
      summary: 'The tools/ drop-ins: what a model is told about each (name, description, JSON Schema of the arguments)',
      tags: TAGS,
      schema: { response: { 200: ToolList } },
      handler: async () => ({
        tools: ctx.registry.list<AnyTool>('tool').map((entry) => {
          const tool = entry.definition;
          return {
            ...toolSpec(tool),
            file: entry.file,
            needs_approval: typeof tool.needsApproval === 'function' ? ('depends' as const) : (tool.needsApproval ?? false),
            timeout_ms: tool.timeout_ms ?? null,
          };
        }),
      }),
    }),
    defineRoute({
      method: 'POST',
      url: '/api/v1/tools/:name/try',
      summary: "Run a tool with arguments as a model's call would run it",
      description:
        "Arguments are validated by the tool's schema; a wrong argument, a failure, a timeout or a refused result is answered 200 with `error` (what a model would be told).",
      tags: TAGS,
      schema: { params: ToolParams, body: TryToolRequest, response: { 200: TryToolResponse, 404: 'no tool of that name is loaded' } },
      handler: async (input) => {
        const { req } = input;
        // An unknown tool is its 404 before the body is judged.
        const tool = ctx.services.get('agents').toolHosts.hosted(findTool(ctx.registry, input.params.name));
        const body = input.body;
        const threadId = randomUUID();
        // The caller leaving stops the tool, as a cancelled run stops its calls.
        const controller = new AbortController();
        req.raw.once('close', () => req.raw.readableAborted && controller.abort());
        const result = await callTool(
          tool,
          body.arguments,
          {
            agent: 'try',
            input: {
              query: '',
              user_id: req.principal ?? 'local',
              context: {},
              thread_id: threadId,
              metadata: {},
              prompt_version: 'v1',
              temperature: null,
              max_tokens: null,
              history: [],
            },
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
      },
    }),
  ];
}
