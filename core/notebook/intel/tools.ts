/**
 * The 13 built-in notebook tools (spec 3, Part A): profiler, benchmark, data validator, code
 * analyzer, execution history, lineage, environment, package installer, notebook converter, diff,
 * snippets, cell dependencies and search. Each is one method here and one route in `routes.ts`.
 *
 * Timing and memory come from the kernel's own measurements of each run (`session.history`), not
 * from the HTTP thread, so they do not include queueing or transport.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import { join } from 'node:path';
import type * as acorn from 'acorn';
import * as walk from 'acorn-walk';
import { fail } from '../../kernel/errors.js';
import { esbuild } from '../../lib/esbuild.js';
import { ancestors, descendants } from '../../lib/graph.js';
import { packageOnFirstUse } from '../../lib/on-first-use.js';
import { packageRoot } from '../assets.js';
import { diffNotebooks, formatDiffText } from '../diff.js';
import { convertedPath, formatOf, readNotebookFile, serializeNotebook } from '../formats.js';
import type { Notebook, Output } from '../schemas.js';
import type { NotebookService } from '../service.js';
import type { CellRunRecord, NotebookSession } from '../session.js';
import type { DataIntelligence } from './prep-and-match.js';
import { SNIPPETS, type Snippet } from './snippets.js';
import type { Rule } from './worker/validate.js';

/** acorn, loaded by the first cell parsed (core/lib/on-first-use.ts). */
const acornPackage = packageOnFirstUse<typeof acorn>('acorn');

export interface Finding {
  rule: string;
  severity: 'error' | 'warning' | 'info';
  message: string;
  line?: number;
}

const round = (x: number) => Math.round(x * 1000) / 1000;

function quantiles(xs: number[]): { min: number; median: number; max: number; mean: number } {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  return { min: round(s[0]), median: round(mid), max: round(s[s.length - 1]), mean: round(s.reduce((a, b) => a + b, 0) / s.length) };
}

/** Text of an output as a search or history view shows it. */
export function outputText(output: Output): string {
  switch (output.output_type) {
    case 'stream':
      return output.text;
    case 'error':
      return `${output.ename}: ${output.evalue}`;
    case 'execute_result':
    case 'display_data': {
      const plain = output.data['text/plain'];
      return typeof plain === 'string' ? plain : '';
    }
    default: {
      const never: never = output;
      return String(never);
    }
  }
}

/** Parse a cell as JavaScript, stripping TypeScript first when it is not plain JS. */
function parseCell(source: string): acorn.Program | undefined {
  const options: acorn.Options = {
    ecmaVersion: 'latest',
    sourceType: 'module',
    allowAwaitOutsideFunction: true,
    allowReturnOutsideFunction: true,
    locations: true,
  };
  try {
    return acornPackage().parse(source, options);
  } catch {
    try {
      // Line numbers of TypeScript cells are those of the stripped code (esbuild keeps most lines).
      return acornPackage().parse(esbuild().transformSync(source, { loader: 'ts' }).code, options);
    } catch {
      return undefined;
    }
  }
}

/** McCabe's cyclomatic complexity: 1 + one per decision point. */
function complexityOf(ast: acorn.Node): number {
  let decisions = 0;
  const count = () => void decisions++;
  walk.simple(ast, {
    IfStatement: count,
    ConditionalExpression: count,
    ForStatement: count,
    ForInStatement: count,
    ForOfStatement: count,
    WhileStatement: count,
    DoWhileStatement: count,
    CatchClause: count,
    SwitchCase: (node) => ((node as acorn.SwitchCase).test ? count() : undefined),
    LogicalExpression: count,
  });
  return 1 + decisions;
}

function lint(ast: acorn.Program): Finding[] {
  const findings: Finding[] = [];
  const line = (node: acorn.Node) => node.loc?.start.line;
  walk.simple(ast, {
    VariableDeclaration(node) {
      const decl = node as acorn.VariableDeclaration;
      if (decl.kind === 'var')
        findings.push({
          rule: 'no-var',
          severity: 'warning',
          message: 'use const or let: var is function-scoped and hoisted',
          line: line(decl),
        });
    },
    BinaryExpression(node) {
      const bin = node as acorn.BinaryExpression;
      const nullish = (n: acorn.Node) =>
        (n.type === 'Literal' && (n as acorn.Literal).value === null) ||
        (n.type === 'Identifier' && (n as acorn.Identifier).name === 'undefined');
      if ((bin.operator === '==' || bin.operator === '!=') && !nullish(bin.left) && !nullish(bin.right)) {
        findings.push({
          rule: 'eqeqeq',
          severity: 'warning',
          message: `use ${bin.operator}= : ${bin.operator} converts types before comparing`,
          line: line(bin),
        });
      }
    },
    CatchClause(node) {
      const clause = node as acorn.CatchClause;
      if (clause.body.body.length === 0)
        findings.push({ rule: 'no-empty-catch', severity: 'warning', message: 'empty catch block hides errors', line: line(clause) });
    },
    DebuggerStatement(node) {
      findings.push({ rule: 'no-debugger', severity: 'warning', message: 'debugger statement left in', line: line(node) });
    },
  });
  return findings;
}

