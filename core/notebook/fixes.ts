/**
 * One-click fixes for the Jupyter habits a reactive notebook refuses, as marimo guides them: a name
 * defined by two cells, or a cell assigning to another cell's name (`df = df.dropna()` below
 * `let df = load()`). The error stays (running either definition would silently pick a winner);
 * it comes with the fixes that make the notebook mean what it meant top to bottom in Jupyter:
 *
 * - `rename`: this cell's definition gets a fresh name (`x_2`), and so do the uses of `x` in the
 *   cells *below* it that read it, since in Jupyter they saw this cell's value; cells above keep
 *   the first definition. Every binding and reference is found in the cell's syntax tree (property
 *   names, keys and strings are left alone; `{ x }` becomes `{ x: x_2 }`). A cell that declares the
 *   name again inside a function or block is refused rather than half-renamed.
 * - `merge`: this cell's code is appended to the cell that defines the name, and this cell removed
 *   (the cells are one step in Jupyter's reading). Refused, leaving the notebook as it was, when the
 *   merged cell would not be valid (two `const x`).
 * - `delete`: this cell (a leftover second definition) is removed.
 *
 * After a fix the notebook runs what is stale, so the user sees it working at once.
 */
import type * as acorn from 'acorn';
import * as walk from 'acorn-walk';
import { fail } from '../kernel/errors.js';
import { analyzeNotebook } from './analysis/index.js';
import { type Parsed, parsePlain, stripTypeScript } from './analysis/transpile.js';
import type { FixAction } from './analysis/visitor.js';
import type { NotebookSession } from './session.js';

const notApplicable = (cell: string, action: FixAction, name: string, why: string) =>
  fail('HANGAR_NOTEBOOK_FIX_NOT_APPLICABLE', { cell, action, name, why });

/**
 * Apply `action` for the problem about `name` in `cellId`. Returns the cells it edited (merge: the
 * cell merged into; delete: none). Nothing is changed when the fix is refused.
 */
export async function applyFix(session: NotebookSession, cellId: string, name: string, action: FixAction): Promise<string[]> {
  const cell = session.cell(cellId);
  const analysis = await session.analysis();
  const problem = analysis.cells.get(cellId)?.problems.find((p) => p.name === name && p.fixes);
  const fix = problem?.fixes?.find((f) => f.action === action);
  if (!fix) throw notApplicable(cellId, action, name, `the cell has no problem about \`${name}\` that ${action} fixes`);
  const cells = session.notebook.cells;
  if (action === 'delete') {
    await session.deleteCell(cellId);
    return [];
  }
  if (action === 'merge') {
    const target = session.cell(fix.into!);
    const merged = `${target.source.replace(/\s+$/, '')}\n${cell.source}`;
    const check = await analyzeNotebook(
      cells.filter((c) => c.id !== cellId).map((c) => (c.id === target.id ? { ...c, source: merged } : c)),
    );
    const broken = check.cells.get(target.id)!.problems.find((p) => p.severity === 'error' && p.kind !== 'multiple-definitions');
    if (broken) throw notApplicable(cellId, action, name, `the merged cell would not run: ${broken.message}`);
    await session.updateCell(target.id, { source: merged });
    await session.deleteCell(cellId);
    return [target.id];
  }
  // rename: this cell, and the cells below it that read the name.
  const index = cells.indexOf(cell);
  const readers = cells
    .slice(index + 1)
    .filter(
      (c) =>
        c.cell_type === 'code' && analysis.cells.get(c.id)?.dependsOn.includes(name) && !analysis.cells.get(c.id)?.writes.includes(name),
    );
  const edits = new Map<string, string>();
  for (const target of [cell, ...readers]) {
    const renamed = await renameInSource(target.source, name, fix.to!);
    if (typeof renamed !== 'string') throw notApplicable(target.id, action, name, renamed.why);
    edits.set(target.id, renamed);
  }
  for (const [id, source] of edits) await session.updateCell(id, { source });
  return [...edits.keys()];
}

