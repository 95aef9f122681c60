/**
 * Notebook steps: running code cells of a workspace notebook headlessly inside a pipeline run (see
 * schemas.ts for what a pipeline author sees).
 *
 * Per run and notebook there is one `NotebookRun`: the notebook as saved on disk, its analysis and
 * a fresh kernel, released through the run's `RunScope` when the run ends. A step runs its cell
 * after the ancestors that have not run yet, in the notebook's execution order, each cell at most
 * once per run, so a later step for an upstream cell reports the result it already had. Steps of
 * one notebook take turns (a queue, as the notebook session does): setting `pipelineInput` and
 * running a step's cells must not interleave with another step's.
 *
 * Why not `NotebookSession.runCell`: it also re-runs every cell downstream of the cell, which would
 * run the cells of later steps inside an earlier one — their time, outputs and failures recorded
 * against the wrong step. The kernel, the analysis and the graph algorithms are the notebook's own.
 */
import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve, sep } from 'node:path';
import { ancestors, topologicalOrder } from '../lib/graph.js';
import type { NotebookStepOutput } from '../pipelines/schemas.js';
import type { RunScope } from '../pipelines/service.js';
import { analyzeNotebook, type NotebookAnalysis } from './analysis/index.js';
import { isNotebookFile, parseNotebook, readNotebookFile } from './formats.js';
import { NotebookRuntime } from './runtime.js';
import type { Cell, Notebook, Output } from './schemas.js';
import type { NotebookService } from './service.js';

/** The global through which a notebook step's input reaches its cells. */
export const PIPELINE_INPUT_GLOBAL = 'pipelineInput';

/** A cell the kernel never shows: it only sets `pipelineInput` before a step's cells run. */
const INPUT_CELL_ID = '__pipeline_input__';

/** A notebook step that failed; the message says which cell and why. */
export class NotebookStepError extends Error {
  override name = 'NotebookStepError';
}

interface CellResult {
  status: 'success' | 'error';
  value: unknown;
  outputs: Output[];
  /** Set when the cell's run ended the kernel. */
  ended?: boolean;
}

/** Cell ids and names of a notebook file, parsed once per version of the file (validation is sync). */
interface Outline {
  mtimeMs: number;
  size: number;
  cells: Array<Pick<Cell, 'id' | 'name' | 'cell_type'>>;
  error?: string;
}

/** Find a cell by id, else by name when exactly one cell has it. */
function findCell<T extends Pick<Cell, 'id' | 'name'>>(cells: readonly T[], ref: string): T | string {
  const byId = cells.find((c) => c.id === ref);
  if (byId) return byId;
  const named = cells.filter((c) => c.name === ref);
  if (named.length === 1) return named[0];
  if (named.length > 1) return `${named.length} cells are named '${ref}' (${named.map((c) => c.id).join(', ')}); name the cell by id`;
  return `unknown cell '${ref}'`;
}

/** The mime type of the output that carries a cell's value to the step (removed from its outputs). */
const VALUE_MIME = 'application/vnd.hangar.pipeline-value+json';

/**
 * Runs inside the kernel, on the cell's value, to give the step real data rather than what the
 * notebook displays (a number stays a number; a data frame gives all its rows, not the first 200 of
 * its table). Displayables (`md`, `html`, `chart`) give their JSON bundle, else their text.
 */
const VALUE_TO_JSON = `((value) => {
  if (value === undefined) return 'null';
  const display = Symbol.for('hangar.notebook.display');
  if (value !== null && typeof value === 'object' && display in value) {
    const bundle = value[display];
    const json = Object.keys(bundle).find((mime) => mime === 'application/json' || mime.endsWith('+json'));
    value = json ? bundle[json] : (bundle['text/plain'] ?? bundle['text/markdown'] ?? bundle['text/html'] ?? null);
  } else if (value !== null && typeof value === 'object' && typeof value.objects === 'function' && typeof value.numRows === 'function' && typeof value.columnNames === 'function') {
    value = value.objects();
  }
  try {
    return JSON.stringify(value, (_key, v) => (typeof v === 'bigint' ? v.toString() : v)) ?? 'null';
  } catch {
    return JSON.stringify(String(value));
  }
})`;

/**
 * The cell's program, wrapped so that after it succeeds its value is displayed once more as JSON
 * under VALUE_MIME. The wrapper sits on the program's first line (the prologue), so the cell's own
 * lines keep their numbers and error tracebacks still point at the right source lines.
 */
const withValue = (program: string) =>
  `(async function (__hangar, __scope) { const __writes = await ${program}(__hangar, __scope); ` +
  `globalThis.display({ [Symbol.for('hangar.notebook.display')]: { '${VALUE_MIME}': ${VALUE_TO_JSON}(__hangar.value) } }); return __writes; })`;

