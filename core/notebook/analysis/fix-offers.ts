/**
 * The fixes an analysis problem offers (applied by core/notebook/fixes.ts): marimo's guidance for a
 * name defined twice or a cell assigning another cell's name, in one click.
 */
import type { CellInput } from './index.js';
import type { CellProblem, ProblemFix } from './visitor.js';

const WORD = /[\p{ID_Start}$_][\p{ID_Continue}$\u200c\u200d]*/gu;

/** `x_2`, `x_3`, … : the first that no cell uses as a word. */
export function freshName(name: string, sources: readonly string[]): string {
  const used = new Set(sources.flatMap((s) => s.match(WORD) ?? []));
  let n = 2;
  while (used.has(`${name}_${n}`)) n++;
  return `${name}_${n}`;
}

/**
 * The fixes offered for a problem of `cell`: `definer` is the (first) other cell defining the name,
 * `label` how a cell is named in messages.
 */
export function fixesFor(
  problem: CellProblem,
  definer: CellInput | undefined,
  sources: readonly string[],
  label: (cell: CellInput) => string,
): ProblemFix[] | undefined {
  if (!problem.name || !definer) return undefined;
  const merge: ProblemFix = { action: 'merge', label: `Merge into cell ${label(definer)}`, into: definer.id };
  if (problem.kind === 'reassignment') return [merge];
  if (problem.kind !== 'multiple-definitions') return undefined;
  const to = freshName(problem.name, sources);
  return [
    { action: 'rename', label: `Rename this cell's \`${problem.name}\` to \`${to}\` (and its uses below)`, to },
    merge,
    { action: 'delete', label: 'Delete this cell' },
  ];
}
