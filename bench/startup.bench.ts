/**
 * Start-up of the example workspace (issue 16): spawn to `/readiness` 200 with this repository's
 * drop-in folders, against a bare node:http process started the same way in the same run. The
 * other start-up figures (1, 100 and 1,000 agents to every agent and plugin healthy) are in
 * kernel.bench.ts.
 */
import { spawn } from 'node:child_process';
import { cp } from 'node:fs/promises';
import path from 'node:path';
import { BARE_SERVER, freshDist, hangarArgs, median, repo, report, round, stop, timeToReady, waitFor, workspace } from './lib/measure.js';

/**
 * The example workspace (this repository's drop-in folders) from spawn to `/readiness` 200, as a
 * user's second start finds it: one start first fills the caches every start after it uses (the
 * drop-in build cache, the worker bundles, V8's compile cache). Prints where start-up time goes,
 * from the server's own `ready in N ms` line.
 */
async function coldStartExample(): Promise<void> {
  freshDist();
  const root = await workspace({});
  for (const folder of ['agents', 'endpoints', 'ingestors', 'pipelines', 'plugins', 'notebooks', 'teams', 'tools']) {
    await cp(path.join(repo, folder), path.join(root, folder), { recursive: true }).catch(() => undefined);
  }
  const once = async (): Promise<{ ms: number; ready: string }> => {
    // Before every start, outside the timing: others' edits in the work tree would otherwise make
    // bin/hangar.mjs rebuild dist/ inside a timed start (seen as 4-5 s outliers).
    freshDist();
    const started = performance.now();
    const child = spawn(process.execPath, hangarArgs(root), { stdio: ['ignore', 'pipe', 'pipe'], cwd: repo });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const url = await new Promise<string>((resolve, reject) => {
      const timer = setInterval(() => {
        const m = /(http:\/\/127\.0\.0\.1:\d+)/.exec(out);
        if (m) clearInterval(timer), resolve(m[1]!);
      }, 1);
      child.once('exit', (code) => (clearInterval(timer), reject(new Error(`exited ${code}: ${out}`))));
    });
    await waitFor(`${url}/readiness`, () => true, 1);
    const ms = performance.now() - started;
    await stop(child);
    return { ms, ready: /ready in .*/.exec(out)?.[0] ?? '' };
  };
  await once();
  const bare: number[] = [];
  const runs: Array<{ ms: number; ready: string }> = [];
  for (let i = 0; i < 5; i++) {
    bare.push(await timeToReady(['-e', BARE_SERVER], '/'));
    runs.push(await once());
  }
  const sorted = [...runs].sort((a, b) => a.ms - b.ms);
  const middle = sorted[Math.floor(sorted.length / 2)]!;
  console.log(`  where the median start's time went (in process, after loading the bundle): ${middle.ready}`);
  report({
    name: 'cold start, the example workspace, spawn to /readiness',
    value: middle.ms,
    unit: 'ms',
    baseline: { label: 'bare node:http process to its first 200', value: median(bare) },
    target: { on: 'value', op: '<=', limit: 500, unit: 'ms' },
    detail: `${round(middle.ms)} ms median of 5 (runs ${runs.map((r) => round(r.ms, 0)).join(', ')} ms) vs bare node:http ${round(median(bare))} ms`,
  });
}

await coldStartExample();
