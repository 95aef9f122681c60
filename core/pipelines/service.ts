/**
 * Pipelines as a service (no HTTP): definitions saved as `pipelines/<name>.json` in the workspace,
 * validation, inspection, the graph, and runs.
 *
 * Definitions are read from their file on every use rather than cached: the file is the source of
 * truth (it can be versioned, edited by hand or by the API), so an edit is seen by the next call
 * without a reload step, and a broken file is reported where it is used (list, inspect, run).
 *
 * A run:
 * - starts every step whose dependencies have finished, so independent steps run in parallel;
 * - stops at the first failed step: steps still running are cancelled (their signal aborts), steps
 *   not started are `skipped`, and the run fails naming the step (HTTP 502 with the run record —
 *   the pipeline answers for its steps the way a gateway answers for its upstreams);
 * - keeps a record with every step's resolved input, output, status and duration, stored in the
 *   `pipeline_runs` collection before the response says the run finished.
 * Step values: an endpoint step's `aggregated`; an agent step's whole response object
 * (`$.steps.s.output.response` is its text); a plugin step's prediction.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { HttpError, errorMessage, notFound, unprocessable } from '../http/errors.js';
import type { Collection, Store } from '../storage/store.js';
import { dependencies, graphView, kindOf, validatePipeline, type GraphView, type StepTargets } from './graph.js';
import { checkRunInput } from './input.js';
import { resolveTemplate, type RunState } from './references.js';
import {
  PIPELINE_NAME,
  type PipelineDefinition,
  type PipelineProblem,
  type RunRecord,
  type StepKind,
  type StepRecord,
  type ValidationReport,
} from './schemas.js';

/** Names that are routes under /api/v1/pipelines, so no pipeline may take them. */
export const RESERVED_PIPELINE_NAMES = new Set(['validate']);

export interface StepRunner extends StepTargets {
  run(kind: StepKind, target: string, input: unknown, options: { signal: AbortSignal; principal: string; method?: string }): Promise<{ value: unknown; upstreams?: unknown[] }>;
}

export interface PipelineServiceOptions {
  /** Workspace root; definitions live in `<root>/pipelines/`. */
  root: string;
  store: Store;
  steps: StepRunner;
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

/** A 422 for an invalid definition whose body lists every problem. */
export class InvalidPipeline extends HttpError {
  constructor(readonly problems: PipelineProblem[]) {
    super(422, problems.map((p) => `${p.step ? `step '${p.step}' ` : ''}${p.field}: ${p.message}`).join('; '));
    this.name = 'InvalidPipeline';
  }
  override toBody() {
    return { detail: this.detail as string, errors: this.problems };
  }
}

/** A run that failed at a step: 502 with the run record. */
export class PipelineRunFailed extends HttpError {
  constructor(readonly run: RunRecord) {
    super(502, `pipeline '${run.pipeline}' failed at step '${run.failed_step}': ${run.error}`);
    this.name = 'PipelineRunFailed';
  }
  override toBody() {
    return { detail: this.detail as string, run: this.run };
  }
}

export class PipelineService {
  readonly #dir: string;
  readonly #runs: Collection<RunRecord>;
  readonly #steps: StepRunner;

  constructor(options: PipelineServiceOptions) {
    this.#dir = path.join(options.root, 'pipelines');
    this.#runs = options.store.collection<RunRecord>('pipeline_runs', { shards: 8 });
    this.#steps = options.steps;
  }

