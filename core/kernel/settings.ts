import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { PARSE_ONCE } from '../lib/parse-once.js';

/**
 * Settings, from lowest to highest precedence: defaults < workspace config file
 * (`hangar.config.json` in the workspace, or `--config FILE`) < environment (`HANGAR_*`) < flags.
 *
 * Environment names map onto keys: `HANGAR_PORT` → `port`, and a double underscore nests:
 * `HANGAR_RATE_LIMIT__MAX` → `rateLimit.max`, `HANGAR_MODEL__BASE_URL` → `model.baseUrl`.
 * Values are read as JSON when they parse (numbers, booleans, arrays), else as strings.
 *
 * Secrets (tokens, API keys) may be written as `${ENV_NAME}`; they are resolved when used and
 * never stored, logged or shown (see `redactSettings`).
 */

const LogLevel = z.enum(['debug', 'info', 'warn', 'error', 'silent']);

export const SettingsSchema = z
  .object({
    root: z.string().min(1),
    host: z.string().min(1).default('127.0.0.1'),
    port: z.coerce.number().int().min(0).max(65535).default(8787),
    window: z.boolean().default(true),
    logLevel: LogLevel.default('info'),
    /** Extra names accepted in the Host header besides localhost, 127.0.0.1, [::1] and `host`. */
    allowedHosts: z.array(z.string()).default([]),
    /**
     * Origins (`scheme://host[:port]`) besides the server's own whose pages may send state-changing
     * requests and open websockets, e.g. a dev frontend on another port. Never `*`.
     */
    allowedOrigins: z
      .array(
        z
          .string()
          .refine(
            (o) => URL.canParse(o) && new URL(o).origin === o.replace(/\/$/, '').toLowerCase(),
            'expected an origin such as http://localhost:5173 (scheme, host, port; no path)',
          ),
      )
      .default([]),
    auth: z
      .object({
        /** principal → token (or `${ENV}` reference). Empty on loopback means everyone is `local`. */
        tokens: z.record(z.string(), z.string().min(1)).default({}),
      })
      .prefault({}),
    rateLimit: z
      .object({
        /** Default: off when bound to loopback, on otherwise. */
        enabled: z.boolean().optional(),
        windowMs: z.coerce.number().int().positive().default(60_000),
        max: z.coerce.number().int().positive().default(600),
      })
      .prefault({}),
    chat: z
      .object({
        /**
         * How many of a thread's newest messages `/chat` hands the agent when the request names no
         * `max_history` (its own value wins; 0 loads none; null loads all). The thread keeps every message.
         */
        max_history: z.coerce.number().int().nonnegative().nullable().default(100),
      })
      .prefault({}),
    agents: z
      .object({
        /**
         * The deadline of an agent run (invoke, stream, chat, task) whose definition names no
         * `timeout_ms`; also the most a request's own `timeout_ms` may ask for, unless the
         * agent's definition allows more. At most 24 h.
         */
        timeoutMs: z.coerce.number().int().positive().max(86_400_000).default(300_000),
        /** Heap cap (MB) of each agent's host thread, unless its definition sets `max_heap_mb`. */
        maxHeapMb: z.coerce.number().int().min(16).max(65_536).default(256),
        /**
         * How long a host running calls may go without a heartbeat (its event loop blocked, e.g. a
         * synchronous loop) before it is restarted and its calls fail.
         */
        watchdogMs: z.coerce.number().int().min(100).max(3_600_000).default(10_000),
      })
      .prefault({}),
    dropins: z
      .object({
        /**
         * How long a drop-in's top-level code may run when it is loaded; past it the load is
         * interrupted and reported ("top-level code did not finish in N ms").
         */
        loadTimeoutMs: z.coerce.number().int().positive().max(600_000).default(3_000),
        /**
         * How long the host of an endpoint handler or an ingestor may go without a heartbeat while
         * it runs calls (its event loop blocked) before it is restarted; agents have their own.
         */
        watchdogMs: z.coerce.number().int().min(100).max(3_600_000).default(10_000),
      })
      .prefault({}),
    /** Custom endpoints' handlers (core/endpoints), which run in supervised hosts. */
    endpoints: z
      .object({
        /** Deadline of a handler's call, unless the endpoint sets `timeout_ms`; past it the call answers 504. */
        timeoutMs: z.coerce.number().int().positive().max(86_400_000).default(60_000),
        /** Heap cap (MB) of each handler's host thread, unless the endpoint sets `max_heap_mb`. */
        maxHeapMb: z.coerce.number().int().min(16).max(65_536).default(256),
      })
      .prefault({}),
    /** Ingestors (core/ingestion), which run in supervised hosts. */
    ingestors: z
      .object({
        /** Deadline of one ingestion run, unless the ingestor sets `timeout_ms`; past it the run fails (504). */
        timeoutMs: z.coerce.number().int().positive().max(86_400_000).default(3_600_000),
        /** Heap cap (MB) of each ingestor's host thread, unless the ingestor sets `max_heap_mb`. */
        maxHeapMb: z.coerce.number().int().min(16).max(65_536).default(512),
      })
      .prefault({}),
    checkpoints: z
      .object({
        /**
         * How many of a thread's newest checkpoints are kept; older ones are pruned in the
         * background. Unset (the default) keeps every one, as LangGraph's SQLite checkpointer does.
         */
        keep: z.coerce.number().int().positive().optional(),
      })
      .prefault({}),
    storage: z
      .object({
        /**
         * SQLite's promise for a committed write (core/storage/sqlite-store.ts): `normal` survives
         * the process being killed; `full` also survives power loss, at an fsync per commit.
         */
        durability: z.enum(['normal', 'full']).default('normal'),
        /**
         * Team mode: a PostgreSQL database (`postgres://user:pass@host/db`, or `${ENV_NAME}`) shared by
         * every instance, instead of the workspace's SQLite file. README, "Team mode".
         */
        url: z.string().min(1).optional(),
      })
      .prefault({}),
    /** Team mode (several instances on one PostgreSQL, `storage.url`): how a dead instance is noticed. */
    team: z
      .object({
        /**
         * A worker holding a job tells the queue it is alive this often (pg-boss's floor: 10 s); a job
         * silent this long is taken for orphaned and run again on another instance.
         */
        heartbeatSeconds: z.coerce.number().int().min(10).default(30),
        /** How often the queue looks for silent jobs: failover takes about heartbeat + this. */
        monitorIntervalSeconds: z.coerce.number().int().positive().default(5),
      })
      .prefault({}),
    tasks: z
      .object({
        enabled: z.boolean().default(true),
        concurrency: z.coerce.number().int().positive().default(4),
        eventsPerTask: z.coerce.number().int().positive().default(1000),
        /** Finished tasks older than this are deleted in the background: `30d`, `12h`; `0` keeps all. */
        retention: z
          .string()
          .regex(/^(0|\d+[smhd])$/, 'expected a duration such as 30d, 12h or 90m, or 0 to keep every task')
          .default('30d'),
      })
      .prefault({}),
    streams: z
      .object({
        /** How many finished invoke streams are kept for replay, and for how long. */
        retain: z.coerce.number().int().nonnegative().default(200),
        ttlSeconds: z.coerce.number().int().positive().default(900),
      })
      .prefault({}),
    model: z
      .object({
        baseUrl: z.string().optional(),
        apiKey: z.string().optional(),
        model: z.string().default('gpt-4o-mini'),
        timeoutMs: z.coerce.number().int().positive().default(60_000),
        retries: z.coerce.number().int().nonnegative().default(2),
        /**
         * Most model calls in one tool loop (`ctx.model.run`, agents declared by `instructions`)
         * when the call names no `maxSteps`: the AI SDK's `Agent` default, so a model that never
         * stops calling tools ends with finish reason `max_steps` instead of running up a bill.
         */
        maxSteps: z.coerce.number().int().positive().default(20),
        /**
         * What tokens cost, per model name as calls report it, in `currency` per million tokens
         * (the unit providers publish prices in). A run's `metadata.usage` then carries `cost`;
         * a run with a call to a model not listed here has `cost: null` rather than a partial sum.
         */
        prices: z
          .record(z.string(), z.object({ prompt_per_1m: z.number().nonnegative(), completion_per_1m: z.number().nonnegative() }).strict())
          .default({}),
        /** The currency `prices` are in; only a label on `usage.currency`. */
        currency: z.string().min(1).default('USD'),
      })
      .prefault({}),
    /** ML plugins (core/ml): worker threads of the prediction pool (default: cores − 1, at least 1) and a heap cap per thread. */
    plugins: z
      .object({
        threads: z.coerce.number().int().positive().optional(),
        maxHeapMb: z.coerce.number().int().positive().optional(),
      })
      .prefault({}),
    /**
     * Invocation logs (core/logs): off by default. `retain` bounds how many records are kept (oldest
     * go first); inputs and outputs longer than `maxFieldChars` of JSON are truncated.
     */
    logs: z
      .object({
        enabled: z.boolean().default(false),
        retain: z.coerce.number().int().positive().default(10_000),
        maxFieldChars: z.coerce.number().int().min(64).default(2_000),
      })
      .prefault({}),
    /**
     * MCP servers whose tools agents may use (`tools: ['mcp:<server>/*']` or `'mcp:<server>/<tool>'`),
     * in the shape Claude Desktop and VS Code use: a child process (`command`, `args`, `env`, `cwd`)
     * spoken to over stdio, or a Streamable HTTP server (`url`, `headers`). `env` and `headers`
     * values may be `${ENV}` references. `needsApproval: true` gates every tool of the server
     * behind a person's approval. Servers come only from here, never from a request.
     */
    mcp: z
      .object({
        servers: z
          .record(
            z.string().regex(/^[a-zA-Z0-9_-]{1,32}$/, 'an MCP server name is letters, digits, _ and -, at most 32'),
            z.union([
              z
                .object({
                  type: z.literal('stdio').optional(),
                  command: z.string().min(1),
                  args: z.array(z.string()).default([]),
                  env: z.record(z.string(), z.string()).default({}),
                  cwd: z.string().optional(),
                  needsApproval: z.boolean().default(false),
                })
                .strict(),
              z
                .object({
                  type: z.enum(['http', 'streamable-http']).optional(),
                  url: z.url(),
                  headers: z.record(z.string(), z.string()).default({}),
                  needsApproval: z.boolean().default(false),
                })
                .strict(),
            ]),
          )
          .default({}),
      })
      .strict()
      .prefault({}),
    /**
     * Traces of agent runs (runs, graph nodes, model and tool calls, with the OpenTelemetry GenAI
     * conventions) over OTLP/HTTP. Off unless `otlp.endpoint` is set: nothing leaves the machine
     * unless asked. The endpoint is a collector's base URL (`/v1/traces` is appended unless it
     * ends so): Jaeger `http://localhost:4318`, Phoenix `http://localhost:6006`, Langfuse
     * `https://cloud.langfuse.com/api/public/otel` with an `Authorization` header. Header values
     * may be `${ENV}` references. `captureContent` adds prompts, answers and tool arguments and
     * results to the spans (the conventions' opt-in: they may hold personal data).
     */
    telemetry: z
      .object({
        serviceName: z.string().min(1).default('hangar'),
        captureContent: z.boolean().default(false),
        otlp: z
          .object({
            endpoint: z.url().optional(),
            protocol: z.enum(['http/protobuf', 'http/json']).default('http/protobuf'),
            headers: z.record(z.string(), z.string()).default({}),
            /** Most milliseconds a finished span waits for its batch to be sent. */
            batchDelayMs: z.coerce.number().int().positive().default(5000),
          })
          .strict()
          .prefault({}),
      })
      .strict()
      .prefault({}),
    /**
     * Control plane (core/control): off by default; when on, `token` (or a `${ENV}` reference) is
     * required in the X-Control-Token header of every /api/v1/control request.
     */
    control: z
      .object({
        enabled: z.boolean().default(false),
        token: z.string().min(1).optional(),
      })
      .prefault({}),
    watch: z.boolean().default(true),
    code: z.record(z.string(), z.unknown()).default({}), // coding-run keys; validated by core/coderun (CodeConfigSchema)
    requestLog: z.boolean().default(true),
    /** Maximum JSON request body. */
    bodyLimit: z.string().default('1mb'),
    /** Deepest nesting of arrays and objects a JSON body may have (checked before parsing). */
    bodyDepthLimit: z.coerce.number().int().positive().default(64),
  })
  .strict();

