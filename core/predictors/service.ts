/**
 * ML plugins: follows the `plugin` entries of the registry, loads each model in the pool, and
 * serves health, model cards and predictions (single, batch, async through the task board).
 *
 * Decisions the spec leaves open:
 * - A plugin is loaded when discovery registers (or hot-reloads) it and on `reload`. Loading runs
 *   in one pool thread and reports the card metrics; the other threads load the same version
 *   lazily on their first prediction. Until a load succeeds the plugin answers 503 (listed with its
 *   error); a drop-in that does not even build is listed with status `error`.
 * - Both threads run the same bytes: the server bundles the entry once and writes it to
 *   `.hangar/build/plugins/<name>.<hash>.cjs`, which the workers evaluate.
 * - Single predictions are validated on the HTTP thread (cheap, and a 422 names the field); batch
 *   items are validated inside the workers so a 10,000-row batch costs the HTTP thread nothing but
 *   the JSON. A batch is split into chunks that spread over the threads; an item that fails (bad
 *   input 422, predict threw 500, its worker crashed 500, timed out 504) is reported in its slot and
 *   the others still succeed. The workers also serialise their chunk's results to JSON, so the HTTP
 *   thread only concatenates text (stringifying 10,000 results in one go blocks it for ~20 ms).
 * - `timeoutMs` bounds one pool task: a single prediction, or one chunk of a batch.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { formatIssues } from '../http/validate.js';
import { BuildCache } from '../kernel/build-cache.js';
import type { ErrorCode } from '../kernel/error-catalogue.js';
import { dropInUnavailable, errorMessage, fail, HangarError } from '../kernel/errors.js';
import { bundleCacheKey, bundleDropIn } from '../kernel/evaluator.js';
import type { Logger } from '../kernel/log.js';
import type { Registry, RegistryChange } from '../kernel/registry.js';
import { JsonText } from '../lib/json-text.js';
import { type InvocationRecorder, noRecorder } from '../logs/types.js';
import type { LoadedPlugin } from './kind.js';
import { type PluginPool, PluginTimeoutError } from './pool.js';
import type { BatchResponse, ModelCard, PluginHealth, PluginStatus, PluginSummary, PredictResponse } from './schemas.js';
import { type EncodedChunk, encodeItem, type ItemResult, type ModuleRef } from './worker.js';

const DEFAULT_TIMEOUT_MS = 30_000;
/** Items per pool task in a batch: big enough that thread hand-offs are cheap, small enough to spread. */
const CHUNK = 250;

/** `plugins/foo.ts` → foo, `plugins/foo/index.ts` → foo: the name discovery would have given it. */
export function nameFromEntry(entry: string): string {
  const parts = entry.split('/');
  const base = parts.at(-1)!.replace(/\.[^.]+$/, '');
  return base === 'index' && parts.length > 2 ? parts.at(-2)! : base;
}

/**
 * Drop a superseded build a minute later: a prediction that picked the old version just before the
 * swap may still need a fresh worker to read it.
 */
function removeBuild(module: ModuleRef): void {
  setTimeout(() => {
    rmSync(module.code, { force: true });
    rmSync(`${module.code}.map`, { force: true });
  }, 60_000).unref();
}

/** The error of a failed single prediction, by the status its worker reported. */
const PREDICT_FAILURES: Record<number, ErrorCode> = {
  422: 'HANGAR_PLUGIN_PREDICT_INVALID',
  500: 'HANGAR_PLUGIN_PREDICT_FAILED',
  503: 'HANGAR_PLUGIN_PREDICT_UNAVAILABLE',
  504: 'HANGAR_PLUGIN_PREDICT_TIMEOUT',
};

export interface EncodedBatch {
  head: Omit<BatchResponse, 'results'>;
  /** Comma-joined JSON of the items of each chunk, in input order. */
  parts: string[];
}

interface PluginState {
  name: string;
  status: PluginStatus;
  version: string;
  error: string | null;
  metrics: Record<string, number | string>;
  loadedAt: string | null;
  loadMs: number | null;
  loads: number;
  generation: number;
  module?: ModuleRef;
  /** The load in progress; loads of one plugin run one after another. */
  chain: Promise<void>;
}

export interface PluginServiceOptions {
  registry: Registry;
  pool: PluginPool;
  root: string;
  buildDir: string;
  log: Logger;
  invocations?: () => InvocationRecorder | undefined;
  /** Told about every finished call (metrics): items predicted, how many failed, seconds taken. */
  observe?: (call: { plugin: string; operation: string; items: number; failed: number; seconds: number }) => void;
}

export interface CallInfo {
  principal: string;
  /** Set when the call runs as a task (for the invocation log). */
  taskId?: string;
  operation?: string;
  onProgress?: (done: number, total: number) => void;
}

