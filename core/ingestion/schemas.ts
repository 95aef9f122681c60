/**
 * Request and response shapes of the ingestion routes, and the stored document. Payloads are "not
 * shown" in the spec; these follow ingestion tools (LlamaIndex ingestion pipelines, Airbyte syncs):
 * a run reports what it created, updated, left unchanged and deleted, and per-resource failures.
 *
 * Schemas only a route reads are `z.lazy`: built on first use, not at start (core/http/route.ts).
 */
import { z } from 'zod';
import { COLLECTION_NAME } from './kind.js';

export const RunRequest = z.object({
  /** Only these resource ids (default: everything discovered). */
  resources: z.array(z.string().min(1)).min(1).optional(),
  /** Options for the ingestor, checked against its `options` schema. */
  options: z.record(z.string(), z.unknown()).default({}),
  /** Write to this collection instead of the ingestor's own. */
  collection: z.string().regex(COLLECTION_NAME, 'expected a collection name (letters, digits, ".", "_", "-")').optional(),
  /**
   * Also delete documents of this ingestor whose resource was not discovered this time (a file
   * that was removed). Off by default: a run limited to some resources never prunes.
   */
  prune: z.boolean().default(false),
});
export type RunRequest = z.output<typeof RunRequest>;

export const BatchRunRequest = z.object({
  runs: z.array(RunRequest).min(1).max(100),
});
export type BatchRunRequest = z.output<typeof BatchRunRequest>;

export const ResourceFailure = z.object({ resource: z.string(), error: z.string() });

export const RunResult = z.object({
  ingestor: z.string(),
  collection: z.string(),
  /** `completed`: every resource read; `partial`: some failed (listed); `failed`: nothing could be read. */
  status: z.enum(['completed', 'partial', 'failed']),
  resources: z.number().int(),
  documents: z.object({
    created: z.number().int(),
    updated: z.number().int(),
    unchanged: z.number().int(),
    deleted: z.number().int(),
  }),
  failures: z.array(ResourceFailure),
  started_at: z.string(),
  duration_ms: z.number(),
});
export type RunResult = z.infer<typeof RunResult>;

/** The result of a `/run/batch` task: per run, in order, and how many succeeded or failed. */
export const BatchRunResult = z.object({
  total: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  results: z.array(
    z.union([
      z.object({ index: z.number().int(), ok: z.literal(true), result: RunResult }),
      z.object({ index: z.number().int(), ok: z.literal(false), status: z.number().int(), error: z.string() }),
    ]),
  ),
});
export type BatchRunResult = z.infer<typeof BatchRunResult>;

/** A document as stored in the collection (the documentation agent reads these). */
export interface StoredDocument {
  /** `<ingestor>:<document id>`: the same piece of the same resource always lands on the same record. */
  id: string;
  ingestor: string;
  resource: string;
  title: string | null;
  content: string;
  metadata: Record<string, unknown>;
  /** sha256 of title + content + metadata: an unchanged document is not rewritten. */
  hash: string;
  ingested_at: string;
  updated_at: string;
}

export const IngestorSummary = z.object({
  name: z.string(),
  version: z.string(),
  description: z.string().nullable(),
  collection: z.string(),
  status: z.enum(['loaded', 'error']),
  error: z.string().nullable(),
  file: z.string(),
});

export const IngestorInfo = z.lazy(() =>
  z.object({
    name: z.string(),
    version: z.string(),
    description: z.string().nullable(),
    collection: z.string(),
    options: z.record(z.string(), z.unknown()).nullable(),
    resources: z.array(
      z.object({ id: z.string(), uri: z.string().optional(), size: z.number().optional(), modified: z.string().optional() }),
    ),
    documents: z.number().int(),
    last_run: RunResult.nullable(),
  }),
);

export const IngestorHealthResponse = z.lazy(() => z.object({ name: z.string(), ok: z.boolean(), detail: z.string().nullable() }));

export const IngestorList = z.lazy(() => z.object({ ingestors: z.array(IngestorSummary) }));

export const IngestorParams = z.object({ name: z.string() });
