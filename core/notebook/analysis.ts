/**
 * Static analysis of notebook cells: what each code cell defines (writes) and uses (reads), plus
 * the JavaScript the kernel runs for it. A real parser does the work — esbuild strips TypeScript,
 * acorn parses, and a scoped visitor over acorn-walk resolves every identifier against the scopes
 * around it, the way Observable Framework's `src/javascript/references.ts` and marimo's
 * `_ast/visitor.py` do.
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
 *   one is renamed (running either would silently pick a winner).
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
import * as acorn from 'acorn';
import * as walk from 'acorn-walk';
import { transform } from 'esbuild';
import { buildTopology, findCycles, topologicalOrder, type Topology } from './graph.js';

export type ProblemKind =
  | 'syntax'
  | 'multiple-definitions'
  | 'cycle'
  | 'reassignment'
  | 'self-reference'
  | 'private'
  | 'mutation'
  | 'export';

export interface CellProblem {
  kind: ProblemKind;
  severity: 'error' | 'warning';
  message: string;
  /** 1-based line in the cell's source, when the problem has a position. */
  line?: number;
  column?: number;
  /** The variable the problem is about, when there is one. */
  name?: string;
}

export interface CellAnalysis {
  /** Shared top-level names this cell defines, in order of declaration. */
  writes: string[];
  /** Free names this cell uses that are not globals, in order of first use. */
  reads: string[];
  /** Free names that resolve to globals today; a cell defining one of them shadows it. */
  globals: string[];
  /** Names declared at the top level that start with `_` (kept inside the cell). */
  privates: string[];
  problems: CellProblem[];
  /**
   * The kernel's program for this cell: an `async function (__hangar, __scope)` expression whose
   * body is the cell, which returns its writes. Absent when the cell has a syntax error.
   */
  program?: string;
  /** lineMap[i] = 1-based source line of program line i + 1; missing entries map to nothing. */
  lineMap?: number[];
  /** For TypeScript cells: per program line, `[column, sourceLine]` segments (see decodeSegments). */
  segmentMap?: Array<Array<[number, number]>>;
  /** Whether the last top-level statement is an expression whose value is the cell's output. */
  hasValue: boolean;
}

/**
 * Helpers the kernel puts in every cell's scope (see `runtime-worker.ts`). They are treated as
 * globals so using them creates no dependency.
 */
export const KERNEL_HELPERS = ['display', 'html', 'svg', 'md', 'chart', 'table', 'image', 'notebookPath'] as const;

/**
 * Globals: the ECMAScript/Node set the worker will have, captured from this realm plus a fixed
 * list so the answer does not depend on what a test runner happened to install.
 */
const GLOBALS = new Set<string>([
  ...Object.getOwnPropertyNames(globalThis),
  ...KERNEL_HELPERS,
  'undefined', 'NaN', 'Infinity', 'globalThis', 'console', 'process', 'Buffer', 'URL', 'URLSearchParams',
  'setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'setImmediate', 'clearImmediate',
  'queueMicrotask', 'structuredClone', 'fetch', 'AbortController', 'AbortSignal', 'TextEncoder',
  'TextDecoder', 'performance', 'crypto', 'require', 'module', 'exports', '__filename', '__dirname',
]);
// These are not real globals in the worker's module scope, and a cell might well define them.
for (const notGlobal of ['require', 'module', 'exports', '__filename', '__dirname']) GLOBALS.delete(notGlobal);

/** Method names that change their receiver: a call on another cell's value is a mutation. */
const MUTATORS = new Set([
  'push', 'pop', 'shift', 'unshift', 'splice', 'sort', 'reverse', 'fill', 'copyWithin',
  'set', 'delete', 'clear', 'add', 'assign',
]);

const PRIVATE = (name: string) => name.startsWith('_');