/** Where an identifier is a name of the cell's scope, not a property, key or label. */
function isScopeName(node: acorn.Identifier, parent: acorn.Node | undefined): boolean {
  if (!parent) return true;
  switch (parent.type) {
    case 'MemberExpression': {
      const m = parent as acorn.MemberExpression;
      return m.object === node || m.computed;
    }
    case 'Property':
    case 'PropertyDefinition':
    case 'MethodDefinition': {
      const p = parent as acorn.Property;
      return p.key !== node || p.computed || (parent.type === 'Property' && p.shorthand);
    }
    case 'LabeledStatement':
    case 'BreakStatement':
    case 'ContinueStatement':
      return false;
    case 'ImportSpecifier':
      return (parent as acorn.ImportSpecifier).local === node;
    case 'ExportSpecifier':
      return (parent as acorn.ExportSpecifier).local === node;
    case 'MetaProperty':
      return false;
    default:
      return true;
  }
}

const SCOPES = new Set([
  'FunctionDeclaration',
  'FunctionExpression',
  'ArrowFunctionExpression',
  'BlockStatement',
  'ForStatement',
  'ForInStatement',
  'ForOfStatement',
  'CatchClause',
  'ClassBody',
  'StaticBlock',
  'SwitchStatement',
]);

/** Is the identifier ending `ancestors` a declaration (a binding), as opposed to a use? */
function isBinding(ancestors: acorn.Node[]): boolean {
  for (let i = ancestors.length - 2; i >= 0; i--) {
    const a = ancestors[i];
    const child = ancestors[i + 1];
    if (a.type === 'VariableDeclarator') return (a as acorn.VariableDeclarator).id === child;
    if (
      a.type === 'FunctionDeclaration' ||
      a.type === 'FunctionExpression' ||
      a.type === 'ClassDeclaration' ||
      a.type === 'ClassExpression'
    ) {
      const f = a as acorn.FunctionDeclaration;
      return f.id === child || (f.params ?? []).includes(child as acorn.Pattern);
    }
    if (a.type === 'ArrowFunctionExpression') return (a as acorn.ArrowFunctionExpression).params.includes(child as acorn.Pattern);
    if (a.type === 'CatchClause') return (a as acorn.CatchClause).param === child;
    if (a.type === 'ImportSpecifier' || a.type === 'ImportDefaultSpecifier' || a.type === 'ImportNamespaceSpecifier') return true;
    // Inside a pattern (`{ x }`, `[x]`, `x = 1` default): keep climbing to what declares it.
    if (!['ObjectPattern', 'ArrayPattern', 'AssignmentPattern', 'RestElement', 'Property'].includes(a.type)) return false;
    if (a.type === 'Property' && ancestors[i - 1]?.type !== 'ObjectPattern') return false;
  }
  return false;
}

/**
 * `{ x }` (an object or a pattern, `{ x = 1 }` too): the identifier is both key and name, so the
 * rename must keep the key. acorn-walk visits only the value, and skips a pattern's Property.
 */
function isShorthand(node: acorn.Identifier, ancestors: acorn.Node[]): boolean {
  let child: acorn.Node = node;
  let i = ancestors.length - 2;
  if (ancestors[i]?.type === 'AssignmentPattern' && (ancestors[i] as acorn.AssignmentPattern).left === node) child = ancestors[i--]!;
  const parent = ancestors[i];
  if (parent?.type === 'Property') return (parent as acorn.Property).shorthand;
  if (parent?.type === 'ObjectPattern') {
    return (parent as acorn.ObjectPattern).properties.some((p) => p.type === 'Property' && p.shorthand && p.value === child);
  }
  return false;
}

