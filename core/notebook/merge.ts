/**
 * Three-way merge of a notebook's cells, for a save over a file that changed on disk (#23): base is
 * the file as this session read or last wrote it, ours the session, theirs the file now. Cells are
 * matched by id (both formats keep ids), the way `git merge` matches lines:
 *
 * - a cell changed on one side only takes that side; the same change on both sides is no conflict;
 * - a cell added on either side is kept, after the cell it followed on its side;
 * - a cell deleted on one side and unchanged on the other is deleted;
 * - a cell changed on both sides to different text, or changed on one side and deleted on the
 *   other, is a conflict: the merge stops and reports it with the three texts, and the caller
 *   picks a side per cell (`resolutions`). Nothing is written until every conflict has a side.
 *
 * Decided where JupyterLab and marimo are silent (neither merges): a conflict is never written as
 * `<<<<<<<` markers inside a cell — a reactive notebook would try to run them — but shown side by
 * side for the user to pick. A cell's content is its type and source; its name follows whichever
 * side renamed it. The order is ours, with the disk's new cells placed after their predecessor,
 * unless the disk moved cells, in which case the disk's order wins (moves on both sides: the disk's).
 */
import type { CellType } from './schemas.js';

export type MergeSide = 'ours' | 'theirs';

/** What the merge compares of a cell. */
export interface MergeCellText {
  id: string;
  cell_type: CellType;
  source: string;
  name: string;
}

/** A cell the two sides disagree on; `null` where that side has no such cell (deleted or never had it). */
export interface MergeConflict {
  cell: string;
  base: MergeCellText | null;
  ours: MergeCellText | null;
  theirs: MergeCellText | null;
}

export interface MergeResult<C extends MergeCellText> {
  /** The merged cells in order: the object of the side taken, and the name it ends with. */
  cells: Array<{ cell: C; side: MergeSide; name: string }>;
  /** Conflicts without a resolution; when any, `cells` holds nothing to write. */
  conflicts: MergeConflict[];
}

const sameContent = (a: MergeCellText, b: MergeCellText) => a.cell_type === b.cell_type && a.source === b.source;
const text = (c: MergeCellText | undefined): MergeCellText | null =>
  c ? { id: c.id, cell_type: c.cell_type, source: c.source, name: c.name } : null;

export function mergeCells<C extends MergeCellText>(
  base: readonly MergeCellText[],
  ours: readonly C[],
  theirs: readonly C[],
  resolutions: Readonly<Record<string, MergeSide>> = {},
): MergeResult<C> {
  const b = new Map(base.map((c) => [c.id, c]));
  const o = new Map(ours.map((c) => [c.id, c]));
  const t = new Map(theirs.map((c) => [c.id, c]));
  const conflicts: MergeConflict[] = [];

  /** Which side's cell survives, or undefined when the cell is deleted. */
  const decide = (id: string): MergeSide | undefined => {
    const [B, O, T] = [b.get(id), o.get(id), t.get(id)];
    let side: MergeSide | 'conflict' | undefined;
    if (O && T) side = sameContent(O, T) || (B && sameContent(T, B)) ? 'ours' : B && sameContent(O, B) ? 'theirs' : 'conflict';
    else if (O) side = !B ? 'ours' : sameContent(O, B) ? undefined : 'conflict';
    else if (T) side = !B ? 'theirs' : sameContent(T, B) ? undefined : 'conflict';
    if (side !== 'conflict') return side;
    const chosen = resolutions[id];
    if (!chosen) {
      conflicts.push({ cell: id, base: text(B), ours: text(O), theirs: text(T) });
      return undefined;
    }
    // Picking the side that deleted the cell deletes it.
    return (chosen === 'ours' ? O : T) ? chosen : undefined;
  };

  // The disk moved cells when the cells it shares with base are in another order: then its order leads.
  const inOrder = (ids: string[], among: Map<string, unknown>) => ids.filter((id) => among.has(id));
  const theirsMoved = inOrder([...t.keys()], b).join('\n') !== inOrder([...b.keys()], t).join('\n');
  const [lead, follow] = theirsMoved ? [theirs, ours] : [ours, theirs];
  const order = lead.map((c) => c.id);
  const placed = new Set(order);
  // Each cell only the other side has goes after the nearest cell before it there that is placed.
  follow.forEach((cell, index) => {
    if (placed.has(cell.id)) return;
    let at = 0;
    for (let i = index - 1; i >= 0; i--) {
      const before = order.indexOf(follow[i]!.id);
      if (before >= 0) {
        at = before + 1;
        break;
      }
    }
    order.splice(at, 0, cell.id);
    placed.add(cell.id);
  });

  const cells: MergeResult<C>['cells'] = [];
  for (const id of order) {
    const side = decide(id);
    if (!side) continue;
    const cell = (side === 'ours' ? o.get(id) : t.get(id))!;
    const other = side === 'ours' ? t.get(id) : o.get(id);
    const was = b.get(id);
    // A rename on the side not taken survives unless the taken side renamed it too.
    const name = was && other && cell.name === was.name ? other.name : cell.name;
    cells.push({ cell, side, name });
  }
  return { cells: conflicts.length > 0 ? [] : cells, conflicts };
}
