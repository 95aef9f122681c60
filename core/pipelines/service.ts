/**
 * Pipelines as a service (no HTTP): definitions from the registry (discovery loads
 * `pipelines/<name>.json`, see kind.ts), validation, inspection, the graph, saving, and runs.
 *
 * Definitions come from the registry, like every other drop-in: discovery parses each file once and
 * reloads it when it changes, and a broken file is reported with the others (`/api/v1/status`).
 * A file that breaks keeps its last good version serving, as an agent does; list and inspect report
 * it invalid with the file's error until it is fixed. Validation against the platform's resources
 * (do the endpoints, agents, plugins and notebook cells exist) is still done on every use, since
 * those come and go independently of the pipeline file.
 *
 * Saving writes the file atomically and puts the definition in the registry at once, so the
 * pipeline is listed and runnable when the response is sent, with or without a file watcher; the
 * watcher's reload of the same file then finds the same content.
 *
 * A run:
 * - starts every step whose dependencies have finished, so independent steps run in parallel;
 * - stops at the first failed step: steps still running are cancelled (their signal aborts), steps
 *   not started are `skipped`, and the run fails naming the step (HTTP 502 with the run record —
 *   the pipeline answers for its steps the way a gateway answers for its upstreams);
 * - keeps a record with every step's resolved input, output, status and duration, stored in the
 *   `pipeline_runs` collection before the response says the run finished;
 * - owns a `RunScope`: what steps set up for the run's lifetime (a notebook's kernel) is released
 *   once every step has settled, whatever the outcome.
 * Step values: an endpoint step's `aggregated`; an agent step's whole response object
 * (`$.steps.s.output.response` is its text); a plugin step's prediction; a notebook step's cell in
 * JSON form (`NotebookStepOutput`).
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { jsonDropInVersion } from '../kernel/discovery.js';
import { errorMessage, fail, HangarError } from '../kernel/errors.js';
import { canSee, visibleTo } from '../kernel/ownership.js';
import type { DropInProblem, Registry, RegistryEntry } from '../kernel/registry.js';
import type { Collection, Store } from '../kernel/store.js';
import { timeOrderedId } from '../storage/ids.js';
import { dependencies, describeProblems, type GraphView, graphView, kindOf, type StepTargets, validatePipeline } from './graph.js';
import { checkRunInput } from './input.js';
import { loadPipelineFile, PIPELINE_KIND, RESERVED_PIPELINE_NAMES } from './kind.js';
import { type RunState, resolveTemplate } from './references.js';
import {
  PIPELINE_NAME,
  type PipelineDefinition,
  type PipelineProblem,
  type RunRecord,
  type StepKind,
  type StepRecord,
  type ValidationReport,
} from './schemas.js';

export { RESERVED_PIPELINE_NAMES } from './kind.js';

/**
 * One run as its steps see it. Step kinds that hold something for the whole run (a notebook step's
 * kernel) register its release with `defer`; the service calls every release once all steps have
 * settled, in reverse order of registration, and waits for them before the run is final.
 */
export class RunScope {
  readonly #releases: Array<() => unknown> = [];
  #closed = false;

  constructor(readonly id: string) {}

  defer(release: () => unknown): void {
    if (this.#closed) throw new Error(`run ${this.id} has ended; nothing can be deferred to it`);
    this.#releases.push(release);
  }

  /** Release everything; a release that fails does not stop the others. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const release of this.#releases.splice(0).reverse()) {
      try {
        await release();
      } catch {
        // A release that fails (a kernel already gone) leaves nothing further to do for this run.
      }
    }
  }
}

class StepTimedOut extends Error {
  constructor(ms: number) {
    super(`timed out after ${ms} ms`);
  }
}

/**
 * Run `work` with a signal that also aborts after `ms`; the step fails with StepTimedOut then, at
 * once, even if its runner is slow to notice the abort (it is told, and its result is ignored).
 */
async function withTimeout<T>(ms: number | undefined, runSignal: AbortSignal, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  if (ms === undefined) return work(runSignal);
  const controller = new AbortController();
  const forward = () => controller.abort(runSignal.reason);
  runSignal.addEventListener('abort', forward, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = new StepTimedOut(ms);
      reject(error);
      controller.abort(error);
    }, ms);
  });
  const working = work(controller.signal);
  working.catch(() => undefined); // after a timeout its rejection is nobody's
  try {
    return await Promise.race([working, timedOut]);
  } finally {
    clearTimeout(timer);
    runSignal.removeEventListener('abort', forward);
  }
}

