#!/usr/bin/env node
/**
 * The CI step of mutation testing (README, Mutation testing): Stryker's incremental mode over the
 * groups of stryker.groups.mjs whose modules or tests changed since their incremental file
 * (reports/incremental/<group>.json) was last committed, smallest group first, within a budget of
 * ten minutes in all.
 *
 * - A group that changed runs against a copy of its committed incremental file, so only the mutants
 *   the change touches are tested again, and the work tree stays as it was (`--write` updates the
 *   file in place instead, as `npm run mutate` does).
 * - It fails (exit 1) when a group it ran is under the break threshold, or Stryker could not run.
 * - It does not fail for what it did not run: a group with no committed incremental file (its first
 *   run is a full one, too long for CI), a run still going at the end of the budget (stopped) and the
 *   groups left after it. Each is printed with why, and with the command that runs it.
 *
 * `node scripts/mutate-changed.mjs [--budget <seconds>] [--write] [--dry-run]`
 */
import { execFileSync, spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Stryker's `mutate` entries may carry a line range (`file.ts:10-40`); git wants the file. */
const fileOf = (pattern) => pattern.replace(/:\d+(?:-\d+)?$/, '');

function git(cwd, args) {
  return execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
}

const lines = (text) => text.split('\n').filter(Boolean);

/**
 * Which groups to run, and why each is run or not. A group runs when a file matching its modules or
 * tests differs from the commit that last wrote its incremental file: committed since, changed in the
 * work tree, or new and not yet added (a new test file of the group). The comparison is the one
 * Stryker's incremental mode makes (modules and test files), so a group selected here always has
 * something to test again.
 *
 * @param {{ cwd: string, groups: Record<string, { mutate: string[], tests: string[] }>, incrementalDir?: string }} options
 * @returns {{ group: string, run: boolean, reason: string, since?: string, changed: string[] }[]}
 */
export function selectGroups({ cwd, groups, incrementalDir = 'reports/incremental' }) {
  return Object.entries(groups).map(([group, { mutate, tests }]) => {
    const file = `${incrementalDir}/${group}.json`;
    const since = git(cwd, ['log', '-1', '--format=%H', '--', file]);
    if (!since) {
      return {
        group,
        run: false,
        reason: `never measured (no committed ${file}); a first run tests every mutant: npm run mutate -- ${group}`,
        changed: [],
      };
    }
    const specs = [...mutate.map(fileOf), ...tests].map((p) => `:(glob)${p}`);
    const changed = [
      ...new Set([
        ...lines(git(cwd, ['diff', '--name-only', since, '--', ...specs])),
        ...lines(git(cwd, ['ls-files', '--others', '--exclude-standard', '--', ...specs])),
      ]),
    ].sort();
    const at = since.slice(0, 10);
    return changed.length > 0
      ? { group, run: true, reason: `changed since ${at}: ${changed.join(', ')}`, since, changed }
      : { group, run: false, reason: `unchanged since ${at}, which wrote ${file}`, since, changed };
  });
}

/** Stryker's mutation score of a JSON report: detected (killed, timed out) over all valid mutants. */
export function scoreOf(report) {
  const mutants = Object.values(report.files).flatMap((f) => f.mutants);
  const detected = mutants.filter((m) => m.status === 'Killed' || m.status === 'Timeout').length;
  const valid = detected + mutants.filter((m) => m.status === 'Survived' || m.status === 'NoCoverage').length;
  return valid === 0 ? 100 : (100 * detected) / valid;
}

/** Mutants in a group's incremental file: how long its run may be, so the smaller groups go first. */
function sizeOf(cwd, group) {
  try {
    return Object.values(JSON.parse(readFileSync(path.join(cwd, 'reports/incremental', `${group}.json`), 'utf8')).files).reduce(
      (n, f) => n + f.mutants.length,
      0,
    );
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** The sandboxes in Stryker's temporary folder (`tempDirName` of stryker.config.mjs). */
function sandboxes(cwd) {
  try {
    return readdirSync(path.join(cwd, '.stryker-tmp'));
  } catch {
    return [];
  }
}

/** One Stryker run of a group, stopped (the whole process group) once `ms` have passed. */
function runStryker(cwd, group, args, ms) {
  const stryker = path.join(cwd, 'node_modules/@stryker-mutator/core/bin/stryker.js');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [stryker, 'run', ...args], {
      cwd,
      stdio: 'inherit',
      detached: true,
      env: { ...process.env, HANGAR_MUTATE: group },
    });
    try {
      os.setPriority(child.pid, 19);
    } catch {
      // Not permitted here: run at normal priority.
    }
    const signal = (name) => {
      try {
        process.kill(-child.pid, name);
      } catch {
        // Already gone.
      }
    };
    let stopped = false;
    let kill;
    // SIGTERM first (Stryker then removes its sandbox), SIGKILL if it has not ended 30 s later.
    const timer = setTimeout(() => {
      stopped = true;
      signal('SIGTERM');
      kill = setTimeout(() => signal('SIGKILL'), 30_000);
    }, ms);
    child.on('exit', (code) => {
      clearTimeout(timer);
      clearTimeout(kill);
      resolve({ code: code ?? 1, stopped });
    });
  });
}

