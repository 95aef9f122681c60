import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RunWorkspace } from '../../core/coderun/git.js';

const repos: string[] = [];
afterEach(() => {
  for (const repo of repos.splice(0)) rmSync(repo, { recursive: true, force: true });
});

describe('RunWorkspace', () => {
  it('never fails a commit on the index lock when a status check of another task overlaps it', async () => {
    const repo = mkdtempSync(path.join(tmpdir(), 'hangar-git-'));
    repos.push(repo);
    const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@t', ...args], { cwd: repo });
    git('init', '-q', '-b', 'main');
    writeFileSync(path.join(repo, 'README.md'), 'x');
    git('add', '-A');
    git('commit', '-q', '-m', 'init');
    const ws = await RunWorkspace.open(repo, 'r1', path.join(repo, '.hangar', 'worktrees'));
    // Parallel tasks share the worktree: one checks for stray writes while another commits.
    const failures: string[] = [];
    for (let i = 0; i < 30; i++) {
      writeFileSync(path.join(ws.dir, `a${i}.mjs`), `export const a = ${i};\n`);
      const [commit] = await Promise.allSettled([
        new Promise((r) => setTimeout(r, i % 6)).then(() => ws.commit([`a${i}.mjs`], `task ${i}`)),
        ws.status(),
      ]);
      if (commit.status === 'rejected') failures.push(String(commit.reason).split('\n')[0]!);
    }
    expect(failures).toEqual([]);
    expect((await ws.commits()).length).toBe(30);
    await ws.close();
  }, 60_000);
});