/** What a plugin's bundle leaves to the worker (core/predictors/worker.ts) instead of bundling. */
const PLUGIN_PROVIDED = ['hangar', 'zod', 'zod/v4'];

export class PluginService {
  private readonly states = new Map<string, PluginState>();
  private readonly onChange = (change: RegistryChange) => this.follow(change);

  private readonly bundles: BuildCache;

  constructor(private readonly options: PluginServiceOptions) {
    mkdirSync(options.buildDir, { recursive: true });
    this.bundles = new BuildCache(path.join(options.root, '.hangar'), bundleCacheKey(PLUGIN_PROVIDED), 'plugin-bundles');
    options.registry.on('change', this.onChange);
    // Built on first use (the pool's threads start with the first load), after discovery has
    // registered the workspace's plugins: those are loaded now, later ones as they change.
    for (const entry of options.registry.list('plugin')) void this.load(entry.name);
  }

  private get recorder(): InvocationRecorder {
    return this.options.invocations?.() ?? noRecorder;
  }

  /** Start the pool's first thread ahead of the first load (the subsystem's set-up says when). */
  warm(): void {
    this.options.pool.warm();
  }

  /** Stop following the registry and stop the pool (this service is its only user). */
  async close(): Promise<void> {
    this.closed = true;
    this.options.registry.off('change', this.onChange);
    await this.options.pool.close();
  }

  /** Set at shutdown: a load the closing pool cuts short is not the plugin's failure. */
  private closed = false;

  private follow(change: RegistryChange): void {
    if (change.kind !== 'plugin') return;
    if (change.type === 'added' || change.type === 'updated') void this.load(change.name);
    if (change.type === 'removed') {
      const module = this.states.get(change.name)?.module;
      if (module) removeBuild(module);
      this.states.delete(change.name);
    }
  }

  private definition(name: string): { definition: LoadedPlugin; file: string; version: string } {
    const entry = this.options.registry.get<LoadedPlugin>('plugin', name);
    if (!entry) {
      const problem = this.options.registry.problemNamed('plugin', name);
      throw problem ? dropInUnavailable(problem) : fail('HANGAR_PLUGIN_NOT_FOUND', { plugin: name });
    }
    return entry;
  }

  private state(name: string): PluginState {
    const entry = this.definition(name);
    let state = this.states.get(name);
    if (!state) {
      state = {
        name,
        status: 'loading',
        version: entry.definition.version,
        error: null,
        metrics: {},
        loadedAt: null,
        loadMs: null,
        loads: 0,
        generation: 0,
        chain: Promise.resolve(),
      };
      this.states.set(name, state);
    }
    return state;
  }

  /** (Re)load one plugin's model in the pool; resolves when it is ready or failed. */
  load(name: string): Promise<PluginHealth> {
    const state = this.state(name);
    const run = state.chain.then(() => this.loadNow(name, state));
    state.chain = run.catch(() => {});
    return run.then(() => this.health(name));
  }

  private async loadNow(name: string, state: PluginState): Promise<void> {
    const entry = this.options.registry.get<LoadedPlugin>('plugin', name);
    if (!entry || this.states.get(name) !== state) return;
    const { definition } = entry;
    state.status = 'loading';
    state.version = definition.version;
    state.generation += 1;
    try {
      const absolute = path.resolve(this.options.root, entry.file);
      // The first load of a start takes last start's bundle when nothing it was built from changed
      // (core/kernel/build-cache.ts): no esbuild run, often the only one of a start, before the
      // plugin is ready. A reload (a save) always builds.
      const cached = state.loads === 0 ? this.bundles.read(absolute) : undefined;
      const built = cached ?? (await bundleDropIn(absolute, { root: this.options.root, provided: PLUGIN_PROVIDED }));
      if (!cached) this.bundles.write(built);
      const code = path.join(this.options.buildDir, `${name}.${built.hash}.cjs`);
      writeFileSync(`${code}.map`, JSON.stringify(built.map));
      writeFileSync(code, built.code);
      const module: ModuleRef = { name, entry: absolute, code, root: this.options.root, hash: built.hash, generation: state.generation };
      const report = await this.options.pool.load({ op: 'load', module }, definition.timeoutMs ?? DEFAULT_TIMEOUT_MS);
      if (state.module && state.module.code !== code) removeBuild(state.module);
      state.module = module;
      state.metrics = report.metrics;
      state.loadMs = report.load_ms;
      state.status = 'ready';
      state.error = null;
      this.options.log.info('plugin loaded', { plugin: name, version: definition.version, ms: report.load_ms });
    } catch (err) {
      state.module = undefined;
      state.status = 'failed';
      state.error = errorMessage(err);
      // A one-shot server (`hangar code` with none running) stops while models still load: the
      // terminated worker is no error of the plugin, and a line saying so would mislead.
      if (!this.closed) this.options.log.error(`plugin ${name} failed to load: ${state.error}`, { plugin: name });
    } finally {
      state.loads += 1;
      state.loadedAt = new Date().toISOString();
    }
  }

