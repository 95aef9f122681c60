/**
 * The program the notebook runtime runs for a cell: the cell's JavaScript as the body of an
 * `async function (__hangar, __scope)` that takes its reads from `__scope` and returns its writes.
 * Static imports become awaited dynamic imports through the runtime's resolver, and the value of a
 * trailing expression is captured as the cell's output.
 */
import type * as acorn from 'acorn';
import * as walk from 'acorn-walk';
import type { CellScope } from './visitor.js';

/** The prologue occupies line 1 of the program, so user line N of the JS is program line N + 1. */
const PROLOGUE_LINES = 1;

export interface CellProgram {
  /** An `async function (__hangar, __scope)` expression whose body is the cell. */
  program: string;
  /** lineMap[i] = 1-based source line of program line i + 1; missing entries map to nothing. */
  lineMap: number[];
  /** For TypeScript cells: per program line, `[column, sourceLine]` segments. */
  segmentMap?: Array<Array<[number, number]>>;
}

/** Whether the last top-level statement is an expression whose value is the cell's output. */
export function endsInValue(program: acorn.Program): boolean {
  const last = program.body[program.body.length - 1];
  // A cell that is just `"text"` parses as a directive prologue; users mean it as a value.
  return last?.type === 'ExpressionStatement' && (last as acorn.ExpressionStatement).directive !== 'use strict';
}

/**
 * Build a cell's program from its JavaScript (`js`, parsed as `program`) and its resolved names;
 * `lineMap` and `segments` map TypeScript cells back to their source.
 */
export function generateProgram(
  js: string,
  program: acorn.Program,
  names: Pick<CellScope, 'reads' | 'writes'>,
  lineMap?: number[],
  segments?: Array<Array<[number, number]>>,
): CellProgram {
  const { reads, writes } = names;
  const edits: Array<{ start: number; end: number; text: string }> = [];
  for (const statement of program.body) {
    if (statement.type === 'ImportDeclaration') {
      edits.push({ start: statement.start, end: statement.end, text: importToConst(statement) });
    }
  }
  // No walk where the word is missing: a keyword cannot be spelt with escapes.
  if (js.includes('import')) {
    walk.simple(program, {
      ImportExpression(node) {
        // Dynamic import from inside a vm script has no module to resolve against; route it to the
        // kernel's resolver, which resolves relative to the notebook's folder.
        edits.push({ start: node.start, end: node.start + 'import'.length, text: '__hangar.import' });
      },
    });
  }
  if (endsInValue(program)) {
    const expression = (program.body[program.body.length - 1] as acorn.ExpressionStatement).expression;
    edits.push({ start: expression.start, end: expression.start, text: '__hangar.value = (' });
    edits.push({ start: expression.end, end: expression.end, text: ')' });
  }

  const body = applyEdits(js, edits);
  const bindings = reads.length > 0 ? `const { ${reads.join(', ')} } = __scope; ` : '';
  // Everything the wrapper adds before the body sits on line 1, so body line N is program line
  // N + 1 and a stack trace maps back with one subtraction (or one lookup for TypeScript).
  const text = `(async function (__hangar, __scope) { "use strict"; ${bindings}\n${body}\n;return { ${writes.join(', ')} };\n})`;
  let count = 1;
  for (let at = body.indexOf('\n'); at >= 0; at = body.indexOf('\n', at + 1)) count++;
  const programLineMap: number[] = [];
  for (let line = 1; line <= count; line++) {
    const source = lineMap ? lineMap[line - 1] : line;
    if (source !== undefined) programLineMap[line - 1 + PROLOGUE_LINES] = source;
  }
  return {
    program: text,
    lineMap: programLineMap,
    // Program line N + 1 is JS line N; the prologue line has no segments.
    ...(segments ? { segmentMap: [[], ...segments] } : {}),
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
