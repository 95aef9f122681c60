/**
 * Request and response shapes of the control plane. Payloads are "not shown" in the spec; the
 * verbs follow what operators know from load balancers and orchestrators (drain, cordon/disable,
 * maintenance pages) and from admin APIs that change log levels without a restart.
 */
import { z } from 'zod';
import { CONTROLLED_RESOURCES } from './resources.js';

export const ControlledResource = z.enum(CONTROLLED_RESOURCES);
export type ControlledResource = z.infer<typeof ControlledResource>;

/**
 * - active: serving;
 * - draining: refusing new calls with 503 + Retry-After while calls in flight finish;
 * - drained: draining with nothing left in flight;
 * - disabled: refusing calls with 503 until enabled.
 */
export const ResourceState = z.enum(['active', 'draining', 'drained', 'disabled']);
export type ResourceState = z.infer<typeof ResourceState>;

export const ResourceStatus = z.object({
  resource: ControlledResource,
  name: z.string(),
  state: ResourceState,
  /** Calls to it running now. */
  in_flight: z.number().int(),
  /** When the state last changed (null: active since start). */
  since: z.string().nullable(),
  reason: z.string().nullable(),
  /** The drop-in file, and its load error if the last change of it failed to load. */
  file: z.string().nullable(),
  error: z.string().nullable(),
});
export type ResourceStatus = z.infer<typeof ResourceStatus>;

export const DrainRequest = z.object({
  /** Retry-After (seconds) sent with the 503s while draining. */
  retry_after: z.number().int().min(1).max(86_400).default(30),
  /** Wait up to this long for in-flight calls to finish before answering (0: answer at once). */
  wait_ms: z.number().int().min(0).max(300_000).default(0),
  reason: z.string().max(500).optional(),
});

export const DisableRequest = z.object({ reason: z.string().max(500).optional() });

export const MaintenanceRequest = z.object({
  enabled: z.boolean(),
  message: z.string().max(500).optional(),
  retry_after: z.number().int().min(1).max(86_400).default(60),
});

export const MaintenanceStatus = z.object({
  enabled: z.boolean(),
  message: z.string().nullable(),
  retry_after: z.number().int(),
  since: z.string().nullable(),
});
export type MaintenanceStatus = z.infer<typeof MaintenanceStatus>;

export const LogLevelRequest = z.object({ level: z.enum(['debug', 'info', 'warn', 'error', 'silent']) });

export const RateLimitRequest = z
  .object({
    enabled: z.boolean().optional(),
    window_ms: z.number().int().positive().optional(),
    max: z.number().int().positive().optional(),
  })
  .refine(
    (v) => v.enabled !== undefined || v.window_ms !== undefined || v.max !== undefined,
    'give at least one of enabled, window_ms, max',
  );

export const RateLimitStatus = z.object({ enabled: z.boolean(), window_ms: z.number().int(), max: z.number().int() });

export const ResourceList = z.object({ resources: z.array(ResourceStatus) });

/** `/resources/{resource}/{name}`: the type is checked by the handler, so an unknown one is a 404 naming the types. */
export const ResourceParams = z.object({ resource: z.string(), name: z.string() });