export type Settings = z.output<typeof SettingsSchema>;
export type SettingsInput = z.input<typeof SettingsSchema>;

export class SettingsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SettingsError';
  }
}

const CONFIG_FILE = 'hangar.config.json';

function camel(s: string): string {
  return s.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function parseEnvValue(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function setPath(target: Record<string, unknown>, keys: string[], value: unknown): void {
  let node = target;
  for (const key of keys.slice(0, -1)) {
    if (typeof node[key] !== 'object' || node[key] === null) node[key] = {};
    node = node[key] as Record<string, unknown>;
  }
  node[keys[keys.length - 1]!] = value;
}

function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    if (value === undefined) continue;
    const prev = out[key];
    out[key] =
      value && typeof value === 'object' && !Array.isArray(value) && prev && typeof prev === 'object' && !Array.isArray(prev)
        ? deepMerge(prev as Record<string, unknown>, value as Record<string, unknown>)
        : value;
  }
  return out;
}

/** `HANGAR_*` variables as a partial settings object, plus where each key came from. */
export function settingsFromEnv(env: NodeJS.ProcessEnv, sources: Map<string, string>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, raw] of Object.entries(env)) {
    if (!name.startsWith('HANGAR_') || raw === undefined) continue;
    const keys = name.slice('HANGAR_'.length).split('__').map(camel);
    setPath(out, keys, parseEnvValue(raw));
    sources.set(keys.join('.'), name);
  }
  return out;
}