/** Code with something that TypeScript reads as a generic call but JavaScript as comparisons. */
const GENERIC_CALL = /[\w$)\]]\s*<[\w$\s,.[\]|&'"]*>\s*\(/;

type Scope = acorn.Node;

/** The prologue occupies line 1 of the program, so user line N of the JS is program line N + 1. */
const PROLOGUE_LINES = 1;

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
 * Analyse many cells at once. Plain JavaScript goes straight to acorn; TypeScript cells are
 * stripped by esbuild in one batch (one call instead of one per cell — a round trip to esbuild's
 * service costs more than stripping a cell), falling back to one call per cell when the batch fails.
 */
export async function analyzeCells(sources: readonly string[]): Promise<CellAnalysis[]> {
  const results: CellAnalysis[] = new Array(sources.length);
  const pending: number[] = [];
  const typescript: number[] = [];
  sources.forEach((source, i) => {
    const hit = cache.get(source);
    if (hit) {
      results[i] = hit;
      return;
    }
    const plain = parsePlain(source);
    if (plain) results[i] = fromParsed(plain);
    else typescript.push(i);
    pending.push(i);
  });
  const stripped = await stripTypeScript(typescript.map((i) => sources[i]));
  typescript.forEach((i, k) => (results[i] = fromParsed(stripped[k])));
  for (const i of pending) {
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    cache.set(sources[i], results[i]);
  }
  return results;
}

function fromParsed(parsed: Parsed): CellAnalysis {
  if ('problem' in parsed) {
    return { writes: [], reads: [], globals: [], privates: [], problems: [parsed.problem], hasValue: false };
  }
  return visit(parsed.js, parsed.ast, parsed.lineMap, parsed.segments);
}

type Parsed =
  | { js: string; ast: acorn.Program; lineMap?: number[]; segments?: Array<Array<[number, number]>> }
  | { problem: CellProblem };

function parse(js: string): acorn.Program {
  return acorn.parse(js, {
    ecmaVersion: 'latest',
    sourceType: 'module',
    allowAwaitOutsideFunction: true,
    locations: true,
  });
}

/**
 * Fast path: most cells are plain JavaScript, which acorn parses directly in a fraction of what an
 * esbuild round trip costs, and line numbers stay exact. Anything acorn rejects (type annotations,
 * `enum`, `as`, ...) or that looks like a generic call goes through esbuild's TypeScript loader.
 */
function parsePlain(source: string): Parsed | undefined {
  if (GENERIC_CALL.test(source)) return undefined;
  // Every TypeScript cell fails here once; without a stack to capture, failing is much cheaper.
  const stackTraceLimit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return { js: source, ast: parse(source) };
  } catch {
    // Not plain JavaScript: let esbuild decide, its TypeScript errors are the ones to show.
    return undefined;
  } finally {
    Error.stackTraceLimit = stackTraceLimit;
  }
}

const TS_OPTIONS = {
  loader: 'ts' as const,
  sourcemap: 'external' as const,
  sourcefile: 'cell.ts',
  // Keep imports that look unused: a cell may import for side effects or for a later cell.
  tsconfigRaw: { compilerOptions: { verbatimModuleSyntax: true } },
  target: 'es2022',
};

const MODULE_SYNTAX = /^\s*(import|export)\b/m;
const BATCH_MARKER = '//! @@hangar-cell ';
const IDENTIFIER = /[\p{ID_Start}$_][\p{ID_Continue}$\u200c\u200d]*/gu;
const wordsOf = (source: string) => new Set(source.match(IDENTIFIER) ?? []);

/**
 * Strip types from many cells with one esbuild call: each cell becomes the body of its own
 * function after a legal-comment marker (`//!` comments survive the transform), and the output is
 * split at the markers. Two traps, both handled:
 * - esbuild renames any declaration that would shadow a name used elsewhere in the file — and one
 *   cell's declarations are exactly other cells' free names. The source map records the original
 *   name of every renamed identifier, so `restoreNames` puts them back.
 * - Anything esbuild invents that has no original name (helpers for decorators, say) would break
 *   the split, so a cell whose output uses an identifier that is not a word of its source is redone
 *   alone, as are cells with `import`/`export` (not allowed in a function) and, when the batch as a
 *   whole fails (a syntax error somewhere), every cell — so errors are reported against the cell's
 *   own source.
 */
