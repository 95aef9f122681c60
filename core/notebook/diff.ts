/**
 * Cell-aware notebook diff (`hangar notebook diff a b [--html]`).
 *
 * Cells are matched by id (ids survive edits, moves and format conversion). Each cell of either
 * side is then one of: unchanged, changed (source, name or type differ; with a line diff), moved
 * (kept, but its position relative to the other kept cells changed — the cells outside a longest
 * common subsequence of the two orders, which is the smallest set of moves that explains the new
 * order), added, or removed. A cell can be both moved and changed.
 *
 * A change only in whitespace (a trailing newline, indentation, spaces) is reported as such, as
 * `git diff` readers expect from `-w`: its line diff would show the same text removed and added.
 */
import { diffLines } from 'diff';
import { escapeHtml } from './render.js';
import type { Cell, Notebook } from './schemas.js';

export interface LineChange {
  op: ' ' | '+' | '-';
  text: string;
}

export interface CellDiff {
  id: string;
  name: string;
  status: 'unchanged' | 'changed' | 'moved' | 'added' | 'removed';
  moved: boolean;
  /** What changed besides the source ("name", "cell_type"), for changed cells. */
  fields: string[];
  /** The source differs only in whitespace; `whitespace` says where. */
  whitespace?: 'trailing newlines' | 'whitespace';
  lines: LineChange[];
  /** Positions (0-based) in a and b; absent on the side the cell is not in. */
  from?: number;
  to?: number;
}

export interface NotebookDiff {
  identical: boolean;
  cells: CellDiff[];
  summary: { added: number; removed: number; moved: number; changed: number };
}

/** Longest common subsequence of two id lists (O(n·m); notebooks are small). */
function lcs(a: string[], b: string[]): Set<string> {
  const table = Array.from({ length: a.length + 1 }, () => new Array<number>(b.length + 1).fill(0));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const kept = new Set<string>();
  let i = 0;
  let j = 0;
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      kept.add(a[i]);
      i++;
      j++;
    } else if (table[i + 1][j] >= table[i][j + 1]) i++;
    else j++;
  }
  return kept;
}

function lineDiff(before: string, after: string): LineChange[] {
  const out: LineChange[] = [];
  for (const part of diffLines(before, after)) {
    const op = part.added ? '+' : part.removed ? '-' : ' ';
    const lines = part.value.replace(/\n$/, '').split('\n');
    for (const text of lines) out.push({ op, text });
  }
  return out;
}

/** Which kind of whitespace-only change turns `before` into `after`; undefined for a real change. */
function whitespaceChange(before: string, after: string): CellDiff['whitespace'] {
  if (before.replace(/\s+/g, '') !== after.replace(/\s+/g, '')) return undefined;
  return before.replace(/\n+$/, '') === after.replace(/\n+$/, '') ? 'trailing newlines' : 'whitespace';
}

/** A line diff a reader can see: whitespace made visible where it is the only difference. */
function visibleWhitespace(text: string): string {
  return text.replace(/\t/g, '→').replace(/ /g, '·');
}

const allLines = (cell: Cell, op: '+' | '-'): LineChange[] => cell.source.split('\n').map((text) => ({ op, text }));

export function diffNotebooks(a: Notebook, b: Notebook): NotebookDiff {
  const aIds = a.cells.map((c) => c.id);
  const bIds = b.cells.map((c) => c.id);
  const aById = new Map(a.cells.map((c, i) => [c.id, { cell: c, index: i }]));
  const bById = new Map(b.cells.map((c, i) => [c.id, { cell: c, index: i }]));
  const common = aIds.filter((id) => bById.has(id));
  const inOrder = lcs(
    common,
    bIds.filter((id) => aById.has(id)),
  );
  const cells: CellDiff[] = [];

  // Walk b's order, inserting removed cells of a where they used to be.
  const emitted = new Set<string>();
  const emitRemovedBefore = (limit: number) => {
    for (let i = 0; i < limit; i++) {
      const cell = a.cells[i];
      if (bById.has(cell.id) || emitted.has(cell.id)) continue;
      emitted.add(cell.id);
      cells.push({ id: cell.id, name: cell.name, status: 'removed', moved: false, fields: [], lines: allLines(cell, '-'), from: i });
    }
  };
  b.cells.forEach((cell, to) => {
    const before = aById.get(cell.id);
    if (!before) {
      cells.push({ id: cell.id, name: cell.name, status: 'added', moved: false, fields: [], lines: allLines(cell, '+'), to });
      return;
    }
    emitRemovedBefore(before.index);
    const fields: string[] = [];
    if (before.cell.name !== cell.name) fields.push('name');
    if (before.cell.cell_type !== cell.cell_type) fields.push('cell_type');
    const sourceChanged = before.cell.source !== cell.source;
    const moved = !inOrder.has(cell.id);
    const changed = sourceChanged || fields.length > 0;
    const whitespace = sourceChanged ? whitespaceChange(before.cell.source, cell.source) : undefined;
    const count = (text: string) => /\n*$/.exec(text)![0].length;
    let lines = sourceChanged ? lineDiff(before.cell.source, cell.source) : [];
    if (whitespace === 'trailing newlines') {
      lines = [{ op: ' ', text: `(${count(before.cell.source)} → ${count(cell.source)} trailing newlines)` }];
    } else if (whitespace) {
      lines = lines.map((line) => (line.op === ' ' ? line : { ...line, text: visibleWhitespace(line.text) }));
    }
    cells.push({
      id: cell.id,
      name: cell.name,
      status: changed ? 'changed' : moved ? 'moved' : 'unchanged',
      moved,
      fields,
      ...(whitespace ? { whitespace } : {}),
      lines,
      from: before.index,
      to,
    });
  });
  emitRemovedBefore(a.cells.length);

  const summary = {
    added: cells.filter((c) => c.status === 'added').length,
    removed: cells.filter((c) => c.status === 'removed').length,
    moved: cells.filter((c) => c.moved).length,
    changed: cells.filter((c) => c.status === 'changed').length,
  };
  const identical = summary.added + summary.removed + summary.moved + summary.changed === 0;
  return { identical, cells, summary };
}