export interface StepRunOptions {
  signal: AbortSignal;
  principal: string;
  /** Endpoint steps: the method to call. */
  method?: string;
  /** Notebook steps: the cell to run. */
  cell?: string;
  run: RunScope;
}

export interface StepRunner extends StepTargets {
  run(kind: StepKind, target: string, input: unknown, options: StepRunOptions): Promise<{ value: unknown; upstreams?: unknown[] }>;
}

export interface PipelineServiceOptions {
  /** Workspace root; definitions live in `<root>/pipelines/`. */
  root: string;
  store: Store;
  steps: StepRunner;
  /** Where discovery keeps the loaded `pipeline` drop-ins (and their load errors). */
  registry: Registry;
}

export interface PipelineSummary {
  name: string;
  description: string;
  version: string;
  steps: number;
  file: string;
  valid: boolean;
  errors: PipelineProblem[];
}

/** A 422 for an invalid definition whose body lists every problem (`errors`). */
export class InvalidPipeline extends HangarError {
  override name = 'InvalidPipeline';
  constructor(readonly problems: PipelineProblem[]) {
    const { status, detail, code } = fail('HANGAR_PIPELINE_INVALID', { problems: describeProblems(problems) });
    super(status, detail, {}, { errors: problems }, code);
  }
}

/**
 * A run that failed at a step: 502 with the run record; 504 when the step failed by running out
 * of time (its own `timeout_ms`, or an upstream or model that did not answer in time).
 */
export class PipelineRunFailed extends HangarError {
  override name = 'PipelineRunFailed';
  constructor(
    readonly run: RunRecord,
    timedOut = false,
  ) {
    const params = { pipeline: run.pipeline, step: String(run.failed_step), problem: String(run.error) };
    const { status, detail, code } = fail(timedOut ? 'HANGAR_PIPELINE_STEP_TIMEOUT' : 'HANGAR_PIPELINE_STEP_FAILED', params);
    super(status, detail, {}, { run }, code);
  }
}

/** The problem of a pipeline file as a validation problem of the pipeline. */
const fileProblem = (problem: DropInProblem): PipelineProblem => ({ step: null, field: '(file)', message: problem.message });

/**
 * `pipelines/<name>.json` (or `.ts`, or `<name>/index.ts`) → `<name>`: the registry names problems
 * by file, not by pipeline.
 */
function nameOfFile(file: string): string {
  const parts = file.split('/');
  const base = parts[parts.length - 1]!.replace(/\.[^.]+$/, '');
  return base === 'index' && parts.length > 2 ? parts[parts.length - 2]! : base;
}

export class PipelineService {
  readonly #dir: string;
  readonly #runs: Collection<RunRecord>;
  readonly #steps: StepRunner;
  readonly #registry: Registry;