async function stripTypeScript(sources: string[]): Promise<Parsed[]> {
  const results: Array<Parsed | undefined> = new Array(sources.length);
  const batch: number[] = [];
  sources.forEach((source, i) => {
    if (!MODULE_SYNTAX.test(source)) batch.push(i);
  });
  if (batch.length > 1) {
    const split = await transformBatch(batch.map((i) => sources[i]));
    batch.forEach((i, k) => (results[i] = split[k]));
  }
  await Promise.all(sources.map(async (source, i) => (results[i] ??= await transformOne(source))));
  return results as Parsed[];
}

async function transformBatch(sources: string[]): Promise<Array<Parsed | undefined>> {
  const words = sources.map(wordsOf);
  const parts: string[] = [];
  const firstLine: number[] = []; // 1-based line of each cell's first source line in the batch
  let line = 1;
  sources.forEach((source, k) => {
    parts.push(`${BATCH_MARKER}${k}\nasync function __hangar_cell_${k}() {\n${source}\n}\n`);
    firstLine.push(line + 2);
    line += source.split('\n').length + 3;
  });
  const none = sources.map(() => undefined);
  let code: string;
  let map: string;
  try {
    ({ code, map } = await transform(parts.join(''), TS_OPTIONS));
  } catch {
    return none;
  }
  const lines = code.split('\n');
  const segments = decodeSegments(map);
  const names = (JSON.parse(map) as { names: string[] }).names;
  const markers: number[] = [];
  lines.forEach((text, i) => {
    if (text.startsWith(BATCH_MARKER)) markers.push(i);
  });
  if (markers.length !== sources.length) return none;
  return sources.map((_source, k) => {
    const open = markers[k] + 1;
    let end = (k + 1 < markers.length ? markers[k + 1] : lines.length) - 1;
    while (end > open && lines[end] === '') end--;
    // The function must come back whole; anything else and we do not trust the split.
    if (lines[markers[k]] !== `${BATCH_MARKER}${k}` || lines[open] !== `async function __hangar_cell_${k}() {` || lines[end] !== '}') {
      return undefined;
    }
    const own = segments.slice(open + 1, end).map((segs) =>
      segs.map(([column, sourceLine, name]) => [column, sourceLine - firstLine[k] + 1, name] as Segment).filter(([, l]) => l >= 1),
    );
    const js = lines.slice(open + 1, end).map((text, i) => restoreNames(text, own[i], names)).join('\n');
    let ast: acorn.Program;
    try {
      ast = parse(js);
    } catch {
      return undefined;
    }
    let invented = false;
    walk.full(ast, (node) => {
      if (node.type === 'Identifier' && !words[k].has((node as acorn.Identifier).name)) invented = true;
    });
    if (invented) return undefined;
    const lineMap = own.map((segs) => segs[0]?.[1]) as number[];
    return { js, ast, lineMap, segments: own.map((segs) => segs.map(([c, l]) => [c, l] as [number, number])) };
  });
}

/**
 * Undo esbuild's renaming on one generated line: segments carrying a name index mark where an
 * identifier with that original name starts. Replaced right to left so earlier columns hold; the
 * segments' columns are then slightly off on that line, which only blurs error columns.
 */
function restoreNames(text: string, segments: Segment[], names: string[]): string {
  let out = text;
  for (const [column, , name] of [...segments].reverse()) {
    if (name === undefined) continue;
    const original = names[name];
    const current = /^[\p{ID_Start}$_][\p{ID_Continue}$\u200c\u200d]*/u.exec(out.slice(column))?.[0];
    if (!current || current === original) continue;
    out = out.slice(0, column) + original + out.slice(column + current.length);
  }
  return out;
}

