import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterEach, describe, expect, it } from 'vitest';
import { evaluate } from '../../bench/lib/figures.mjs';
import { markdownTable, mergeResults, type Results, replaceTable, TABLE_END, TABLE_START } from '../../bench/lib/results.mjs';

const repo = path.resolve(import.meta.dirname, '..', '..');
const fixtures = path.join(repo, 'test', 'fixtures', 'bench');
const run = promisify(execFile);
const temps: string[] = [];
afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});
async function temp(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'hangar-bench-test-'));
  temps.push(dir);
  return dir;
}

/** Runs bench/run.mjs on the fixture folder; resolves with its exit code, output and results. */
async function runner(filter: string, out: string) {
  const result = await run(process.execPath, [path.join(repo, 'bench', 'run.mjs'), '--dir', fixtures, '--out', out, filter], {
    cwd: repo,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout }),
    (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
  );
  const results = JSON.parse(await readFile(path.join(out, 'results.json'), 'utf8'));
  const runs = await readdir(path.join(out, 'runs'));
  return { ...result, results, runs };
}

describe('npm run bench (bench/run.mjs)', () => {
  it('exits non-zero when a figure misses its target, and the summary and the JSON say MISS', async () => {
    const out = await temp();
    const { code, stdout, results, runs } = await runner('misses', out);
    expect(code).not.toBe(0);
    const summary = stdout.slice(stdout.indexOf('=== summary'));
    expect(summary).toContain('1 missed');
    expect(summary).toMatch(/MISS\s+misses-target\s+fixture: twice the baseline\s+20 req\/s\s+2\s+≤ 1×/);
    expect(summary).toMatch(/PASS\s+misses-target\s+fixture: within target/);
    const miss = results.figures.find((f: { name: string }) => f.name === 'fixture: twice the baseline');
    expect(miss).toMatchObject({
      bench: 'misses-target.mjs',
      value: 20,
      unit: 'req/s',
      baseline: { label: 'bare', value: 10 },
      ratio: 2,
      pass: false,
      target: { text: '≤ 1×' },
    });
    expect(miss.machine).toMatchObject({ cpus: os.availableParallelism(), node: process.version });
    expect(Date.parse(miss.date)).toBeGreaterThan(Date.now() - 60_000);
    expect(miss.revision.commit).toMatch(/^[0-9a-f]{7,}$/);
    expect(runs).toHaveLength(1);
    const own = JSON.parse(await readFile(path.join(out, 'runs', runs[0]!), 'utf8'));
    expect(own.figures.map((f: { pass: boolean }) => f.pass)).toEqual([true, false]);
  });

  it('exits 0 when every figure meets its target; a context figure never fails the run', async () => {
    const out = await temp();
    const { code, stdout, results } = await runner('meets', out);
    expect(code).toBe(0);
    expect(stdout).toContain('0 missed');
    expect(results.figures.map((f: { name: string; pass: boolean | null }) => [f.name, f.pass])).toEqual([
      ['fixture: a loop of 100,000 additions', true],
      ['fixture: context only', null],
    ]);
  });

  it('fails a run whose benchmark crashes, keeping the figures it recorded before', async () => {
    const out = await temp();
    const { code, results } = await runner('crashes', out);
    expect(code).not.toBe(0);
    expect(results.figures.map((f: { name: string; pass: boolean }) => [f.name, f.pass])).toEqual([
      ['fixture: before the crash', true],
      ['crashes.mjs exited with 1', false],
    ]);
  });

  it('keeps the latest figures of benchmarks this run did not cover in results.json', async () => {
    const out = await temp();
    await runner('misses', out);
    const { results } = await runner('meets', out);
    expect(results.figures.map((f: { bench: string }) => f.bench)).toEqual([
      'meets-target.bench.mjs',
      'meets-target.bench.mjs',
      'misses-target.mjs',
      'misses-target.mjs',
    ]);
  });

  it('removes what a benchmark leaves in the temp folder once it exits', async () => {
    const out = await temp();
    const { code, results } = await runner('leaves-temp-files', out);
    expect(code).toBe(0);
    const left: string = results.figures.find((f: { name: string }) => f.name === 'fixture: a workspace left behind').detail;
    // The benchmark's own temp folder, not the one the runner was given: nothing of anyone else's is removed.
    expect(path.basename(path.dirname(left))).toMatch(/^hangar-bench-run-/);
    expect(path.dirname(path.dirname(left))).toBe(os.tmpdir());
    expect(existsSync(path.dirname(left))).toBe(false);
  });

  it('keeps one figure per name: the last recorded, when a benchmark recorded one twice', () => {
    const figure = (name: string, value: number) => ({ bench: 'a.bench.ts', name, value }) as never;
    const merged = mergeResults(
      { schema: 1, updated: '', figures: [] } as never,
      { benches: ['a.bench.ts'], date: 'd', figures: [figure('x', 1), figure('y', 2), figure('x', 3)] } as never,
    );
    expect(merged.figures.map((f: { name: string; value: number }) => [f.name, f.value])).toEqual([
      ['x', 3],
      ['y', 2],
    ]);
  });
});

describe('npm run bench -- --profile NAME', () => {
  it('writes a .cpuprofile of the benchmark process and of each server process it starts', async () => {
    const out = await temp();
    await run(process.execPath, [path.join(repo, 'bench', 'run.mjs'), '--dir', fixtures, '--out', out, '--profile', 'starts-server'], {
      cwd: repo,
    });
    // Figures slowed by the profiler stay out of the latest results.
    expect(existsSync(path.join(out, 'results.json'))).toBe(false);
    const [stamp] = await readdir(path.join(out, 'profiles'));
    const own = path.join(out, 'profiles', stamp!, 'starts-server.mjs');
    for (const folder of ['benchmark-process', 'server-processes']) {
      const files = await readdir(path.join(own, folder));
      expect(files.filter((f) => f.endsWith('.cpuprofile'))).toHaveLength(1);
      const profile = JSON.parse(await readFile(path.join(own, folder, files[0]!), 'utf8'));
      expect(profile.nodes.length).toBeGreaterThan(1);
    }
  });
});