  async reloadAll(): Promise<PluginHealth[]> {
    return Promise.all(this.options.registry.list<LoadedPlugin>('plugin').map((entry) => this.load(entry.name)));
  }

  /** Resolves once every load that is under way has finished (tests and startup wait on it). */
  async settled(): Promise<void> {
    await Promise.all([...this.states.values()].map((s) => s.chain));
  }

  list(): PluginSummary[] {
    const { registry } = this.options;
    const loaded: PluginSummary[] = registry.list<LoadedPlugin>('plugin').map((entry) => {
      const state = this.states.get(entry.name);
      return {
        name: entry.name,
        version: entry.definition.version,
        description: entry.definition.description ?? null,
        task: entry.definition.card.task,
        status: state?.status ?? 'loading',
        error: state?.error ?? null,
        file: entry.file,
      };
    });
    // Drop-ins that never made it into the registry: listed so their error is visible.
    const broken: PluginSummary[] = registry
      .problemsOf('plugin')
      .filter((p) => !registry.byFile('plugin', p.entry))
      .map((p) => ({
        name: nameFromEntry(p.entry),
        version: '0.0.0',
        description: null,
        task: null,
        status: 'error' as const,
        error: p.message,
        file: p.entry,
      }));
    return [...loaded, ...broken];
  }

  /** The list entry of one plugin, with its health. */
  describe(name: string): PluginSummary & { health: PluginHealth } {
    const health = this.health(name);
    const summary = this.list().find((p) => p.name === name)!;
    return { ...summary, health };
  }

  health(name: string): PluginHealth {
    const state = this.state(name);
    return {
      name,
      status: state.status,
      version: state.version,
      error: state.error,
      loaded_at: state.loadedAt,
      load_ms: state.loadMs,
      loads: state.loads,
    };
  }