async function transformOne(source: string): Promise<Parsed> {
  let js: string;
  let map: string;
  try {
    ({ code: js, map } = await transform(source, TS_OPTIONS));
  } catch (err) {
    const first = (err as { errors?: Array<{ text: string; location?: { line: number; column: number } | null }> })
      .errors?.[0];
    return {
      problem: {
        kind: 'syntax',
        severity: 'error',
        message: first?.text ?? String(err),
        line: first?.location?.line,
        column: first?.location ? first.location.column + 1 : undefined,
      },
    };
  }
  const segments = decodeSegments(map).map((segs) => segs.map(([c, l]) => [c, l] as [number, number]));
  const lineMap = segments.map((segs) => segs[0]?.[1]) as number[];
  try {
    return { js, ast: parse(js), lineMap, segments };
  } catch (err) {
    // esbuild accepted it but acorn did not (a syntax newer than acorn knows): report, mapped back.
    const loc = (err as { loc?: { line: number; column: number } }).loc;
    return {
      problem: {
        kind: 'syntax',
        severity: 'error',
        message: (err as Error).message.replace(/ \(\d+:\d+\)$/, ''),
        line: loc ? lineMap[loc.line - 1] : undefined,
      },
    };
  }
}

const BASE64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
const BASE64_INDEX = new Int8Array(128).fill(-1);
for (let i = 0; i < BASE64.length; i++) BASE64_INDEX[BASE64.charCodeAt(i)] = i;

/**
 * Decode just enough of a source map to know, for each generated line, which source line it came
 * from (the first mapped segment wins). Used to report runtime errors at the cell's own line.
 */
export function decodeLineMap(mapJson: string): number[] {
  return decodeSegments(mapJson).map((segments) => segments[0]?.[1]) as number[];
}

/** `[generatedColumn, sourceLine, nameIndex?]`: the name index is set where esbuild renamed an identifier. */
export type Segment = [number, number, number?];

/**
 * Per generated line, the `[generatedColumn, sourceLine]` pairs of its mapped segments (columns
 * 0-based, lines 1-based). esbuild joins chained calls onto one line, so a runtime error's column
 * is needed to find the source line it came from.
 */
export function decodeSegments(mapJson: string): Array<Array<Segment>> {
  const { mappings } = JSON.parse(mapJson) as { mappings: string };
  const lines: Array<Array<Segment>> = [[]];
  let sourceLine = 0;
  let nameIndex = 0;
  let column = 0;
  // One pass over the characters: `;` ends a line, `,` a segment, anything else is a VLQ digit.
  const fields = [0, 0, 0, 0, 0];
  let count = 0;
  let value = 0;
  let shift = 0;
  const endSegment = () => {
    if (count > 0) {
      column += fields[0];
      if (count >= 4) {
        sourceLine += fields[2];
        if (count >= 5) {
          nameIndex += fields[4];
          lines[lines.length - 1].push([column, sourceLine + 1, nameIndex]);
        } else lines[lines.length - 1].push([column, sourceLine + 1]);
      }
    }
    count = 0;
  };
  for (let i = 0; i < mappings.length; i++) {
    const code = mappings.charCodeAt(i);
    if (code === 59 /* ; */) {
      endSegment();
      lines.push([]);
      column = 0;
    } else if (code === 44 /* , */) {
      endSegment();
    } else {
      const digit = BASE64_INDEX[code];
      value += (digit & 31) << shift;
      if (digit & 32) shift += 5;
      else {
        if (count < 5) fields[count] = value & 1 ? -(value >>> 1) : value >>> 1;
        count++;
        value = 0;
        shift = 0;
      }
    }
  }
  endSegment();
  return lines;
}

// ---------------------------------------------------------------------------------------------
// The scoped visitor

const PATTERN_TYPES = new Set(['ObjectPattern', 'ArrayPattern', 'RestElement', 'AssignmentPattern', 'Property']);

function patternNames(pattern: acorn.Pattern | null | undefined, into: string[] = []): string[] {
  if (!pattern) return into;
  switch (pattern.type) {
    case 'Identifier':
      into.push(pattern.name);
      break;
    case 'ObjectPattern':
      for (const prop of pattern.properties) patternNames(prop.type === 'RestElement' ? prop : prop.value, into);
      break;
    case 'ArrayPattern':
      for (const element of pattern.elements) patternNames(element, into);
      break;
    case 'RestElement':
      patternNames(pattern.argument, into);
      break;
    case 'AssignmentPattern':
      patternNames(pattern.left, into);
      break;
    case 'MemberExpression':
      break;
  }
  return into;
}

