/**
 * The CI step's choice of mutation groups (scripts/mutate-changed.mjs, #30), on a real git repository
 * in a temporary folder: a group runs when one of its modules or tests differs from the commit that
 * last wrote its incremental file (committed since, edited in the work tree, or a new file not yet
 * added), and not when only another group's files changed, when the incremental file was committed
 * after the change, or when there is no committed incremental file at all.
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: a plain ESM script without type declarations.
import { scoreOf, selectGroups } from '../../scripts/mutate-changed.mjs';

interface Selected {
  group: string;
  run: boolean;
  reason: string;
  changed: string[];
}

const groups = {
  store: { mutate: ['src/store/sqlite-*.ts'], tests: ['test/store/*.test.ts'] },
  gates: { mutate: ['src/gates.ts:10-40'], tests: ['test/gates.test.ts'] },
  fresh: { mutate: ['src/fresh.ts'], tests: ['test/fresh.test.ts'] },
};

const repos: string[] = [];
afterEach(async () => {
  for (const dir of repos.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function repo(): Promise<{
  dir: string;
  write: (file: string, text: string) => Promise<void>;
  commit: (...files: string[]) => void;
}> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-mutate-changed-'));
  repos.push(dir);
  const git = (...args: string[]) =>
    execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', '-c', 'commit.gpgsign=false', ...args], {
      cwd: dir,
      stdio: 'pipe',
    });
  git('init', '-q');
  const write = async (file: string, text: string) => {
    await mkdir(path.dirname(path.join(dir, file)), { recursive: true });
    await writeFile(path.join(dir, file), text);
  };
  const commit = (...files: string[]) => {
    git('add', '--', ...files);
    git('commit', '-q', '-m', `change ${files.join(' ')}`, '--', ...files);
  };
  // Every module and test, then the incremental files of the measured groups (not `fresh`).
  const files = [
    'src/store/sqlite-store.ts',
    'src/store/sqlite-logs.ts',
    'src/store/memory.ts',
    'test/store/store.test.ts',
    'src/gates.ts',
    'test/gates.test.ts',
    'src/fresh.ts',
    'test/fresh.test.ts',
  ];
  for (const f of files) await write(f, `// ${f}\n`);
  commit(...files);
  for (const g of ['store', 'gates']) await write(`reports/incremental/${g}.json`, '{"files":{}}\n');
  commit('reports/incremental/store.json', 'reports/incremental/gates.json');
  return { dir, write, commit };
}

const select = (dir: string) => Object.fromEntries((selectGroups({ cwd: dir, groups }) as Selected[]).map((s) => [s.group, s]));

describe('the groups the CI mutation step runs', () => {
  it('runs none when nothing changed since the incremental files, and never a group that has none', async () => {
    const { dir } = await repo();
    const s = select(dir);
    expect([s.store!.run, s.gates!.run, s.fresh!.run]).toEqual([false, false, false]);
    expect(s.store!.reason).toMatch(/^unchanged since [0-9a-f]{10}, which wrote reports\/incremental\/store\.json$/);
    // A group never measured is not run even though its files are newer than everything: a first run tests every mutant.
    expect(s.fresh!.reason).toBe(
      'never measured (no committed reports/incremental/fresh.json); a first run tests every mutant: npm run mutate -- fresh',
    );
  });

  it('runs the group whose module was committed after its incremental file, and only that group', async () => {
    const { dir, write, commit } = await repo();
    await write('src/store/sqlite-logs.ts', '// changed\n');
    commit('src/store/sqlite-logs.ts');
    const s = select(dir);
    expect(s.store).toMatchObject({ run: true, changed: ['src/store/sqlite-logs.ts'] });
    expect(s.store!.reason).toMatch(/^changed since [0-9a-f]{10}: src\/store\/sqlite-logs\.ts$/);
    expect(s.gates!.run).toBe(false);
  });

  it('ignores a file next to the modules that the glob does not name', async () => {
    const { dir, write, commit } = await repo();
    await write('src/store/memory.ts', '// changed\n');
    commit('src/store/memory.ts');
    expect(select(dir).store!.run).toBe(false);
  });

  it('runs a group for a test edited in the work tree, and for a new test file not yet added', async () => {
    const { dir, write } = await repo();
    await write('test/gates.test.ts', '// edited, not committed\n');
    await write('test/store/second.test.ts', '// new\n');
    const s = select(dir);
    expect(s.gates).toMatchObject({ run: true, changed: ['test/gates.test.ts'] });
    expect(s.store).toMatchObject({ run: true, changed: ['test/store/second.test.ts'] });
  });

  it('reads a module with a line range as the whole file', async () => {
    const { dir, write } = await repo();
    await write('src/gates.ts', '// edited\n');
    expect(select(dir).gates).toMatchObject({ run: true, changed: ['src/gates.ts'] });
  });

  it('does not run a group whose incremental file was committed after the change (the change is measured)', async () => {
    const { dir, write, commit } = await repo();
    await write('src/store/sqlite-store.ts', '// changed\n');
    commit('src/store/sqlite-store.ts');
    expect(select(dir).store!.run).toBe(true);
    await write('reports/incremental/store.json', '{"files":{},"again":true}\n');
    commit('reports/incremental/store.json');
    expect(select(dir).store!.run).toBe(false);
    // A group measured for the first time joins the selection from then on.
    await write('reports/incremental/fresh.json', '{"files":{}}\n');
    commit('reports/incremental/fresh.json');
    await write('src/fresh.ts', '// changed\n');
    expect(select(dir).fresh).toMatchObject({ run: true, changed: ['src/fresh.ts'] });
  });
});

describe("the score it checks against the threshold (Stryker's)", () => {
  it('counts killed and timed out over every mutant with a result; ignored ones do not count', () => {
    const mutants = (...statuses: string[]) => statuses.map((status) => ({ status }));
    const report = {
      files: {
        'a.ts': { mutants: mutants('Killed', 'Killed', 'Timeout', 'Survived', 'Ignored') },
        'b.ts': { mutants: mutants('NoCoverage', 'Killed', 'CompileError') },
      },
    };
    expect(scoreOf(report)).toBeCloseTo(66.67, 2);
    expect(scoreOf({ files: { 'c.ts': { mutants: mutants('Ignored') } } })).toBe(100);
  });
});