const label = (cell: CellDiff) => `${cell.id}${cell.name ? ` "${cell.name}"` : ''}`;

function describe(cell: CellDiff): string {
  const parts: string[] = [cell.status === 'unchanged' ? 'moved' : cell.status];
  if (cell.status === 'changed' && cell.moved) parts.push('moved');
  if (cell.moved) parts.push(`${(cell.from ?? 0) + 1} → ${(cell.to ?? 0) + 1}`);
  if (cell.fields.length) parts.push(`(${cell.fields.join(', ')})`);
  if (cell.whitespace) parts.push(`(${cell.whitespace} only)`);
  return parts.join(' ');
}

/** Terminal text; colours only when asked (a TTY), so files and pipes stay clean. */
export function formatDiffText(diff: NotebookDiff, options: { color?: boolean; a?: string; b?: string } = {}): string {
  const paint = (code: number, text: string) => (options.color ? `\x1b[${code}m${text}\x1b[0m` : text);
  const out: string[] = [];
  if (options.a || options.b) out.push(paint(1, `--- ${options.a ?? 'a'}`), paint(1, `+++ ${options.b ?? 'b'}`));
  if (diff.identical) {
    out.push('notebooks are identical');
    return `${out.join('\n')}\n`;
  }
  for (const cell of diff.cells) {
    if (cell.status === 'unchanged' && !cell.moved) continue;
    out.push(paint(36, `@@ cell ${label(cell)}: ${describe(cell)}`));
    for (const line of cell.lines) {
      const text = `${line.op} ${line.text}`;
      out.push(line.op === '+' ? paint(32, text) : line.op === '-' ? paint(31, text) : text);
    }
  }
  const s = diff.summary;
  out.push(`${s.added} added, ${s.removed} removed, ${s.moved} moved, ${s.changed} changed`);
  return `${out.join('\n')}\n`;
}

export function formatDiffHtml(diff: NotebookDiff, options: { a?: string; b?: string } = {}): string {
  const blocks = diff.cells
    .filter((cell) => cell.status !== 'unchanged' || cell.moved)
    .map((cell) => {
      const lines = cell.lines
        .map((l) => `<div class="line ${l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'ctx'}">${escapeHtml(`${l.op} ${l.text}`)}</div>`)
        .join('');
      return `<section class="cell ${cell.status}${cell.moved ? ' moved' : ''}"><h2>${escapeHtml(`cell ${label(cell)}`)} <span class="tag">${escapeHtml(describe(cell))}</span></h2><pre>${lines}</pre></section>`;
    })
    .join('\n');
  const s = diff.summary;
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>${escapeHtml(`diff ${options.a ?? ''} ${options.b ?? ''}`)}</title>
<style>
body{font-family:system-ui,sans-serif;margin:2rem;color:#222}
pre{background:#f7f7f7;padding:.5rem;margin:0;font:13px/1.4 ui-monospace,monospace}
.line.add{background:#e6ffec}.line.del{background:#ffebe9}
.cell{border:1px solid #ddd;border-radius:6px;margin:1rem 0;overflow:hidden}
.cell h2{font-size:14px;margin:0;padding:.5rem;background:#fafafa;border-bottom:1px solid #ddd}
.tag{font-weight:normal;color:#666}.added h2{background:#e6ffec}.removed h2{background:#ffebe9}
</style></head><body>
<h1>${escapeHtml(`${options.a ?? 'a'} → ${options.b ?? 'b'}`)}</h1>
<p class="summary">${diff.identical ? 'notebooks are identical' : `${s.added} added, ${s.removed} removed, ${s.moved} moved, ${s.changed} changed`}</p>
${blocks}
</body></html>
`;
}
