/**
 * What a notebook session reports outward: the events a UI follows, the dependency report, the run
 * history records, and the error outputs an analysis problem becomes. Pure data and functions over
 * the analysis, kept apart from the engine in `session.ts`.
 */
import type { NotebookAnalysis } from './analysis/index.js';
import type { CellProblem } from './analysis/visitor.js';
import type { Cell, CellState, CellType, Output } from './schemas.js';

/** Everything a UI needs to follow a session live; sent as JSON over the ws channel. */
export type SessionEvent =
  /** `execution_count` comes with a finished run, so a UI shows `[n]` without asking again. */
  | { type: 'cell-state'; cellId: string; state: CellState; execution_count?: number }
  | { type: 'output'; cellId: string; output: Output }
  | { type: 'outputs-cleared'; cellId: string }
  | { type: 'cells-changed' }
  | { type: 'kernel'; status: 'restarted' | 'timeout' | 'crashed'; generation: number }
  /** The file changed on disk while this session has unsaved edits: the UI offers reload / overwrite. */
  | { type: 'disk-changed'; diff: string }
  /** The session took the file's new version (live reload); `rerun`: cells it re-runs. */
  | { type: 'reloaded'; rerun: string[] };

export interface SessionOptions {
  /** Where `save()` writes; also the folder relative imports resolve against. */
  filePath?: string;
  /** Per-cell time limit in ms (0 = none). */
  cellTimeoutMs?: number;
  maxHeapMb?: number;
}

export interface DependencyReport {
  cells: Array<{
    id: string;
    name: string;
    cell_type: CellType;
    state: CellState;
    reads: string[];
    writes: string[];
    problems: CellProblem[];
  }>;
  /** parent → child, with the names that flow along the edge. */
  edges: Array<{ from: string; to: string; names: string[] }>;
  order: string[];
  stale: string[];
  cycles: string[][];
}

/** One execution of one cell, as the execution-history and profiler tools show it. */
export interface CellRunRecord {
  cell_id: string;
  execution_count: number;
  started_at: string;
  duration_ms: number;
  status: 'success' | 'error';
  /** Change of the kernel's used heap across the run (negative when a GC ran meanwhile). */
  heap_delta_bytes: number | null;
  /** Set when the run ended the kernel (timeout, interrupt, crash). */
  ended?: string;
}

/** The report of which cell reads what from which, for the dependency view and tools. */
export function dependencyReport(cells: Cell[], analysis: NotebookAnalysis, state: (cellId: string) => CellState): DependencyReport {
  const edges: DependencyReport['edges'] = [];
  for (const cell of cells) {
    const info = analysis.cells.get(cell.id)!;
    for (const parent of analysis.topology.parents.get(cell.id) ?? []) {
      const parentWrites = new Set(analysis.cells.get(parent)!.writes);
      edges.push({ from: parent, to: cell.id, names: info.dependsOn.filter((n) => parentWrites.has(n)) });
    }
  }
  return {
    cells: cells.map((cell) => {
      const info = analysis.cells.get(cell.id)!;
      return {
        id: cell.id,
        name: cell.name,
        cell_type: cell.cell_type,
        state: state(cell.id),
        reads: info.dependsOn,
        writes: info.writes,
        problems: info.problems,
      };
    }),
    edges,
    order: analysis.order,
    stale: cells.filter((c) => state(c.id) === 'stale').map((c) => c.id),
    cycles: analysis.cycles,
  };
}

/** A cell's analysis errors as the error outputs the cell shows instead of running. */
export function problemOutputs(problems: CellProblem[]): Output[] {
  return problems.map((p) => {
    const ename = p.kind === 'syntax' ? 'SyntaxError' : 'NotebookError';
    const where = p.line ? `line ${p.line}${p.column ? `, column ${p.column}` : ''}: ` : '';
    return { output_type: 'error', ename, evalue: p.message, traceback: [`${ename}: ${where}${p.message}`] };
  });
}
