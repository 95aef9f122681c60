/**
 * Static analysis of notebook cells: what each code cell defines (writes) and uses (reads), plus
 * the JavaScript the kernel runs for it. A real parser does the work — esbuild strips TypeScript,
 * acorn parses, and a scoped visitor over acorn-walk resolves every identifier against the scopes
 * around it, the way Observable Framework's `src/javascript/references.ts` and marimo's
 * `_ast/visitor.py` do. This module is the pipeline and the notebook-level rules; its stages are
 * `transpile.ts` (source → AST), `visitor.ts` (names and cell-level rules), `codegen.ts` (the
 * program the kernel runs) and `sourcemap.ts` (lines back to the cell's source).
 *
 * ## Rules (what users of marimo and Observable expect; each broken rule is a problem on the cell)
 * - **Writes** are the cell's top-level declarations: `const`/`let`/`var` (with destructuring),
 *   `function`, `class`, `enum`, `import` bindings. Names starting with `_` are **private** to the
 *   cell: they are neither shared nor visible to other cells (marimo's convention), so two cells
 *   may both use `_tmp`. Reading another cell's `_name` is an error.
 * - **Reads** are free identifiers — not declared in the cell or any scope around the use — minus
 *   JavaScript/Node globals and the kernel helpers (`display`, `html`, ...). A global shadowed by a
 *   cell (`const fetch = ...`) is a read again, resolved at the notebook level.
 * - **Defined twice**: a shared name written by two cells is an error on both; neither runs until
 *   one is renamed (running either would silently pick a winner). One exception, for notebooks
 *   written the Jupyter way: the *same import* (same module, same binding, same local name) in
 *   several cells is no conflict, since every copy is the same value. The first cell in notebook
 *   order shares it; in the others it stays local to the cell.
 * - **Cycles** (`a` reads `b`, `b` reads `a`) are an error on every cell of the cycle; cells
 *   downstream of a cycle are not run either.
 * - **Reassignment** of a name the cell did not declare (`x = x + 1`, `x++`, `x += 1`, or
 *   `for (x of ...)`) is an error: it would change another cell's value behind the graph's back.
 *   Declare a new name instead (`const x2 = x + 1`).
 * - **Self-reference** in a declaration (`const x = x + 1`) is an error: inside the cell `x` means
 *   the cell's own, not-yet-initialised `x` (JavaScript's temporal dead zone). Recursion inside a
 *   function (`const f = (n) => f(n - 1)`) is fine.
 * - **Mutations** of another cell's value (`df.col = ...`, `arr.push(...)`, `delete o.k`) are a
 *   warning, not an error: they run, but the graph cannot see them, so readers of `arr` are not
 *   re-run and re-running the defining cell undoes them. Mutate in the defining cell instead.
 * - `export` is an error: every top-level name is already shared.
 *
 * Analysis never throws for bad user code: syntax errors become a `syntax` problem carrying the
 * line and column in the cell's own source.
 */
import { cycles, topologicalOrder } from '../../lib/graph.js';
import { buildTopology, type Topology } from '../graph.js';
import { type CellProgram, endsInValue, generateProgram } from './codegen.js';
import { fixesFor } from './fix-offers.js';
import { needsTypeScript, type Parsed, parseJavaScript, stripEach } from './transpile.js';
import { analyzeScopes, type CellProblem, type CellScope } from './visitor.js';

/** One code cell analysed; `program`, `lineMap` and `segmentMap` are absent when the cell has an error. */
export interface CellAnalysis extends CellScope, Partial<CellProgram> {
  /** Whether the last top-level statement is an expression whose value is the cell's output. */
  hasValue: boolean;
}

const cache = new Map<string, CellAnalysis>();
const CACHE_LIMIT = 5000;

/**
 * Analyse one code cell. Results are cached by source: re-analysing an unchanged notebook after one
 * edit costs one parse. The returned object is shared; treat it as read-only.
 */
export async function analyzeCell(source: string): Promise<CellAnalysis> {
  return (await analyzeCells([source]))[0];
}

/**
 * TypeScript cells per esbuild call. One call for all of them would leave the main thread idle until
 * esbuild had stripped the last cell; calls of this size run side by side in esbuild's service (on
 * every core) while the main thread analyses what the first ones returned.
 */