/** Above this, a cell is hard to follow (ESLint's default `complexity` limit is 20; 10 is McCabe's). */
const COMPLEXITY_LIMIT = 10;
const LONG_CELL_LINES = 80;

export class NotebookTools {
  constructor(
    private readonly notebooks: NotebookService,
    private readonly intelligence: DataIntelligence,
    private readonly version: string,
  ) {}

  #open(id: string): Promise<NotebookSession> {
    return this.notebooks.open(id);
  }

  /** 1. Profiler: time and memory per cell from every run of this session. */
  async profile(id: string, options: { run?: boolean } = {}) {
    const session = await this.#open(id);
    if (options.run) await session.runAll();
    const byCell = new Map<string, CellRunRecord[]>();
    for (const run of session.history) {
      const list = byCell.get(run.cell_id);
      if (list) list.push(run);
      else byCell.set(run.cell_id, [run]);
    }
    const cells = session.notebook.cells
      .filter((c) => byCell.has(c.id))
      .map((c) => {
        const runs = byCell.get(c.id)!;
        const last = runs[runs.length - 1];
        const times = runs.map((r) => r.duration_ms);
        const heaps = runs.map((r) => r.heap_delta_bytes).filter((h): h is number => h !== null);
        return {
          cell_id: c.id,
          name: c.name,
          runs: runs.length,
          last_ms: round(last.duration_ms),
          mean_ms: round(times.reduce((a, b) => a + b, 0) / times.length),
          max_ms: round(Math.max(...times)),
          total_ms: round(times.reduce((a, b) => a + b, 0)),
          last_heap_delta_bytes: last.heap_delta_bytes,
          max_heap_delta_bytes: heaps.length ? Math.max(...heaps) : null,
          last_status: last.status,
        };
      })
      .sort((a, b) => b.total_ms - a.total_ms);
    return { notebook: id, total_ms: round(cells.reduce((a, c) => a + c.total_ms, 0)), cells };
  }

  /**
   * 2. Benchmark: run one cell N times in the kernel (its inputs as they are) and time each run.
   * Only the cell runs, not its dependents: the point is its own cost. Runs go straight to the
   * kernel, whose single thread takes tasks one at a time, so they interleave with queued cells
   * but never overlap them. Accepted edge case: a cell with side effects (random values) leaves
   * its names holding the last benchmark run's values while its shown outputs are the session's.
   */
  async benchmark(id: string, input: { cell: string; runs: number }) {
    const session = await this.#open(id);
    const cell = session.cell(input.cell);
    if (cell.cell_type !== 'code') throw fail('HANGAR_NOTEBOOK_INTEL_CELL_NOT_CODE', { cell: cell.id, type: cell.cell_type });
    const info = (await session.analysis()).cells.get(cell.id)!;
    const problem = info.problems.find((p) => p.severity === 'error');
    if (!info.program || problem)
      throw fail('HANGAR_NOTEBOOK_INTEL_CELL_CANNOT_RUN', { cell: cell.id, problem: problem?.message ?? 'it does not compile' });
    const durations: number[] = [];
    for (let i = 0; i < input.runs; i++) {
      const result = await session.kernel.run({
        cellId: cell.id,
        program: info.program,
        reads: info.dependsOn,
        writes: info.writes,
        lineMap: info.lineMap ?? [],
        ...(info.segmentMap ? { segmentMap: info.segmentMap } : {}),
        executionCount: cell.execution_count,
        timeoutMs: session.cellTimeoutMs,
      });
      if (result.status === 'error') {
        const error = result.outputs.find((o) => o.output_type === 'error');
        const hint = info.dependsOn.length ? ' (run the cells it reads from first)' : '';
        throw fail('HANGAR_NOTEBOOK_INTEL_BENCHMARK_RUN_FAILED', {
          run: i + 1,
          cell: cell.id,
          problem: `${error ? outputText(error) : 'unknown error'}${hint}`,
        });
      }
      durations.push(result.durationMs);
    }
    const stats = quantiles(durations);
    return {
      notebook: id,
      cell: cell.id,
      runs: input.runs,
      min_ms: stats.min,
      median_ms: stats.median,
      max_ms: stats.max,
      mean_ms: stats.mean,
      durations_ms: durations.map(round),
    };
  }

  /** 3. Data validator: rules on a data frame in the notebook's kernel. */
  validate(id: string, input: { variable: string; rules: Rule[] }) {
    return this.intelligence.validate({ notebook: id, ...input });
  }

  /** 4. Code analyzer: undefined and unused names, complexity and lint-style findings per cell. */
  async analyzeCode(id: string) {
    const session = await this.#open(id);
    const analysis = await session.analysis();
    const defined = new Set<string>();
    const readBy = new Map<string, Set<string>>();
    for (const [cellId, info] of analysis.cells) {
      info.writes.forEach((w) => defined.add(w));
      for (const r of info.dependsOn) {
        if (!readBy.has(r)) readBy.set(r, new Set());
        readBy.get(r)!.add(cellId);
      }
    }
    const cells = session.notebook.cells
      .filter((c) => c.cell_type === 'code')
      .map((c) => {
        const info = analysis.cells.get(c.id)!;
        const ast = parseCell(c.source);
        const undefinedNames = info.dependsOn.filter((n) => !defined.has(n));
        const unused = info.writes.filter((w) => ![...(readBy.get(w) ?? [])].some((reader) => reader !== c.id));
        const complexity = ast ? complexityOf(ast) : null;
        const lines = c.source.split('\n').length;
        const findings: Finding[] = [
          ...info.problems.map((p) => ({ rule: p.kind, severity: p.severity, message: p.message, ...(p.line ? { line: p.line } : {}) })),
          ...undefinedNames.map((n) => ({
            rule: 'undefined-name',
            severity: 'error' as const,
            message: `${n} is not defined by any cell`,
          })),
          ...unused.map((n) => ({
            rule: 'unused-name',
            severity: 'info' as const,
            message: `${n} is defined here but no other cell uses it`,
          })),
          ...(ast ? lint(ast) : []),
        ];
        if (complexity !== null && complexity > COMPLEXITY_LIMIT) {
          findings.push({
            rule: 'complexity',
            severity: 'warning',
            message: `cyclomatic complexity ${complexity} (over ${COMPLEXITY_LIMIT}): split the cell or extract functions`,
          });
        }
        if (lines > LONG_CELL_LINES)
          findings.push({ rule: 'long-cell', severity: 'info', message: `${lines} lines: long cells re-run more than they need to` });
        return {
          cell_id: c.id,
          name: c.name,
          lines,
          complexity,
          reads: info.dependsOn,
          writes: info.writes,
          undefined_names: undefinedNames,
          unused_names: unused,
          findings,
        };
      });
    return { notebook: id, cells, total_findings: cells.reduce((a, c) => a + c.findings.length, 0) };
  }

  /** 5. Execution history: every run of every cell of this session, oldest first. */
  async history(id: string, cell?: string) {
    const session = await this.#open(id);
    const runs = cell ? session.history.filter((r) => r.cell_id === cell) : session.history;
    return { notebook: id, runs: runs.map((r) => ({ ...r, duration_ms: round(r.duration_ms) })) };
  }

  /** 6. Lineage: which cell produced a variable, and everything upstream and downstream of it. */
  async lineage(id: string, variable: string) {
    const session = await this.#open(id);
    const analysis = await session.analysis();
    const definer = [...analysis.cells.entries()].find(([, info]) => info.writes.includes(variable));
    if (!definer) throw fail('HANGAR_NOTEBOOK_INTEL_DEFINER_NOT_FOUND', { notebook: id, variable });
    const [cellId, info] = definer;
    const describe = (ids: Iterable<string>) =>
      session.notebook.cells
        .filter((c) => new Set(ids).has(c.id))
        .map((c) => {
          const cellInfo = analysis.cells.get(c.id)!;
          return { cell_id: c.id, name: c.name, reads: cellInfo.dependsOn, writes: cellInfo.writes, state: session.state(c.id) };
        });
    const upstream = describe(ancestors(analysis.topology, [cellId]));
    const downstream = describe(descendants(analysis.topology, [cellId]));
    return {
      notebook: id,
      variable,
      defined_by: { cell_id: cellId, name: session.cell(cellId).name, reads: info.dependsOn, state: session.state(cellId) },
      upstream,
      downstream,
      upstream_variables: [...new Set(upstream.flatMap((c) => c.writes))],
      downstream_variables: [...new Set(downstream.flatMap((c) => c.writes))],
    };
  }

  /** 7. Environment: Node, the machine, memory, and the packages cells can import. */
  async environment() {
    const readJson = async (file: string) =>
      JSON.parse(await readFile(file, 'utf8').catch(() => '{}')) as { dependencies?: Record<string, string>; version?: string };
    const installed = async (base: string, deps: Record<string, string> = {}) =>
      Promise.all(
        Object.entries(deps)
          .sort()
          .map(async ([name, wanted]) => ({
            name,
            wanted,
            installed: (await readJson(join(base, 'node_modules', name, 'package.json'))).version ?? null,
          })),
      );
    const hangarRoot = packageRoot();
    const notebooksDir = this.notebooks.dir;
    const memory = process.memoryUsage();
    return {
      node: process.version,
      v8: process.versions.v8,
      platform: process.platform,
      arch: process.arch,
      cpus: os.cpus().length,
      hangar: this.version,
      memory: {
        total_bytes: os.totalmem(),
        free_bytes: os.freemem(),
        server_rss_bytes: memory.rss,
        server_heap_used_bytes: memory.heapUsed,
      },
      packages: {
        notebooks: await installed(notebooksDir, (await readJson(join(notebooksDir, 'package.json'))).dependencies),
        hangar: await installed(hangarRoot, (await readJson(join(hangarRoot, 'package.json'))).dependencies),
      },
    };
  }

  /**
   * 8. Package installer: `npm install` into the notebooks folder, whose node_modules cells resolve
   * imports from first. npm's own output is returned verbatim, on success and on failure.
   */
  async install(spec: string) {
    const dir = this.notebooks.dir;
    await mkdir(dir, { recursive: true });
    const manifest = join(dir, 'package.json');
    if (!existsSync(manifest)) {
      await writeFile(
        manifest,
        `${JSON.stringify({ name: 'hangar-notebooks', private: true, description: 'Packages installed for notebook cells', dependencies: {} }, null, 2)}\n`,
      );
    }
    const before = (JSON.parse(await readFile(manifest, 'utf8')) as { dependencies?: Record<string, string> }).dependencies ?? {};
    const { stdout, stderr, code } = await new Promise<{ stdout: string; stderr: string; code: number }>((resolve) => {
      execFile(
        process.platform === 'win32' ? 'npm.cmd' : 'npm',
        ['install', '--no-audit', '--no-fund', '--save', '--', spec],
        { cwd: dir, timeout: 5 * 60_000, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: 'false' } },
        (err, out, errOut) =>
          resolve({ stdout: String(out), stderr: String(errOut), code: err ? (typeof err.code === 'number' ? err.code : 1) : 0 }),
      );
    });
    if (code !== 0) throw fail('HANGAR_NOTEBOOK_INTEL_INSTALL_FAILED', { package: spec, exit: code, output: stderr || stdout });
    const after = (JSON.parse(await readFile(manifest, 'utf8')) as { dependencies?: Record<string, string> }).dependencies ?? {};
    const changed = Object.keys(after).filter((name) => before[name] !== after[name]);
    const packages = await Promise.all(
      changed.map(async (name) => ({
        name,
        version:
          (JSON.parse(await readFile(join(dir, 'node_modules', name, 'package.json'), 'utf8').catch(() => '{}')) as { version?: string })
            .version ?? null,
      })),
    );
    return { package: spec, installed: packages, output: `${stdout}${stderr}`.trim() };
  }

  /** The live notebook when it is open (unsaved edits included), the file otherwise. */
  async #read(id: string): Promise<Notebook> {
    const open = (await this.notebooks.list()).find((n) => n.id === id && n.open);
    if (open) return (await this.#open(id)).notebook;
    const file = await this.notebooks.resolvePath(id);
    if (
      !(await stat(file).then(
        (s) => s.isFile(),
        () => false,
      ))
    )
      throw fail('HANGAR_NOTEBOOK_NOT_FOUND', { notebook: id });
    return readNotebookFile(file);
  }

  /** 9. Converter: `.nb.ts` ↔ `.ipynb`, returned as text and optionally written beside the original. */
  async convert(input: { notebook: string; save: boolean }) {
    const notebook = await this.#read(input.notebook);
    const target = convertedPath(input.notebook);
    const content = serializeNotebook(notebook, target);
    if (input.save) {
      const file = await this.notebooks.resolvePath(target);
      if (
        await stat(file).then(
          () => true,
          () => false,
        )
      )
        throw fail('HANGAR_NOTEBOOK_EXISTS', { notebook: target });
      await writeFile(file, content);
    }
    return { from: input.notebook, to: target, format: formatOf(target), content, saved: input.save };
  }

  /** 10. Diff of two notebooks of the workspace, cell by cell (as `hangar notebook diff`). */
  async diff(a: string, b: string) {
    const [left, right] = await Promise.all([this.#read(a), this.#read(b)]);
    const diff = diffNotebooks(left, right);
    return { a, b, ...diff, text: formatDiffText(diff, { a, b }) };
  }

  /** 11. Snippets: a searchable library of insertable cells. */
  snippets(query: { q: string; tag?: string }): Snippet[] {
    const words = query.q.toLowerCase().split(/\s+/).filter(Boolean);
    return SNIPPETS.filter((s) => !query.tag || s.tags.includes(query.tag))
      .map((s) => {
        const hay = `${s.title} ${s.description} ${s.tags.join(' ')} ${s.source}`.toLowerCase();
        const title = s.title.toLowerCase();
        const score = words.reduce((acc, w) => acc + (title.includes(w) ? 3 : hay.includes(w) ? 1 : 0), 0);
        return { s, score, all: words.every((w) => hay.includes(w)) };
      })
      .filter((x) => x.all)
      .sort((a, b) => b.score - a.score || a.s.title.localeCompare(b.s.title))
      .map((x) => x.s);
  }

  async insertSnippet(snippetId: string, input: { notebook: string; position?: number }) {
    const snippet = SNIPPETS.find((s) => s.id === snippetId);
    if (!snippet) throw fail('HANGAR_NOTEBOOK_INTEL_SNIPPET_NOT_FOUND', { snippet: snippetId });
    const session = await this.#open(input.notebook);
    const cell = await session.addCell({ source: snippet.source, ...(input.position !== undefined ? { index: input.position } : {}) });
    return { notebook: input.notebook, snippet: snippet.id, cell: { ...cell, state: session.state(cell.id) } };
  }

  /** 12. Cell dependencies: the reactive graph as nodes and edges. */
  async dependencies(id: string) {
    const report = await (await this.#open(id)).dependencies();
    return {
      notebook: id,
      nodes: report.cells.map(({ id: cellId, name, cell_type, state, reads, writes }) => ({
        id: cellId,
        name,
        cell_type,
        state,
        reads,
        writes,
      })),
      edges: report.edges,
      order: report.order,
      stale: report.stale,
      cycles: report.cycles,
    };
  }

  /** 13. Search across notebooks: cell names, sources (by line) and outputs. Case-insensitive. */
  async search(input: { q: string; in?: string; limit: number }) {
    const where = new Set((input.in ?? 'name,source,output').split(',').map((s) => s.trim()));
    const needle = input.q.toLowerCase();
    const hits: Array<{
      notebook: string;
      cell_id: string;
      cell_name: string;
      where: 'name' | 'source' | 'output';
      line?: number;
      text: string;
    }> = [];
    for (const summary of await this.notebooks.list()) {
      const notebook = await this.#read(summary.id).catch(() => undefined);
      if (!notebook) continue;
      for (const cell of notebook.cells) {
        const hit = (w: 'name' | 'source' | 'output', text: string, line?: number) =>
          hits.push({
            notebook: summary.id,
            cell_id: cell.id,
            cell_name: cell.name,
            where: w,
            ...(line ? { line } : {}),
            text: text.trim().slice(0, 200),
          });
        if (where.has('name') && cell.name.toLowerCase().includes(needle)) hit('name', cell.name);
        if (where.has('source'))
          cell.source.split('\n').forEach((text, i) => text.toLowerCase().includes(needle) && hit('source', text, i + 1));
        if (where.has('output')) {
          for (const output of cell.outputs) {
            const text = outputText(output);
            const at = text.toLowerCase().indexOf(needle);
            if (at >= 0) hit('output', text.slice(Math.max(0, at - 60), at + needle.length + 60));
          }
        }
        if (hits.length >= input.limit) return { q: input.q, hits, truncated: true };
      }
    }
    return { q: input.q, hits, truncated: false };
  }
}