export interface LoadSettingsOptions {
  flags?: Partial<Record<string, unknown>>;
  env?: NodeJS.ProcessEnv;
  configFile?: string;
  defaultRoot: string;
}

/**
 * Resolve settings from every source; throws `SettingsError` with one line naming the bad key
 * and where it came from, e.g. `invalid setting port (from HANGAR_PORT): Too big: …`.
 */
export function loadSettings({ flags = {}, env = process.env, configFile, defaultRoot }: LoadSettingsOptions): Settings {
  const sources = new Map<string, string>();
  const fromEnv = settingsFromEnv(env, sources);
  const root = path.resolve(String(flags.root ?? fromEnv.root ?? defaultRoot));

  const file = configFile ? path.resolve(configFile) : path.join(root, CONFIG_FILE);
  let fromFile: Record<string, unknown> = {};
  if (configFile && !existsSync(file)) throw new SettingsError(`config file not found: ${file}`);
  if (existsSync(file)) {
    try {
      fromFile = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>;
    } catch (err) {
      throw new SettingsError(`config file ${file} is not valid JSON: ${(err as Error).message}`);
    }
    if (typeof fromFile !== 'object' || fromFile === null || Array.isArray(fromFile)) {
      throw new SettingsError(`config file ${file} must hold a JSON object`);
    }
  }
  const fileLabel = path.basename(file);
  const flagged = Object.fromEntries(Object.entries(flags).filter(([, v]) => v !== undefined));

  const merged = deepMerge(deepMerge(deepMerge(fromFile, fromEnv), flagged), { root });
  const result = SettingsSchema.safeParse(merged, PARSE_ONCE);
  if (!result.success) {
    const issue = result.error.issues[0]!;
    const keyPath = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') keyPath.push(issue.keys[0]!);
    const key = keyPath.join('.') || '(root)';
    const source =
      key in flagged || keyPath[0]! in flagged
        ? `--${keyPath[0]}`
        : (sources.get(key) ?? [...sources].find(([k]) => key.startsWith(k))?.[1] ?? fileLabel);
    const message = issue.code === 'unrecognized_keys' ? 'unknown setting' : issue.message;
    throw new SettingsError(`invalid setting ${key} (from ${source}): ${message}`);
  }
  return Object.freeze(result.data) as Settings;
}

