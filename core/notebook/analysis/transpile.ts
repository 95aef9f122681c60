/**
 * From a cell's source to an acorn AST of plain JavaScript, with the line map back to the source
 * when the source was TypeScript: acorn alone for plain JavaScript, esbuild for the rest — many
 * cells in one esbuild call where that is safe. Never throws for bad user code: a syntax error
 * comes back as a `syntax` problem at the cell's own line and column.
 */
import * as acorn from 'acorn';
import * as walk from 'acorn-walk';
import { esbuild } from '../../lib/esbuild.js';
import { decodeSegments, type Segment } from './sourcemap.js';
import type { CellProblem } from './visitor.js';

/** Code with something that TypeScript reads as a generic call but JavaScript as comparisons. */
const GENERIC_CALL = /[\w$)\]]\s*<[\w$\s,.[\]|&'"]*>\s*\(/;

export type Parsed =
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
export function parsePlain(source: string): Parsed | undefined {
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
export async function stripTypeScript(sources: string[]): Promise<Parsed[]> {
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
    ({ code, map } = await esbuild().transform(parts.join(''), TS_OPTIONS));
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
    const own = segments
      .slice(open + 1, end)
      .map((segs) =>
        segs.map(([column, sourceLine, name]) => [column, sourceLine - firstLine[k] + 1, name] as Segment).filter(([, l]) => l >= 1),
      );
    const js = lines
      .slice(open + 1, end)
      .map((text, i) => restoreNames(text, own[i], names))
      .join('\n');
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
    ({ code: js, map } = await esbuild().transform(source, TS_OPTIONS));
  } catch (err) {
    const first = (err as { errors?: Array<{ text: string; location?: { line: number; column: number } | null }> }).errors?.[0];
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