  constructor(options: PipelineServiceOptions) {
    this.#dir = path.join(options.root, 'pipelines');
    this.#runs = options.store.collection<RunRecord>('pipeline_runs', {
      shards: 8,
      indexes: [
        ['pipeline', 'started_at'],
        ['pipeline', 'principal', 'started_at'],
      ],
    });
    this.#steps = options.steps;
    this.#registry = options.registry;
  }

  fileOf(name: string): string {
    if (!PIPELINE_NAME.test(name)) throw fail('HANGAR_PIPELINE_NOT_FOUND', { pipeline: name });
    return path.join(this.#dir, `${name}.json`);
  }

  validate(draft: unknown): ValidationReport {
    const { valid, errors, waves } = validatePipeline(draft, this.#steps);
    if (valid && RESERVED_PIPELINE_NAMES.has((draft as { name: string }).name)) {
      return { valid: false, errors: [{ step: null, field: 'name', message: 'this name is reserved by a pipelines route' }], waves: [] };
    }
    return { valid, errors, waves };
  }

  /**
   * Every pipeline file: the loaded ones validated against the live registry, and the ones that
   * never loaded with their file error. A loaded one whose file broke since is invalid too.
   */
  async list(): Promise<PipelineSummary[]> {
    const out: PipelineSummary[] = [];
    const problems = this.#registry.problemsOf(PIPELINE_KIND);
    for (const entry of this.#registry.list<PipelineDefinition>(PIPELINE_KIND)) {
      const d = entry.definition;
      const report = this.validate(d);
      const broken = problems.find((p) => p.entry === entry.file);
      const errors = broken ? [fileProblem(broken), ...report.errors] : report.errors;
      out.push({
        name: entry.name,
        description: d.description,
        version: d.version,
        steps: d.steps.length,
        file: entry.file,
        valid: errors.length === 0,
        errors,
      });
    }
    for (const problem of problems) {
      if (this.#registry.byFile(PIPELINE_KIND, problem.entry)) continue;
      out.push({
        name: nameOfFile(problem.entry),
        description: '',
        version: '',
        steps: 0,
        file: problem.entry,
        valid: false,
        errors: [fileProblem(problem)],
      });
    }
    return out.sort((a, b) => a.name.localeCompare(b.name));
  }

  /** The definition as loaded, its validation against the live registry, and its graph. */
  async inspect(name: string): Promise<{ definition: unknown; validation: ValidationReport; graph: GraphView | null; file: string }> {
    const entry = this.#entry(name);
    const checked = validatePipeline(entry.definition, this.#steps).definition;
    const validation = this.validate(entry.definition);
    const broken = this.#problemOf(entry.file);
    if (broken) Object.assign(validation, { valid: false, errors: [fileProblem(broken), ...validation.errors], waves: [] });
    return { definition: entry.definition, validation, graph: checked ? graphView(checked) : null, file: entry.file };
  }

  async graph(name: string): Promise<GraphView> {
    const { definition, errors } = validatePipeline(this.#entry(name).definition, this.#steps);
    if (!definition) throw new InvalidPipeline(errors);
    return graphView(definition);
  }

  /**
   * Validate, write `pipelines/<name>.json` atomically (a reader — the watcher — never sees half a
   * file) and register the definition, so it is listed and runnable before the response is sent.
   */
  async save(draft: unknown): Promise<{ created: boolean; file: string; definition: PipelineDefinition }> {
    const report = this.validate(draft);
    if (!report.valid) throw new InvalidPipeline(report.errors);
    const definition = validatePipeline(draft, this.#steps).definition!;
    const file = this.fileOf(definition.name);
    const relative = `pipelines/${definition.name}.json`;
    this.#assertJsonFile(definition.name, relative);
    await mkdir(this.#dir, { recursive: true });
    const existed = await readFile(file).then(
      () => true,
      () => false,
    );
    // Save what was sent (not the parsed form with defaults filled in), so the file stays as written.
    const text = JSON.stringify(draft, null, 2) + '\n';
    const temp = path.join(this.#dir, `.${definition.name}.${process.pid}.${randomUUID()}.tmp`);
    await writeFile(temp, text);
    await rename(temp, file);
    // The same load discovery does, from the same bytes: the watcher's reload changes nothing.
    const loaded = loadPipelineFile(JSON.parse(text), definition.name);
    this.#registry.set({ kind: PIPELINE_KIND, name: loaded.name, file: relative, definition: loaded, version: jsonDropInVersion(text) });
    this.#registry.clearProblem(PIPELINE_KIND, relative);
    return { created: !existed, file: relative, definition };
  }

  /** Remove the file and its registry entry (and error), without waiting for the watcher. */
  async delete(name: string): Promise<void> {
    const file = this.fileOf(name);
    const relative = `pipelines/${name}.json`;
    this.#assertJsonFile(name, relative);
    try {
      await rm(file);
    } catch {
      throw fail('HANGAR_PIPELINE_NOT_FOUND', { pipeline: name });
    }
    if (this.#registry.get(PIPELINE_KIND, name)?.file === relative) this.#registry.remove(PIPELINE_KIND, name);
    this.#registry.clearProblem(PIPELINE_KIND, relative);
  }

  /** Check a pipeline can run (loaded, valid now) without running it. */
  async runnable(name: string): Promise<PipelineDefinition> {
    const { definition, errors } = validatePipeline(this.#entry(name).definition, this.#steps);
    if (!definition) throw new InvalidPipeline(errors);
    return definition;
  }

  /** Run to the end. Resolves with the completed record; a failed step throws `PipelineRunFailed`. */
  async run(name: string, input: unknown, options: { principal: string; signal?: AbortSignal; taskId?: string }): Promise<RunRecord> {
    const definition = await this.runnable(name);
    checkRunInput(definition.input_schema, input ?? {});
    const deps = dependencies(definition.steps);
    const started = performance.now();
    const record: RunRecord = {
      id: timeOrderedId(),
      pipeline: definition.name,
      version: definition.version,
      status: 'running',
      principal: options.principal,
      input: input ?? null,
      output: null,
      error: null,
      failed_step: null,
      started_at: new Date().toISOString(),
      finished_at: null,
      duration_ms: null,
      task_id: options.taskId ?? null,
      steps: definition.steps.map((step) => {
        const { kind, target } = kindOf(step);
        return {
          name: step.name,
          kind,
          target,
          ...(step.cell !== undefined ? { cell: step.cell } : {}),
          status: 'pending',
          depends_on: deps.get(step.name) ?? [],
          input: null,
          output: null,
          error: null,
          started_at: null,
          duration_ms: null,
        };
      }),
    };
    await this.#runs.put(record.id, record);

    const scope = new RunScope(record.id);
    const state: RunState = { input: input ?? null, steps: new Map() };
    const byName = new Map(record.steps.map((s) => [s.name, s]));
    const controller = new AbortController();
    const forward = () => controller.abort();
    options.signal?.addEventListener('abort', forward, { once: true });
    // Whether the step that failed the run ran out of time (the run answers 504, not 502).
    let failedByTimeout = false;

    await new Promise<void>((resolve) => {
      let running = 0;
      const launch = () => {
        if (!record.failed_step && !controller.signal.aborted) {
          for (const step of definition.steps) {
            const rec = byName.get(step.name)!;
            if (rec.status !== 'pending') continue;
            if (rec.depends_on.every((d) => byName.get(d)!.status === 'completed')) void start(step, rec);
          }
        }
        if (running === 0) resolve();
      };
      const start = async (step: PipelineDefinition['steps'][number], rec: StepRecord) => {
        running++;
        rec.status = 'running';
        rec.started_at = new Date().toISOString();
        const t0 = performance.now();
        try {
          const stepInput = resolveTemplate(step.input, state);
          rec.input = stepInput ?? null;
          const result = await withTimeout(step.timeout_ms, controller.signal, (signal) =>
            this.#steps.run(rec.kind, rec.target, stepInput, {
              signal,
              principal: options.principal,
              method: step.method,
              cell: step.cell,
              run: scope,
            }),
          );
          if (controller.signal.aborted && record.failed_step) {
            rec.status = 'canceled';
          } else {
            state.steps.set(step.name, result.value);
            rec.output = result.value ?? null;
            if (result.upstreams) rec.upstreams = result.upstreams;
            rec.status = 'completed';
          }
        } catch (err) {
          if (controller.signal.aborted) {
            rec.status = 'canceled';
            rec.error = 'canceled';
          } else {
            rec.status = 'failed';
            rec.error = errorMessage(err);
            // An endpoint step's 502 carries the per-upstream results: keep them with the step.
            const upstreams = (err as { upstreams?: unknown }).upstreams;
            if (Array.isArray(upstreams)) rec.upstreams = upstreams;
            if (!record.failed_step) failedByTimeout = err instanceof StepTimedOut || (err instanceof HangarError && err.status === 504);
            record.failed_step ??= step.name;
            record.error ??= rec.error;
            controller.abort();
          }
        } finally {
          rec.duration_ms = Math.round((performance.now() - t0) * 100) / 100;
          running--;
          launch();
        }
      };
      launch();
    });
    options.signal?.removeEventListener('abort', forward);
    await scope.close();

    for (const rec of record.steps) if (rec.status === 'pending') rec.status = 'skipped';
    record.finished_at = new Date().toISOString();
    record.duration_ms = Math.round((performance.now() - started) * 100) / 100;
    if (record.failed_step) record.status = 'failed';
    else if (options.signal?.aborted) {
      record.status = 'canceled';
      record.error = 'canceled';
    } else {
      try {
        record.output = this.#output(definition, state) ?? null;
        record.status = 'completed';
      } catch (err) {
        record.status = 'failed';
        record.error = `output: ${errorMessage(err)}`;
        record.failed_step = null;
      }
    }
    await this.#runs.put(record.id, record);
    if (record.status === 'failed') {
      if (record.failed_step) throw new PipelineRunFailed(record, failedByTimeout);
      throw fail('HANGAR_PIPELINE_OUTPUT_FAILED', { pipeline: record.pipeline, problem: String(record.error) });
    }
    if (record.status === 'canceled') throw fail('HANGAR_PIPELINE_RUN_CANCELED', {});
    return record;
  }

  /**
   * Newest first, only the runs `principal` may see (core/kernel/ownership.ts). A name that is no
   * pipeline (loaded or broken) and has no runs is the 404 of an unknown pipeline, as its other
   * routes answer; the runs of a pipeline whose file was deleted stay readable.
   */
  async runs(name: string, limit = 50, principal?: string): Promise<RunRecord[]> {
    this.fileOf(name);
    const page = await this.#runs.query({
      where: { pipeline: name, ...visibleTo(principal) },
      orderBy: [{ field: 'started_at', desc: true }],
      limit,
    });
    const known =
      this.#registry.get(PIPELINE_KIND, name) !== undefined ||
      this.#registry.problemsOf(PIPELINE_KIND).some((p) => nameOfFile(p.entry) === name);
    if (!known && page.total === 0) throw fail('HANGAR_PIPELINE_NOT_FOUND', { pipeline: name });
    return page.items;
  }

  /** Unknown, another pipeline's or another principal's run → the same 404. */
  async getRun(name: string, id: string, principal?: string): Promise<RunRecord> {
    const run = await this.#runs.get(id);
    if (!run || run.pipeline !== name || !canSee(principal, run)) throw fail('HANGAR_PIPELINE_RUN_NOT_FOUND', { run: id, pipeline: name });
    return run;
  }

  /** `output` when the definition has one; else every final step's value by step name. */
  #output(definition: PipelineDefinition, state: RunState): unknown {
    if (definition.output !== undefined) return resolveTemplate(definition.output, state);
    const deps = dependencies(definition.steps);
    const used = new Set([...deps.values()].flat());
    return Object.fromEntries(definition.steps.filter((s) => !used.has(s.name)).map((s) => [s.name, state.steps.get(s.name) ?? null]));
  }

  /** The loaded entry; 422 with the file's error when the file never loaded; else 404. */
  #entry(name: string): RegistryEntry<PipelineDefinition> {
    const entry = PIPELINE_NAME.test(name) ? this.#registry.get<PipelineDefinition>(PIPELINE_KIND, name) : undefined;
    if (entry) return entry;
    const broken = this.#registry.problemsOf(PIPELINE_KIND).find((p) => nameOfFile(p.entry) === name);
    if (broken) throw fail('HANGAR_PIPELINE_FILE_BROKEN', { file: broken.entry, problem: broken.message });
    throw fail('HANGAR_PIPELINE_NOT_FOUND', { pipeline: name });
  }

  #problemOf(file: string): DropInProblem | undefined {
    return this.#registry.problemsOf(PIPELINE_KIND).find((p) => p.entry === file);
  }

  /**
   * The API writes and deletes `pipelines/<name>.json` only. A pipeline that discovery loaded from
   * a module (`pipelines/<name>.ts`) is changed in that file: a JSON twin would only be refused by
   * discovery as a duplicate name.
   */
  #assertJsonFile(name: string, relative: string): void {
    const holder = this.#registry.get(PIPELINE_KIND, name);
    if (holder && holder.file !== relative) throw fail('HANGAR_PIPELINE_FILE_ELSEWHERE', { pipeline: name, file: holder.file });
  }
}
