/**
 * One open notebook: its cells, the analysis of them, each cell's state, and its kernel. This is the
 * reactive engine; `service.ts` only finds files and hands out sessions.
 *
 * Behaviour (marimo's, for TypeScript):
 * - Editing a cell's source marks it and everything downstream of it (before and after the edit)
 *   `stale` — unless they never ran, in which case they stay `idle`.
 * - Running a cell runs, in dependency order: the upstream cells it needs that are stale or never
 *   ran, the cell itself, and every cell downstream of it (their inputs just changed).
 * - A cell with an analysis error (syntax, defined twice, cycle, reassignment...) is not run; it
 *   shows the problem as an error output. Cells downstream of a failed or unrunnable cell are not
 *   run either and stay `stale`, since their inputs are missing or out of date.
 * - Interrupt, restart, timeout and kernel crash all replace the kernel; every cell that had run
 *   becomes `stale` because its values are gone.
 * - Outputs read from the file (an `.ipynb`, or a `.nb.ts` sidecar) were made by an earlier run:
 *   their cells start `stale` and carry `stale_outputs: true` until they run here, so no view,
 *   CLI or export shows them as current (Jupyter shows saved outputs too, but its execution
 *   counts at least say which kernel made them; ours would not).
 *
 * Runs go one after another through a queue (as Vite's hmrHandler), never interleaving in the
 * kernel; interrupt bypasses it. One file past 600 lines: these rules are one state machine.
 */
import { dirname } from 'node:path';
import { fail } from '../kernel/errors.js';
import { ancestors, descendants, topologicalOrder } from '../lib/graph.js';
import { analyzeNotebook, type NotebookAnalysis } from './analysis/index.js';
import { type DiskVersion, diskDiff, isNewerOnDisk, readDiskVersion } from './disk-version.js';
import { parseNotebook, readNotebookFile, writeNotebookFile } from './formats.js';
import { type MergeCellText, type MergeSide, mergeCells } from './merge.js';
import { NotebookRuntime } from './runtime.js';
import { Cell, type CellEdit, type CellState, type CellType, type Notebook, newCellId, type Output } from './schemas.js';
import {
  type CellRunRecord,
  type DependencyReport,
  dependencyReport,
  problemOutputs,
  type SessionEvent,
  type SessionOptions,
} from './session-report.js';

export type { CellRunRecord, DependencyReport, SessionEvent, SessionOptions } from './session-report.js';

import { UI_MIME } from './ui-elements.js';

/** Runs kept per session: enough for a long interactive session, bounded so memory is too. */
const HISTORY_LIMIT = 5000;

export class NotebookSession {
  readonly notebook: Notebook;
  /** Every cell run of this session, oldest first (at most the last 5000). */
  readonly history: CellRunRecord[] = [];
  readonly kernel: NotebookRuntime;
  cellTimeoutMs: number;
  #filePath: string | undefined;
  #states = new Map<string, CellState>();
  #analysis: Promise<NotebookAnalysis> | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #listeners = new Set<(event: SessionEvent) => void>();
  #executionCount = 0;
  /** The file version this session was read from or last wrote. */
  #disk: DiskVersion | undefined;
  /** The cells of that version, as the file said them: the base of a three-way merge. */
  #base: MergeCellText[] | undefined;
  /** Edited since it was read or saved: a disk change then needs the user's choice. */
  #dirty = false;
  /**
   * Set by a reload from disk, until the next save: the version held before it and the sources the
   * reload replaced. An editor's edit made from one of those sources came in after the disk's
   * change to the same cell; holding the earlier version again makes a save show the conflict.
   */
  #beforeReload: { disk: DiskVersion | undefined; base: MergeCellText[] | undefined; sources: Map<string, string> } | undefined;
  /** The last value the user gave each interactive element (`<cell id>:<n>`), restored when its cell runs again. */
  #uiValues = new Map<string, unknown>();
  /** Cells whose outputs came from the file, not from a run in this session. */
  #savedOutputs = new Set<string>();
  /** Bumped on interrupt so a queued plan knows to stop. */
  #epoch = 0;

