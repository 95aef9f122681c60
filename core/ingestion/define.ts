/**
 * What an ingestor drop-in declares (`ingestors/<name>.ts` or `ingestors/<name>/index.ts`): how to
 * discover resources (files in a folder, rows of a CSV, pages of an API) and how to turn one into
 * documents. The platform writes the documents into a store collection under stable ids, so
 * running an ingestor again updates what changed instead of duplicating it.
 *
 * @example
 * export default defineIngestor({
 *   collection: 'docs',
 *   options: z.object({ path: z.string().default('docs') }),
 *   discover: async ({ workspace, options }) => listFiles(join(workspace, options.path)),
 *   read: async (resource) => [{ id: resource.id, title: resource.id, content: await readFile(resource.uri, 'utf8') }],
 * });
 */
import type { z } from 'zod';

/** Something an ingestor can read: its `id` must be stable across runs (a relative path, a URL). */
export interface IngestResource {
  id: string;
  /** Where it is (absolute path, URL). */
  uri?: string;
  size?: number;
  /** ISO time of the last change, when known. */
  modified?: string;
  metadata?: Record<string, unknown>;
}

/** One document to store. `id` is stable for the same piece of the same resource (e.g. `guide.md#setup`). */
export interface IngestDocument {
  id: string;
  content: string;
  title?: string;
  metadata?: Record<string, unknown>;
}

export interface IngestContext<Options = Record<string, unknown>> {
  /** The workspace folder (relative paths in options resolve against it). */
  workspace: string;
  options: Options;
  /** Aborted when an async run is cancelled or the server stops. */
  signal: AbortSignal;
}

export interface IngestorHealth {
  ok: boolean;
  detail?: string;
}

// biome-ignore lint/suspicious/noExplicitAny: a definition without an options schema accepts what its author reads
export interface IngestorDefinition<Options = any> {
  /** Defaults to the file (or folder) name. */
  name?: string;
  version?: string;
  description?: string;
  /** The store collection documents go to, unless a run names another. */
  collection: string;
  /** Run options, validated before a run (422 naming the field). */
  options?: z.ZodType<Options>;
  discover(ctx: IngestContext<Options>): IngestResource[] | Promise<IngestResource[]>;
  read(resource: IngestResource, ctx: IngestContext<Options>): IngestDocument[] | Promise<IngestDocument[]>;
  /** Default: healthy when `discover` succeeds with default options. */
  health?(ctx: IngestContext<Options>): IngestorHealth | Promise<IngestorHealth>;
  /** Deadline of one run in ms (default: the `ingestors.timeoutMs` setting, 1 h); past it the run fails. */
  timeout_ms?: number;
  /** Heap cap of the ingestor's host thread in MB (default: the `ingestors.maxHeapMb` setting, 512). */
  max_heap_mb?: number;
  /** `'inline'`: run on the server's thread rather than in the ingestor's supervised host. */
  isolation?: 'supervised' | 'inline';
}

export const INGESTOR_TAG = Symbol.for('hangar.kind');

/** Declare an ingestor. Only tags and returns the definition; it is validated at discovery. */
export function defineIngestor<Options>(definition: IngestorDefinition<Options>): IngestorDefinition<Options> {
  Object.defineProperty(definition, INGESTOR_TAG, { value: 'ingestor', enumerable: false });
  return definition;
}