const TYPESCRIPT_BATCH = 200;

/**
 * Analyse many cells at once. Plain JavaScript goes straight to acorn; TypeScript cells are
 * stripped by esbuild in batches (one call per batch instead of one per cell — a round trip to
 * esbuild's service costs more than stripping a cell), falling back to one call per cell when a
 * batch fails. Cells that are TypeScript by a cheap check (`needsTypeScript`) are sent before
 * anything is parsed, so esbuild works while acorn parses the rest.
 */
export async function analyzeCells(sources: readonly string[]): Promise<CellAnalysis[]> {
  const results: CellAnalysis[] = new Array(sources.length);
  const pending: number[] = [];
  const typescript: number[] = [];
  const rest: number[] = [];
  sources.forEach((source, i) => {
    const hit = cache.get(source);
    if (hit) {
      results[i] = hit;
      return;
    }
    pending.push(i);
    (needsTypeScript(source) ? typescript : rest).push(i);
  });
  // The last batch waits for acorn: a cell acorn rejects joins it, so any two TypeScript cells
  // share a call as they did when all went in one (a cell alone goes through the one-cell path).
  const batches = batchesOf(typescript);
  const held = batches.pop() ?? [];
  const stripping = batches.map((batch) => strip(sources, batch, results));
  for (const i of rest) {
    const plain = parseJavaScript(sources[i]);
    if (plain) results[i] = fromParsed(plain);
    else held.push(i);
  }
  stripping.push(...batchesOf(held).map((batch) => strip(sources, batch, results)));
  await Promise.all(stripping);
  // The oldest entries go in one pass: a Map keeps deleted entries as holes until it is rebuilt,
  // and `keys().next()` after each delete walked every hole from the start again.
  let excess = cache.size + pending.length - CACHE_LIMIT;
  if (excess > 0) {
    for (const key of cache.keys()) {
      if (excess-- <= 0) break;
      cache.delete(key);
    }
  }
  for (const i of pending.slice(-CACHE_LIMIT)) cache.set(sources[i], results[i]);
  return results;
}

/** The indices in even batches of about `TYPESCRIPT_BATCH`, none of a single cell unless that is all. */
function batchesOf(indices: number[]): number[][] {
  const count = Math.max(1, Math.round(indices.length / TYPESCRIPT_BATCH));
  const size = Math.ceil(indices.length / count);
  const batches: number[][] = [];
  for (let start = 0; start < indices.length; start += size) batches.push(indices.slice(start, start + size));
  return batches;
}

/** Strip one batch and analyse its cells as soon as esbuild returns it. */
async function strip(sources: readonly string[], batch: number[], results: CellAnalysis[]): Promise<void> {
  const analysed = await stripEach(
    batch.map((i) => sources[i]),
    fromParsed,
  );
  batch.forEach((i, k) => (results[i] = analysed[k]));
}

function fromParsed(parsed: Parsed): CellAnalysis {
  if ('problem' in parsed) {
    return { writes: [], reads: [], globals: [], privates: [], problems: [parsed.problem], hasValue: false };
  }
  const { writes, reads, globals, privates, problems, imports } = analyzeScopes(parsed.ast, parsed.lineMap);
  const hasValue = endsInValue(parsed.ast);
  // A cell with an error is not run, so it gets no program.
  const runnable = !problems.some((p) => p.severity === 'error');
  return {
    writes,
    reads,
    globals,
    privates,
    problems,
    ...(imports ? { imports } : {}),
    hasValue,
    ...(runnable ? generateProgram(parsed.js, parsed.ast, { reads, writes }, parsed.lineMap, parsed.segments) : {}),
  };
}

export interface AnalyzedCell extends CellAnalysis {
  id: string;
  /** Cell-level problems plus the notebook-level ones (defined twice, cycles). */
  problems: CellProblem[];
  /** Effective reads: `reads` plus globals that another cell shadows. */
  dependsOn: string[];
}

export interface NotebookAnalysis {
  cells: Map<string, AnalyzedCell>;
  topology: Topology;
  /** Execution order of every runnable code cell (ties broken by notebook order). */
  order: string[];
  /** Cells that cannot be ordered: on or downstream of a cycle. */
  blocked: string[];
  cycles: string[][];
}

export interface CellInput {
  id: string;
  cell_type: string;
  source: string;
  name?: string;
}

