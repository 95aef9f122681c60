/**
 * The write fence: where an agent of a team may write. A path is checked after resolving `..`
 * and symlinks — of the file itself when it exists, else of its nearest existing folder — so a
 * link inside an owned folder pointing into another team's folder (or out of the repository) does
 * not open a way around the fence.
 */
import { lstatSync, readlinkSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { globMatcher, normalizeRelative } from './ownership.js';

export interface FenceTeam {
  id: string;
  owns: string[];
  /** A task no team owns: it may write only paths no team owns. */
  unowned?: boolean;
}

export class FenceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FenceError';
  }
}

/** lstat, or undefined when the entry cannot exist (ENOENT; ENOTDIR under a file such as a worktree's `.git`). */
function lstatQuiet(p: string): ReturnType<typeof lstatSync> | undefined {
  try {
    return lstatSync(p, { throwIfNoEntry: false });
  } catch {
    return undefined;
  }
}

function realpathOfNearest(abs: string, depth = 0): string {
  if (depth > 40) throw new FenceError(`too many levels of symbolic links at ${abs}`);
  const rest: string[] = [];
  let current = abs;
  // lstat without throwing finds the nearest existing entry: exceptions per missing level made
  // this 100x slower for a file in new folders.
  for (;;) {
    const stat = lstatQuiet(current);
    if (stat) {
      try {
        return path.join(realpathSync.native(current), ...rest.reverse());
      } catch {
        // A dangling symlink: writing through it would create its target, so the target is what
        // gets checked (a link to ../../outside.txt must not pass as a file inside the folder).
        if (stat.isSymbolicLink()) {
          const target = path.resolve(path.dirname(current), readlinkSync(current));
          return realpathOfNearest(path.join(target, ...rest.reverse()), depth + 1);
        }
      }
    }
    const parent = path.dirname(current);
    if (parent === current) return abs;
    rest.push(path.basename(current));
    current = parent;
  }
}

/**
 * The repository-relative real path of `requested`, or a `FenceError` when it leaves the root.
 * `root` must itself be a real path (the caller resolves it once).
 */
export function resolveInside(root: string, requested: string): string {
  if (requested.includes('\0')) throw new FenceError('path contains a NUL byte');
  const real = realpathOfNearest(path.resolve(root, requested));
  const rel = path.relative(root, real);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) throw new FenceError(`${requested} is outside the repository`);
  const normal = normalizeRelative(rel);
  if (normal === '.git' || normal.startsWith('.git/')) throw new FenceError(`${requested} is inside .git`);
  return normal;
}

/**
 * Check a write by `team`; returns the repository-relative real path. The refusal names the team
 * that owns the path, when one does.
 */
export function checkWrite(root: string, requested: string, team: FenceTeam, all: readonly FenceTeam[]): string {
  const rel = resolveInside(root, requested);
  const owner = all.find((t) => t.id !== team.id && t.owns.some((g) => globMatcher(g)(rel)));
  if (team.unowned) {
    if (!owner) return rel;
    throw new FenceError(`write refused: ${rel} is owned by team '${owner.id}'; this task belongs to no team`);
  }
  if (team.owns.some((g) => globMatcher(g)(rel))) return rel;
  const shown = rel === normalizeRelative(requested) ? rel : `${requested} (resolves to ${rel})`;
  throw new FenceError(
    `write refused: ${shown} is outside team '${team.id}' owned paths (${team.owns.join(', ')})` +
      (owner ? `; it is owned by team '${owner.id}'` : ''),
  );
}