  fileOf(name: string): string {
    if (!PIPELINE_NAME.test(name)) throw notFound(`pipeline '${name}' not found`);
    return path.join(this.#dir, `${name}.json`);
  }

  validate(draft: unknown): ValidationReport {
    const { valid, errors, waves } = validatePipeline(draft, this.#steps);
    if (valid && RESERVED_PIPELINE_NAMES.has((draft as { name: string }).name)) {
      return { valid: false, errors: [{ step: null, field: 'name', message: 'this name is reserved by a pipelines route' }], waves: [] };
    }
    return { valid, errors, waves };
  }

  async list(): Promise<PipelineSummary[]> {
    let files: string[];
    try {
      files = (await readdir(this.#dir)).filter((f) => f.endsWith('.json') && !f.startsWith('.') && !f.startsWith('_')).sort();
    } catch {
      return [];
    }
    const out: PipelineSummary[] = [];
    for (const file of files) {
      const name = file.slice(0, -'.json'.length);
      const raw = await this.#read(name).catch((err: unknown) => err as Error);
      if (raw instanceof Error) {
        out.push({ name, description: '', version: '', steps: 0, file: `pipelines/${file}`, valid: false, errors: [{ step: null, field: '(file)', message: raw.message }] });
        continue;
      }
      const report = this.validate(raw);
      const d = raw as Partial<PipelineDefinition>;
      out.push({
        name,
        description: typeof d.description === 'string' ? d.description : '',
        version: typeof d.version === 'string' ? d.version : '0.0.0',
        steps: Array.isArray(d.steps) ? d.steps.length : 0,
        file: `pipelines/${file}`,
        valid: report.valid,
        errors: report.errors,
      });
    }
    return out;
  }

  /** The definition as stored, its validation against the live registry, and its graph. */
  async inspect(name: string): Promise<{ definition: unknown; validation: ValidationReport; graph: GraphView | null; file: string }> {
    const raw = await this.#read(name);
    const validation = this.validate(raw);
    const checked = validatePipeline(raw, this.#steps).definition;
    return { definition: raw, validation, graph: checked ? graphView(checked) : null, file: `pipelines/${name}.json` };
  }

  async graph(name: string): Promise<GraphView> {
    const raw = await this.#read(name);
    const { definition, errors } = validatePipeline(raw, this.#steps);
    if (!definition) throw new InvalidPipeline(errors);
    return graphView(definition);
  }

  /** Validate and write `pipelines/<name>.json` (atomically: a reader never sees half a file). */
  async save(draft: unknown): Promise<{ created: boolean; file: string; definition: PipelineDefinition }> {
    const report = this.validate(draft);
    if (!report.valid) throw new InvalidPipeline(report.errors);
    const definition = validatePipeline(draft, this.#steps).definition!;
    const file = this.fileOf(definition.name);
    await mkdir(this.#dir, { recursive: true });
    const existed = await readFile(file).then(() => true, () => false);
    // Save what was sent (not the parsed form with defaults filled in), so the file stays as written.
    const temp = path.join(this.#dir, `.${definition.name}.${process.pid}.${randomUUID()}.tmp`);
    await writeFile(temp, JSON.stringify(draft, null, 2) + '\n');
    await rename(temp, file);
    return { created: !existed, file: `pipelines/${definition.name}.json`, definition };
  }

  async delete(name: string): Promise<void> {
    const file = this.fileOf(name);
    try {
      await rm(file);
    } catch {
      throw notFound(`pipeline '${name}' not found`);
    }
  }

  /** Check a pipeline can run (exists, valid now) without running it. */
  async runnable(name: string): Promise<PipelineDefinition> {
    const raw = await this.#read(name);
    const { definition, errors } = validatePipeline(raw, this.#steps);
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
      id: randomUUID(),
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
        return { name: step.name, kind, target, status: 'pending', depends_on: deps.get(step.name) ?? [], input: null, output: null, error: null, started_at: null, duration_ms: null };
      }),
    };
    await this.#runs.put(record.id, record);

    const state: RunState = { input: input ?? null, steps: new Map() };
    const byName = new Map(record.steps.map((s) => [s.name, s]));
    const controller = new AbortController();
    const forward = () => controller.abort();
    options.signal?.addEventListener('abort', forward, { once: true });

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
          const result = await this.#steps.run(rec.kind, rec.target, stepInput, { signal: controller.signal, principal: options.principal, method: step.method });
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
      if (record.failed_step) throw new PipelineRunFailed(record);
      throw new HttpError(502, `pipeline '${record.pipeline}' ${record.error}`);
    }
    if (record.status === 'canceled') throw new HttpError(499, 'pipeline run canceled');
    return record;
  }

  async runs(name: string, limit = 50): Promise<RunRecord[]> {
    this.fileOf(name);
    const all = (await this.#runs.list()).filter((r) => r.pipeline === name);
    return all.sort((a, b) => b.started_at.localeCompare(a.started_at)).slice(0, limit);
  }

  async getRun(name: string, id: string): Promise<RunRecord> {
    const run = await this.#runs.get(id);
    if (!run || run.pipeline !== name) throw notFound(`run '${id}' of pipeline '${name}' not found`);
    return run;
  }

  /** `output` when the definition has one; else every final step's value by step name. */
  #output(definition: PipelineDefinition, state: RunState): unknown {
    if (definition.output !== undefined) return resolveTemplate(definition.output, state);
    const deps = dependencies(definition.steps);
    const used = new Set([...deps.values()].flat());
    return Object.fromEntries(definition.steps.filter((s) => !used.has(s.name)).map((s) => [s.name, state.steps.get(s.name) ?? null]));
  }

  async #read(name: string): Promise<unknown> {
    const file = this.fileOf(name);
    let text: string;
    try {
      text = await readFile(file, 'utf8');
    } catch {
      throw notFound(`pipeline '${name}' not found`);
    }
    try {
      return JSON.parse(text);
    } catch (err) {
      throw unprocessable(`pipelines/${name}.json is not valid JSON: ${errorMessage(err)}`);
    }
  }
}