/**
 * Analyse every code cell, then the graph: who depends on whom, names defined twice, cycles and
 * the execution order. Markdown and raw cells are nodes with no edges so ids stay aligned.
 */
export async function analyzeNotebook(cells: readonly CellInput[]): Promise<NotebookAnalysis> {
  const codeCells = cells.filter((cell) => cell.cell_type === 'code');
  const analysed = await analyzeCells(codeCells.map((cell) => cell.source));
  const byCell = new Map(codeCells.map((cell, i) => [cell, analysed[i]]));
  const empty: CellAnalysis = { writes: [], reads: [], globals: [], privates: [], problems: [], hasValue: false };
  const results = cells.map((cell) => byCell.get(cell) ?? empty);
  const label = (cell: CellInput) => (cell.name ? `"${cell.name}" (${cell.id})` : cell.id);
  const byId = new Map<string, AnalyzedCell>();
  const definedBy = new Map<string, CellInput[]>();
  const firstImport = new Map<string, { cell: CellInput; what: string }>();
  const localImports = new Map<CellInput, Set<string>>();
  cells.forEach((cell, i) => {
    for (const [name, what] of Object.entries(results[i].imports ?? {})) {
      const first = firstImport.get(name);
      if (!first) firstImport.set(name, { cell, what });
      else if (first.what === what && first.cell !== cell) {
        const set = localImports.get(cell) ?? new Set<string>();
        set.add(name);
        localImports.set(cell, set);
      }
    }
  });
  // A repeated identical import is not one of the cell's shared writes (see the rules above).
  const sharedWrites = (cell: CellInput, writes: string[]) => {
    const local = localImports.get(cell);
    return local ? writes.filter((name) => !local.has(name)) : writes;
  };
  cells.forEach((cell, i) => {
    const result = results[i];
    for (const name of sharedWrites(cell, result.writes)) {
      const list = definedBy.get(name);
      if (list) list.push(cell);
      else definedBy.set(name, [cell]);
    }
  });
  let allSources: string[] | undefined;
  const sources = () => (allSources ??= cells.map((c) => c.source));
  cells.forEach((cell, i) => {
    const result = results[i];
    const dependsOn = [...result.reads, ...result.globals.filter((name) => definedBy.has(name))];
    // A cell assigning another cell's name can be merged into that cell.
    const problems = result.problems.map((p) => {
      const definer = p.kind === 'reassignment' && p.name ? definedBy.get(p.name)?.[0] : undefined;
      const fixes = definer && definer !== cell ? fixesFor(p, definer, sources(), label) : undefined;
      return fixes ? { ...p, fixes } : p;
    });
    const writes = sharedWrites(cell, result.writes);
    for (const name of writes) {
      const all = definedBy.get(name)!;
      const others = all.filter((other) => other !== cell);
      if (others.length > 0) {
        const problem: CellProblem = {
          kind: 'multiple-definitions',
          severity: 'error',
          name,
          message: `\`${name}\` is also defined by cell ${others.map(label).join(', ')}; a name may be defined by one cell only`,
        };
        // The fixes go with the later definitions (the Jupyter habit); the first keeps only the error.
        const fixes = all[0] !== cell ? fixesFor(problem, all[0], sources(), label) : undefined;
        problems.push(fixes ? { ...problem, fixes } : problem);
      }
    }
    byId.set(cell.id, { ...result, writes, id: cell.id, problems, dependsOn });
  });
  const ids = cells.map((c) => c.id);
  const topology = buildTopology(
    ids,
    (id) => byId.get(id)!.writes,
    (id) => byId.get(id)!.dependsOn,
  );
  const found = cycles(topology);
  const cellById = new Map(cells.map((c) => [c.id, c]));
  for (const cycle of found) {
    const path = [...cycle, cycle[0]].map((id) => label(cellById.get(id)!)).join(' → ');
    for (const id of cycle) {
      byId.get(id)!.problems.push({ kind: 'cycle', severity: 'error', message: `cells form a cycle: ${path}` });
    }
  }
  const codeIds = new Set(cells.filter((c) => c.cell_type === 'code').map((c) => c.id));
  const { order, blocked } = topologicalOrder(topology, codeIds);
  return { cells: byId, topology, order, blocked, cycles: found };
}