/** Take the value output out of a cell's outputs: the value, and the outputs the notebook shows. */
function splitValue(outputs: readonly Output[]): { value: unknown; outputs: Output[] } {
  let value: unknown = null;
  const shown = outputs.filter((o) => {
    if (o.output_type !== 'display_data' || typeof o.data[VALUE_MIME] !== 'string') return true;
    value = JSON.parse(o.data[VALUE_MIME] as string);
    return false;
  });
  return { value, outputs: shown };
}

function failureOf(outputs: readonly Output[]): string {
  const error = outputs.find((o) => o.output_type === 'error');
  return error?.output_type === 'error' ? `${error.ename}: ${error.evalue}` : 'the cell failed';
}

class NotebookRun {
  readonly #results = new Map<string, CellResult>();
  #queue: Promise<unknown> = Promise.resolve();
  #executionCount = 0;

  constructor(
    readonly id: string,
    readonly notebook: Notebook,
    readonly analysis: NotebookAnalysis,
    readonly kernel: NotebookRuntime,
  ) {}

  /** Run `cellId` (after the ancestors it still needs) with `input` as `pipelineInput`. */
  step(cellId: string, input: unknown, signal: AbortSignal): Promise<NotebookStepOutput> {
    const job = async () => {
      if (signal.aborted) throw new NotebookStepError('canceled');
      const { topology } = this.analysis;
      const pending = new Set([...ancestors(topology, [cellId]), cellId].filter((id) => !this.#results.has(id)));
      const { order, blocked } = topologicalOrder(topology, pending);
      if (blocked.length > 0)
        throw new NotebookStepError(
          `cell ${this.#label(blocked[0])} cannot run: ${this.#problem(blocked[0]) ?? 'it is on a dependency cycle'}`,
        );
      if (order.length > 0) await this.#setInput(input);
      for (const id of order) {
        if (signal.aborted) throw new NotebookStepError('canceled');
        const failedParent = [...topology.parents.get(id)!].find((p) => this.#results.get(p)?.status === 'error');
        if (failedParent) {
          this.#results.set(id, { status: 'error', value: null, outputs: [] });
          continue;
        }
        const result = await this.#execute(id);
        this.#results.set(id, result);
        // The kernel was replaced (crash, out of memory): every value is gone, so the rest of the
        // plan cannot run; later steps start again from a fresh kernel.
        if (result.ended) throw new NotebookStepError(`cell ${this.#label(id)} ended the kernel: ${failureOf(result.outputs)}`);
      }
      const result = this.#results.get(cellId)!;
      if (result.status === 'error') {
        const failed = [...ancestors(topology, [cellId]), cellId].find((id) =>
          this.#results.get(id)?.outputs.some((o) => o.output_type === 'error'),
        );
        if (failed === undefined || failed === cellId)
          throw new NotebookStepError(`cell ${this.#label(cellId)} failed: ${failureOf(result.outputs)}`);
        throw new NotebookStepError(
          `cell ${this.#label(cellId)} did not run: cell ${this.#label(failed)}, which it needs, failed: ${failureOf(this.#results.get(failed)!.outputs)}`,
        );
      }
      const cell = this.notebook.cells.find((c) => c.id === cellId)!;
      return { notebook: this.id, cell: cellId, name: cell.name, value: result.value, outputs: result.outputs };
    };
    const next = this.#queue.then(job, job);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  #label(id: string): string {
    const name = this.notebook.cells.find((c) => c.id === id)?.name;
    return name ? `'${name}' (${id})` : id;
  }

  #problem(id: string): string | undefined {
    return this.analysis.cells.get(id)?.problems.find((p) => p.severity === 'error')?.message;
  }

  /**
   * Set the global before the step's cells run. A global rather than a kernel scope name, so a
   * cell may read `pipelineInput` (a free name, looked up in globals when no cell defines it) or
   * `globalThis.pipelineInput` (which also works in the editor, where it is undefined).
   */
  async #setInput(input: unknown): Promise<void> {
    const literal = input === undefined ? 'null' : JSON.stringify(input);
    const result = await this.kernel.run({
      cellId: INPUT_CELL_ID,
      program: `(async function (__hangar, __scope) { "use strict"; globalThis.${PIPELINE_INPUT_GLOBAL} = ${literal}; return {}; })`,
      reads: [],
      writes: [],
      lineMap: [],
      executionCount: 0,
    });
    if (result.status !== 'success')
      throw new NotebookStepError(`could not hand the step input to the kernel: ${failureOf(result.outputs)}`);
  }

  async #execute(id: string): Promise<CellResult> {
    const info = this.analysis.cells.get(id)!;
    const problem = this.#problem(id);
    if (problem || !info.program) {
      const message = problem ?? 'the cell has no program';
      return {
        status: 'error',
        value: null,
        outputs: [{ output_type: 'error', ename: 'NotebookError', evalue: message, traceback: [`NotebookError: ${message}`] }],
      };
    }
    const result = await this.kernel.run({
      cellId: id,
      program: withValue(info.program),
      reads: info.dependsOn,
      writes: info.writes,
      lineMap: info.lineMap ?? [],
      ...(info.segmentMap ? { segmentMap: info.segmentMap } : {}),
      executionCount: ++this.#executionCount,
    });
    // A crash or interrupt replaced the kernel: every value is gone, so nothing counts as run.
    if (result.ended) {
      this.#results.clear();
      return { status: 'error', value: null, outputs: result.outputs, ended: true };
    }
    return { status: result.status, ...splitValue(result.outputs) };
  }
}

