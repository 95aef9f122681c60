/**
 * Git for a run, through simple-git. A run works in its own worktree on a run branch
 * (`hangar/run-<id>`) created from the repository's HEAD, so the user's working tree is never
 * touched — not during the run and not on failure or cancellation. Each finished task is one
 * commit staging only the files that task wrote, so every change is attributable and revertible
 * (`git revert <sha>`). Commits are serialised: parallel tasks share one index.
 */
import { existsSync } from 'node:fs';
import { mkdir, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { type SimpleGit, simpleGit } from 'simple-git';

const IDENTITY = ['user.name=Hangar', 'user.email=hangar@localhost', 'commit.gpgsign=false'];

export class GitError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'GitError';
  }
}

export class RunWorkspace {
  private queue: Promise<unknown> = Promise.resolve();

  private constructor(
    readonly repo: string,
    readonly dir: string,
    readonly branch: string,
    readonly base: string,
    private readonly git: SimpleGit,
  ) {}

  /**
   * Create the run branch and its worktree under `worktrees/<name>` (`name` is the run's id, or a
   * name per attempt when a run runs again after its instance died: a fresh branch and folder).
   */
  static async open(repo: string, runId: string, worktrees: string, name = runId): Promise<RunWorkspace> {
    const main = simpleGit({ baseDir: repo, config: IDENTITY });
    if (!(await main.checkIsRepo().catch(() => false))) throw new GitError(`${repo} is not a git repository (git init it first)`);
    let base: string;
    try {
      base = (await main.revparse(['HEAD'])).trim();
    } catch {
      throw new GitError(`${repo} has no commit yet; commit something first so the run has a base`);
    }
    const branch = `hangar/run-${name}`;
    const dir = path.join(worktrees, name);
    await mkdir(worktrees, { recursive: true });
    await main.raw(['worktree', 'add', '-q', '-b', branch, dir, base]);
    // Dependencies are rarely committed: link the repository's node_modules so acceptance
    // commands run in the worktree as they would in the repository. The fence resolves symlinks,
    // so agents cannot write through the link.
    const modules = path.join(repo, 'node_modules');
    if (existsSync(modules) && !existsSync(path.join(dir, 'node_modules')))
      await symlink(modules, path.join(dir, 'node_modules'), 'dir').catch(() => undefined);
    return new RunWorkspace(repo, dir, branch, base, simpleGit({ baseDir: dir, config: IDENTITY }));
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn);
    this.queue = next.catch(() => undefined);
    return next;
  }

  /** Commit exactly `files` (paths relative to the repository); null when nothing changed. */
  commit(files: readonly string[], message: string): Promise<string | null> {
    return this.serial(async () => {
      if (!files.length) return null;
      await this.git.raw(['add', '-A', '--', ...files]);
      const staged = (await this.git.raw(['diff', '--cached', '--name-only'])).trim();
      if (!staged) return null;
      await this.git.raw(['commit', '-q', '-m', message, '--', ...files]);
      return (await this.git.revparse(['HEAD'])).trim();
    });
  }

  /**
   * Throw away what is not committed: of `files` (a failed task's writes), or of the whole worktree.
   * Tracked files go back to HEAD and new ones are removed, each with the command that handles it
   * (one `checkout` over a mix of tracked and new paths fails as a whole).
   */
  discard(files?: readonly string[]): Promise<void> {
    return this.serial(async () => {
      if (!files) {
        await this.git.raw(['reset', '-q', '--hard', 'HEAD']);
        await this.git.raw(['clean', '-fdq']);
        return;
      }
      if (!files.length) return;
      const tracked = (await this.git.raw(['ls-files', '--', ...files])).split('\n').filter(Boolean);
      await this.git.raw(['reset', '-q', 'HEAD', '--', ...files]).catch(() => undefined);
      if (tracked.length) await this.git.raw(['checkout', '-q', 'HEAD', '--', ...tracked]);
      await this.git.raw(['clean', '-fdq', '--', ...files]);
    });
  }

  async commits(): Promise<Array<{ sha: string; message: string }>> {
    const log = await this.git.raw(['log', '--format=%H%x09%s', `${this.base}..HEAD`]);
    return log
      .trim()
      .split('\n')
      .filter(Boolean)
      .map((l) => {
        const [sha, ...rest] = l.split('\t');
        return { sha: sha!, message: rest.join('\t') };
      });
  }

  /**
   * Serialized with commits: `git status` may take the worktree's index.lock to refresh the index,
   * and a parallel task's `git add` then fails on the lock (measured: 11 failures in 320 races).
   */
  status(): Promise<string[]> {
    return this.serial(async () => (await this.git.status()).files.map((f) => f.path));
  }

  /** Remove the worktree (uncommitted changes go with it); the run branch and its commits stay. */
  close(): Promise<void> {
    return this.serial(async () => {
      const main = simpleGit({ baseDir: this.repo, config: IDENTITY });
      await main.raw(['worktree', 'remove', '--force', this.dir]).catch(async () => {
        await rm(this.dir, { recursive: true, force: true });
        await main.raw(['worktree', 'prune']).catch(() => undefined);
      });
    });
  }
}
