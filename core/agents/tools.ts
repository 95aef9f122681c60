/**
 * Tools: typed functions a model may call. A drop-in declares one with `defineTool` (zod schemas
 * for the arguments and, optionally, the result) and lists it on an agent (`tools: [...]`); the
 * tool loop (tool-loop.ts) sends its JSON Schema to the model, validates what the model sends
 * back and runs it.
 *
 * As with agents, `defineTool` only tags the object: the definition is checked when the agent that
 * lists it is discovered, so a mistake is a drop-in error in /api/v1/status, not a crash at import.
 */
import { z } from 'zod';
import type { ToolSpec } from '../lib/model-client.js';
import { PARSE_ONCE } from '../lib/parse-once.js';
import type { AgentInput, ChatMessage, WorkspaceDocument } from './types.js';

/** What a tool's `run` receives beside its arguments. */
export interface ToolContext {
  /** The id the model gave this call. */
  toolCallId: string;
  /** Aborted when the run is cancelled or the tool's `timeout_ms` passes. */
  signal: AbortSignal;
  /** The agent whose run called the tool. */
  agent: string;
  input: AgentInput;
  threadId: string;
  workspace: string;
  /** The conversation the model saw when it asked for this call. */
  messages: readonly ChatMessage[];
  documents(collection: string): Promise<WorkspaceDocument[]>;
}

/**
 * A tool. `input` validates (and parses) the model's arguments; `output`, when given, validates
 * what `run` returns. Methods, not function properties, so a tool typed by its own schemas is
 * assignable where any tool is expected.
 */
export interface ToolDefinition<I extends z.ZodType = z.ZodType, O extends z.ZodType = z.ZodType> {
  /** What the model calls it: letters, digits, `_` and `-` (the protocol's rule), at most 64. */
  name: string;
  /** What it does and when to use it: the model reads this to decide. */
  description: string;
  input: I;
  output?: O;
  run(args: z.output<I>, ctx: ToolContext): Promise<z.input<O>> | z.input<O>;
  /**
   * The call needs a person's approval before it runs: the run suspends as at an approval node
   * (202, a pending approval); approving runs it (with the person's edited arguments, if any),
   * rejecting tells the model `denied by the user: <reason>` and the run goes on (tool-approval.ts).
   */
  needsApproval?: boolean | ((args: z.output<I>, ctx: ToolContext) => boolean | Promise<boolean>);
  /** The call fails (and its signal aborts) after this many milliseconds. */
  timeout_ms?: number;
  /** A `tools/` drop-in: heap cap of its host thread in MB (default: the `agents.maxHeapMb` setting). */
  max_heap_mb?: number;
  /** A `tools/` drop-in: `'inline'` runs it on the server's thread rather than in its supervised host. */
  isolation?: 'supervised' | 'inline';
}

// biome-ignore lint/suspicious/noExplicitAny: tools are held whatever their schemas; `any` is what lets a typed tool sit in one list
export type AnyTool = ToolDefinition<any, any>;

const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
/** An agent's `tools` entry naming an MCP server's tools: `mcp:<server>/*` or `mcp:<server>/<tool>` (mcp-servers.ts). */
export const MCP_TOOL_REF = /^mcp:([a-zA-Z0-9_-]{1,32})\/(\*|[^/\s]{1,128})$/;
const fn = z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', 'expected a function');
const zodSchema = z.custom<z.ZodType>((v) => v instanceof z.ZodType, 'expected a zod schema');

const ToolDefinitionSchema = z
  .object({
    name: z.string().regex(TOOL_NAME, 'letters, digits, _ and -, at most 64 (what the chat-completions protocol accepts)'),
    description: z.string().min(1, 'describe the tool: the model reads this to decide when to call it'),
    input: zodSchema,
    output: zodSchema.optional(),
    run: fn,
    needsApproval: z.union([z.boolean(), fn]).optional(),
    timeout_ms: z.number().int().positive().optional(),
    max_heap_mb: z.number().int().min(16).max(65_536).optional(),
    isolation: z.enum(['supervised', 'inline']).optional(),
  })
  .loose();

/**
 * Check an agent's `tools` list — tools, or names of `tools/` drop-ins — and throw naming the tool
 * and the field that is wrong.
 */
export function validateTools(tools: unknown): Array<AnyTool | string> {
  if (!Array.isArray(tools)) throw new Error('tools: expected an array of tools (defineTool) or tool names');
  const seen = new Set<string>();
  tools.forEach((tool, i) => {
    if (typeof tool === 'string') {
      if (!TOOL_NAME.test(tool) && !MCP_TOOL_REF.test(tool))
        throw new Error(
          `tools.${i}: '${tool}' is not a tool name (letters, digits, _ and -, at most 64) or an MCP server's tools (mcp:<server>/* or mcp:<server>/<tool>)`,
        );
      if (seen.has(tool)) throw new Error(`tools: two tools are named '${tool}'`);
      seen.add(tool);
      return;
    }
    const result = ToolDefinitionSchema.safeParse(tool, PARSE_ONCE);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      const label = typeof (tool as { name?: unknown })?.name === 'string' ? `'${(tool as { name: string }).name}'` : `${i}`;
      throw new Error(`tools.${label}${issue.path.length ? '.' + issue.path.join('.') : ''}: ${issue.message}`);
    }
    if (seen.has(result.data.name)) throw new Error(`tools: two tools are named '${result.data.name}'`);
    seen.add(result.data.name);
    toolSpec(tool as AnyTool);
  });
  return tools as Array<AnyTool | string>;
}

const specs = new WeakMap<AnyTool, ToolSpec>();

/** Give a tool the JSON Schema the model sees, instead of its zod input's (an MCP server's own schema). */
export function withParameters(tool: AnyTool, parameters: Record<string, unknown>): void {
  specs.set(tool, { name: tool.name, description: tool.description, parameters });
}

/**
 * The tool as the model sees it, its arguments' JSON Schema made by zod. Cached per definition (a
 * hot reload makes a new one). Throws when the schema cannot be expressed in JSON Schema (a
 * transform, a date), so discovery reports it instead of the first run.
 */
export function toolSpec(tool: AnyTool): ToolSpec {
  const cached = specs.get(tool);
  if (cached) return cached;
  let parameters: Record<string, unknown>;
  try {
    // `input` mode: the schema of what the model must send, before defaults and transforms.
    parameters = z.toJSONSchema(tool.input, { io: 'input' }) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`tools.'${tool.name}'.input: cannot be sent to a model as JSON Schema: ${(err as Error).message}`);
  }
  delete parameters.$schema;
  if (parameters.type !== 'object') {
    throw new Error(`tools.'${tool.name}'.input: must be a z.object(...) (a model sends a tool's arguments as one JSON object)`);
  }
  const spec = { name: tool.name, description: tool.description, parameters };
  specs.set(tool, spec);
  return spec;
}