async function main(argv) {
  const cwd = fileURLToPath(new URL('..', import.meta.url));
  const { MUTATION_GROUPS } = await import('../stryker.groups.mjs');
  const budgetAt = argv.indexOf('--budget');
  const budgetMs = 1000 * (budgetAt >= 0 ? Number(argv[budgetAt + 1]) : 600);
  const write = argv.includes('--write');
  const dryRun = argv.includes('--dry-run');
  const started = Date.now();

  const selection = selectGroups({ cwd, groups: MUTATION_GROUPS });
  for (const s of selection.filter((x) => !x.run)) console.log(`mutate-changed: ${s.group}: not run, ${s.reason}`);
  const toRun = selection.filter((s) => s.run).sort((a, b) => sizeOf(cwd, a.group) - sizeOf(cwd, b.group));
  if (toRun.length === 0) {
    console.log('mutate-changed: no group changed since its incremental file; nothing to run');
    return 0;
  }
  if (dryRun) {
    for (const s of toRun) console.log(`mutate-changed: ${s.group}: would run, ${s.reason}`);
    return 0;
  }

  const tmp = mkdtempSync(path.join(os.tmpdir(), 'hangar-mutate-changed-'));
  const results = [];
  try {
    for (const s of toRun) {
      const left = budgetMs - (Date.now() - started);
      // Stryker's start and its first run of the group's tests take a minute or more on two cores.
      if (left < 60_000) {
        results.push({ group: s.group, outcome: 'skipped', why: 'no time left in the budget' });
        continue;
      }
      console.log(`mutate-changed: ${s.group}: running, ${s.reason}`);
      const committed = path.join(cwd, 'reports/incremental', `${s.group}.json`);
      const incrementalFile = write ? committed : path.join(tmp, `${s.group}.json`);
      if (!write && existsSync(committed)) copyFileSync(committed, incrementalFile);
      const groupStarted = Date.now();
      const before = new Set(sandboxes(cwd));
      const { code, stopped } = await runStryker(cwd, s.group, ['--incrementalFile', incrementalFile], left);
      const secs = Math.round((Date.now() - groupStarted) / 1000);
      if (stopped) {
        // A stopped Stryker leaves its sandbox behind (a copy of the project): this run's only.
        for (const dir of sandboxes(cwd))
          if (!before.has(dir)) rmSync(path.join(cwd, '.stryker-tmp', dir), { recursive: true, force: true });
        results.push({ group: s.group, outcome: 'skipped', why: `stopped at the end of the budget after ${secs} s` });
        continue;
      }
      let score = null;
      try {
        score = scoreOf(JSON.parse(readFileSync(path.join(cwd, 'reports/mutation', `${s.group}.json`), 'utf8')));
      } catch {
        // No report: Stryker failed before it wrote one; the exit code says so.
      }
      results.push({
        group: s.group,
        outcome: code === 0 ? 'passed' : 'failed',
        why: `${score === null ? 'no report' : `score ${score.toFixed(1)} %`}, exit code ${code}, ${secs} s`,
      });
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }

  console.log(`\nmutate-changed: ${Math.round((Date.now() - started) / 1000)} s in all`);
  for (const r of results) {
    const hint =
      r.outcome === 'skipped' ? `; run it with: npm run mutate -- ${r.group}, and commit reports/incremental/${r.group}.json` : '';
    console.log(`mutate-changed: ${r.group}: ${r.outcome} (${r.why})${hint}`);
  }
  return results.some((r) => r.outcome === 'failed') ? 1 : 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2));
}