const isFunction = (node: acorn.Node): node is acorn.Function =>
  node.type === 'FunctionDeclaration' || node.type === 'FunctionExpression' || node.type === 'ArrowFunctionExpression';

function visit(js: string, program: acorn.Program, lineMap?: number[], segments?: Array<Array<[number, number]>>): CellAnalysis {
  const toSourceLine = (line: number) => (lineMap ? lineMap[line - 1] : line);
  const scopes = new Map<Scope, Set<string>>();
  const declare = (scope: Scope, name: string) => {
    let set = scopes.get(scope);
    if (!set) scopes.set(scope, (set = new Set()));
    set.add(name);
  };
  const topLevel: string[] = [];
  const problems: CellProblem[] = [];
  const problem = (p: Omit<CellProblem, 'line' | 'column'>, node?: acorn.Node) => {
    const line = node?.loc ? toSourceLine(node.loc.start.line) : undefined;
    problems.push({ ...p, ...(line !== undefined ? { line } : {}), ...(node?.loc && !lineMap ? { column: node.loc.start.column + 1 } : {}) });
  };

  // Pass 1: declarations, each into the scope JavaScript puts it in.
  const nearest = (ancestors: acorn.Node[], blockScoped: boolean): Scope => {
    for (let i = ancestors.length - 2; i >= 0; i--) {
      const node = ancestors[i];
      if (isFunction(node) || node.type === 'Program' || node.type === 'StaticBlock') return node;
      if (blockScoped && (node.type === 'BlockStatement' || node.type === 'ForStatement' ||
        node.type === 'ForInStatement' || node.type === 'ForOfStatement' || node.type === 'SwitchStatement')) {
        // A function's body block shares the function's scope for our purposes.
        const parent = ancestors[i - 1];
        if (node.type === 'BlockStatement' && parent && isFunction(parent)) return parent;
        return node;
      }
    }
    return program;
  };
  /** Initialiser ranges of top-level let/const declarations, by declared name (for self-reference). */
  const initialisers = new Map<string, Array<{ start: number; end: number }>>();
  walk.ancestor(program, {
    VariableDeclaration(node, _state, ancestors) {
      const scope = nearest(ancestors, node.kind !== 'var');
      for (const declarator of node.declarations) for (const name of patternNames(declarator.id)) {
        declare(scope, name);
        if (scope !== program) continue;
        topLevel.push(name);
        // Only let/const: `var` has no dead zone, and esbuild compiles `enum E` to `var E = ...(E || {})`.
        if (node.kind !== 'var' && declarator.init) {
          const list = initialisers.get(name) ?? [];
          list.push({ start: declarator.init.start, end: declarator.init.end });
          initialisers.set(name, list);
        }
      }
    },
    Function(node, _state, ancestors) {
      if (node.type === 'FunctionDeclaration' && node.id) {
        const scope = nearest(ancestors, true);
        declare(scope, node.id.name);
        if (scope === program) topLevel.push(node.id.name);
      } else if (node.type === 'FunctionExpression' && node.id) {
        declare(node, node.id.name);
      }
      for (const param of node.params) for (const name of patternNames(param)) declare(node, name);
      if (node.type !== 'ArrowFunctionExpression') declare(node, 'arguments');
    },
    Class(node, _state, ancestors) {
      if (!node.id) return;
      if (node.type === 'ClassDeclaration') {
        const scope = nearest(ancestors, true);
        declare(scope, node.id.name);
        if (scope === program) topLevel.push(node.id.name);
      } else declare(node, node.id.name);
    },
    CatchClause(node) {
      for (const name of patternNames(node.param)) declare(node, name);
    },
    ImportDeclaration(node) {
      for (const specifier of node.specifiers) {
        declare(program, specifier.local.name);
        topLevel.push(specifier.local.name);
      }
    },
  });

  const resolve = (name: string, ancestors: acorn.Node[]): 'local' | 'top' | 'free' => {
    for (let i = ancestors.length - 2; i >= 0; i--) {
      const node = ancestors[i];
      if (node !== program && scopes.get(node)?.has(name)) return 'local';
    }
    return scopes.get(program)?.has(name) ? 'top' : 'free';
  };

  const reads: string[] = [];
  const globals: string[] = [];
  const seenFree = new Set<string>();
  const reported = new Set<string>();
  const reportOnce = (key: string, p: Omit<CellProblem, 'line' | 'column'>, node: acorn.Node) => {
    if (reported.has(key)) return;
    reported.add(key);
    problem(p, node);
  };

  const useFree = (name: string, node: acorn.Node) => {
    if (PRIVATE(name)) {
      reportOnce(`private:${name}`, {
        kind: 'private', severity: 'error', name,
        message: `\`${name}\` is not defined in this cell; names starting with _ are private to the cell that declares them`,
      }, node);
      return;
    }
    if (seenFree.has(name)) return;
    seenFree.add(name);
    (GLOBALS.has(name) ? globals : reads).push(name);
  };

  /** `const x = x + 1`: a use of top-level `x` inside x's own initialiser, not behind a function. */
  const checkSelfReference = (name: string, node: acorn.Node, ancestors: acorn.Node[]) => {
    const range = initialisers.get(name)?.find((r) => node.start >= r.start && node.end <= r.end);
    if (!range) return;
    // Behind a function or class body defined inside the initialiser, the use runs later: fine.
    for (let i = ancestors.length - 2; i >= 0; i--) {
      const a = ancestors[i];
      if (a.start < range.start) break;
      if (isFunction(a) || a.type === 'ClassBody') return;
    }
    reportOnce(`self:${name}`, {
      kind: 'self-reference', severity: 'error', name,
      message: `\`${name}\` is used in its own definition; in a cell it refers to this cell's \`${name}\`, ` +
        `which is not initialised yet. To build on another cell's \`${name}\`, give the result a new name`,
    }, node);
  };

  const reassignment = (name: string, node: acorn.Node) =>
    reportOnce(`assign:${name}`, {
      kind: 'reassignment', severity: 'error', name,
      message: `assigns to \`${name}\`, which this cell does not declare; a cell may only change the names it defines. ` +
        `Declare a new name instead (e.g. \`const ${name}2 = ...\`)`,
    }, node);

  const rootIdentifier = (node: acorn.Node): acorn.Identifier | undefined => {
    let current: acorn.Node = node;
    while (current.type === 'MemberExpression' || current.type === 'ChainExpression') {
      current = current.type === 'ChainExpression' ? (current as acorn.ChainExpression).expression : (current as acorn.MemberExpression).object;
    }
    return current.type === 'Identifier' ? (current as acorn.Identifier) : undefined;
  };
  const mutation = (target: acorn.Node, how: string, ancestors: acorn.Node[]) => {
    const root = rootIdentifier(target);
    if (!root || GLOBALS.has(root.name) || resolve(root.name, ancestors) !== 'free') return;
    reportOnce(`mutate:${root.name}`, {
      kind: 'mutation', severity: 'warning', name: root.name,
      message: `${how} \`${root.name}\`, which another cell defines; cells that read \`${root.name}\` will not re-run ` +
        `and re-running its cell undoes the change. Mutate it in the cell that defines it`,
    }, target);
  };

  // Pass 2: references, resolved against the scopes found above.
  walk.ancestor(program, {
    Identifier(node, _state, ancestors) {
      const parent = ancestors[ancestors.length - 2];
      const where = resolve(node.name, ancestors);
      if (where === 'top') checkSelfReference(node.name, node, ancestors);
      if (where !== 'free') return;
      if (parent?.type === 'UpdateExpression') reassignment(node.name, node);
      else if ((parent?.type === 'ForOfStatement' || parent?.type === 'ForInStatement') && parent.left === node) {
        reassignment(node.name, node);
      }
      if (node.name === 'arguments' && ancestors.some(isFunction)) return;
      useFree(node.name, node);
    },
    VariablePattern(node: acorn.Node, _state: unknown, ancestors: acorn.Node[]) {
      // Identifiers in binding position: declarations (skip) or assignment targets (a use + a write).
      const id = node as acorn.Identifier;
      let i = ancestors.length - 2;
      while (i >= 0 && PATTERN_TYPES.has(ancestors[i].type)) {
        // In `{ a = b }` only `a` is a target; `b` reaches us as an Identifier instead.
        i--;
      }
      const owner = ancestors[i];
      if (owner?.type !== 'AssignmentExpression') return;
      const where = resolve(id.name, ancestors);
      if (where === 'top') {
        checkSelfReference(id.name, id, ancestors);
        return;
      }
      if (where === 'free') {
        reassignment(id.name, id);
        useFree(id.name, id);
      }
    },
    AssignmentExpression(node, _state, ancestors) {
      if (node.left.type === 'MemberExpression') mutation(node.left, 'assigns to a property of', ancestors);
    },
    UpdateExpression(node, _state, ancestors) {
      if (node.argument.type === 'MemberExpression') mutation(node.argument, 'changes a property of', ancestors);
    },
    UnaryExpression(node, _state, ancestors) {
      if (node.operator === 'delete' && node.argument.type === 'MemberExpression') {
        mutation(node.argument, 'deletes a property of', ancestors);
      }
    },
    CallExpression(node, _state, ancestors) {
      const callee = node.callee;
      if (callee.type !== 'MemberExpression' || callee.computed || callee.property.type !== 'Identifier') return;
      if (MUTATORS.has(callee.property.name)) {
        mutation(callee.object, `calls .${callee.property.name}() on`, ancestors);
      }
    },
    // acorn-walk calls `VariablePattern` for identifiers in binding position; its types omit it.
  } as walk.AncestorVisitors<unknown>);

  // Module syntax: imports become awaited dynamic imports; exports are refused.
  const edits: Array<{ start: number; end: number; text: string }> = [];
  for (const statement of program.body) {
    if (statement.type === 'ImportDeclaration') {
      edits.push({ start: statement.start, end: statement.end, text: importToConst(statement) });
    } else if (statement.type === 'ExportNamedDeclaration' || statement.type === 'ExportDefaultDeclaration' ||
      statement.type === 'ExportAllDeclaration') {
      problem({
        kind: 'export', severity: 'error',
        message: '`export` is not needed in a cell: every top-level name is shared with the other cells already',
      }, statement);
    }
  }
  walk.simple(program, {
    ImportExpression(node) {
      // Dynamic import from inside a vm script has no module to resolve against; route it to the
      // kernel's resolver, which resolves relative to the notebook's folder.
      edits.push({ start: node.start, end: node.start + 'import'.length, text: '__hangar.import' });
    },
  });

  const last = program.body[program.body.length - 1];
  // A cell that is just `"text"` parses as a directive prologue; users mean it as a value.
  const hasValue = last?.type === 'ExpressionStatement' && (last as acorn.ExpressionStatement).directive !== 'use strict';
  if (hasValue) {
    const expression = (last as acorn.ExpressionStatement).expression;
    edits.push({ start: expression.start, end: expression.start, text: '__hangar.value = (' });
    edits.push({ start: expression.end, end: expression.end, text: ')' });
  }

  const writes: string[] = [];
  const privates: string[] = [];
  for (const name of topLevel) {
    const list = PRIVATE(name) ? privates : writes;
    if (!list.includes(name)) list.push(name);
  }

  const hasError = problems.some((p) => p.severity === 'error');
  let program_: string | undefined;
  let programLineMap: number[] | undefined;
  if (!hasError) {
    const body = applyEdits(js, edits);
    const bindings = reads.length > 0 ? `const { ${reads.join(', ')} } = __scope; ` : '';
    // Everything the wrapper adds before the body sits on line 1, so body line N is program line
    // N + 1 and a stack trace maps back with one subtraction (or one lookup for TypeScript).
    program_ = `(async function (__hangar, __scope) { "use strict"; ${bindings}\n${body}\n;return { ${writes.join(', ')} };\n})`;
    const count = body.split('\n').length;
    programLineMap = [];
    for (let line = 1; line <= count; line++) {
      const source = lineMap ? lineMap[line - 1] : line;
      if (source !== undefined) programLineMap[line - 1 + PROLOGUE_LINES] = source;
    }
  }
  return {
    writes,
    reads,
    globals,
    privates,
    problems,
    hasValue,
    ...(program_ !== undefined ? { program: program_, lineMap: programLineMap } : {}),
    // Program line N + 1 is JS line N; the prologue line has no segments.
    ...(program_ !== undefined && segments ? { segmentMap: [[], ...segments] } : {}),
  };
}