export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

/** Settings as shown to people (status, control plane): secrets replaced, `${ENV}` refs kept. */
export function redactSettings(settings: Settings): Record<string, unknown> {
  const hide = (v: string | undefined) => (v === undefined ? undefined : /^\$\{[A-Z0-9_]+\}$/i.test(v) ? v : '***');
  return {
    ...settings,
    auth: { tokens: Object.fromEntries(Object.keys(settings.auth.tokens).map((p) => [p, hide(settings.auth.tokens[p])])) },
    model: { ...settings.model, apiKey: hide(settings.model.apiKey) },
    control: { ...settings.control, token: hide(settings.control.token) },
    telemetry: {
      ...settings.telemetry,
      otlp: {
        ...settings.telemetry.otlp,
        headers: Object.fromEntries(Object.entries(settings.telemetry.otlp.headers).map(([name, value]) => [name, hide(value)])),
      },
    },
    // A database URL carries its password: shown without it.
    storage: { ...settings.storage, url: hideUrlPassword(settings.storage.url) },
  };
}

function hideUrlPassword(url: string | undefined): string | undefined {
  if (url === undefined || /^\$\{[A-Z0-9_]+\}$/i.test(url) || !URL.canParse(url)) return url;
  const parsed = new URL(url);
  if (parsed.password) parsed.password = '***';
  return parsed.toString();
}

/** Resolve a `${NAME}` reference at the moment of use. Plain strings pass through. */
export function resolveSecret(value: string | undefined, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (value === undefined) return undefined;
  const match = /^\$\{([A-Z0-9_]+)\}$/i.exec(value);
  if (!match) return value;
  const resolved = env[match[1]!];
  if (resolved === undefined) throw new Error(`environment variable ${match[1]} is not set`);
  return resolved;
}
