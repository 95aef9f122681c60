/**
 * Ingestion: runs ingestors from the registry and writes their documents into store collections.
 *
 * Decisions the spec leaves open:
 * - Idempotency: a document is stored under `<ingestor>:<document id>` and carries a hash of its
 *   content, so a run upserts — new ids are created, changed ones updated, identical ones left
 *   untouched — and never duplicates. A run interrupted halfway (a failing resource, a crash, a
 *   cancel) is simply run again.
 * - Documents a resource no longer produces (a section removed from a file) are deleted when that
 *   resource is read again. Documents of resources that disappeared are deleted only with
 *   `prune: true` on a run over every resource.
 * - One resource failing does not stop the run: it is reported in `failures`, the run is `partial`
 *   (`failed` when nothing could be read), and its stored documents are left as they were.
 * - Runs of one ingestor never overlap: they queue, so two runs cannot race on the same records.
 * - The latest run of each ingestor is kept in the `ingestion_runs` collection and shown in its info.
 * - Supervised: a drop-in's `discover`, `read` and `health` run in its own host thread (hosts.ts),
 *   the writes to the store here. A run has a deadline (the ingestor's `timeout_ms`, else the
 *   `ingestors.timeoutMs` setting): past it the run fails at once with a 504 and the stored
 *   documents are left as the finished resources wrote them; a host stuck in a loop is stopped.
 */
import { createHash } from 'node:crypto';
import { formatIssues } from '../http/validate.js';
import { dropInUnavailable, errorMessage, fail, HangarError } from '../kernel/errors.js';
import type { Registry } from '../kernel/registry.js';
import type { Collection, Store } from '../kernel/store.js';
import { type InvocationRecorder, noRecorder } from '../logs/types.js';
import type { IngestContext, IngestDocument, IngestorHealth, IngestResource } from './define.js';
import type { IngestorHosts } from './hosts.js';
import type { LoadedIngestor } from './kind.js';
import type { RunRequest, RunResult, StoredDocument } from './schemas.js';

export interface IngestionServiceOptions {
  registry: Registry;
  store: Store;
  workspace: string;
  invocations?: () => InvocationRecorder | undefined;
  /** Where drop-in ingestors run (hosts.ts); without it every ingestor runs on this thread. */
  hosts?: IngestorHosts;
  /** `ingestors.timeoutMs`: a run's deadline unless the ingestor sets `timeout_ms`. Default 1 h. */
  timeoutMs?: number;
}

export interface RunCall {
  principal: string;
  signal?: AbortSignal;
  taskId?: string;
  operation?: string;
  onProgress?: (done: number, total: number) => void;
}

const hashOf = (doc: IngestDocument) =>
  createHash('sha256')
    .update(JSON.stringify([doc.title ?? null, doc.content, doc.metadata ?? {}]))
    .digest('hex');

const isHostFailure = (err: unknown) => err instanceof HangarError && err.code.startsWith('HANGAR_DROPIN_');

/** An ingestor's documents are read by its name (a collection may hold several ingestors' and others' records). */
const DOCUMENT_OPTIONS = { indexes: [['ingestor']] } as const;

export class IngestionService {
  private readonly runs: Collection<RunResult>;
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(private readonly options: IngestionServiceOptions) {
    this.runs = options.store.collection<RunResult>('ingestion_runs', { shards: 1 });
  }

  private get recorder(): InvocationRecorder {
    return this.options.invocations?.() ?? noRecorder;
  }

  list() {
    const { registry } = this.options;
    const loaded = registry.list<LoadedIngestor>('ingestor').map((e) => ({
      name: e.name,
      version: e.definition.version,
      description: e.definition.description ?? null,
      collection: e.definition.collection,
      status: 'loaded' as const,
      error: null,
      file: e.file,
    }));
    const broken = registry
      .problemsOf('ingestor')
      .filter((p) => !registry.byFile('ingestor', p.entry))
      .map((p) => {
        const parts = p.entry.split('/');
        const base = parts.at(-1)!.replace(/\.[^.]+$/, '');
        return {
          name: base === 'index' && parts.length > 2 ? parts.at(-2)! : base,
          version: '0.0.0',
          description: null,
          collection: '',
          status: 'error' as const,
          error: p.message,
          file: p.entry,
        };
      });
    return [...loaded, ...broken];
  }

  definition(name: string): LoadedIngestor {
    const entry = this.options.registry.get<LoadedIngestor>('ingestor', name);
    if (!entry) {
      const problem = this.options.registry.problemNamed('ingestor', name);
      throw problem ? dropInUnavailable(problem) : fail('HANGAR_INGESTOR_NOT_FOUND', { ingestor: name });
    }
    return entry.definition;
  }

