import { z } from 'zod';
import { dropInUnavailable, fail } from '../kernel/errors.js';
import type { DropInKind, Registry } from '../kernel/registry.js';
import { PARSE_ONCE } from '../lib/parse-once.js';
import { TimeoutMs } from './schemas.js';
import { toolAgentRun } from './tool-agent.js';
import { validateTools } from './tools.js';
import type { AgentConfig, AgentDefinition } from './types.js';

/**
 * The `agent` drop-in kind: how discovery validates what `agents/<name>.ts` exports and turns it
 * into the normalised `Agent` every route reads.
 */

/** Names that would shadow platform routes under /api/v1/. */
export const RESERVED_AGENT_NAMES = new Set([
  'agents',
  'status',
  'storage',
  'tasks',
  'plugins',
  'pipelines',
  'ingestors',
  'ingestion',
  'endpoints',
  'logs',
  'control',
  'health',
  'openapi',
  'docs',
  'threads',
  'runs',
  'teams',
  'approvals',
  'tools',
]);

const NAME = /^[a-z0-9][a-z0-9_-]{0,63}$/;

const fn = z.custom<(...args: never[]) => unknown>((v) => typeof v === 'function', 'expected a function');

const AgentDefinitionSchema = z
  .object({
    name: z.string().regex(NAME, 'lowercase letters, digits, - and _, starting with a letter or digit').optional(),
    slug: z.string().min(1).optional(),
    description: z.string().optional(),
    version: z.string().min(1).optional(),
    framework: z.string().min(1).optional(),
    prompts: z
      .object({ versions: z.record(z.string(), z.string()), active: z.string().optional() })
      .refine((p) => Object.keys(p.versions).length > 0, 'prompts.versions must name at least one version')
      .refine((p) => p.active === undefined || p.active in p.versions, 'prompts.active must be one of prompts.versions')
      .optional(),
    config: z
      .object({
        model: z.string().optional(),
        temperature: z.number().min(0).max(2).optional(),
        max_tokens: z.number().int().positive().optional(),
        prompt_version: z.string().optional(),
      })
      .loose()
      .optional(),
    input: z.custom<z.ZodType>((v) => v instanceof z.ZodType, 'expected a zod schema').optional(),
    output: z.custom<z.ZodType>((v) => v instanceof z.ZodType, 'expected a zod schema').optional(),
    requiresModel: z.boolean().optional(),
    instructions: z.string().optional(),
    tools: z.array(z.unknown()).optional(),
    timeout_ms: TimeoutMs.optional(),
    isolation: z.enum(['supervised', 'inline']).optional(),
    max_heap_mb: z.number().int().min(16).max(65_536).optional(),
    run: fn.optional(),
    graph: z
      .object({
        nodes: z.record(z.string(), z.unknown()).refine((n) => Object.keys(n).length > 0, 'graph needs at least one node'),
        edges: z.array(z.object({ from: z.string(), to: z.string() }).loose()),
        entry: z.string(),
        end: z.array(z.string()).optional(),
        result: fn.optional(),
      })
      .loose()
      .optional(),
  })
  .loose()
  .refine((d) => d.run === undefined || d.graph === undefined, 'an agent has `run` or `graph`, not both')
  .refine(
    (d) => d.run !== undefined || d.graph !== undefined || d.instructions !== undefined || d.tools !== undefined,
    "an agent needs `run`, `graph`, or `instructions` (the model answers, calling the agent's `tools`)",
  )
  .refine(
    (d) => d.instructions === undefined || d.prompts === undefined,
    'give `instructions` or `prompts`, not both (`instructions` is prompt v1)',
  );

/** An agent as the platform sees it: every optional field resolved. */
export interface Agent {
  name: string;
  slug: string;
  description: string;
  version: string;
  framework: string;
  prompts: { versions: Record<string, string>; active: string };
  config: AgentConfig;
  definition: AgentDefinition;
}

export function normaliseAgent(declared: AgentDefinition, defaultName: string): Agent {
  if (declared.tools !== undefined) validateTools(declared.tools);
  // An agent of `instructions` and `tools` alone is the tool loop (tool-agent.ts); made here, once
  // per loaded definition, so every route runs it as a function agent.
  const definition: AgentDefinition =
    declared.run || declared.graph
      ? declared
      : {
          ...declared,
          ...(declared.instructions !== undefined ? { prompts: { versions: { v1: declared.instructions } } } : {}),
          requiresModel: declared.requiresModel ?? true,
          run: toolAgentRun,
        };
  const name = definition.name ?? defaultName.toLowerCase();
  if (!NAME.test(name)) throw new Error(`name "${name}" is not valid: use lowercase letters, digits, - and _`);
  if (RESERVED_AGENT_NAMES.has(name)) throw new Error(`name "${name}" is reserved by a platform route`);
  // An agent without prompts still answers `prompt_version: 'v1'` (the spec's default), so it has
  // one implicit, empty v1 — /prompts, the card and the 404 for unknown versions all agree.
  const versions = definition.prompts?.versions ?? { v1: '' };
  const keys = Object.keys(versions);
  const active = definition.prompts?.active ?? (keys.includes('v1') ? 'v1' : (keys[0] ?? 'v1'));
  return {
    name,
    slug: definition.slug ?? name,
    description: definition.description ?? '',
    version: definition.version ?? '0.1.0',
    framework: definition.framework ?? 'hangar',
    prompts: { versions, active },
    config: { prompt_version: active, ...definition.config },
    definition,
  };
}

export const agentKind: DropInKind<Agent> = {
  kind: 'agent',
  folder: 'agents',
  load(exported, defaultName) {
    const result = AgentDefinitionSchema.safeParse(exported, PARSE_ONCE);
    if (!result.success) {
      const issue = result.error.issues[0]!;
      throw new Error(`${issue.path.length ? issue.path.join('.') + ': ' : ''}${issue.message}`);
    }
    return normaliseAgent(exported as AgentDefinition, defaultName);
  },
  nameOf: (agent) => agent.name,
};

/**
 * The live agent called `name`; a 503 with the load error when its file exists but does not load
 * (and no earlier version serves), else a 404 `{detail}` naming it.
 */
export function findAgent(registry: Registry, name: string): Agent {
  const entry = registry.get<Agent>('agent', name);
  if (!entry) {
    const problem = registry.problemNamed('agent', name);
    throw problem ? dropInUnavailable(problem) : fail('HANGAR_AGENT_NOT_FOUND', { agent: name });
  }
  return entry.definition;
}
