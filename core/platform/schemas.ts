/**
 * The platform routes' responses. They document the routes (/openapi.json) and tests check answers
 * against them; no request is parsed with them. Each is `z.lazy`, so it is built the first time one
 * of those reads it, not at start: building them was ~220 of the zod schemas every start made.
 */
import { z } from 'zod';

export const PlatformInfo = z.lazy(() => z.object({ platform: z.string(), version: z.string(), agents: z.number().int() }));

export const AggregatedHealth = z.lazy(() =>
  z.object({
    status: z
      .string()
      .describe('healthy when every agent is healthy and every drop-in loads, maintenance in maintenance mode, else degraded'),
    agents: z.record(z.string(), z.object({ status: z.string() })),
    errors: z
      .array(
        z.object({
          kind: z.string(),
          name: z.string(),
          file: z.string(),
          line: z.number().int().nullable(),
          column: z.number().int().nullable(),
          error: z.string(),
        }),
      )
      .describe('Each drop-in whose file does not load, with its error (the code frame is in /api/v1/status and in the 503 a call gets)'),
    warnings: z
      .array(z.object({ kind: z.literal('type'), file: z.string(), line: z.number().int(), column: z.number().int(), error: z.string() }))
      .describe(
        "Type errors in the workspace's drop-ins, from a background tsc over its tsconfig.json; they do not stop a drop-in loading, nor make the status degraded",
      ),
  }),
);

export const AgentSummary = z.lazy(() =>
  z.object({
    name: z.string(),
    slug: z.string(),
    description: z.string(),
    version: z.string(),
    framework: z.string(),
  }),
);
export const AgentList = z.lazy(() => z.object({ agents: z.record(z.string(), AgentSummary) }));

export const AgentHealth = z.lazy(() =>
  z.object({
    status: z
      .string()
      .describe('healthy; degraded (its file is broken, the last good version serves); disabled or draining (held back by an operator)'),
    agent: z.string(),
    framework: z.string(),
  }),
);
export const AgentConfigResponse = z.lazy(() => z.object({ agent: z.string(), config: z.record(z.string(), z.unknown()) }));
export const AgentPrompts = z.lazy(() => z.object({ agent: z.string(), versions: z.array(z.string()), active: z.string() }));

export const AgentCardSchema = z.lazy(() =>
  z.object({
    name: z.string(),
    description: z.string(),
    version: z.string(),
    framework: z.string(),
    capabilities: z.record(z.string(), z.boolean()),
    endpoints: z.record(z.string(), z.string()),
    metadata: z.record(z.string(), z.unknown()),
  }),
);

export const DiscoveryDocument = z.lazy(() =>
  z.object({
    platform: z.string(),
    version: z.string(),
    agents: z.record(z.string(), AgentCardSchema),
  }),
);

export const DropInProblemSchema = z.lazy(() =>
  z.object({
    kind: z.string(),
    name: z.string(),
    entry: z.string(),
    file: z.string(),
    line: z.number().int().nullable(),
    column: z.number().int().nullable(),
    message: z.string(),
    excerpt: z.string().nullable(),
    at: z.string(),
  }),
);

export const PlatformStatus = z.lazy(() =>
  z.object({
    platform: z.string(),
    version: z.string(),
    status: z.string(),
    ready: z.boolean(),
    workspace: z.string(),
    started_at: z.string(),
    uptime_seconds: z.number(),
    agents: z.array(
      z.object({
        name: z.string(),
        file: z.string(),
        version: z.string(),
        build: z.string(),
        loaded_at: z.string(),
        loads: z.number().int(),
        status: z.string(),
      }),
    ),
    dropins: z.record(z.string(), z.number().int()).describe('registered drop-ins per kind'),
    errors: z.array(DropInProblemSchema),
    hosts: z
      .array(
        z.object({
          kind: z.string().describe('agent, endpoint or ingestor'),
          name: z.string(),
          agent: z.string().optional().describe("an agent host's agent (its name)"),
          heap_mb: z.number().int(),
          ready: z.boolean().describe('its thread is running (hosts start in the background as drop-ins load)'),
          running: z.number().int(),
          restarts: z.number().int(),
          out_of_memory: z.number().int(),
          last_restart: z
            .object({ reason: z.enum(['out_of_memory', 'unresponsive', 'stopped']), detail: z.string(), at: z.string() })
            .nullable(),
        }),
      )
      .describe('supervised drop-in hosts started in this process: heap cap, calls running, restarts and why (README "Isolation")'),
    type_errors: z.array(z.object({ file: z.string(), line: z.number().int(), column: z.number().int(), message: z.string() })),
    requests: z.object({ total: z.number(), by_status: z.record(z.string(), z.number()) }),
    tasks: z.object({ enabled: z.boolean() }),
    /** The MCP servers of `mcp.servers`: started on first use, so `idle` until an agent needs one. */
    mcp_servers: z.array(
      z.object({
        name: z.string(),
        transport: z.enum(['stdio', 'http']),
        state: z.enum(['idle', 'starting', 'ready', 'failed', 'stopped']),
        error: z.string().nullable(),
        restarts: z.number().int(),
        pid: z.number().int().nullable(),
        tools: z.array(z.string()),
      }),
    ),
    store: z
      .object({
        backend: z.string(),
        path: z.string().describe('relative to the workspace'),
        writable: z.boolean(),
        problem: z.string().optional().describe('why the last write failed, while writes fail'),
        recovered: z
          .object({ moved_to: z.string(), problem: z.string() })
          .optional()
          .describe('a damaged database file moved aside at start'),
      })
      .describe('the store: the embedded SQLite file, or PostgreSQL in team mode'),
    team: z
      .object({
        instance: z.string().describe('this instance'),
        instances: z.array(
          z.object({
            id: z.string(),
            host: z.string(),
            pid: z.number().int(),
            url: z.string().nullable(),
            version: z.string(),
            started_at: z.string(),
            seen_at: z.string(),
          }),
        ),
      })
      .optional()
      .describe('team mode only: every instance on the shared database, with its version, so a mixed deploy is visible'),
  }),
);