  /** Parse run options with the ingestor's schema (422 naming `body.options.<field>`). */
  private context(
    definition: LoadedIngestor,
    rawOptions: Record<string, unknown>,
    signal: AbortSignal,
    where = 'body.options',
  ): IngestContext {
    let options: unknown = rawOptions;
    if (definition.options) {
      const parsed = definition.options.safeParse(rawOptions);
      if (!parsed.success) throw fail('HANGAR_INGESTOR_INPUT_INVALID', { problems: formatIssues(parsed.error.issues, where) });
      options = parsed.data;
    }
    return { workspace: this.options.workspace, options: options as Record<string, unknown>, signal };
  }

  /**
   * Options as they would be validated, without running anything (async and batch submissions use
   * it); `where` names the field in a 422 (`body.runs.2.options` for a batch item).
   */
  check(name: string, rawOptions: Record<string, unknown>, where = 'body.options'): void {
    this.context(this.definition(name), rawOptions, new AbortController().signal, where);
  }

  async info(name: string) {
    const definition = this.definition(name);
    const ctx = this.context(definition, {}, AbortSignal.timeout(30_000));
    let resources: IngestResource[];
    try {
      resources = await this.discover(definition, ctx);
    } catch (err) {
      throw fail('HANGAR_INGESTOR_DISCOVERY_FAILED', { ingestor: name, problem: errorMessage(err) });
    }
    const collection = this.options.store.collection<StoredDocument>(definition.collection, DOCUMENT_OPTIONS);
    const documents = (await collection.query({ where: { ingestor: name }, limit: 0 })).total;
    return {
      name,
      version: definition.version,
      description: definition.description ?? null,
      collection: definition.collection,
      options: ctx.options,
      resources: resources.map((r) => ({ id: r.id, uri: r.uri, size: r.size, modified: r.modified })),
      documents,
      last_run: (await this.runs.get(name)) ?? null,
    };
  }

  async health(name: string): Promise<{ name: string; ok: boolean; detail: string | null }> {
    const definition = this.definition(name);
    try {
      const ctx = this.context(definition, {}, AbortSignal.timeout(10_000));
      if (definition.health) {
        const h = (await this.call(definition, 'health', ctx)) as IngestorHealth;
        return { name, ok: h.ok, detail: h.detail ?? null };
      }
      const found = await this.discover(definition, ctx);
      return { name, ok: true, detail: `${found.length} resources discoverable` };
    } catch (err) {
      return { name, ok: false, detail: errorMessage(err) };
    }
  }

  /** Run one ingestor; runs of the same ingestor wait for each other. */
  run(name: string, request: RunRequest, call: RunCall): Promise<RunResult> {
    const definition = this.definition(name);
    const previous = this.queues.get(name) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(() => this.runNow(name, definition, request, call));
    this.queues.set(name, next);
    void next
      .finally(() => {
        if (this.queues.get(name) === next) this.queues.delete(name);
      })
      .catch(() => {});
    return next;
  }

