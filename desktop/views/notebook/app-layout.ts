/**
 * How the app preview arranges a notebook, the same way `hangar notebook app --layout` and the
 * HTML export do (core/notebook/export.ts): code is hidden, code cells without outputs are
 * dropped, and
 * - linear: one column; grid: cards that wrap; dashboard: a 12-column grid, markdown full width;
 * - tabs: one tab per cell, titled by its name, else its first heading, else "Cell n";
 * - sidebar: the leading markdown cells (title, explanation) form the sidebar, the rest the main.
 */
export const LAYOUTS = ['linear', 'grid', 'tabs', 'sidebar', 'dashboard'] as const;
export type Layout = (typeof LAYOUTS)[number];

export interface AppCell {
  id: string;
  cell_type: 'code' | 'markdown' | 'raw';
  name: string;
  source: string;
  outputs: unknown[];
}

export interface Arrangement<C extends AppCell> {
  sidebar: C[];
  main: C[];
  /** Tab titles, one per main cell (tabs layout only). */
  titles: string[];
}

export function cellTitle(cell: AppCell, index: number): string {
  if (cell.name) return cell.name;
  const heading = cell.cell_type === 'markdown' ? /^#+\s+(.+)$/m.exec(cell.source) : null;
  return heading ? heading[1]! : `Cell ${index + 1}`;
}

export function arrangeApp<C extends AppCell>(cells: C[], layout: Layout): Arrangement<C> {
  const shown = cells.filter((c) => c.cell_type === 'markdown' || (c.cell_type === 'code' && c.outputs.length > 0));
  if (layout === 'sidebar') {
    const firstCode = shown.findIndex((c) => c.cell_type !== 'markdown');
    const split = firstCode < 0 ? shown.length : Math.max(1, firstCode);
    return { sidebar: shown.slice(0, split), main: shown.slice(split), titles: [] };
  }
  return { sidebar: [], main: shown, titles: layout === 'tabs' ? shown.map((c) => cellTitle(c, cells.indexOf(c))) : [] };
}
