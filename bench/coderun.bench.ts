/**
 * Coding-run benchmarks (issue 10):
 * 1. Wave parallelism: a plan of 4 independent tasks against a loopback model answering in 500 ms,
 *    run with max_parallel 1 (baseline) and 4. Model waits alone would give 13 vs 4 sequential
 *    answers (3.25×); the fixed costs no wave overlaps (worktree, planner, one gate, integration,
 *    about 2.5 s here) dilute that, so the target is 1.8×.
 * 2. Harness overhead per task: wall time of the max_parallel 1 run minus the time spent waiting
 *    for the model, divided by the tasks (workers, tools, git commits, reviews, gates).
 * 3. Write-fence check (symlink-resolving) against a bare `path.resolve` + prefix check.
 */
import { execFileSync } from 'node:child_process';
import { realpathSync } from 'node:fs';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { startServer } from '../core/app/server.js';
import { checkWrite } from '../core/coderun/fence.js';
import { codeRunService, coderunSubsystem } from '../core/coderun/subsystem.js';
import { Logger } from '../core/kernel/log.js';
import { agentScript, approve, startScriptedModel, write } from '../test/coderun/support/scripted-model.js';
import { median, report, round, workspace } from './lib/measure.js';

const MODEL_MS = 500;
const TASKS = 4;

async function runOnce(maxParallel: number): Promise<{ ms: number; modelCalls: number; status: string }> {
  const model = await startScriptedModel(
    (c) => {
      if (c.kind === 'planner') {
        return {
          tool_calls: [
            {
              name: 'submit_plan',
              arguments: {
                tasks: Array.from({ length: TASKS }, (_, i) => ({
                  id: `T${i + 1}`,
                  title: `file ${i + 1}`,
                  squad: 'api',
                  files: [`src/api/f${i + 1}.mjs`],
                })),
              },
            },
          ],
        };
      }
      if (c.kind === 'reviewer') return approve;
      return agentScript([write(`src/api/f${c.task!.slice(1)}.mjs`, `export const n = ${c.task!.slice(1)};\n`)], c);
    },
    { delayMs: MODEL_MS },
  );
  const repo = await workspace({
    'package.json': '{"type":"module"}\n',
    'test/api/a.test.mjs': "import test from 'node:test';\ntest('a', () => {});\n",
  });
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=b', '-c', 'user.email=b@b', ...args], { cwd: repo });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'init');
  const root = await workspace({
    'teams/api.json': JSON.stringify({
      charter: 'api',
      owns: ['src/api/**', 'test/api/**'],
      acceptance: 'node --test "test/api/**/*.test.mjs"',
    }),
  });
  const server = await startServer(
    {
      root,
      port: 0,
      watch: false,
      window: false,
      logLevel: 'silent',
      model: { baseUrl: model.baseUrl, model: 'm', retries: 0 },
      code: { max_parallel: maxParallel, repos: [repo] },
    } as never,
    { subsystems: [coderunSubsystem], logger: new Logger('silent') },
  );
  await server.discovered;
  try {
    const service = await codeRunService(server.ctx);
    const started = performance.now();
    const run = await service.startRun({ request: 'four files', repo });
    const done = await service.settled(run.id, 120_000);
    return { ms: performance.now() - started, modelCalls: model.requests.length, status: done.status };
  } finally {
    await server.close();
    await model.close();
    await rm(repo, { recursive: true, force: true });
    await rm(root, { recursive: true, force: true });
  }
}

const serial: number[] = [];
const parallel: number[] = [];
let calls = 0;
for (let i = 0; i < 3; i++) {
  const s = await runOnce(1);
  const p = await runOnce(4);
  if (s.status !== 'succeeded' || p.status !== 'succeeded') throw new Error(`runs did not succeed: ${s.status}, ${p.status}`);
  serial.push(s.ms);
  parallel.push(p.ms);
  calls = s.modelCalls;
}
const speedup = median(serial) / median(parallel);
report({
  name: 'wave parallelism (4 tasks, model 500 ms/answer): speed-up of max_parallel 4 over 1',
  value: speedup,
  unit: '×',
  target: { on: 'value', op: '>=', limit: 1.8, unit: '×' },
  detail: `max_parallel 1: ${round(median(serial), 0)} ms, max_parallel 4: ${round(median(parallel), 0)} ms`,
});
const overhead = (median(serial) - calls * MODEL_MS) / TASKS;
report({
  name: 'harness overhead per task (serial run minus model wait)',
  value: overhead,
  unit: 'ms/task',
  target: { on: 'value', op: '<', limit: 1000, unit: 'ms/task' },
  detail: `${round(overhead, 0)} ms/task over ${calls} model calls`,
});

const root = realpathSync(await workspace({ 'src/api/x.mjs': '' }));
const teams = [
  { id: 'api', owns: ['src/api/**', 'test/api/**'] },
  { id: 'web', owns: ['src/web/**'] },
];
const N = 20_000;
let t0 = performance.now();
for (let i = 0; i < N; i++) checkWrite(root, `src/api/deep/dir/file${i % 50}.mjs`, teams[0]!, teams);
const fenceUs = ((performance.now() - t0) * 1000) / N;
t0 = performance.now();
let hits = 0;
for (let i = 0; i < N; i++) if (path.resolve(root, `src/api/deep/dir/file${i % 50}.mjs`).startsWith(root + '/src/api/')) hits++;
const bareUs = ((performance.now() - t0) * 1000) / N;
report({
  name: 'write-fence check (realpath + globs)',
  value: fenceUs,
  unit: 'µs/check',
  baseline: { label: 'bare path.resolve + prefix', value: bareUs },
  target: { on: 'value', op: '<', limit: 100, unit: 'µs/check' },
  detail: `${round(fenceUs, 1)} µs/check vs bare resolve ${round(bareUs, 2)} µs (${hits} hits)`,
});
await rm(root, { recursive: true, force: true });
