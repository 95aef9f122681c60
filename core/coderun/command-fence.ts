/**
 * The after-command fence. `write_file` is fenced before it writes, but `run_command` runs a shell
 * that can write anywhere in the worktree, so it is checked with git around the command instead:
 * before it runs, the worker records a fingerprint of every changed file in *foreign* paths (owned
 * by a team other than the task's, or by any team for a task no team owns) and stores their bytes
 * as git blobs; after it returns, the same fingerprints are taken again, and every foreign path
 * whose fingerprint moved is a write the task was not allowed to make. The caller decides which of
 * those to revert (the run knows which changes are another task's legitimate fenced writes made in
 * the same window) and `restore` puts them back exactly as they were before the command: another
 * team's uncommitted work is restored from its blob, a clean file from the index, a new file removed.
 *
 * The snapshot's blobs go into the repository's object store (worktrees share it) unreferenced;
 * `git gc` prunes them in time. Only foreign files that were already changed are stored.
 *
 * Accepted edges: paths git ignores are invisible here (build output, caches — and never committed);
 * another team's uncommitted file restored from its blob comes back with default permissions (a
 * clean file gets its mode from the index); file names with a newline are not checked;
 * a directory a command creates in foreign paths is emptied, not removed; a process the command
 * leaves running in the background can still write later (the run's after-loop check catches what
 * it left in idle teams' paths).
 */
import { spawn } from 'node:child_process';
import { lstat, mkdir, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { FenceTeam } from './fence.js';
import { globMatcher } from './ownership.js';

/** A foreign path a command changed, and the team that owns it. */
export interface ForeignChange {
  path: string;
  owner: string;
}

/** Fingerprint per foreign path that differed from the index before the command. */
export type CommandSnapshot = ReadonlyMap<string, string>;

const DELETED = 'deleted';

/**
 * The team a write to `rel` by `team` would trespass on, or undefined when the write is the
 * team's own (or lands where no team owns anything). Same rule as the write fence.
 */
export function foreignOwner(rel: string, team: FenceTeam, teams: readonly FenceTeam[]): string | undefined {
  const owns = (t: FenceTeam) => t.owns.some((g) => globMatcher(g)(rel));
  if (!team.unowned && owns(team)) return undefined;
  return teams.find((t) => t.id !== team.id && owns(t))?.id;
}

function git(root: string, args: string[], input?: string): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    // Literal pathspecs: a file named `*.mjs` must mean that file, not a glob over the worktree.
    const child = spawn('git', args, {
      cwd: root,
      env: { ...process.env, GIT_LITERAL_PATHSPECS: '1', GIT_OPTIONAL_LOCKS: '0' },
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
    const out: Buffer[] = [];
    let err = '';
    child.stdout!.on('data', (b: Buffer) => out.push(b));
    child.stderr!.on('data', (b: Buffer) => (err += b.toString()));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(Buffer.concat(out)) : reject(new Error(`git ${args[0]} failed (${code}): ${err.trim()}`)),
    );
    if (input !== undefined) {
      // git exiting early (a bad path) closes its stdin: that EPIPE is reported by `close`, and an
      // unhandled stream error would take the whole worker down.
      child.stdin!.on('error', () => undefined);
      child.stdin!.end(input);
    }
  });
}

/** Paths that differ from the index or are untracked (ignored ones excluded), repository-relative. */
async function changedPaths(root: string): Promise<string[]> {
  const raw = (
    await git(root, ['status', '--porcelain=v1', '-z', '--untracked-files=all', '--no-renames', '--ignore-submodules=all'])
  ).toString('utf8');
  // Entries are "XY path" separated by NUL; without renames there is no second path per entry.
  return raw
    .split('\0')
    .filter((e) => e.length > 3)
    .map((e) => e.slice(3));
}

