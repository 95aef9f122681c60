/**
 * From a cell's source to an acorn AST of plain JavaScript, with the line map back to the source
 * when the source was TypeScript: acorn alone for plain JavaScript, esbuild for the rest — many
 * cells in one esbuild call where that is safe. Never throws for bad user code: a syntax error
 * comes back as a `syntax` problem at the cell's own line and column.
 */
import type * as acorn from 'acorn';
import * as walk from 'acorn-walk';
import { esbuild } from '../../lib/esbuild.js';
import { packageOnFirstUse } from '../../lib/on-first-use.js';
import { decodeMappings, decodeSegments, type Segment } from './sourcemap.js';
import type { CellProblem } from './visitor.js';

/** acorn, loaded by the first cell parsed (core/lib/on-first-use.ts). */
const acornPackage = packageOnFirstUse<typeof acorn>('acorn');

/** Code with something that TypeScript reads as a generic call but JavaScript as comparisons. */
const GENERIC_CALL = /[\w$)\]]\s*<[\w$\s,.[\]|&'"]*>\s*\(/;

export type Parsed =
  | { js: string; ast: acorn.Program; lineMap?: number[]; segments?: Array<Array<[number, number]>> }
  | { problem: CellProblem };

const ACORN_OPTIONS: acorn.Options = {
  ecmaVersion: 'latest',
  sourceType: 'module',
  allowAwaitOutsideFunction: true,
  locations: true,
};

function parse(js: string): acorn.Program {
  return acornPackage().parse(js, ACORN_OPTIONS);
}

/**
 * Token sequences that are TypeScript and never JavaScript, matched where the scan below proves it
 * is looking at code: `const x: T` (also `let`/`var`, `x?:`, `x!:`) — nothing may follow a
 * declared name but `=`, `,`, `;`, `in`/`of` or a line break — and `(x: T` or `(x?: T` — a `(`
 * opens an expression, arguments, parameters or a condition, and none of them can put `:` right
 * after a first name (the `?` of a conditional would have to come in between). Only spaces and
 * tabs may separate the tokens, so no line break lets automatic semicolon insertion split them.
 */
const TS_DECLARATION = /(?:const|let|var)[ \t]+[A-Za-z_$][\w$]*[ \t]*[?!]?[ \t]*:/y;
const TS_PARAMETER = /\([ \t]*[A-Za-z_$][\w$]*[ \t]*\??[ \t]*:/y;
const WORD_CHAR = /[\w$\\\u0080-\uffff]/;

/**
 * Whether the source is certainly not JavaScript, decided without parsing: one of the token
 * sequences above in code. The scan skips comments and quoted strings and stops at the first
 * template literal or `/` that does not start a comment (a regular expression or a division: which
 * one takes a parser to know), so a match inside a string, a comment, a template or a regular
 * expression never counts. `false` proves nothing: acorn decides. `true` spares the TypeScript
 * cell the parse that was bound to fail (most of a failed parse's cost is the SyntaxError).
 */
export function provesTypeScript(source: string): boolean {
  const n = source.length;
  let i = 0;
  while (i < n) {
    const c = source.charCodeAt(i);
    if (c === 47 /* / */) {
      const next = source.charCodeAt(i + 1);
      if (next === 47) {
        const end = source.indexOf('\n', i + 2);
        if (end < 0) return false;
        i = end + 1;
      } else if (next === 42 /* * */) {
        const end = source.indexOf('*/', i + 2);
        if (end < 0) return false;
        i = end + 2;
      } else return false;
    } else if (c === 39 /* ' */ || c === 34 /* " */) {
      i++;
      for (;;) {
        if (i >= n) return false;
        const d = source.charCodeAt(i);
        if (d === c) break;
        if (d === 10 || d === 13) return false;
        i += d === 92 /* \\ */ ? 2 : 1;
      }
      i++;
    } else if (c === 96 /* ` */) {
      return false;
    } else if (c === 40 /* ( */) {
      TS_PARAMETER.lastIndex = i;
      if (TS_PARAMETER.test(source)) return true;
      i++;
    } else if ((c === 99 /* c */ || c === 108 /* l */ || c === 118) /* v */ && (i === 0 || !WORD_CHAR.test(source[i - 1]))) {
      TS_DECLARATION.lastIndex = i;
      if (TS_DECLARATION.test(source)) return true;
      i++;
    } else i++;
  }
  return false;
}

/**
 * Fast path: most cells are plain JavaScript, which acorn parses directly in a fraction of what an
 * esbuild round trip costs, and line numbers stay exact. Anything acorn rejects (type annotations,
 * `enum`, `as`, ...) or that looks like a generic call goes through esbuild's TypeScript loader.
 */
export function parsePlain(source: string): Parsed | undefined {
  return needsTypeScript(source) ? undefined : parseJavaScript(source);
}

/** Whether the cell goes to esbuild without trying acorn first: a generic call, or proven TypeScript. */
export function needsTypeScript(source: string): boolean {
  return GENERIC_CALL.test(source) || provesTypeScript(source);
}

/** `parsePlain` for a source `needsTypeScript` has already let through. */
export function parseJavaScript(source: string): Parsed | undefined {
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
/** The batch's map is only read for its mappings and names: the sources would double its size. */
const BATCH_OPTIONS = { ...TS_OPTIONS, sourcesContent: false };

const MODULE_SYNTAX = /^\s*(import|export)\b/m;
const BATCH_MARKER = '//! @@hangar-cell ';
const IDENTIFIER = /[\p{ID_Start}$_][\p{ID_Continue}$\u200c\u200d]*/gu;
/** The same words in ASCII text, where a regex without Unicode property classes is much cheaper. */
const ASCII_IDENTIFIER = /[A-Za-z$_][\w$]*/g;
const NOT_ASCII = /[^\x00-\x7f]/;
const wordList = (text: string) => text.match(NOT_ASCII.test(text) ? IDENTIFIER : ASCII_IDENTIFIER) ?? [];
const wordsOf = (source: string) => new Set(wordList(source));

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
export function stripTypeScript(sources: string[]): Promise<Parsed[]> {
  return stripEach(sources, (parsed) => parsed);
}

/**
 * `stripTypeScript`, handing each cell to `use` as soon as it is parsed and keeping what `use`
 * returns: a caller that only needs the analysis lets each tree go before the next is built,
 * instead of a batch's worth of trees outliving young-generation collections.
 */
export async function stripEach<T>(sources: string[], use: (parsed: Parsed) => T): Promise<T[]> {
  const results: T[] = new Array(sources.length);
  const done: boolean[] = new Array(sources.length).fill(false);
  const batch: number[] = [];
  sources.forEach((source, i) => {
    // The regex tries every line start; most cells have neither word anywhere.
    if (!((source.includes('import') || source.includes('export')) && MODULE_SYNTAX.test(source))) batch.push(i);
  });
  if (batch.length > 1) {
    await transformBatch(
      batch.map((i) => sources[i]),
      (k, parsed) => {
        results[batch[k]] = use(parsed);
        done[batch[k]] = true;
      },
    );
  }
  await Promise.all(
    sources.map(async (source, i) => {
      if (!done[i]) results[i] = use(await transformOne(source));
    }),
  );
  return results;
}

/** Strip a batch; `found` gets each cell that came out of it whole (the others are redone alone). */
async function transformBatch(sources: string[], found: (k: number, parsed: Parsed) => void): Promise<void> {
  const parts: string[] = [];
  const firstLine: number[] = []; // 1-based line of each cell's first source line in the batch
  let line = 1;
  sources.forEach((source, k) => {
    parts.push(`${BATCH_MARKER}${k}\nasync function __hangar_cell_${k}() {\n${source}\n}\n`);
    firstLine.push(line + 2);
    line += lineCount(source) + 3;
  });
  let code: string;
  let mapJson: string;
  try {
    ({ code, map: mapJson } = await esbuild().transform(parts.join(''), BATCH_OPTIONS));
  } catch {
    return;
  }
  const lines = code.split('\n');
  const map = JSON.parse(mapJson) as { mappings: string; names: string[] };
  const segments = decodeMappings(map.mappings);
  const markers: number[] = [];
  lines.forEach((text, i) => {
    if (text.startsWith(BATCH_MARKER)) markers.push(i);
  });
  if (markers.length !== sources.length) return;
  sources.forEach((source, k) => {
    const open = markers[k] + 1;
    let end = (k + 1 < markers.length ? markers[k + 1] : lines.length) - 1;
    while (end > open && lines[end] === '') end--;
    // The function must come back whole; anything else and we do not trust the split.
    if (lines[markers[k]] !== `${BATCH_MARKER}${k}` || lines[open] !== `async function __hangar_cell_${k}() {` || lines[end] !== '}') {
      return;
    }
    // The decoded segments are this call's own: moved to the cell's lines in place.
    const shift = firstLine[k] - 1;
    const own: Segment[][] = [];
    const text: string[] = [];
    for (let i = open + 1; i < end; i++) {
      const segs = segments[i] ?? [];
      let kept = 0;
      for (const segment of segs) {
        segment[1] -= shift;
        if (segment[1] >= 1) segs[kept++] = segment;
      }
      if (kept < segs.length) segs.length = kept;
      own.push(segs);
      text.push(restoreNames(lines[i], segs, map.names));
    }
    const js = text.join('\n');
    let ast: acorn.Program;
    try {
      ast = parse(js);
    } catch {
      return;
    }
    if (invents(js, ast, source)) return;
    const lineMap = own.map((segs) => segs[0]?.[1]) as number[];
    // Only a renamed identifier's segment carries a third field.
    for (const segs of own) for (let s = 0; s < segs.length; s++) if (segs[s].length > 2) segs[s] = [segs[s][0], segs[s][1]];
    found(k, { js, ast, lineMap, segments: own as Array<Array<[number, number]>> });
  });
}

/** Whether the cell's JavaScript uses an identifier that is not a word of its source. */
function invents(js: string, ast: acorn.Program, source: string): boolean {
  const words = wordsOf(source);
  // Without `\u` escapes every identifier is spelt out in the text, so when every word of the text
  // is a word of the source the tree has nothing invented; otherwise (a number esbuild wrote as
  // `1e3`, an escape) the tree decides.
  if (!js.includes('\\u') && wordList(js).every((word) => words.has(word))) return false;
  let invented = false;
  walk.full(ast, (node) => {
    if (node.type === 'Identifier' && !words.has((node as acorn.Identifier).name)) invented = true;
  });
  return invented;
}

/** Lines in a string, counted without splitting it. */
function lineCount(text: string): number {
  let count = 1;
  for (let i = text.indexOf('\n'); i >= 0; i = text.indexOf('\n', i + 1)) count++;
  return count;
}

const NAME_AT = /[\p{ID_Start}$_][\p{ID_Continue}$\u200c\u200d]*/uy;

/**
 * Undo esbuild's renaming on one generated line: segments carrying a name index mark where an
 * identifier with that original name starts. Replaced right to left so earlier columns hold, and
 * the columns of the segments after each replacement move by the difference in length, so a
 * segment points where it did before the renaming — whichever other cells shared the batch.
 */
function restoreNames(text: string, segments: Segment[], names: string[]): string {
  let out = text;
  for (let s = segments.length - 1; s >= 0; s--) {
    const [column, , name] = segments[s];
    if (name === undefined) continue;
    const original = names[name];
    NAME_AT.lastIndex = column;
    const current = NAME_AT.exec(out)?.[0];
    if (!current || current === original) continue;
    out = out.slice(0, column) + original + out.slice(column + current.length);
    const delta = original.length - current.length;
    for (let later = s + 1; later < segments.length; later++) segments[later][0] += delta;
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
