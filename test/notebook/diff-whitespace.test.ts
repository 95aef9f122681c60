/** `notebook diff` says when a cell changed only in whitespace (#23), instead of showing identical lines. */
import { describe, expect, it } from 'vitest';
import { diffNotebooks, formatDiffText } from '../../core/notebook/diff.js';
import { Notebook } from '../../core/notebook/schemas.js';

const nb = (source: string) => Notebook.parse({ name: 'w', cells: [{ id: 'cell0001', source }] });

describe('whitespace-only changes', () => {
  it('a trailing newline only is reported as such, with the counts, not as the same line removed and added', () => {
    const text = formatDiffText(diffNotebooks(nb('const a = 1'), nb('const a = 1\n')));
    expect(text).toContain('@@ cell cell0001: changed (trailing newlines only)');
    expect(text).toContain('(0 → 1 trailing newlines)');
    expect(text).not.toContain('- const a = 1');
  });

  it('changed indentation is reported as whitespace only, with the spaces made visible', () => {
    const diff = diffNotebooks(nb('if (x) {\n  y();\n}'), nb('if (x) {\n    y();\n}'));
    expect(diff.cells[0].whitespace).toBe('whitespace');
    const text = formatDiffText(diff);
    expect(text).toContain('changed (whitespace only)');
    expect(text).toContain('+ ····y();');
  });

  it('a real change is not called whitespace', () => {
    expect(diffNotebooks(nb('const a = 1'), nb('const a = 2')).cells[0].whitespace).toBeUndefined();
  });
});
