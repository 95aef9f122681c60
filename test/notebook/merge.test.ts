/**
 * The three-way cell merge behind `save {strategy: 'merge'}` (#23): one-sided changes, additions
 * and deletions are taken; changes on both sides are conflicts until a side is picked.
 */
import { describe, expect, it } from 'vitest';
import { mergeCells } from '../../core/notebook/merge.js';

const cells = (...pairs: Array<[string, string, string?]>) =>
  pairs.map(([id, source, name = '']) => ({ id, cell_type: 'code' as const, source, name }));
const ids = (result: ReturnType<typeof mergeCells>) => result.cells.map((m) => `${m.cell.id}:${m.side}`);

describe('mergeCells', () => {
  const base = cells(['a', '1'], ['b', '2'], ['c', '3']);

  it('takes each side’s one-sided change and the same change made on both sides', () => {
    const result = mergeCells(base, cells(['a', '10'], ['b', '20'], ['c', '3']), cells(['a', '1'], ['b', '20'], ['c', '30']));
    expect(result.conflicts).toEqual([]);
    expect(result.cells.map((m) => m.cell.source)).toEqual(['10', '20', '30']);
  });

  it('keeps cells added on either side after the cell they followed there', () => {
    const result = mergeCells(
      base,
      cells(['a', '1'], ['x', 'ours'], ['b', '2'], ['c', '3']),
      cells(['y', 'theirs'], ['a', '1'], ['b', '2'], ['c', '3'], ['z', 'end']),
    );
    expect(ids(result)).toEqual(['y:theirs', 'a:ours', 'x:ours', 'b:ours', 'c:ours', 'z:theirs']);
  });

  it('deletes a cell deleted on one side and unchanged on the other', () => {
    expect(ids(mergeCells(base, cells(['a', '1'], ['c', '3']), cells(['a', '1'], ['b', '2'], ['c', '30'])))).toEqual([
      'a:ours',
      'c:theirs',
    ]);
  });

  it('follows the disk’s order when the disk moved cells, placing this side’s new cells after their predecessor', () => {
    const result = mergeCells(base, cells(['a', '1'], ['b', '2'], ['n', 'new'], ['c', '3']), cells(['c', '3'], ['a', '1'], ['b', '2']));
    expect(ids(result)).toEqual(['c:ours', 'a:ours', 'b:ours', 'n:ours']);
  });

  it('a rename on one side survives a source change taken from the other', () => {
    const [merged] = mergeCells(cells(['a', '1', 'load']), cells(['a', '1', 'load_data']), cells(['a', '2', 'load'])).cells;
    expect(merged).toMatchObject({ side: 'theirs', name: 'load_data', cell: { source: '2' } });
  });

  it('reports changes on both sides, and edit-versus-delete, writing nothing until each has a side', () => {
    const ours = cells(['a', 'A-ours'], ['b', 'B-ours'], ['c', '3']);
    const theirs = cells(['a', 'A-theirs'], ['c', '3']);
    const open = mergeCells(base, ours, theirs);
    expect(open.cells).toEqual([]);
    expect(open.conflicts.map((c) => [c.cell, c.base?.source, c.ours?.source, c.theirs?.source ?? null])).toEqual([
      ['a', '1', 'A-ours', 'A-theirs'],
      ['b', '2', 'B-ours', null],
    ]);
    const picked = mergeCells(base, ours, theirs, { a: 'theirs', b: 'theirs' });
    expect(picked.conflicts).toEqual([]);
    expect(picked.cells.map((m) => m.cell.source)).toEqual(['A-theirs', '3']);
  });
});
