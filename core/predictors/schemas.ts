/**
 * Request and response shapes of the plugin routes. Payloads are "not shown" in the spec; these
 * follow what model servers (KServe, TorchServe, BentoML) give their users: one input per
 * `/predict`, many per `/predict/batch` with a result per item, and a model card as data.
 *
 * Schemas only a route reads are `z.lazy`: built on first use, not at start (core/http/route.ts).
 */
import { z } from 'zod';

export const PLUGIN_STATUSES = ['loading', 'ready', 'failed'] as const;
export const PluginStatus = z.enum(PLUGIN_STATUSES);
export type PluginStatus = z.infer<typeof PluginStatus>;

/** Largest batch accepted in one call (bigger jobs go through /predict/async in pieces). */
export const MAX_BATCH = 100_000;

export const PredictRequest = z.object({
  /** One input, checked against the plugin's input schema (see its model card). */
  input: z.unknown().refine((v) => v !== undefined, 'Required'),
});
export type PredictRequest = z.infer<typeof PredictRequest>;

export const BatchRequest = z.object({
  inputs: z.array(z.unknown()).min(1).max(MAX_BATCH),
});
export type BatchRequest = z.infer<typeof BatchRequest>;

/** `/predict/async` takes either shape: one input, or a batch run as one background task. */
export const AsyncPredictRequest = z.union([PredictRequest, BatchRequest]);
export type AsyncPredictRequest = z.infer<typeof AsyncPredictRequest>;

export const PredictResponse = z.lazy(() =>
  z.object({
    plugin: z.string(),
    version: z.string(),
    output: z.unknown(),
    duration_ms: z.number(),
  }),
);
export type PredictResponse = z.infer<typeof PredictResponse>;

export const BatchItem = z.union([
  z.object({ index: z.number().int(), ok: z.literal(true), output: z.unknown() }),
  z.object({ index: z.number().int(), ok: z.literal(false), status: z.number().int(), error: z.string() }),
]);
export type BatchItem = z.infer<typeof BatchItem>;

export const BatchResponse = z.object({
  plugin: z.string(),
  version: z.string(),
  /** The item count, named as in every other batch task's result (endpoint, pipeline, ingestion). */
  total: z.number().int(),
  /** The same count, under the name plugin batches always had. */
  count: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  /** One entry per input, in input order; a failed item carries the status it would have had alone. */
  results: z.array(BatchItem),
  duration_ms: z.number(),
});
export type BatchResponse = z.infer<typeof BatchResponse>;

export const PluginHealth = z.object({
  name: z.string(),
  status: PluginStatus,
  version: z.string(),
  /** Why the last load failed (`status: failed`). */
  error: z.string().nullable(),
  loaded_at: z.string().nullable(),
  load_ms: z.number().nullable(),
  /** How many times the model was (re)loaded in this process. */
  loads: z.number().int(),
});
export type PluginHealth = z.infer<typeof PluginHealth>;

export const PluginSummary = z.object({
  name: z.string(),
  version: z.string(),
  description: z.string().nullable(),
  task: z.string().nullable(),
  status: z.union([PluginStatus, z.literal('error')]),
  error: z.string().nullable(),
  file: z.string(),
});
export type PluginSummary = z.infer<typeof PluginSummary>;

export const ModelCard = z.lazy(() =>
  z.object({
    name: z.string(),
    version: z.string(),
    description: z.string().nullable(),
    task: z.string(),
    /** JSON Schema of one input and of one output, generated from the plugin's zod models. */
    inputs: z.record(z.string(), z.unknown()),
    outputs: z.record(z.string(), z.unknown()).nullable(),
    /** Declared metrics merged with those computed at load time by `evaluate` (these win). */
    metrics: z.record(z.string(), z.union([z.number(), z.string()])),
    training_data: z.string().nullable(),
    limitations: z.array(z.string()),
    license: z.string().nullable(),
    authors: z.array(z.string()),
    references: z.array(z.string()),
    status: PluginStatus,
  }),
);
export type ModelCard = z.infer<typeof ModelCard>;

export const ReloadResponse = z.lazy(() => z.object({ reloaded: z.array(PluginHealth) }));

export const PluginList = z.lazy(() => z.object({ plugins: z.array(PluginSummary) }));

export const PluginParams = z.object({ name: z.string() });
