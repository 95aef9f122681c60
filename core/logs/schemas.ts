/**
 * The invocation log's records, queries and analyses. One record per call to an agent, endpoint,
 * plugin, pipeline or ingestor, and per control-plane action.
 */
import { z } from 'zod';
import { INVOKED_RESOURCES } from './types.js';
import { WINDOW } from './window.js';

export const InvokedResourceSchema = z.enum(INVOKED_RESOURCES);

export const InvocationRecord = z.object({
  id: z.string(),
  resource: InvokedResourceSchema,
  name: z.string(),
  operation: z.string(),
  principal: z.string(),
  started_at: z.string(),
  duration_ms: z.number(),
  status: z.enum(['ok', 'error']),
  http_status: z.number().int().nullable(),
  /** Redacted; a string preview ending in "…" when it was longer than `logs.maxFieldChars`. */
  input: z.unknown(),
  output: z.unknown(),
  /** True when input, output or error was cut. */
  truncated: z.boolean(),
  error: z.string().nullable(),
  task_id: z.string().nullable(),
  /**
   * Model tokens of an agent run, from its response's `metadata.usage` (a stream's `complete`
   * frame), kept beside `output` so a truncated output does not lose them. Null when the call
   * used no model; absent from records written before it existed.
   */
  usage: z
    .object({
      prompt_tokens: z.number(),
      completion_tokens: z.number(),
      total_tokens: z.number(),
      /** With a price table in the settings (`model.prices`): the run's cost, null when a call could not be priced. */
      cost: z.number().nullable().optional(),
      currency: z.string().optional(),
    })
    .nullable()
    .optional(),
});
export type InvocationRecord = z.infer<typeof InvocationRecord>;

const time = z
  .string()
  .refine((v) => !Number.isNaN(Date.parse(v)) || /^\d+$/.test(v), 'expected an ISO 8601 time or epoch milliseconds')
  .transform((v) => (/^\d+$/.test(v) ? Number(v) : Date.parse(v)));

/** `?resource=agent&name=hello&status=error&since=2026-01-01T00:00:00Z&limit=50&offset=0` */
export const ListLogsQuery = z.object({
  resource: InvokedResourceSchema.optional(),
  name: z.string().min(1).optional(),
  operation: z.string().min(1).optional(),
  principal: z.string().min(1).optional(),
  /** `ok`, `error`, or an HTTP status code such as `503`. */
  status: z
    .string()
    .regex(/^(ok|error|\d{3})$/, 'expected ok, error or an HTTP status code')
    .optional(),
  since: time.optional(),
  until: time.optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  offset: z.coerce.number().int().min(0).default(0),
});
export type ListLogsQuery = z.output<typeof ListLogsQuery>;

export const LogIdParams = z.object({ id: z.string() });

export const LogPage = z.object({
  logs: z.array(InvocationRecord),
  total: z.number().int(),
  limit: z.number().int(),
  offset: z.number().int(),
  next_offset: z.number().int().nullable(),
});
export type LogPage = z.infer<typeof LogPage>;

export const AnalyzeRequest = z.object({
  /** How far back from `until` (default now): `15m`, `1h`, `24h`, `7d`. Ignored when `since` is given. */
  window: z.string().regex(WINDOW, 'expected a duration such as 15m, 1h, 24h or 7d').default('24h'),
  since: time.optional(),
  until: time.optional(),
  resource: InvokedResourceSchema.optional(),
  name: z.string().min(1).optional(),
  /** How many slowest calls and top errors to keep per resource. */
  top: z.coerce.number().int().min(1).max(100).default(5),
});
export type AnalyzeRequest = z.output<typeof AnalyzeRequest>;

const Latency = z.object({ p50: z.number(), p95: z.number(), p99: z.number(), mean: z.number(), max: z.number() });

const Slow = z.object({
  id: z.string(),
  name: z.string(),
  operation: z.string(),
  duration_ms: z.number(),
  started_at: z.string(),
  status: z.enum(['ok', 'error']),
});
const TopError = z.object({ error: z.string(), count: z.number().int(), last_seen: z.string(), names: z.array(z.string()) });
const NameStats = z.object({
  name: z.string(),
  count: z.number().int(),
  errors: z.number().int(),
  error_rate: z.number(),
  latency_ms: Latency,
});

export const ResourceStats = z.object({
  resource: InvokedResourceSchema,
  count: z.number().int(),
  errors: z.number().int(),
  error_rate: z.number(),
  latency_ms: Latency,
  slowest: z.array(Slow),
  /** Error messages grouped after replacing ids and numbers, most frequent first. */
  top_errors: z.array(TopError),
  names: z.array(NameStats),
});

export const Analysis = z.object({
  id: z.string(),
  created_at: z.string(),
  window: z.object({ since: z.string(), until: z.string() }),
  filters: z.object({ resource: z.string().nullable(), name: z.string().nullable() }),
  total: z.number().int(),
  errors: z.number().int(),
  error_rate: z.number(),
  latency_ms: Latency,
  resources: z.array(ResourceStats),
  /** How long the analysis took to compute. */
  compute_ms: z.number(),
});
export type Analysis = z.infer<typeof Analysis>;
export type Latency = z.infer<typeof Latency>;