  /**
   * Call one of the ingestor's functions: in its host when supervised, else here. Either way it
   * ends when `ctx.signal` aborts, at once (a hosted one that does not stop is stopped with its thread).
   */
  private call(
    definition: LoadedIngestor,
    fn: 'discover' | 'read' | 'health',
    ctx: IngestContext,
    resource?: IngestResource,
  ): Promise<unknown> {
    const hosts = this.options.hosts;
    const work = hosts?.supervises(definition)
      ? hosts.run(definition, fn, ctx, resource)
      : Promise.resolve().then(() => (fn === 'read' ? definition.read(resource!, ctx) : definition[fn]!(ctx)));
    const { signal } = ctx;
    if (signal.aborted) return Promise.reject(signal.reason);
    return new Promise((resolve, reject) => {
      const onAbort = () => reject(signal.reason);
      signal.addEventListener('abort', onAbort, { once: true });
      work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  private async discover(definition: LoadedIngestor, ctx: IngestContext): Promise<IngestResource[]> {
    const found = await this.call(definition, 'discover', ctx);
    if (!Array.isArray(found)) throw new Error('discover() must return an array of resources');
    return found as IngestResource[];
  }

  private async runNow(name: string, definition: LoadedIngestor, request: RunRequest, call: RunCall): Promise<RunResult> {
    const started = Date.now();
    const operation = call.operation ?? 'run';
    const deadlineMs = definition.timeout_ms ?? this.options.timeoutMs ?? 3_600_000;
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(fail('HANGAR_INGESTOR_TIMEOUT', { ingestor: name, ms: deadlineMs })), deadlineMs);
    const cancelled = call.signal ?? new AbortController().signal;
    const signal = AbortSignal.any([cancelled, deadline.signal]);
    try {
      const ctx = this.context(definition, request.options, signal);
      const collectionName = request.collection ?? definition.collection;
      const collection = this.options.store.collection<StoredDocument>(collectionName, DOCUMENT_OPTIONS);
      let discovered: IngestResource[];
      try {
        discovered = await this.discover(definition, ctx);
      } catch (err) {
        if (deadline.signal.aborted) throw deadline.signal.reason;
        // Its host ran out of memory or stopped answering: that is said as it is, not as a discovery failure.
        if (isHostFailure(err)) throw err;
        throw fail('HANGAR_INGESTOR_DISCOVERY_FAILED', { ingestor: name, problem: errorMessage(err) });
      }
      const seen = new Set<string>();
      for (const r of discovered) {
        if (seen.has(r.id)) throw fail('HANGAR_INGESTOR_DUPLICATE_RESOURCE', { ingestor: name, resource: r.id });
        seen.add(r.id);
      }
      let resources = discovered;
      if (request.resources) {
        const unknown = request.resources.filter((id) => !seen.has(id));
        if (unknown.length)
          throw fail('HANGAR_INGESTOR_RESOURCE_NOT_FOUND', { ingestor: name, resources: unknown.map((u) => `"${u}"`).join(', ') });
        const wanted = new Set(request.resources);
        resources = discovered.filter((r) => wanted.has(r.id));
      }

      // What this ingestor already stored in the collection (from its index, not the whole collection).
      const existing = new Map<string, StoredDocument>();
      for (const doc of (await collection.query({ where: { ingestor: name } })).items) existing.set(doc.id, doc);

      const counts = { created: 0, updated: 0, unchanged: 0, deleted: 0 };
      const failures: { resource: string; error: string }[] = [];
      const now = new Date().toISOString();
      let done = 0;
      for (const resource of resources) {
        if (deadline.signal.aborted) throw deadline.signal.reason;
        if (signal.aborted) throw fail('HANGAR_INGESTOR_RUN_CANCELLED', {});
        try {
          const docs = (await this.call(definition, 'read', ctx, resource)) as IngestDocument[];
          if (!Array.isArray(docs)) throw new Error('read() must return an array of documents');
          const ids = new Set<string>();
          const writes: Promise<unknown>[] = [];
          for (const doc of docs) {
            if (typeof doc?.id !== 'string' || typeof doc.content !== 'string')
              throw new Error('read() must return documents with a string id and content');
            const id = `${name}:${doc.id}`;
            if (ids.has(id)) throw new Error(`document id "${doc.id}" returned twice for one resource`);
            ids.add(id);
            const hash = hashOf(doc);
            const before = existing.get(id);
            if (before?.hash === hash && before.resource === resource.id) {
              counts.unchanged++;
              continue;
            }
            before ? counts.updated++ : counts.created++;
            const stored: StoredDocument = {
              id,
              ingestor: name,
              resource: resource.id,
              title: doc.title ?? null,
              content: doc.content,
              metadata: { ...resource.metadata, ...doc.metadata },
              hash,
              ingested_at: before?.ingested_at ?? now,
              updated_at: now,
            };
            existing.set(id, stored);
            writes.push(collection.put(id, stored));
          }
          // Pieces this resource no longer produces.
          for (const [id, doc] of existing) {
            if (doc.resource === resource.id && !ids.has(id)) {
              existing.delete(id);
              writes.push(collection.delete(id));
              counts.deleted++;
            }
          }
          await Promise.all(writes);
        } catch (err) {
          // The run's end (its deadline, a cancel) is not one resource's failure.
          if (signal.aborted) continue;
          failures.push({ resource: resource.id, error: errorMessage(err) });
        }
        call.onProgress?.(++done, resources.length);
      }
      if (deadline.signal.aborted) throw deadline.signal.reason;
      if (signal.aborted) throw fail('HANGAR_INGESTOR_RUN_CANCELLED', {});
      if (request.prune && !request.resources) {
        const stale = [...existing.values()].filter((doc) => !seen.has(doc.resource));
        await Promise.all(stale.map((doc) => collection.delete(doc.id)));
        counts.deleted += stale.length;
      }
      const result: RunResult = {
        ingestor: name,
        collection: collectionName,
        status: failures.length === 0 ? 'completed' : failures.length === resources.length ? 'failed' : 'partial',
        resources: resources.length,
        documents: counts,
        failures,
        started_at: new Date(started).toISOString(),
        duration_ms: Date.now() - started,
      };
      await this.runs.put(name, result);
      this.recorder.record({
        resource: 'ingestor',
        name,
        operation,
        principal: call.principal,
        started,
        ok: result.status === 'completed',
        http_status: 200,
        input: request,
        output: { status: result.status, resources: result.resources, documents: counts },
        error: failures.length
          ? `${failures.length} of ${resources.length} resources failed; first: ${failures[0]!.resource}: ${failures[0]!.error}`
          : null,
        task_id: call.taskId,
      });
      return result;
    } catch (err) {
      this.recorder.record({
        resource: 'ingestor',
        name,
        operation,
        principal: call.principal,
        started,
        ok: false,
        http_status: err instanceof HangarError ? err.status : 500,
        input: request,
        error: errorMessage(err),
        task_id: call.taskId,
      });
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The supervised hosts of ingestors, as `/api/v1/status` lists them. */
  hostStatus() {
    return this.options.hosts?.status() ?? [];
  }

  /** Stop the ingestors' host threads (the server is closing). */
  async close(): Promise<void> {
    await this.options.hosts?.close();
  }
}