  constructor(notebook: Notebook, options: SessionOptions = {}) {
    this.notebook = notebook;
    this.#filePath = options.filePath ?? notebook.file_path;
    this.cellTimeoutMs = options.cellTimeoutMs ?? 0;
    this.kernel = new NotebookRuntime({
      baseDir: this.#filePath ? dirname(this.#filePath) : process.cwd(),
      ...(options.maxHeapMb ? { maxHeapMb: options.maxHeapMb } : {}),
    });
    for (const cell of notebook.cells) {
      const saved = cell.cell_type === 'code' && (cell.outputs.length > 0 || cell.execution_count > 0);
      this.#states.set(cell.id, saved ? 'stale' : 'idle');
      if (saved) this.#savedOutputs.add(cell.id);
    }
    this.#executionCount = Math.max(0, ...notebook.cells.map((c) => c.execution_count));
  }

  get filePath(): string | undefined {
    return this.#filePath;
  }

  subscribe(listener: (event: SessionEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #emit(event: SessionEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch {
        // A broken listener (a closed socket) must not break the run.
      }
    }
  }

  #setState(cellId: string, state: CellState): void {
    // Every cell has a state from when it is added until it is deleted: a cell deleted while it ran
    // does not come back as a state of its own.
    if (!this.#states.has(cellId)) return;
    // Stryker disable next-line ConditionalExpression,StringLiteral: a cell reaches success or error only from running or queued, so the repeat these let through never comes
    if (this.#states.get(cellId) === state && state !== 'success' && state !== 'error') return;
    this.#states.set(cellId, state);
    const finished = state === 'success' || state === 'error';
    const count = finished ? this.notebook.cells.find((c) => c.id === cellId)?.execution_count : undefined;
    this.#emit({ type: 'cell-state', cellId, state, ...(count ? { execution_count: count } : {}) });
  }

  state(cellId: string): CellState {
    return this.#states.get(cellId) ?? 'idle';
  }

  /** Analysis of the current cells; cached until the next edit. */
  analysis(): Promise<NotebookAnalysis> {
    this.#analysis ??= analyzeNotebook(this.notebook.cells);
    return this.#analysis;
  }

  cell(cellId: string): Cell {
    const cell = this.notebook.cells.find((c) => c.id === cellId);
    if (!cell) throw fail('HANGAR_NOTEBOOK_CELL_NOT_FOUND', { cell: cellId });
    return cell;
  }

  // ---- editing ------------------------------------------------------------------------------

  /** Mark cells stale (those that ran) because their inputs or code changed. */
  #markStale(ids: Iterable<string>): void {
    for (const id of ids) {
      const state = this.#states.get(id);
      if (state && state !== 'idle') this.#setState(id, 'stale');
    }
  }

  async addCell(input: {
    cell_type?: CellType;
    name?: string;
    source?: string;
    metadata?: Record<string, unknown>;
    index?: number;
  }): Promise<Cell> {
    let id = newCellId();
    // Stryker disable next-line ConditionalExpression,MethodExpression,ArrowFunction: ids are random (newCellId); a collision is not something a test can bring about
    while (this.notebook.cells.some((c) => c.id === id)) id = newCellId();
    const cell = Cell.parse({ ...input, id });
    const index = input.index === undefined ? this.notebook.cells.length : Math.min(input.index, this.notebook.cells.length);
    this.notebook.cells.splice(index, 0, cell);
    this.#dirty = true;
    this.#states.set(cell.id, 'idle');
    this.#analysis = undefined;
    // A new cell may define a name others were missing: they need a re-run.
    const after = await this.analysis();
    this.#markStale(descendants(after.topology, [cell.id]));
    this.#emit({ type: 'cells-changed' });
    return cell;
  }

  async updateCell(cellId: string, { base_source, ...patch }: CellEdit): Promise<Cell> {
    const cell = this.cell(cellId);
    const overDiskEdit =
      base_source !== undefined &&
      patch.source !== undefined &&
      patch.source !== cell.source &&
      base_source !== cell.source &&
      this.#beforeReload?.sources.get(cellId) === base_source;
    const codeChanged =
      (patch.source !== undefined && patch.source !== cell.source) || (patch.cell_type !== undefined && patch.cell_type !== cell.cell_type);
    const before = codeChanged ? await this.analysis() : undefined;
    Object.assign(cell, Cell.parse({ ...cell, ...patch }));
    this.#dirty = true;
    if (codeChanged) {
      this.#analysis = undefined;
      const after = await this.analysis();
      this.#markStale([cellId, ...descendants(before!.topology, [cellId]), ...descendants(after.topology, [cellId])]);
      if (cell.cell_type !== 'code') {
        this.#setState(cellId, 'idle');
        cell.outputs = [];
        this.#savedOutputs.delete(cellId);
      }
    }
    this.#emit({ type: 'cells-changed' });
    if (overDiskEdit) await this.#holdBeforeReload();
    return cell;
  }

  /**
   * An edit was made from a cell's source as it was before a reload from disk changed it: the
   * disk's edit and this one collided. Keep the edit, hold the version from before the reload (so
   * a save answers 409 with the diff and a merge sees both sides), and tell the UI, as when the
   * file changes under unsaved edits.
   */
  async #holdBeforeReload(): Promise<void> {
    const before = this.#beforeReload!;
    this.#disk = before.disk;
    this.#base = before.base;
    this.#beforeReload = undefined;
    const now = this.#filePath ? await readDiskVersion(this.#filePath) : undefined;
    if (now) this.#emit({ type: 'disk-changed', diff: diskDiff(this.notebook, now.text, this.#filePath!) });
  }

  async deleteCell(cellId: string): Promise<void> {
    const cell = this.cell(cellId);
    const before = await this.analysis();
    // Stryker disable next-line OptionalChaining,ArrayDeclaration: every cell of the notebook, markdown included, is in its analysis
    const writes = before.cells.get(cellId)?.writes ?? [];
    this.notebook.cells.splice(this.notebook.cells.indexOf(cell), 1);
    this.#dirty = true;
    this.#states.delete(cellId);
    this.#analysis = undefined;
    this.#markStale(descendants(before.topology, [cellId]));
    // Its values leave the kernel too, so readers fail loudly instead of using a ghost value.
    await this.#enqueue(() => (this.kernel.running ? this.kernel.deleteNames(writes) : undefined));
    this.#emit({ type: 'cells-changed' });
  }

  /** `order` must list every cell id exactly once. Order changes nothing about dependencies. */
  reorder(order: string[]): void {
    const ids = this.notebook.cells.map((c) => c.id);
    const unique = new Set(order);
    // Stryker disable next-line ConditionalExpression: a duplicate either changes the length or leaves a cell out, which the other two tests refuse (`false ||` on the length test is killed by session-rules)
    if (unique.size !== order.length || order.length !== ids.length || !ids.every((id) => unique.has(id))) {
      throw fail('HANGAR_NOTEBOOK_ORDER_INVALID', {});
    }
    const byId = new Map(this.notebook.cells.map((c) => [c.id, c]));
    this.notebook.cells.splice(0, this.notebook.cells.length, ...order.map((id) => byId.get(id)!));
    this.#dirty = true;
    // Ties in the execution order follow notebook order, so the analysis is recomputed.
    this.#analysis = undefined;
    this.#emit({ type: 'cells-changed' });
  }

  // ---- running ------------------------------------------------------------------------------

  #enqueue<T>(job: () => Promise<T> | T): Promise<T> {
    const next = this.#queue.then(job, job);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  /** Run a cell, the stale upstream cells it needs, and everything downstream of it. */
  async runCell(cellId: string): Promise<void> {
    await this.runCells([cellId]);
  }

  /** Run cells, the stale upstream cells they need, and everything downstream of them, in one plan. */
  async runCells(cellIds: string[]): Promise<void> {
    const code = cellIds.filter((id) => this.cell(id).cell_type === 'code');
    // Stryker disable next-line ConditionalExpression: an empty plan runs nothing and emits nothing
    if (code.length === 0) return;
    const analysis = await this.analysis();
    const needed = [...ancestors(analysis.topology, code)].filter((id) => this.state(id) !== 'success');
    await this.#runPlan(new Set([...code, ...needed, ...descendants(analysis.topology, code)]));
  }

  /** Run every code cell in dependency order. */
  async runAll(): Promise<void> {
    await this.#runPlan(new Set(this.notebook.cells.filter((c) => c.cell_type === 'code').map((c) => c.id)));
  }

  /**
   * The user changed an interactive element: keep the value, set it in the kernel, and re-run the
   * cells downstream of the element's cell (they read it), as marimo does. The defining cell does
   * not re-run, so the element stays the same object.
   */
  async setUiValue(elementId: string, value: unknown): Promise<void> {
    const cellId = elementId.slice(0, elementId.lastIndexOf(':'));
    this.cell(cellId);
    this.#uiValues.set(elementId, value);
    await this.#enqueue(() => this.kernel.setUiValue(elementId, value));
    // The control's stored output holds the new value too, so a reloaded page draws it as set. No
    // event: the control on screen already shows it, and redrawing it would take its keyboard focus.
    const cell = this.cell(cellId);
    cell.outputs = cell.outputs.map((o) => {
      const payload = 'data' in o ? (o.data[UI_MIME] as { id?: string } | undefined) : undefined;
      return payload?.id === elementId && 'data' in o ? { ...o, data: { ...o.data, [UI_MIME]: { ...payload, value } } } : o;
    });
    const analysis = await this.analysis();
    const readers = [...descendants(analysis.topology, [cellId])];
    // Stryker disable next-line EqualityOperator: with no readers the plan is empty, which runs nothing and emits nothing
    if (this.state(cellId) === 'success' && readers.length > 0) await this.#runPlan(new Set(readers));
  }

  /** Values of the interactive elements the user set, by element id. */
  uiValues(): Record<string, unknown> {
    return Object.fromEntries(this.#uiValues);
  }

  /** Run only the cells that are stale or never ran (and what depends on them). */
  async runStale(): Promise<void> {
    const analysis = await this.analysis();
    const start = this.notebook.cells.filter((c) => c.cell_type === 'code' && this.state(c.id) !== 'success').map((c) => c.id);
    await this.#runPlan(new Set([...start, ...descendants(analysis.topology, start)]));
  }

  #runPlan(plan: Set<string>): Promise<void> {
    const epoch = this.#epoch;
    for (const id of plan) this.#setState(id, 'queued');
    return this.#enqueue(async () => {
      const analysis = await this.analysis();
      // Cells deleted while queued are simply dropped.
      // Stryker disable next-line MethodExpression: topologicalOrder leaves out ids its graph lacks, and a deleted cell has no state left to turn stale
      const live = new Set([...plan].filter((id) => analysis.cells.has(id)));
      const { order, blocked } = topologicalOrder(analysis.topology, live);
      const failed = new Set<string>();
      for (const id of blocked) {
        // Stryker disable next-line CallExpression: what is downstream of a blocked cell is blocked too, so nothing reads this
        failed.add(id);
        this.#showProblems(id, analysis);
      }
      for (const id of order) {
        if (epoch !== this.#epoch) break;
        // Deleted since the run began (its state went with it): dropped, as one deleted while queued is.
        if (!this.#states.has(id)) continue;
        const info = analysis.cells.get(id)!;
        const upstreamMissing = [...analysis.topology.parents.get(id)!].some(
          (parent) => failed.has(parent) || (this.state(parent) !== 'success' && !live.has(parent)),
        );
        if (info.problems.some((p) => p.severity === 'error')) {
          failed.add(id);
          this.#showProblems(id, analysis);
          continue;
        }
        if (upstreamMissing) {
          failed.add(id);
          this.#setState(id, 'stale');
          continue;
        }
        const ok = await this.#execute(id, analysis);
        if (!ok) failed.add(id);
      }
      // Whatever an interrupt left queued is stale now.
      for (const id of live) if (this.state(id) === 'queued') this.#setState(id, 'stale');
    });
  }

  #showProblems(id: string, analysis: NotebookAnalysis): void {
    const cell = this.cell(id);
    const problems = analysis.cells.get(id)!.problems.filter((p) => p.severity === 'error');
    cell.outputs = problemOutputs(problems);
    this.#savedOutputs.delete(id);
    this.#emit({ type: 'outputs-cleared', cellId: id });
    for (const output of cell.outputs) this.#emit({ type: 'output', cellId: id, output });
    this.#setState(id, 'error');
  }

  async #execute(id: string, analysis: NotebookAnalysis): Promise<boolean> {
    const cell = this.cell(id);
    const info = analysis.cells.get(id)!;
    // Boot first: the first start bumps the generation too, and that is not a lost kernel.
    await this.kernel.start();
    const generation = this.kernel.generation;
    cell.outputs = [];
    this.#savedOutputs.delete(id);
    this.#emit({ type: 'outputs-cleared', cellId: id });
    this.#setState(id, 'running');
    // Stryker disable next-line MethodExpression,ConditionalExpression: a cell with an error problem never runs, so what reaches here is warnings
    for (const warning of info.problems.filter((p) => p.severity === 'warning')) {
      const output: Output = {
        output_type: 'stream',
        name: 'stderr',
        // Stryker disable next-line StringLiteral: every warning the analysis gives carries its line
        text: `warning${warning.line ? ` (line ${warning.line})` : ''}: ${warning.message}\n`,
      };
      cell.outputs.push(output);
      this.#emit({ type: 'output', cellId: id, output });
    }
    const executionCount = ++this.#executionCount;
    const startedAt = new Date().toISOString();
    const result = await this.kernel.run({
      cellId: id,
      program: info.program!,
      reads: info.dependsOn,
      writes: info.writes,
      lineMap: info.lineMap ?? [],
      ...(info.segmentMap ? { segmentMap: info.segmentMap } : {}),
      executionCount,
      // Stryker disable next-line MethodExpression,StringLiteral: the kernel looks up only the elements the running cell makes, by their `<cell>:<n>` ids
      uiValues: Object.fromEntries([...this.#uiValues].filter(([element]) => element.startsWith(`${id}:`))),
      timeoutMs: this.cellTimeoutMs,
      onOutput: (output) => this.#emit({ type: 'output', cellId: id, output }),
    });
    cell.outputs.push(...result.outputs);
    this.history.push({
      cell_id: id,
      execution_count: executionCount,
      started_at: startedAt,
      duration_ms: result.durationMs,
      status: result.status,
      heap_delta_bytes: result.heapDeltaBytes ?? null,
      ...(result.ended ? { ended: result.ended } : {}),
    });
    if (this.history.length > HISTORY_LIMIT) this.history.splice(0, this.history.length - HISTORY_LIMIT);
    cell.execution_count = executionCount;
    cell.last_executed = new Date().toISOString();
    this.#setState(id, result.status);
    if (result.ended) {
      this.#kernelReplaced(result.ended === 'timeout' ? 'timeout' : result.ended === 'crashed' ? 'crashed' : 'restarted', id);
    } else if (this.kernel.generation !== generation) {
      this.#kernelReplaced('restarted', id);
    }
    return result.status === 'success';
  }

  /** The kernel's values are gone: everything that ran is stale, and queued work stops. */
  #kernelReplaced(status: 'restarted' | 'timeout' | 'crashed', except?: string): void {
    this.#epoch++;
    this.#executionCount = 0;
    for (const cell of this.notebook.cells) {
      if (cell.id === except || cell.cell_type !== 'code') continue;
      const state = this.state(cell.id);
      if (state !== 'idle') this.#setState(cell.id, 'stale');
    }
    this.#emit({ type: 'kernel', status, generation: this.kernel.generation });
  }

  /** Stop the running cell (terminating the kernel) and drop queued runs. Ready again on return. */
  async interrupt(): Promise<void> {
    this.#epoch++;
    await this.kernel.interrupt();
    this.#kernelReplaced('restarted');
  }

  async restart(): Promise<void> {
    await this.interrupt();
  }

  /** Wait until every queued run has finished. */
  idle(): Promise<void> {
    return this.#enqueue(() => undefined);
  }

  // ---- reading ------------------------------------------------------------------------------

  async dependencies(): Promise<DependencyReport> {
    return dependencyReport(this.notebook.cells, await this.analysis(), (id) => this.state(id));
  }

  /** Cells with their states, as the API returns them; `stale_outputs`: shown outputs are from an earlier run. */
  cellsWithState(): Array<Cell & { state: CellState; stale_outputs: boolean }> {
    return this.notebook.cells.map((cell) => ({ ...cell, state: this.state(cell.id), stale_outputs: this.#savedOutputs.has(cell.id) }));
  }

  // ---- the file ------------------------------------------------------------------------------

  /** Remember the file's current version as the one this session holds (on open). */
  async trackDisk(): Promise<void> {
    if (this.#filePath) this.#hold(await readDiskVersion(this.#filePath));
  }

  /** This session now holds that version of the file (read, reloaded or written). */
  #hold(read: { version: DiskVersion; text: string } | undefined): void {
    this.#disk = read?.version;
    this.#base = undefined;
    this.#beforeReload = undefined;
    if (!read || !this.#filePath) return;
    try {
      this.#base = parseNotebook(read.text, this.#filePath).cells.map(({ id, cell_type, source, name }) => ({
        id,
        cell_type,
        source,
        name,
      }));
    } catch {
      // A file that does not parse has no cells to merge against; a merge then treats every cell as added.
    }
  }

  get diskVersion(): DiskVersion | undefined {
    return this.#disk;
  }

  get dirty(): boolean {
    return this.#dirty;
  }

  /**
   * Write the notebook file. Over a version of the file newer than the one this session holds,
   * refuse with a 409 carrying the diff, unless `force` (the user chose to overwrite).
   */
  async save(filePath = this.#filePath, options: { force?: boolean } = {}): Promise<string> {
    if (!filePath) throw fail('HANGAR_NOTEBOOK_NO_FILE', {});
    if (filePath === this.#filePath && !options.force) {
      const now = await readDiskVersion(filePath);
      if (now && isNewerOnDisk(this.#disk, now.version)) {
        throw fail(
          'HANGAR_NOTEBOOK_SAVE_CONFLICT',
          { file: filePath },
          { fields: { diff: diskDiff(this.notebook, now.text, filePath), disk_modified: new Date(now.version.mtimeMs).toISOString() } },
        );
      }
    }
    await writeNotebookFile(this.notebook, filePath);
    this.#filePath = filePath;
    this.#hold(await readDiskVersion(filePath));
    this.#dirty = false;
    return filePath;
  }

  /**
   * Save, merging a disk version newer than the one this session holds (`merge.ts`): the cells
   * changed on disk are taken (they become stale), this session's changes kept, and the file is
   * written once. Cells changed on both sides answer 409 `HANGAR_NOTEBOOK_MERGE_CONFLICT` with the
   * three texts and change nothing, until `resolutions` picks a side for each. Returns the cells
   * taken from disk.
   */
  async saveMerged(resolutions: Record<string, MergeSide> = {}): Promise<{ from_disk: string[] }> {
    const file = this.#filePath;
    if (!file) throw fail('HANGAR_NOTEBOOK_NO_FILE', {});
    const now = await readDiskVersion(file);
    if (!now || !isNewerOnDisk(this.#disk, now.version)) {
      await this.save(file);
      return { from_disk: [] };
    }
    let theirs: Cell[];
    try {
      theirs = parseNotebook(now.text, file).cells;
    } catch (err) {
      throw fail('HANGAR_NOTEBOOK_MERGE_UNREADABLE', { file, reason: (err as Error).message });
    }
    const merged = mergeCells(this.#base ?? [], this.notebook.cells, theirs, resolutions);
    if (merged.conflicts.length > 0) {
      throw fail(
        'HANGAR_NOTEBOOK_MERGE_CONFLICT',
        { file, count: merged.conflicts.length },
        { fields: { conflicts: merged.conflicts, diff: diskDiff(this.notebook, now.text, file) } },
      );
    }
    const fromDisk = merged.cells.filter((m) => m.side === 'theirs').map((m) => m.cell.id);
    await this.#adopt(merged.cells.map(({ cell, name }) => Object.assign(cell, { name })));
    // The merge read this version; save() still refuses if the file changed again since.
    this.#hold(now);
    await this.save(file);
    return { from_disk: fromDisk };
  }

  /**
   * The file changed on disk. Unchanged (our own save): nothing. With unsaved edits here: tell the
   * UI (`disk-changed` with the diff) and keep both until the user chooses. Otherwise take the new
   * version at once and re-run what changed, as marimo's `--watch` does. Returns whether the file
   * differs from what the session held.
   */
  async followDisk(): Promise<boolean> {
    if (!this.#filePath) return false;
    const now = await readDiskVersion(this.#filePath);
    if (!now || !isNewerOnDisk(this.#disk, now.version)) return false;
    if (this.#dirty) {
      this.#emit({ type: 'disk-changed', diff: diskDiff(this.notebook, now.text, this.#filePath) });
      return true;
    }
    await this.reloadFromDisk({ rerun: true });
    return true;
  }

  /**
   * Replace the cells with the file's. A cell whose id, type and source are unchanged keeps its
   * outputs and state; a changed cell (and what depends on it) becomes stale; a removed cell's
   * names leave the kernel. With `rerun`, changed and added code cells run when this session has
   * run anything (a live session follows the file; one nobody ran stays unrun).
   */
  async reloadFromDisk(options: { rerun?: boolean } = {}): Promise<string[]> {
    if (!this.#filePath) throw fail('HANGAR_NOTEBOOK_NO_FILE', {});
    const now = await readDiskVersion(this.#filePath);
    const fresh = await readNotebookFile(this.#filePath);
    const held = { disk: this.#disk, base: this.#base, earlier: this.#beforeReload };
    const sources = new Map(this.notebook.cells.map((c) => [c.id, c.source]));
    const changed = await this.#adopt(fresh.cells);
    this.notebook.name = fresh.name;
    this.notebook.metadata = fresh.metadata;
    this.#hold(now);
    // Over several reloads without a save, the first one's version and sources are the ones an editor may still hold.
    this.#beforeReload = held.earlier ?? { disk: held.disk, base: held.base, sources: new Map() };
    const replaced = this.#beforeReload.sources;
    for (const id of changed) {
      const source = sources.get(id);
      if (source !== undefined && !replaced.has(id)) replaced.set(id, source);
    }
    this.#dirty = false;
    const rerun = options.rerun && this.history.length > 0 ? changed.filter((id) => this.cell(id).cell_type === 'code') : [];
    this.#emit({ type: 'reloaded', rerun });
    if (rerun.length > 0) void this.runCells(rerun).catch(() => undefined);
    return rerun;
  }

  /**
   * Replace the cells. A cell whose id, type and source are unchanged keeps its outputs and state;
   * a changed cell (and what depends on it) becomes stale; a removed cell's names leave the
   * kernel. Returns the changed cells' ids.
   */
  async #adopt(fresh: Cell[]): Promise<string[]> {
    const before = await this.analysis();
    const old = new Map(this.notebook.cells.map((c) => [c.id, c]));
    const changed: string[] = [];
    const cells = fresh.map((cell) => {
      const previous = old.get(cell.id);
      // Stryker disable next-line ConditionalExpression: the same object has the same source and type, so the next test keeps it as well
      if (previous === cell) return cell;
      if (previous && previous.source === cell.source && previous.cell_type === cell.cell_type) {
        return Object.assign(previous, { name: cell.name, metadata: cell.metadata });
      }
      changed.push(cell.id);
      const saved = cell.cell_type === 'code' && cell.outputs.length > 0;
      if (saved) this.#savedOutputs.add(cell.id);
      else this.#savedOutputs.delete(cell.id);
      this.#states.set(cell.id, saved ? 'stale' : (this.#states.get(cell.id) ?? 'idle'));
      return cell;
    });
    const kept = new Set(cells.map((c) => c.id));
    const removed = [...old.keys()].filter((id) => !kept.has(id));
    // Stryker disable next-line OptionalChaining,ArrayDeclaration: every cell the session held is in the analysis made before the change
    const removedNames = removed.flatMap((id) => before.cells.get(id)?.writes ?? []);
    for (const id of removed) this.#states.delete(id);
    this.notebook.cells.splice(0, this.notebook.cells.length, ...cells);
    this.#analysis = undefined;
    const after = await this.analysis();
    // The readers of a removed cell's names too, as deleteCell does: their values came from it.
    this.#markStale([
      ...changed,
      ...descendants(before.topology, [
        // Stryker disable next-line MethodExpression: descendants() of an id its graph lacks is empty
        ...changed.filter((id) => before.cells.has(id)),
        ...removed,
      ]),
      ...descendants(after.topology, changed),
    ]);
    // Stryker disable next-line ConditionalExpression,EqualityOperator: deleting no names does nothing (NotebookRuntime.deleteNames)
    if (removedNames.length > 0) await this.#enqueue(() => (this.kernel.running ? this.kernel.deleteNames(removedNames) : undefined));
    this.#emit({ type: 'cells-changed' });
    return changed;
  }

  async close(): Promise<void> {
    this.#epoch++;
    await this.kernel.close();
    this.#listeners.clear();
  }
}