  card(name: string): ModelCard {
    const { definition } = this.definition(name);
    const state = this.state(name);
    const schema = (s: z.ZodType | undefined) => {
      if (!s) return null;
      try {
        const json = z.toJSONSchema(s, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
        delete json.$schema;
        return json;
      } catch {
        return {};
      }
    };
    const { card } = definition;
    return {
      name,
      version: definition.version,
      description: card.description ?? definition.description ?? null,
      task: card.task,
      inputs: schema(definition.input) ?? {},
      outputs: schema(definition.output),
      metrics: { ...card.metrics, ...state.metrics },
      training_data: card.training_data ?? null,
      limitations: card.limitations ?? [],
      license: card.license ?? null,
      authors: card.authors ?? [],
      references: card.references ?? [],
      status: state.status,
    };
  }

  /** The loaded module of a ready plugin, or the 503 that explains why it is not. */
  private ready(name: string): { definition: LoadedPlugin; module: ModuleRef; timeoutMs: number } {
    const { definition } = this.definition(name);
    const state = this.state(name);
    if (state.status === 'loading') throw fail('HANGAR_PLUGIN_LOADING', { plugin: name }, { headers: { 'Retry-After': '1' } });
    if (state.status === 'failed' || !state.module) throw fail('HANGAR_PLUGIN_LOAD_FAILED', { plugin: name, problem: String(state.error) });
    return { definition, module: state.module, timeoutMs: definition.timeoutMs ?? DEFAULT_TIMEOUT_MS };
  }

  /** Run a slice of inputs in the pool; a crashed or timed-out task fails each of its items. */
  private async runChunk(
    module: ModuleRef,
    inputs: unknown[],
    offset: number,
    validate: boolean,
    timeoutMs: number,
  ): Promise<ItemResult[]> {
    try {
      return await this.options.pool.predict({ op: 'predict', module, inputs, validate, offset }, timeoutMs);
    } catch (err) {
      const failure: ItemResult =
        err instanceof PluginTimeoutError
          ? { ok: false, status: 504, error: err.message }
          : { ok: false, status: 500, error: `plugin worker crashed: ${errorMessage(err)}` };
      return inputs.map(() => failure);
    }
  }

  async predict(name: string, input: unknown, call: CallInfo): Promise<PredictResponse> {
    const started = Date.now();
    const operation = call.operation ?? 'predict';
    try {
      const { definition, module, timeoutMs } = this.ready(name);
      const parsed = definition.input.safeParse(input);
      if (!parsed.success) throw fail('HANGAR_PLUGIN_INPUT_INVALID', { problems: formatIssues(parsed.error.issues, 'body.input') });
      const [result] = await this.runChunk(module, [parsed.data], 0, false, timeoutMs);
      if (!result!.ok)
        throw fail(PREDICT_FAILURES[result!.status] ?? 'HANGAR_PLUGIN_PREDICT_FAILED', { plugin: name, problem: result!.error });
      const response = { plugin: name, version: definition.version, output: result!.output, duration_ms: Date.now() - started };
      this.options.observe?.({ plugin: name, operation, items: 1, failed: 0, seconds: response.duration_ms / 1000 });
      this.recorder.record({
        resource: 'plugin',
        name,
        operation,
        principal: call.principal,
        started,
        ok: true,
        http_status: 200,
        input,
        output: result!.output,
        task_id: call.taskId,
      });
      return response;
    } catch (err) {
      const status = err instanceof HangarError ? err.status : 500;
      this.options.observe?.({ plugin: name, operation, items: 1, failed: 1, seconds: (Date.now() - started) / 1000 });
      this.recorder.record({
        resource: 'plugin',
        name,
        operation,
        principal: call.principal,
        started,
        ok: false,
        http_status: status,
        input,
        error: errorMessage(err),
        task_id: call.taskId,
      });
      throw err;
    }
  }

  /** One batch chunk as JSON text; a crashed or timed-out chunk fails each of its items. */
  private async runBatchChunk(module: ModuleRef, inputs: unknown[], offset: number, timeoutMs: number): Promise<EncodedChunk> {
    try {
      return await this.options.pool.batch({ op: 'batch', module, inputs, offset }, timeoutMs);
    } catch (err) {
      const failure: ItemResult =
        err instanceof PluginTimeoutError
          ? { ok: false, status: 504, error: err.message }
          : { ok: false, status: 500, error: `plugin worker crashed: ${errorMessage(err)}` };
      return { json: inputs.map((_, i) => encodeItem(offset + i, failure)).join(','), failed: inputs.length, firstError: failure.error };
    }
  }

  /**
   * A batch with its results left as JSON text, as the workers serialised them: the items cross
   * the thread boundary as one string per chunk instead of structured-cloned objects.
   */
  async batchEncoded(name: string, inputs: unknown[], call: CallInfo): Promise<EncodedBatch> {
    const started = Date.now();
    const operation = call.operation ?? 'batch';
    try {
      const { definition, module, timeoutMs } = this.ready(name);
      const chunks: Promise<EncodedChunk>[] = [];
      let done = 0;
      for (let offset = 0; offset < inputs.length; offset += CHUNK) {
        const slice = inputs.slice(offset, offset + CHUNK);
        chunks.push(
          this.runBatchChunk(module, slice, offset, timeoutMs).then((r) => {
            done += slice.length;
            call.onProgress?.(done, inputs.length);
            return r;
          }),
        );
      }
      const encoded = await Promise.all(chunks);
      const failed = encoded.reduce((n, c) => n + c.failed, 0);
      const firstError = encoded.find((c) => c.firstError)?.firstError ?? null;
      const head = {
        plugin: name,
        version: definition.version,
        total: inputs.length,
        count: inputs.length,
        succeeded: inputs.length - failed,
        failed,
        duration_ms: Date.now() - started,
      };
      this.options.observe?.({ plugin: name, operation, items: inputs.length, failed, seconds: head.duration_ms / 1000 });
      this.recorder.record({
        resource: 'plugin',
        name,
        operation,
        principal: call.principal,
        started,
        ok: failed === 0,
        http_status: 200,
        input: { count: inputs.length, first: inputs[0] },
        output: { succeeded: head.succeeded, failed },
        error: failed ? `${failed} of ${inputs.length} items failed; first: ${firstError}` : null,
        task_id: call.taskId,
      });
      return { head, parts: encoded.map((c) => c.json) };
    } catch (err) {
      const status = err instanceof HangarError ? err.status : 500;
      this.recorder.record({
        resource: 'plugin',
        name,
        operation,
        principal: call.principal,
        started,
        ok: false,
        http_status: status,
        input: { count: inputs.length },
        error: errorMessage(err),
        task_id: call.taskId,
      });
      throw err;
    }
  }

  /**
   * A batch for the task board, which stores it and streams it as JSON: the BatchResponse's JSON
   * text, its results as the workers wrote them, never parsed and serialised again on this thread.
   * Put together here rather than by `stringifyJson({ ...head, results })`, which would copy the
   * megabytes of results once more to splice them in.
   */
  async batch(name: string, inputs: unknown[], call: CallInfo): Promise<JsonText> {
    const { head, parts } = await this.batchEncoded(name, inputs, call);
    return new JsonText(`${JSON.stringify(head).slice(0, -1)},"results":[${parts.join(',')}]}`);
  }
}