function importToConst(node: acorn.ImportDeclaration): string {
  const from = `await __hangar.import(${JSON.stringify(node.source.value)})`;
  if (node.specifiers.length === 0) return `${from};`;
  // One temporary per import statement, named after its offset so two imports never clash; the
  // bindings stay top-level `const`s and so become the cell's writes like any declaration.
  const tmp = `__hangar_import${node.start}`;
  const parts = [`const ${tmp} = ${from};`];
  for (const specifier of node.specifiers) {
    if (specifier.type === 'ImportNamespaceSpecifier') parts.push(`const ${specifier.local.name} = ${tmp};`);
    else if (specifier.type === 'ImportDefaultSpecifier') parts.push(`const ${specifier.local.name} = ${tmp}.default;`);
    else {
      const imported = specifier.imported.type === 'Identifier' ? specifier.imported.name : String(specifier.imported.value);
      parts.push(`const ${specifier.local.name} = ${tmp}[${JSON.stringify(imported)}];`);
    }
  }
  return parts.join(' ');
}

function applyEdits(code: string, edits: Array<{ start: number; end: number; text: string }>): string {
  // Apply from the end so earlier offsets stay valid; same-start inserts keep their push order.
  const sorted = edits.map((e, i) => ({ ...e, i })).sort((a, b) => b.start - a.start || b.i - a.i);
  let out = code;
  for (const edit of sorted) out = out.slice(0, edit.start) + edit.text + out.slice(edit.end);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Notebook level

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
  cells.forEach((cell, i) => {
    const result = results[i];
    for (const name of result.writes) {
      const list = definedBy.get(name);
      if (list) list.push(cell);
      else definedBy.set(name, [cell]);
    }
  });
  cells.forEach((cell, i) => {
    const result = results[i];
    const dependsOn = [...result.reads, ...result.globals.filter((name) => definedBy.has(name))];
    const problems = [...result.problems];
    for (const name of result.writes) {
      const others = definedBy.get(name)!.filter((other) => other !== cell);
      if (others.length > 0) {
        problems.push({
          kind: 'multiple-definitions', severity: 'error', name,
          message: `\`${name}\` is also defined by cell ${others.map(label).join(', ')}; a name may be defined by one cell only`,
        });
      }
    }
    byId.set(cell.id, { ...result, id: cell.id, problems, dependsOn });
  });
  const ids = cells.map((c) => c.id);
  const topology = buildTopology(ids, (id) => byId.get(id)!.writes, (id) => byId.get(id)!.dependsOn);
  const cycles = findCycles(topology);
  const cellById = new Map(cells.map((c) => [c.id, c]));
  for (const cycle of cycles) {
    const path = [...cycle, cycle[0]].map((id) => label(cellById.get(id)!)).join(' → ');
    for (const id of cycle) {
      byId.get(id)!.problems.push({ kind: 'cycle', severity: 'error', message: `cells form a cycle: ${path}` });
    }
  }
  const codeIds = new Set(cells.filter((c) => c.cell_type === 'code').map((c) => c.id));
  const { order, blocked } = topologicalOrder(topology, codeIds);
  return { cells: byId, topology, order, blocked, cycles };
}
