/**
 * The SDK: the only module drop-ins import (`import { defineAgent } from 'hangar'`).
 * Each `define*` only tags and returns the definition; validation happens at discovery, so a
 * mistake shows as a drop-in error in /api/v1/status instead of a crash at import.
 */
import type { z as zod } from 'zod';
import type { ToolDefinition } from './agents/tools.js';
import type { AgentDefinition } from './agents/types.js';

export { z } from 'zod';
export type { ToolChoice } from './agents/model.js';
export type { ObjectOptions } from './agents/structured.js';
export type { LoopStep, ToolCallResult, ToolLoopOptions, ToolLoopResult } from './agents/tool-loop.js';
export type { AnyTool, ToolContext, ToolDefinition } from './agents/tools.js';
export type {
  AgentConfig,
  AgentDefinition,
  AgentInput,
  AgentResult,
  AgentRunFn,
  AgentState,
  ChatMessage,
  Citation,
  GraphEdge,
  GraphNode,
  GraphSpec,
  ModelClient,
  NodeFn,
  PromptSet,
  RunContext,
  WorkspaceDocument,
} from './agents/types.js';
export { END } from './agents/types.js';

export const DEFINITION_KIND = Symbol.for('hangar.kind');

export type Tagged<T, K extends string> = T & { readonly [DEFINITION_KIND]?: K };

function tag<T extends object, K extends string>(kind: K, definition: T): Tagged<T, K> {
  Object.defineProperty(definition, DEFINITION_KIND, { value: kind, enumerable: false });
  return definition as Tagged<T, K>;
}

/**
 * Declare an agent. Give it `run` (one async function), `graph` (nodes and edges), or just
 * `instructions` and `tools`: the model then answers, calling the tools as it needs (the tool loop).
 *
 * @example
 * export default defineAgent({
 *   description: 'Says hello',
 *   run: async (input) => `Hello, ${input.query}!`,
 * });
 */
export function defineAgent(definition: AgentDefinition): Tagged<AgentDefinition, 'agent'> {
  return tag('agent', definition);
}

/**
 * Declare a tool a model may call, typed by its zod schemas: `run` receives the parsed arguments.
 * List it on an agent (`tools: [weather]`); the model gets its name, description and the JSON
 * Schema of `input`.
 *
 * @example
 * const weather = defineTool({
 *   name: 'weather',
 *   description: 'The weather in a city now',
 *   input: z.object({ city: z.string() }),
 *   output: z.object({ celsius: z.number() }),
 *   run: async ({ city }) => ({ celsius: await lookUp(city) }),
 * });
 * export default defineAgent({ instructions: 'Answer with the weather.', tools: [weather] });
 */
export function defineTool<I extends zod.ZodType, O extends zod.ZodType = zod.ZodType>(
  definition: ToolDefinition<I, O>,
): Tagged<ToolDefinition<I, O>, 'tool'> {
  return tag('tool', definition);
}

export { defineTeam, type TeamDefinition } from './coderun/define.js';
export { defineEndpoint, type EndpointDefinition, type EndpointHandler } from './endpoints/define.js';
export {
  type EndpointContext,
  type FanOutResult,
  UpstreamCallError,
  type UpstreamCallOptions,
  type UpstreamResult,
} from './endpoints/types.js';
export {
  defineIngestor,
  type IngestContext,
  type IngestDocument,
  type IngestorDefinition,
  type IngestResource,
} from './ingestion/define.js';
export { HangarNotebook } from './notebook/api.js';
export { definePlugin, type ModelCardInput, type PluginDefinition, type PluginLoadContext } from './predictors/define.js';