/** `source` with every scope-level `name` renamed `to`, or why that cannot be done safely. */
export async function renameInSource(source: string, name: string, to: string): Promise<string | { why: string }> {
  const parsed: Parsed | undefined = parsePlain(source) ?? (await stripTypeScript([source]))[0];
  if (!parsed || 'problem' in parsed) return { why: `the cell does not parse: ${parsed?.problem.message ?? 'unknown error'}` };
  const hits: Array<{ start: number; end: number; shorthand: boolean; importAs?: boolean; line: number }> = [];
  let shadowed = false;
  walk.fullAncestor(parsed.ast, (node, _state, ancestors) => {
    if (node.type !== 'Identifier' || (node as acorn.Identifier).name !== name) return;
    const id = node as acorn.Identifier;
    const parent = ancestors[ancestors.length - 2];
    if (!isScopeName(id, parent)) return;
    // A shorthand property's key and value are one identifier in the source: count it once.
    if (isBinding(ancestors) && ancestors.slice(0, -1).some((a) => SCOPES.has(a.type))) shadowed = true;
    const shorthand = isShorthand(id, ancestors);
    hits.push({ start: id.start, end: id.end, shorthand, line: id.loc!.start.line });
  });
  // acorn-walk does not visit import specifiers: `import { x }` becomes `import { x as x_2 }`.
  for (const statement of parsed.ast.body) {
    if (statement.type !== 'ImportDeclaration') continue;
    for (const spec of statement.specifiers) {
      if (spec.local.name !== name) continue;
      const same = spec.type === 'ImportSpecifier' && spec.imported.start === spec.local.start;
      hits.push({ start: spec.local.start, end: spec.local.end, shorthand: false, importAs: same, line: spec.local.loc!.start.line });
    }
  }
  if (shadowed) return { why: `\`${name}\` is declared again inside a function or block of the cell; rename it by hand` };
  const replacement = (hit: { shorthand: boolean; importAs?: boolean }) =>
    hit.importAs ? `${name} as ${to}` : hit.shorthand ? `${name}: ${to}` : to;
  if (!parsed.segments) {
    // Plain JavaScript: the tree's positions are the source's.
    let out = source;
    for (const hit of [...hits].sort((a, b) => b.start - a.start)) out = out.slice(0, hit.start) + replacement(hit) + out.slice(hit.end);
    return out;
  }
  // TypeScript: esbuild's map gives lines, not columns. Per source line, the uses found in the
  // JavaScript must match the words `name` on that line outside strings and comments one for one,
  // else the rename is refused (a type annotation mentioning the name, say).
  const jsLines = parsed.js.split('\n');
  const jsLineStart: number[] = [0];
  for (const text of jsLines) jsLineStart.push(jsLineStart[jsLineStart.length - 1]! + text.length + 1);
  const perLine = new Map<number, Array<{ shorthand: boolean; importAs?: boolean }>>();
  for (const hit of hits) {
    const column = hit.start - jsLineStart[hit.line - 1]!;
    const segs = parsed.segments[hit.line - 1] ?? [];
    const seg = [...segs].reverse().find(([c]) => c <= column) ?? segs[0];
    if (!seg) return { why: `cannot place a use of \`${name}\` in the TypeScript source; rename it by hand` };
    const list = perLine.get(seg[1]) ?? [];
    list.push(hit);
    perLine.set(seg[1], list);
  }
  const lines = source.split('\n');
  const pattern = new RegExp(`(?<![\\p{ID_Continue}$.])${name.replace(/\$/g, '\\$')}(?![\\p{ID_Continue}$])`, 'gu');
  for (const [line, list] of perLine) {
    const text = lines[line - 1] ?? '';
    const code = text.replace(/(["'`])(?:\\.|(?!\1).)*\1|\/\/.*$/g, (m) => ' '.repeat(m.length));
    const at = [...code.matchAll(pattern)].map((m) => m.index!);
    if (at.length !== list.length) return { why: `\`${name}\` on line ${line} is also used in a type or string; rename it by hand` };
    // Which word was shorthand (or an import without `as`) is known per line, not per word: it is
    // the word between `{`/`,` and `,`/`}`/`=`.
    const keyed = list.filter((h) => h.shorthand || h.importAs).length;
    let out = text;
    let found = 0;
    for (let i = at.length - 1; i >= 0; i--) {
      const bare = /^\s*[,}=]/.test(text.slice(at[i]! + name.length)) && /[{,]\s*$/.test(text.slice(0, at[i]));
      if (bare) found++;
      const importing = /^\s*import\b/.test(text);
      out = out.slice(0, at[i]) + (bare ? (importing ? `${name} as ${to}` : `${name}: ${to}`) : to) + out.slice(at[i]! + name.length);
    }
    if (found !== keyed) return { why: `cannot tell the keys from the names \`${name}\` on line ${line}; rename it by hand` };
    lines[line - 1] = out;
  }
  return lines.join('\n');
}