/** What the pipelines subsystem needs to check and run notebook steps. */
export class NotebookSteps {
  readonly #runs = new WeakMap<RunScope, Map<string, Promise<NotebookRun>>>();
  readonly #outlines = new Map<string, Outline>();

  constructor(private readonly notebooks: NotebookService) {}

  /**
   * The file of a notebook id, or undefined when the id is not a notebook path inside `notebooks/`.
   * The same rules as `NotebookService.resolvePath`, synchronously (validation is sync); a run goes
   * through `resolvePath`, which also refuses symlinks that leave the folder.
   */
  #fileOf(id: string): string | undefined {
    if (!id || id.includes('\0') || id.startsWith('/') || /^[a-zA-Z]:/.test(id) || id.split(/[\\/]/).includes('..') || !isNotebookFile(id))
      return undefined;
    const file = resolve(this.notebooks.dir, id);
    return file.startsWith(this.notebooks.dir + sep) ? file : undefined;
  }

  exists(id: string): boolean {
    const file = this.#fileOf(id);
    return file !== undefined && statSync(file, { throwIfNoEntry: false })?.isFile() === true;
  }

  /** Why `cell` cannot be a step of notebook `id` (which exists), or undefined when it can. */
  cellProblem(id: string, cell: string): string | undefined {
    const outline = this.#outline(id);
    if (outline.error) return `notebook '${id}' cannot be read: ${outline.error}`;
    const found = findCell(outline.cells, cell);
    if (typeof found === 'string') return `${found} in notebook '${id}'`;
    if (found.cell_type !== 'code') return `cell '${cell}' of notebook '${id}' is a ${found.cell_type} cell; notebook steps run code cells`;
    return undefined;
  }

  /** Cell ids and names of a notebook, re-read only when its file changed. */
  #outline(id: string): Outline {
    const file = this.#fileOf(id)!;
    const info = statSync(file, { throwIfNoEntry: false });
    // Gone since `exists` looked: reported like any unreadable notebook.
    if (!info) return { mtimeMs: 0, size: 0, cells: [], error: 'no such file' };
    const cached = this.#outlines.get(file);
    if (cached && cached.mtimeMs === info.mtimeMs && cached.size === info.size) return cached;
    let outline: Outline;
    try {
      const notebook = parseNotebook(readFileSync(file, 'utf8'), file);
      outline = {
        mtimeMs: info.mtimeMs,
        size: info.size,
        cells: notebook.cells.map(({ id: cellId, name, cell_type }) => ({ id: cellId, name, cell_type })),
      };
    } catch (err) {
      outline = { mtimeMs: info.mtimeMs, size: info.size, cells: [], error: (err as Error).message };
    }
    this.#outlines.set(file, outline);
    return outline;
  }

  /** Run one notebook step: the cell `cell` of notebook `id` in this run's kernel for it. */
  async run(id: string, cell: string, input: unknown, options: { signal: AbortSignal; run: RunScope }): Promise<NotebookStepOutput> {
    const run = await this.#open(id, options.run);
    const found = findCell(run.notebook.cells, cell);
    // Validated when the run started, but the file may have changed since the definition was checked.
    if (typeof found === 'string') throw new NotebookStepError(`${found} in notebook '${id}'`);
    // Cancelling the run (a sibling step failed, the task was cancelled) stops the cell where it is.
    const stop = () => void run.kernel.close();
    options.signal.addEventListener('abort', stop, { once: true });
    try {
      return await run.step(found.id, input, options.signal);
    } finally {
      options.signal.removeEventListener('abort', stop);
    }
  }

  /** This run's kernel for notebook `id`, read, analysed and started on first use. */
  #open(id: string, scope: RunScope): Promise<NotebookRun> {
    let byId = this.#runs.get(scope);
    if (!byId) this.#runs.set(scope, (byId = new Map()));
    let run = byId.get(id);
    if (!run) {
      run = (async () => {
        const file = await this.notebooks.resolvePath(id);
        const notebook = await readNotebookFile(file);
        const analysis = await analyzeNotebook(notebook.cells);
        const kernel = new NotebookRuntime({ baseDir: dirname(file) });
        scope.defer(() => kernel.close());
        return new NotebookRun(id, notebook, analysis, kernel);
      })();
      byId.set(id, run);
    }
    return run;
  }
}
