// `npm run bench`: runs every benchmark in bench/ in its own process, one after another.
// Benchmarks named *.bench.ts or *.bench.mjs import the code under test from core/ directly and
// are bundled with esbuild first; any other *.mjs (one that only drives the built CLI) runs as is.
// Each prints its figures as medians and as a ratio against a baseline measured in the same run,
// and records them through bench/lib/figures.mjs into a file this runner names.
//
//   npm run bench                     every benchmark
//   npm run bench -- reload           only those whose file name contains "reload"
//   npm run bench -- --profile agents those, with a .cpuprofile of their server(s)
//   --dir <folder>  (BENCH_DIR)  where the benchmarks are (default: bench/)
//   --out <folder>  (BENCH_OUT)  where results go (default: .hangar/bench/)
//
// At the end: a summary table, runs/<date>.json with this run's figures, results.json with the
// latest figure of every benchmark ever run here (bench/lib/results.mjs). The exit code is 1 when
// any figure missed its target, a benchmark crashed or one recorded no figure, as Node's own
// benchmark tooling fails on a broken benchmark: a run that says MISS must not look green.
import { spawnSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import * as esbuild from 'esbuild';
import { FIGURES_ENV, PROFILE_ENV } from './lib/figures.mjs';
import { machine, mergeResults, readResults, SCHEMA, summaryTable } from './lib/results.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { profile: { type: 'string' }, dir: { type: 'string' }, out: { type: 'string' } },
});
const dir = path.resolve(values.dir ?? process.env.BENCH_DIR ?? path.join(repo, 'bench'));
const out = path.resolve(values.out ?? process.env.BENCH_OUT ?? path.join(repo, '.hangar', 'bench'));
const filter = values.profile ?? positionals[0];
mkdirSync(path.join(out, 'runs'), { recursive: true });

const files = readdirSync(dir)
  .filter((f) => (f.endsWith('.bench.ts') || f.endsWith('.mjs')) && f !== 'run.mjs')
  .filter((f) => !filter || f.includes(filter))
  .sort();
if (files.length === 0) {
  console.log(`no benchmark in ${dir} matches ${JSON.stringify(filter)}`);
  process.exit(1);
}

const date = new Date().toISOString();
/** The code measured: HEAD, and whether tracked files differed from it (figures of a dirty tree). */
function revision() {
  const git = (...args) => spawnSync('git', args, { cwd: repo, encoding: 'utf8' });
  const head = git('rev-parse', '--short', 'HEAD');
  if (head.status !== 0) return null;
  return { commit: head.stdout.trim(), dirty: git('status', '--porcelain', '--untracked-files=no').stdout.trim() !== '' };
}
const shown = (file) => (file.startsWith(process.cwd() + path.sep) ? path.relative(process.cwd(), file) : file);
const stamp = date.replace(/[:.]/g, '-');
const profileDir = values.profile ? path.join(out, 'profiles', stamp) : null;
const figures = [];
for (const file of files) {
  let script = path.join(dir, file);
  if (/\.bench\.m?[jt]s$/.test(file)) {
    script = path.join(out, file.replace(/\.(ts|mjs)$/, '.out.mjs'));
    await esbuild.build({
      entryPoints: [path.join(dir, file)],
      outfile: script,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node22',
      packages: 'external',
      alias: { hangar: path.join(repo, 'core', 'sdk.ts') },
      logLevel: 'warning',
    });
  }
  console.log(`\n=== ${file}`);
  const figuresFile = path.join(out, `${file}.figures.jsonl`);
  rmSync(figuresFile, { force: true });
  const env = { ...process.env, [FIGURES_ENV]: figuresFile };
  // The benchmark process itself is profiled too: several benchmarks run their server in-process.
  const nodeArgs = ['--expose-gc'];
  if (profileDir) {
    const own = path.join(profileDir, file);
    // Node names each file by pid and thread; the folders say which process was the server.
    nodeArgs.push('--cpu-prof', `--cpu-prof-dir=${path.join(own, 'benchmark-process')}`);
    env[PROFILE_ENV] = path.join(own, 'server-processes');
  }
  // Each benchmark's workspaces, databases and servers' temporary files go under a folder of its
  // own, removed once it exits (benchmarks do not clean up after themselves: a full run left ~20
  // folders, each 1,000-agent workspace 13 MB).
  // Open to every user like /tmp: as root, the team benchmark's PostgreSQL runs as `postgres`.
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'hangar-bench-run-'));
  chmodSync(scratch, 0o1777);
  env.TMPDIR = scratch;
  const started = machine();
  const code = revision();
  const result = spawnSync(process.execPath, [...nodeArgs, script], { stdio: 'inherit', cwd: repo, env });
  rmSync(scratch, { recursive: true, force: true, maxRetries: 3 });
  const recorded = existsSync(figuresFile)
    ? readFileSync(figuresFile, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((line) => JSON.parse(line))
    : [];
  const stamped = (f) => ({ bench: file, ...f, machine: started, date, revision: code });
  figures.push(...recorded.map(stamped));
  if (result.status !== 0) {
    console.log(`!!! ${file} exited with ${result.status ?? result.signal}`);
    figures.push(stamped(broken(`${file} exited with ${result.status ?? result.signal}`, result.status ?? -1)));
  } else if (recorded.length === 0) {
    figures.push(stamped(broken(`${file} recorded no figure`, 0)));
  }
}

/** A crashed or silent benchmark, as a figure that fails: it must show in the summary and the JSON. */
function broken(name, code) {
  return {
    name,
    value: code,
    unit: 'exit code',
    baseline: null,
    ratio: null,
    target: { on: 'value', op: '=', limit: 0, text: 'exits 0 with figures' },
    also: [],
    pass: false,
    detail: null,
  };
}

const runFile = path.join(out, 'runs', `${stamp}.json`);
const resultsFile = path.join(out, 'results.json');
const run = { schema: SCHEMA, date, benches: files, argv: process.argv.slice(2), profiled: Boolean(profileDir), figures };
writeFileSync(runFile, `${JSON.stringify(run, null, 2)}\n`);
// A profiled run is slowed by the profiler: its figures stay in its own file, out of results.json.
if (!profileDir) {
  const merged = mergeResults(readResults(resultsFile), run);
  writeFileSync(`${resultsFile}.tmp`, `${JSON.stringify(merged, null, 2)}\n`);
  copyFileSync(`${resultsFile}.tmp`, resultsFile);
  rmSync(`${resultsFile}.tmp`);
}

const misses = figures.filter((f) => f.pass === false);
console.log(`\n=== summary (${figures.length} figures, ${misses.length} missed)\n${summaryTable(figures)}\n`);
console.log(`this run:      ${shown(runFile)}`);
console.log(
  `all latest:    ${shown(resultsFile)}  ${profileDir ? '(not updated: figures of a profiled run)' : '(npm run bench:table writes it into the README)'}`,
);
if (profileDir) {
  const profiles = existsSync(profileDir)
    ? readdirSync(profileDir, { recursive: true }).filter((f) => String(f).endsWith('.cpuprofile'))
    : [];
  console.log(
    `CPU profiles:  ${profiles.length ? profiles.map((f) => shown(path.join(profileDir, String(f)))).join('\n               ') : 'none written'}`,
  );
  console.log('               (open in Chrome DevTools → Performance, or VS Code)');
}
process.exit(misses.length ? 1 : 0);