describe('a figure', () => {
  it('passes by its target on the value or on the ratio to its baseline, and by every extra condition', () => {
    expect(evaluate({ name: 'a', value: 4, unit: 'ms', target: { on: 'value', op: '<=', limit: 5, unit: 'ms' } }).pass).toBe(true);
    expect(
      evaluate({
        name: 'b',
        value: 30,
        unit: 'req/s',
        baseline: { label: 'bare', value: 100 },
        target: { on: 'ratio', op: '>=', limit: 0.4 },
      }),
    ).toMatchObject({ ratio: 0.3, pass: false });
    expect(
      evaluate({
        name: 'c',
        value: 4,
        unit: 'ms',
        target: { on: 'value', op: '<=', limit: 5 },
        also: [{ label: 'every event delivered', pass: false }],
      }).pass,
    ).toBe(false);
    expect(() => evaluate({ name: 'd', value: 1, unit: 'ms', target: { on: 'ratio', op: '<=', limit: 1 } })).toThrow(/needs a baseline/);
    expect(() => evaluate({ name: 'e', value: Number.NaN, unit: 'ms' })).toThrow(/must be a number/);
  });
});

const sample: Results = {
  schema: 1,
  updated: '2026-01-02T03:04:05.000Z',
  figures: [
    {
      bench: 'agents.bench.ts',
      name: 'POST /invoke (no-op agent) throughput',
      value: 9748,
      unit: 'req/s',
      baseline: { label: 'bare node:http, same JSON', value: 37811 },
      ratio: 0.2578,
      target: { on: 'ratio', op: '>=', limit: 0.4, text: '≥ 0.4×' },
      also: [],
      pass: false,
      detail: null,
      machine: { cpus: 2, cpu_model: 'AMD EPYC', memory_gb: 8, node: 'v24.1.0', platform: 'linux-x64', loadavg: [3.5, 2, 1] },
      date: '2026-01-02T03:04:05.000Z',
      revision: { commit: 'abc1234', dirty: true },
    },
    {
      bench: 'endpoints.mjs',
      name: 'OAuth2: 1000 concurrent calls | expired token',
      value: 1,
      unit: 'token requests',
      baseline: null,
      ratio: null,
      target: { on: 'value', op: '=', limit: 1, text: '= 1 token requests' },
      also: [],
      pass: true,
      detail: null,
      machine: { cpus: 2, cpu_model: 'AMD EPYC', memory_gb: 8, node: 'v24.1.0', platform: 'linux-x64', loadavg: [0.5, 1, 1] },
      date: '2026-01-01T00:00:00.000Z',
    },
  ],
};

describe('the README table (scripts/bench-table.mjs)', () => {
  it('shows every figure with its baseline, ratio, target, verdict, date and load, and names the machine', () => {
    const table = markdownTable(sample);
    expect(table.split('\n').slice(0, 4)).toEqual([
      '| bench | what | figure | baseline (same run) | ratio | target | result | measured |',
      '|---|---|---|---|---|---|---|---|',
      '| agents | POST /invoke (no-op agent) throughput | 9748 req/s | bare node:http, same JSON: 37811 req/s | 0.258 | ≥ 0.4× | **MISS** | 2026-01-02, load 3.5, abc1234+ |',
      '| endpoints | OAuth2: 1000 concurrent calls \\| expired token | 1 token requests |  |  | = 1 token requests | PASS | 2026-01-01, load 0.5 |',
    ]);
    expect(table).toContain('2 figures, 1 missing their target. Measured on 2 CPUs (AMD EPYC), 8 GB, Node v24.1.0, linux-x64');
  });

  it('rewrites only the text between the markers of a README, from a results file', async () => {
    const dir = await temp();
    const readme = path.join(dir, 'README.md');
    const results = path.join(dir, 'results.json');
    const committed = path.join(dir, 'committed.json');
    await writeFile(readme, `# Title\n\n## Benchmarks\n\nBefore.\n\n${TABLE_START}\n| stale | table |\n${TABLE_END}\n\nAfter.\n`);
    await writeFile(results, JSON.stringify(sample));
    const script = path.join(repo, 'scripts', 'bench-table.mjs');
    await run(process.execPath, [script, results, '--readme', readme, '--committed', committed]);
    const text = await readFile(readme, 'utf8');
    expect(text).toBe(`# Title\n\n## Benchmarks\n\nBefore.\n\n${TABLE_START}\n${markdownTable(sample)}\n${TABLE_END}\n\nAfter.\n`);
    expect(JSON.parse(await readFile(committed, 'utf8'))).toEqual(sample);
    await run(process.execPath, [script, '--check', '--readme', readme, '--committed', committed]);
    await writeFile(readme, text.replace('9748 req/s', '12000 req/s'));
    await expect(run(process.execPath, [script, '--check', '--readme', readme, '--committed', committed])).rejects.toMatchObject({
      code: 1,
    });
  });

  it('refuses a README without the markers', () => {
    expect(() => replaceTable('# no table here\n', sample)).toThrow(/no benchmark table markers/);
  });

  it("matches the repository's README and bench/results.json", async () => {
    await run(process.execPath, [path.join(repo, 'scripts', 'bench-table.mjs'), '--check']);
  });
});