/** Fingerprint each path: a blob id for a file (stored in git when `store`), the link target for a symlink, or `deleted`. */
async function fingerprints(root: string, paths: string[], store: boolean): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const files: string[] = [];
  for (const rel of paths) {
    const st = await lstat(path.join(root, rel)).catch(() => undefined);
    if (!st) out.set(rel, DELETED);
    else if (st.isSymbolicLink()) out.set(rel, `link:${await readlink(path.join(root, rel))}`);
    else if (st.isFile() && !rel.includes('\n')) files.push(rel);
  }
  if (files.length) {
    const ids = (await git(root, ['hash-object', ...(store ? ['-w'] : []), '--no-filters', '--stdin-paths'], files.join('\n') + '\n'))
      .toString('utf8')
      .trim()
      .split('\n');
    files.forEach((rel, i) => out.set(rel, `blob:${ids[i]}`));
  }
  return out;
}

async function foreignFingerprints(
  root: string,
  team: FenceTeam,
  teams: readonly FenceTeam[],
  store: boolean,
): Promise<Map<string, string>> {
  const foreign = (await changedPaths(root)).filter((rel) => foreignOwner(rel, team, teams) !== undefined);
  return fingerprints(root, foreign, store);
}

/** Before a command: foreign changes so far, their bytes kept in git's object store for `restore`. */
export function snapshotForeign(root: string, team: FenceTeam, teams: readonly FenceTeam[]): Promise<CommandSnapshot> {
  return foreignFingerprints(root, team, teams, true);
}

/** After a command: the foreign paths whose content (or existence) it changed, sorted. */
export async function foreignChanges(
  root: string,
  team: FenceTeam,
  teams: readonly FenceTeam[],
  before: CommandSnapshot,
): Promise<ForeignChange[]> {
  const after = await foreignFingerprints(root, team, teams, false);
  const moved = [...new Set([...before.keys(), ...after.keys()])].filter((rel) => before.get(rel) !== after.get(rel));
  return moved.sort().map((rel) => ({ path: rel, owner: foreignOwner(rel, team, teams)! }));
}

/** Index entries (mode and blob id) of `paths`; untracked ones are absent. */
async function indexEntries(root: string, paths: string[]): Promise<Map<string, { mode: string; blob: string }>> {
  const out = new Map<string, { mode: string; blob: string }>();
  if (!paths.length) return out;
  // Entries are "mode blob stage<TAB>path", NUL-separated.
  for (const entry of (await git(root, ['ls-files', '-s', '-z', '--', ...paths])).toString('utf8').split('\0').filter(Boolean)) {
    const [meta, rel] = [entry.slice(0, entry.indexOf('\t')), entry.slice(entry.indexOf('\t') + 1)];
    const [mode, blob] = meta.split(' ');
    out.set(rel, { mode: mode!, blob: blob! });
  }
  return out;
}

/**
 * Put `paths` back as they were when `before` was taken. Nothing here takes git's index lock
 * (files are written from blobs, not checked out): a task committing on the server thread at the
 * same moment must not fail on `index.lock`.
 */
export async function restore(root: string, before: CommandSnapshot, paths: readonly string[]): Promise<void> {
  const index = await indexEntries(
    root,
    paths.filter((rel) => !before.has(rel)),
  );
  for (const rel of paths) {
    const abs = path.join(root, rel);
    const was = before.get(rel);
    if (was === undefined) {
      // It matched the index before the command: tracked files come back from the index, new ones go.
      const entry = index.get(rel);
      await rm(abs, { recursive: true, force: true });
      if (!entry) continue;
      await mkdir(path.dirname(abs), { recursive: true });
      const bytes = await git(root, ['cat-file', 'blob', entry.blob]);
      if (entry.mode === '120000') await symlink(bytes.toString('utf8'), abs);
      else await writeFile(abs, bytes, { mode: entry.mode === '100755' ? 0o755 : 0o644 });
    } else if (was === DELETED) {
      await rm(abs, { recursive: true, force: true });
    } else {
      await rm(abs, { recursive: true, force: true });
      await mkdir(path.dirname(abs), { recursive: true });
      if (was.startsWith('link:')) await symlink(was.slice('link:'.length), abs);
      else await writeFile(abs, await git(root, ['cat-file', 'blob', was.slice('blob:'.length)]));
    }
  }
}
